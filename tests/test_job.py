"""The job engine (level 3): failures, checkpoints, restarts and spares against published counts and theory."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.api import build, run_dict, run_file
from twin.api.specs import checkpoint_policy_of, failure_policy_of
from twin.engine.job import JobSpec, job_spec, monte_carlo, simulate_job
from twin.errors import ScenarioError
from twin.jobs.checkpoint import checkpoint_cost
from twin.jobs.failures import failure_profile
from twin.jobs.rules import interval_iterations, young_daly_interval_s
from twin.scenario import parse_scenario
from twin.units import SECONDS_PER_DAY

ROOT = Path(__file__).resolve().parents[1]
LLAMA3 = ROOT / "scenarios" / "llama3-405b-16k.yaml"
SUPERPOD = ROOT / "scenarios" / "superpod.yaml"
PROFILE = failure_profile("llama3-h100")


def small_cluster(write: str = "30 GB/s", nodes: int = 2) -> dict:
    return {
        "cluster": {"node": "dgx-h100", "nodes": nodes, "storage": {"read": "60 GB/s", "write": write}},
        "training": {"model": "llama2-70b", "tokens": "1B", "seq_len": 4096, "global_batch": 16,
                     "parallelism": {"tensor": 8, "pipeline": 2, "data": 1, "recompute": "full"}},
    }


def spec_16k(write_s: float = 60.0, spares: int = 10_000, repair_s: float = 48 * 3600, shrink: bool = False,
             days: float = 54.0, interval: float | None = None, restart_s: float = 300.0) -> JobSpec:
    """16,384 GPUs (2,048 nodes), a 10 s step, the Llama 3 profile."""
    built = build(parse_scenario(small_cluster()))
    ck = replace(checkpoint_cost(405e9, "bf16", built.cluster, 2048, 16384, False), write_s=write_s, stall_s=write_s,
                 read_s=30.0)
    step = 10.0
    every = interval_iterations(interval, step, ck, PROFILE.mtbf_s(16384, 2048))
    return JobSpec(iterations=int(days * SECONDS_PER_DAY / step), step_s=step, nodes=2048, gpus=16384,
                   data_parallel=128, spare_nodes=spares, checkpoint=ck, interval_iterations=every,
                   detection_s=120.0, relaunch_s=restart_s, repair_mean_s=repair_s, allow_shrink=shrink,
                   profile=PROFILE)


def test_llama3_profile_reproduces_table5_rate():
    # 419 unexpected interruptions in 54 days on 16,384 GPUs / 2,048 nodes
    assert PROFILE.mtbf_s(16384, 2048) == pytest.approx(54 * SECONDS_PER_DAY / 419)
    by_name = {c.name: c for c in PROFILE.components}
    assert by_name["faulty-gpu"].rate_per_device_hour == pytest.approx(148 / (16384 * 54 * 24))
    assert not by_name["software-bug"].replace and by_name["gpu-hbm3"].replace


def test_llama3_run_sees_419_interruptions_per_54_days_with_goodput_above_90_percent():
    r = run_file(LLAMA3)
    f = r.failures
    per_54_days = f.interruptions.mean / (r.time_to_train_s / SECONDS_PER_DAY) * 54
    assert per_54_days == pytest.approx(419, rel=0.03)
    assert r.goodput >= 0.9
    assert f.goodput.p10 >= 0.9
    assert f.time_to_train_s.p10 <= r.time_to_train_s <= f.time_to_train_s.p90
    assert r.time_to_train_s > r.ideal_time_to_train_s
    assert r.gpu_hours == pytest.approx(r.gpus_used * r.time_to_train_s / 3600)


def test_mean_interruptions_match_the_poisson_rate():
    spec = spec_16k()
    stats = monte_carlo(spec, seed=1, samples=60)
    expected = np.mean([s.wall_s for s in stats.samples]) / PROFILE.mtbf_s(16384, 2048)
    assert stats.mean("interruptions") == pytest.approx(expected, rel=0.03)
    gpu_share = np.mean([s.by_component.get("faulty-gpu", 0) / s.interruptions for s in stats.samples])
    assert gpu_share == pytest.approx(148 / 419, abs=0.02)


def test_young_daly_interval_is_within_noise_of_the_best():
    base = spec_16k(write_s=60.0, days=20)
    tau = young_daly_interval_s(60.0, PROFILE.mtbf_s(16384, 2048))
    assert tau == pytest.approx(math.sqrt(2 * 60.0 * PROFILE.mtbf_s(16384, 2048)), rel=0.1)   # Young to first order
    walls = {}
    for factor in (0.25, 0.5, 1.0, 2.0, 4.0):
        spec = replace(base, interval_iterations=max(1, round(factor * tau / base.step_s)))
        runs = monte_carlo(spec, seed=3, samples=40).samples                  # common random numbers
        walls[factor] = np.array([s.wall_s for s in runs])
    best = min(walls, key=lambda k: walls[k].mean())
    noise = 2 * walls[best].std() / math.sqrt(len(walls[best]))
    assert walls[1.0].mean() <= walls[best].mean() + noise
    assert walls[0.25].mean() > walls[1.0].mean() and walls[4.0].mean() > walls[1.0].mean()


def test_no_spares_and_slow_repair_take_longer():
    seed, n = 5, 20
    plenty = monte_carlo(spec_16k(spares=10_000, days=10), seed, n)
    none_slow = monte_carlo(spec_16k(spares=0, repair_s=7 * SECONDS_PER_DAY, days=10), seed, n)
    shrink = monte_carlo(spec_16k(spares=0, repair_s=7 * SECONDS_PER_DAY, days=10, shrink=True), seed, n)
    assert none_slow.percentile("wall_s", 50) > 1.5 * plenty.percentile("wall_s", 50)
    assert none_slow.mean("repair_wait_s") > 0 and plenty.mean("repair_wait_s") == 0
    assert plenty.percentile("wall_s", 50) < shrink.percentile("wall_s", 50) < none_slow.percentile("wall_s", 50)
    assert min(s.min_data_parallel for s in shrink.samples) < 128


def test_enough_spares_approach_failure_free_plus_restart_costs():
    spec = spec_16k(spares=10_000, days=10)
    stats = monte_carlo(spec, seed=11, samples=30)
    for s in stats.samples:                   # every second of the wall clock is accounted for
        assert s.wall_s == pytest.approx(spec.ideal_s + s.lost_work_s + s.restart_s + s.checkpoint_s + s.repair_wait_s)
        assert s.repair_wait_s == 0
    # Expected wall time: failure-free time with checkpoint stalls, plus per failure the restart
    # (detection + relaunch + read) and on average half a checkpoint cycle of lost work.
    cycle = spec.interval_s + spec.checkpoint.stall_s
    train = spec.ideal_s * cycle / spec.interval_s
    per_failure = spec.detection_s + spec.relaunch_s + spec.checkpoint.read_s + cycle / 2
    expected = train / (1 - per_failure / PROFILE.mtbf_s(16384, 2048))
    assert stats.mean("wall_s") == pytest.approx(expected, rel=0.02)


def test_checkpoint_write_time_follows_storage_bandwidth():
    slow = job_spec(*_job_args(small_cluster("15 GB/s")))
    fast = job_spec(*_job_args(small_cluster("30 GB/s")))
    assert slow.checkpoint.write_s == pytest.approx(2 * fast.checkpoint.write_s)
    model_params = build(parse_scenario(small_cluster())).model.params
    assert fast.checkpoint.bytes == pytest.approx(model_params * 14)          # bf16 weights + fp32 Adam states
    assert fast.checkpoint.write_s == pytest.approx(model_params * 14 / 30e9)


def _job_args(data: dict):
    scenario = parse_scenario(data | {"failures": {"enabled": True}})
    b = build(scenario)
    tr = scenario.training
    return (failure_policy_of(scenario.failures, scenario.cluster), checkpoint_policy_of(tr.checkpoint), b.cluster,
            b.model.params, tr.precision, tr.tokens, b.plan.gpus, b.plan.data, b.plan.tokens_per_step, 10.0)


def test_asynchronous_checkpoints_stall_less():
    sync = job_spec(*_job_args(small_cluster("1 GB/s")))
    data = small_cluster("1 GB/s")
    data["training"]["checkpoint"] = {"asynchronous": True}
    asyn = job_spec(*_job_args(data))
    assert asyn.checkpoint.stall_s < sync.checkpoint.stall_s / 100
    assert asyn.checkpoint.write_s == sync.checkpoint.write_s
    assert asyn.interval_s >= asyn.checkpoint.write_s                           # a snapshot waits for the write


def test_same_scenario_same_numbers_and_seed_matters():
    data = yaml.safe_load(SUPERPOD.read_text())
    data["failures"] = {"enabled": True, "seed": 3, "samples": 8}
    a, b = run_dict(data), run_dict(data)
    assert a.to_dict() == b.to_dict()
    data["failures"]["seed"] = 4
    c = run_dict(data)
    assert c.failures.time_to_train_s != a.failures.time_to_train_s


def test_failures_off_means_ideal_time():
    data = yaml.safe_load(SUPERPOD.read_text())
    data["failures"] = {"enabled": False}
    r = run_dict(data)
    assert r.time_to_train_s == r.ideal_time_to_train_s
    assert r.interruptions == 0 and r.goodput == 1.0
    assert r.to_dict()["timeline"]["segments"] == [{"start_s": 0.0, "end_s": r.ideal_time_to_train_s, "phase": "train",
                                                    "checkpoints": 0, "checkpoint_s": 0.0}]


def test_timeline_covers_the_run_without_gaps():
    data = yaml.safe_load(SUPERPOD.read_text())
    data["failures"] = {"enabled": True, "seed": 1, "samples": 3, "rate_scale": 20}
    data["cluster"]["spare_nodes"] = 0
    r = run_dict(data)
    segments, events = r.segments, r.events
    assert {s.phase for s in segments} <= {"train", "checkpoint", "restart", "repair_wait"}
    assert {e.kind for e in events} <= {"failure", "checkpoint", "restart"}
    assert segments[0].start_s == 0
    assert all(a.end_s == pytest.approx(b.start_s) for a, b in zip(segments, segments[1:]))
    assert segments[-1].end_s == pytest.approx(r.time_to_train_s, rel=0.05)
    failures = [e for e in events if e.kind == "failure"]
    assert failures and all(e.component for e in failures)


def test_bad_failure_inputs_name_the_key():
    data = yaml.safe_load(SUPERPOD.read_text())
    data["failures"] = {"enabled": True, "custom_rates": {"faulty-gpus": 1e-5}}
    with pytest.raises(ScenarioError, match=r"failures.custom_rates.faulty-gpus: .*did you mean 'faulty-gpu'"):
        run_dict(data)
    data["failures"] = {"enabled": True, "profile": "llama3-h10"}
    with pytest.raises(ScenarioError, match=r"failures.profile: .*did you mean 'llama3-h100'"):
        run_dict(data)
    data["failures"] = {"enabled": True, "repair_time": "two days"}
    with pytest.raises(ScenarioError, match=r"failures.repair_time"):
        run_dict(data)


def test_custom_rates_and_rate_scale():
    doubled = failure_profile("llama3-h100", rate_scale=2.0)
    assert doubled.mtbf_s(16384, 2048) == pytest.approx(PROFILE.mtbf_s(16384, 2048) / 2)
    no_gpu = failure_profile("llama3-h100", custom_rates={"faulty-gpu": 0.0})
    assert no_gpu.mtbf_s(16384, 2048) == pytest.approx(54 * SECONDS_PER_DAY / (419 - 148))


def test_single_sample_replays_its_own_timeline():
    spec = spec_16k(days=3)
    plain = simulate_job(spec, np.random.default_rng(9))
    recorded = simulate_job(spec, np.random.default_rng(9), record=True)
    assert plain.wall_s == recorded.wall_s and plain.interruptions == recorded.interruptions
    assert sum(1 for e in recorded.events if e.kind == "failure") == recorded.interruptions


def test_long_runs_fold_checkpoints_into_train_segments():
    data = yaml.safe_load(SUPERPOD.read_text())
    data["failures"] = {"enabled": True, "seed": 2, "samples": 1}
    r = run_dict(data)
    train = [s for s in r.segments if s.phase == "train"]
    assert sum(s.checkpoints for s in train) > 2000                 # too many to list one by one
    assert sum(s.checkpoint_s for s in train) == pytest.approx(r.failures.checkpoint_s.p50)
    assert not [s for s in r.segments if s.phase == "checkpoint"]


@pytest.mark.parametrize("variant", [
    {}, {"spares": 1}, {"spares": 0}, {"spares": 0, "shrink": True}, {"spares": 2, "shrink": True, "repair_s": 7.2e5},
    {"spares": 0, "restart_s": 7200.0}, {"interval": 1800.0}, {"days": 20.0},
], ids=["spares", "one-spare", "no-spare", "shrink", "shrink-slow-repair", "slow-restart", "interval", "short"])
def test_the_event_loop_plays_the_simpy_reference_sample_for_sample(variant):
    """The Monte Carlo's loop (engine/job_loop.py) and the SimPy processes give the same sample, field for field,
    to the last digit, from the same generator: failures, replacements, waits for repair, shrinking, restarts
    cut short, asynchronous and fixed intervals, a horizon and the bound on failures."""
    from twin.engine.job import JobSample
    from twin.engine.job_loop import play_job

    base = spec_16k(**variant)
    specs = [base, replace(base, checkpoint=replace(base.checkpoint, asynchronous=True, stall_s=5.0)),
             replace(base, horizon_s=base.ideal_s * 1.01), replace(base, max_interruptions=40)]
    for spec in specs:
        for seed in range(3):
            reference = simulate_job(spec, np.random.default_rng(seed))
            played = JobSample(min_data_parallel=spec.data_parallel)
            play_job(spec, np.random.default_rng(seed), played)
            reference.segments = reference.events = []
            assert played == reference


@settings(max_examples=30, deadline=None)
@given(spares=st.integers(0, 40), repair_h=st.floats(0.01, 240.0), restart_s=st.floats(1.0, 3600.0),
       shrink=st.booleans(), days=st.floats(0.5, 20.0), write_s=st.floats(1.0, 600.0), seed=st.integers(0, 2**31))
def test_any_job_plays_as_the_simpy_reference(spares, repair_h, restart_s, shrink, days, write_s, seed):
    """Over the job's settings at large (spares, repair and restart times, shrinking, length, checkpoint cost),
    the event loop, its common cycles inline included, gives the SimPy reference's sample to the last digit."""
    from twin.engine.job import JobSample
    from twin.engine.job_loop import play_job

    spec = spec_16k(write_s=write_s, spares=spares, repair_s=repair_h * 3600.0, shrink=shrink, days=days,
                    restart_s=restart_s)
    reference = simulate_job(spec, np.random.default_rng(seed))
    played = JobSample(min_data_parallel=spec.data_parallel)
    play_job(spec, np.random.default_rng(seed), played)
    reference.segments = reference.events = []
    assert played == reference


@settings(max_examples=25, deadline=None)
@given(spares=st.integers(0, 40), repair_h=st.floats(0.01, 240.0), restart_s=st.floats(1.0, 3600.0),
       days=st.floats(0.5, 6.0), write_s=st.floats(1.0, 600.0), asynchronous=st.booleans(),
       horizon=st.one_of(st.none(), st.floats(0.3, 1.5)), bound=st.one_of(st.none(), st.integers(1, 300)),
       samples=st.integers(32, 48), seed=st.integers(0, 2**31))
def test_samples_played_side_by_side_are_the_event_loops(spares, repair_h, restart_s, days, write_s, asynchronous,
                                                         horizon, bound, samples, seed):
    """Over the job's settings at large (spares, repair and restart times, checkpoints synchronous or not, a
    horizon, a failure bound), the samples played side by side as arrays are each the event loop's sample with
    the same generator, to the last digit."""
    from twin.engine.job_lockstep import lockstep_plays

    spec = spec_16k(write_s=write_s, spares=spares, repair_s=repair_h * 3600.0, days=days, restart_s=restart_s)
    if asynchronous:
        spec = replace(spec, checkpoint=replace(spec.checkpoint, asynchronous=True, stall_s=write_s / 10))
    spec = replace(spec, horizon_s=horizon * days * SECONDS_PER_DAY if horizon else math.inf,
                   max_interruptions=bound or math.inf)
    assert lockstep_plays(spec, samples)
    assert_side_by_side_as_alone(spec, np.random.SeedSequence(seed).spawn(samples))


job_settings = st.fixed_dictionaries({
    "spares": st.integers(0, 40), "repair_h": st.floats(0.01, 240.0), "restart_s": st.floats(1.0, 3600.0),
    "days": st.floats(0.5, 6.0), "write_s": st.floats(1.0, 600.0), "asynchronous": st.booleans(),
    "step_s": st.floats(2.0, 20.0), "nodes": st.sampled_from([512, 1024, 2048]), "idle_gpus": st.integers(0, 7),
    "horizon": st.one_of(st.none(), st.floats(0.3, 1.5)), "bound": st.one_of(st.none(), st.integers(1, 300)),
    "samples": st.integers(1, 24)})


def spec_of(k: dict) -> JobSpec:
    """A job of ``job_settings``: spec_16k's on ``nodes`` nodes, some GPUs of the last one idle (a failure's kinds
    in other shares), its step, checkpoints, repairs, restarts and bounds its own."""
    spec = spec_16k(write_s=k["write_s"], spares=k["spares"], repair_s=k["repair_h"] * 3600.0, days=k["days"],
                    restart_s=k["restart_s"])
    if k["asynchronous"]:
        spec = replace(spec, checkpoint=replace(spec.checkpoint, asynchronous=True, stall_s=k["write_s"] / 10))
    return replace(spec, step_s=k["step_s"], iterations=int(k["days"] * SECONDS_PER_DAY / k["step_s"]),
                   nodes=k["nodes"], gpus=8 * k["nodes"] - k["idle_gpus"], data_parallel=k["nodes"] // 16,
                   horizon_s=k["horizon"] * k["days"] * SECONDS_PER_DAY if k["horizon"] else math.inf,
                   max_interruptions=k["bound"] or math.inf)


@settings(max_examples=20, deadline=None)
@given(jobs=st.lists(job_settings, min_size=2, max_size=4), seed=st.integers(0, 2**31))
def test_several_jobs_played_side_by_side_are_each_the_event_loops(jobs, seed):
    """Jobs that differ in all but their failure profile (step, size, checkpoints synchronous or not, repairs,
    restarts, horizon, failure bound) played in one array: every sample of each is the event loop's own."""
    from twin.engine.job import JobSample
    from twin.engine.job_lockstep import play_jobs
    from twin.engine.job_loop import play_job

    specs = [spec_of(k) for k in jobs]
    seeds = [np.random.SeedSequence([seed, i]).spawn(k["samples"]) for i, k in enumerate(jobs)]
    outs = [[JobSample(min_data_parallel=spec.data_parallel) for _ in job_seeds] for spec, job_seeds in
            zip(specs, seeds)]
    play_jobs([(spec, [np.random.default_rng(s) for s in job_seeds], job_outs)
               for spec, job_seeds, job_outs in zip(specs, seeds, outs)])
    for spec, job_seeds, job_outs in zip(specs, seeds, outs):
        for s, played in zip(job_seeds, job_outs):
            alone = JobSample(min_data_parallel=spec.data_parallel)
            play_job(spec, np.random.default_rng(s), alone)
            assert played == alone


def test_a_job_without_checkpoints_is_not_played_in_one_array_with_one_that_has_them():
    from twin.engine.job_lockstep import play_jobs

    spec = spec_16k(days=1.0)
    with pytest.raises(ValueError, match="share"):
        play_jobs([(spec, [], []), (replace(spec, interval_iterations=None), [], [])])


def assert_side_by_side_as_alone(spec: JobSpec, seeds: list) -> list:
    """Each sample of ``seeds`` played side by side is the event loop's own sample; returns them."""
    from twin.engine.job import JobSample
    from twin.engine.job_lockstep import play_samples
    from twin.engine.job_loop import play_job

    side_by_side = [JobSample(min_data_parallel=spec.data_parallel) for _ in seeds]
    play_samples(spec, [np.random.default_rng(s) for s in seeds], side_by_side)
    for s, played in zip(seeds, side_by_side):
        alone = JobSample(min_data_parallel=spec.data_parallel)
        play_job(spec, np.random.default_rng(s), alone)
        assert played == alone
    return side_by_side


def test_samples_side_by_side_survive_long_stretches_played_apart():
    """A restart far longer than the time between failures and one spare: a sample played by the event loop
    between steps reads hundreds of words in one stretch (a chain of failures during restarts after a wait),
    more than its row holds, and still gives the event loop's own sample."""
    spec = replace(spec_16k(restart_s=60_000.0, days=3.0, spares=1, repair_s=3600.0), max_interruptions=3000)
    side_by_side = assert_side_by_side_as_alone(spec, np.random.SeedSequence(3).spawn(40))
    assert all(played.stopped_by == "interruptions" for played in side_by_side)


@settings(max_examples=20, deadline=None)
@given(spares=st.integers(0, 40), repair_h=st.floats(0.01, 240.0), restart_s=st.floats(1.0, 3600.0),
       shrink=st.booleans(), days=st.floats(0.5, 20.0), write_s=st.floats(1.0, 600.0), asynchronous=st.booleans(),
       horizon=st.one_of(st.none(), st.floats(0.3, 1.5)), seed=st.integers(0, 2**31))
def test_the_event_loop_records_the_simpy_references_timeline(spares, repair_h, restart_s, shrink, days, write_s,
                                                              asynchronous, horizon, seed):
    """The sample a result shows, replayed by the event loop with its timeline: the SimPy reference's
    segments, events and counters, to the last digit."""
    from twin.engine.job import JobSample
    from twin.engine.job_loop import play_job

    spec = spec_16k(write_s=write_s, spares=spares, repair_s=repair_h * 3600.0, shrink=shrink, days=days,
                    restart_s=restart_s)
    if asynchronous:
        spec = replace(spec, checkpoint=replace(spec.checkpoint, asynchronous=True, stall_s=write_s / 10))
    if horizon:
        spec = replace(spec, horizon_s=horizon * days * SECONDS_PER_DAY)
    reference = simulate_job(spec, np.random.default_rng(seed), record=True)
    recorded = JobSample(min_data_parallel=spec.data_parallel)
    play_job(spec, np.random.default_rng(seed), recorded, record=True)
    assert recorded == reference
