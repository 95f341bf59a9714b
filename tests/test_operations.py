"""Many jobs on one cluster: the acceptance checks, against the single-job twin and against invariants."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from twin.api import run_dict
from twin.errors import ScenarioError
from twin.hardware.specs import node_spec
from twin.operations.accounting import account, country_grids
from twin.power.devices import node_power
from twin.power.hourly import flat_shape

# A 1.3B-parameter model (4 layers of a GPT-style shape would do too): every size from one GPU fits it.
TINY = {"layers": 4, "hidden": 1024, "heads": 8, "vocab": 32000, "name": "tiny"}
TINY_TRAINING = {"model": TINY, "tokens": "1B", "seq_len": 1024, "global_batch": 192}


def trace(seed: int, jobs: int = 40, sizes=(1, 2, 4, 8, 16, 24, 32), gap_s: float = 1800.0) -> list[dict]:
    """Poisson arrivals of jobs of random sizes and log-normal durations (median one hour)."""
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.exponential(gap_s, size=jobs))
    return [{"name": f"j{i}", "template": "tiny", "gpus": int(rng.choice(sizes)), "submit": float(submit[i]),
             "duration": float(rng.lognormal(np.log(3600.0), 1.0))} for i in range(jobs)]


def scenario(jobs: list[dict], cluster: dict | None = None, **extra) -> dict:
    return {"cluster": cluster or {"node": "dgx-h100", "nodes": 4, "fabric": {"topology": "single-switch"}},
            "jobs": {"templates": {"tiny": TINY_TRAINING}, "list": jobs} | extra}


# ---------------------------------------------------------------------------
# One job: the single-job twin


TRAINING = {"model": "llama2-7b", "tokens": "5B", "seq_len": 4096, "global_batch": 512, "parallelism": {"tensor": 2}}
CLUSTER = {"node": "dgx-h100", "nodes": 16, "spare_nodes": 2, "fabric": {"nodes_per_su": 4, "oversubscription": 2}}
SITE = {"country": "FR", "pue": 1.3, "compare": ["DE"], "gpu_hour_price": "2 EUR/GPU-h"}


def test_one_job_alone_is_the_single_job_twin():
    single = run_dict({"cluster": CLUSTER, "site": SITE, "training": TRAINING})
    ops = run_dict({"cluster": CLUSTER, "site": SITE,
                    "jobs": {"templates": {"t": TRAINING}, "list": [{"template": "t", "gpus": single.gpus_used}]}})
    job, cluster = ops.jobs[0], ops.accounts.cluster
    assert job.packed_step_s == pytest.approx(single.step_time_s, rel=1e-12)
    assert job.mean_step_s == pytest.approx(single.step_time_s, rel=1e-12)
    assert job.end_s == pytest.approx(single.time_to_train_s, rel=1e-12)
    assert cluster.energy_it_kwh == pytest.approx(single.energy_it_kwh, rel=1e-12)
    assert cluster.energy_facility_kwh == pytest.approx(single.energy_facility_kwh, rel=1e-12)
    for code in ("FR", "DE"):
        assert cluster.carbon_kg[code] == pytest.approx(single.carbon_kg[code], rel=1e-12)
        assert cluster.energy_cost_eur[code] == pytest.approx(single.energy_cost_eur[code], rel=1e-12)
    assert cluster.rental_cost_eur == pytest.approx(single.rental_cost_eur, rel=1e-12)


def test_one_job_with_failures_takes_as_long_on_average_as_the_job_engine_says():
    """Both draw the same component failures per node; the cluster's spares and idle nodes replace them."""
    training = TRAINING | {"tokens": "40B"}
    cluster = {"node": "dgx-h100", "nodes": 6, "spare_nodes": 2}
    failures = {"enabled": True, "rate_scale": 50, "repair_time": "2 h", "samples": 200, "seed": 1}
    single = run_dict({"cluster": cluster, "training": training, "failures": failures})
    ends = [run_dict({"cluster": cluster, "failures": failures | {"seed": seed},
                      "jobs": {"seed": seed, "templates": {"t": training},
                               "list": [{"template": "t", "gpus": single.gpus_used}]}}).jobs[0].end_s
            for seed in range(30)]
    engine = single.failures.samples_values["time_to_train_s"]
    error = np.hypot(np.std(ends) / np.sqrt(len(ends)), np.std(engine) / np.sqrt(len(engine)))
    assert abs(np.mean(ends) - np.mean(engine)) < 3 * error
    assert np.mean(ends) > single.ideal_time_to_train_s


# ---------------------------------------------------------------------------
# Invariants


def test_gpu_hours_allocated_equal_the_sum_over_jobs_with_failures_and_shared_nodes():
    failures = {"enabled": True, "rate_scale": 20, "repair_time": "6 h",
                "custom_rates": {"faulty-gpu": 0.001, "software-bug": 0.0005}, "seed": 3}
    cluster = {"node": "dgx-h100", "nodes": 10, "spare_nodes": 2, "fabric": {"nodes_per_su": 4, "oversubscription": 4}}
    jobs = [j | ({"time_limit": "3 h"} if i % 5 == 0 else {}) for i, j in enumerate(trace(3, 80, gap_s=900.0))]
    r = run_dict(scenario(jobs, cluster) | {"failures": failures})
    assert r.run.failures > 10 and r.run.replacements > 0 and r.run.spare_swaps > 0
    u = r.utilisation
    assert u.gpu_hours_allocated == pytest.approx(u.gpu_hours_jobs, rel=1e-9)
    assert u.gpu_hours_jobs == pytest.approx(sum(c.gpu_hours for c in r.accounts.jobs), rel=1e-12)
    # Energy: the jobs and the overhead make up the cluster.
    a = r.accounts
    assert a.overhead.energy_it_kwh > 0
    assert sum(c.energy_it_kwh for c in a.jobs) + a.overhead.energy_it_kwh == pytest.approx(a.cluster.energy_it_kwh)
    assert sum(t.energy_it_kwh for t in a.tenants.values()) == pytest.approx(sum(c.energy_it_kwh for c in a.jobs))
    for job in r.jobs:
        assert job.status in ("finished", "timeout")
        if job.status == "timeout":
            assert job.end_s - job.start_s == pytest.approx(3 * 3600.0)


def test_the_same_seed_gives_the_same_bytes():
    data = scenario(trace(1, 30)) | {"failures": {"enabled": True, "rate_scale": 20, "seed": 5}}
    data["jobs"]["generator"] = {"jobs": 30, "rate": "2/h", "gpus": {1: 2, 8: 1, 16: 1},
                                 "duration": {"median": "1 h"}, "tenants": {"a": 1, "b": 1}}
    first, again = run_dict(copy.deepcopy(data)).to_json(), run_dict(copy.deepcopy(data)).to_json()
    assert first == again
    data["jobs"]["seed"] = 2
    assert run_dict(data).to_json() != first


# ---------------------------------------------------------------------------
# Scheduling


@pytest.mark.parametrize("seed", range(6))
def test_backfill_never_raises_the_mean_wait_over_fifo_nor_delays_the_blocked_head(seed):
    """Run times are exact here (no failures, no contention on one switch), as EASY's guarantee needs."""
    jobs = trace(seed)
    fifo = run_dict(scenario(jobs, scheduler={"policy": "fifo"}))
    backfill = run_dict(scenario(jobs, scheduler={"policy": "backfill"}))
    assert backfill.waits.all.mean <= fifo.waits.all.mean + 1e-6
    heads = [j for j in backfill.jobs if j.reserved_start_s is not None]
    assert heads, "the trace should block a head"
    assert all(j.start_s <= j.reserved_start_s + 1e-6 for j in heads)


def test_topology_placement_spans_fewer_scalable_units_than_first_fit():
    cluster = {"node": "dgx-h100", "nodes": 16, "fabric": {"nodes_per_su": 4, "oversubscription": 7}}
    jobs = trace(4, 60, sizes=(8, 16, 24, 32), gap_s=1200.0)
    packed = run_dict(scenario(jobs, cluster, scheduler={"placement": "topology"}))
    first = run_dict(scenario(jobs, cluster, scheduler={"placement": "first-fit"}))
    assert packed.completion.spanning_jobs < first.completion.spanning_jobs
    # Jobs that span units under 1:7 share the spines and run slower than packed.
    assert first.completion.step_slowdown_spanning.mean > 1.0


def test_a_reserved_hero_job_starts_at_its_reservation_on_free_nodes():
    jobs = trace(5, 40, sizes=(8, 16), gap_s=600.0)
    jobs.append({"name": "hero", "template": "tiny", "gpus": 32, "submit": 0.0, "duration": 7200.0})
    r = run_dict(scenario(jobs, scheduler={"reservation": {"job": "hero", "start": "5 h"}}))
    hero = next(j for j in r.jobs if j.name == "hero")
    assert hero.start_s == pytest.approx(5 * 3600.0)


def test_fragmented_gpus_are_free_gpus_no_waiting_job_can_use():
    """Two nodes, four and six GPUs taken: a job of eight waits on six free GPUs it cannot use."""
    cluster = {"node": "dgx-h100", "nodes": 2, "fabric": {"topology": "single-switch"}}
    jobs = [{"name": "a", "template": "tiny", "gpus": 4, "submit": 0.0, "duration": 7200.0},
            {"name": "b", "template": "tiny", "gpus": 6, "submit": 0.0, "duration": 3600.0},
            {"name": "c", "template": "tiny", "gpus": 8, "submit": 1.0, "duration": 3600.0}]
    r = run_dict(scenario(jobs, cluster, scheduler={"placement": "first-fit"}))
    s = r.run.series
    c = next(j for j in r.jobs if j.name == "c")
    assert set(s.fragmented_gpus[(s.t_s >= 1.0) & (s.t_s < c.start_s)]) == {6.0}
    assert set(s.fragmented_gpus[s.t_s >= c.start_s]) == {0.0}
    assert c.start_s == pytest.approx(3600.0)
    assert r.utilisation.fragmented_gpus == pytest.approx(6.0 * (c.start_s - 1.0) / r.run.end_s)


# ---------------------------------------------------------------------------
# Carbon


def test_a_flat_hourly_profile_equals_the_annual_average():
    r = run_dict(scenario(trace(2, 20)) | {"site": {"country": "DE", "compare": ["FR"]}})
    annual = country_grids(["DE", "FR"], {}, None, None)
    flat = country_grids(["DE", "FR"], {"DE": flat_shape("DE"), "FR": flat_shape("FR")}, None, None)
    a, b = account(r.run, 1.2, annual, 1, None), account(r.run, 1.2, flat, 7, None)
    assert a.cluster.carbon_kg == b.cluster.carbon_kg and [j.carbon_kg for j in a.jobs] == [j.carbon_kg for j in b.jobs]


def test_hourly_carbon_of_a_constant_load_over_a_year_is_the_annual_average():
    jobs = [{"name": "year", "template": "tiny", "gpus": 8, "duration": "365 d"}]
    data = scenario(jobs) | {"site": {"country": "DE"}}
    data["jobs"]["horizon"] = "365 d"
    annual = run_dict(data)
    data["jobs"]["carbon"] = {"hourly": True, "start_month": 4}
    hourly = run_dict(data)
    assert hourly.accounts.cluster.carbon_kg["DE"] == pytest.approx(annual.accounts.cluster.carbon_kg["DE"], rel=1e-9)


def test_the_carbon_aware_policy_holds_deferrable_jobs_for_cleaner_hours():
    jobs = [j | {"deferrable": True} for j in trace(6, 30, sizes=(1, 2, 4), gap_s=3600.0)]
    data = scenario(jobs) | {"site": {"country": "DE"}}
    data["jobs"]["carbon"] = {"hourly": True, "aware": True, "max_delay": "12 h", "start_month": 7}
    r = run_dict(data)
    aware = r.carbon_aware
    assert aware.deferred_jobs > 0 and 0 < aware.mean_hold_s <= 12 * 3600
    assert aware.saved_kg["DE"] > 0                         # a light load: every held job runs cleaner
    assert aware.mean_wait_s > aware.baseline_mean_wait_s   # ... and later


# ---------------------------------------------------------------------------
# Bad input


CHAT = {"model": "llama3-8b", "precision": "fp8", "replicas": 5, "mig": "2g.20gb",
        "load": {"rate": "5/s", "requests": 300, "input_tokens": {"mean": 256}, "output_tokens": {"mean": 128}}}
# A service split over two MIG instances: refused (an instance has no NVLink)
SPLIT_CHAT = {"serving": CHAT | {"parallelism": {"tensor": 2}}, "duration": "1 h"}


@pytest.mark.parametrize("change, key", [
    ({"list": [{"template": "tiny", "gpus": 64}]}, "jobs.list[0].gpus"),
    ({"list": [{"template": "tiny", "gpus": 8, "training": TINY_TRAINING}]}, "jobs.list[0]"),
    ({"list": [{"template": "big", "gpus": 8}], "templates": {"tiny": TINY_TRAINING, "big": TINY_TRAINING | {
        "parallelism": {"tensor": 16}}}}, "jobs.templates.big.parallelism"),
    ({"generator": {"jobs": 5, "rate": "1/h", "gpus": {1: 1}, "duration": {"median": "1 h"}},
      "templates": {"tiny": TINY_TRAINING | {"parallelism": {"tensor": 2}}}}, "jobs.generator.gpus.1"),
    ({"mix": {"tinyy": 1}}, "jobs.mix.tinyy"),
    # the jobs are read in their order, the serving engines played ahead on a second core (api/operations.py)
    ({"list": [{"template": "tiny", "gpus": 64}, SPLIT_CHAT]}, "jobs.list[0].gpus"),
    ({"list": [{"template": "tiny", "gpus": 8}, SPLIT_CHAT]}, "jobs.list[1].serving.parallelism"),
])
def test_bad_jobs_are_refused_naming_the_key(change, key):
    data = scenario([{"template": "tiny", "gpus": 8}])
    data["jobs"].update(change)
    with pytest.raises(ScenarioError) as info:
        run_dict(data)
    assert str(info.value).startswith(key)


# ---------------------------------------------------------------------------
# Serving jobs


def test_serving_jobs_pack_mig_instances_onto_shared_gpus_beside_training():
    """Five 2g.20gb instances fill two GPUs with one instance to spare; a one-replica service takes that one,
    so a six-GPU training job still fits on the node's other six GPUs at once."""
    cluster = {"node": "dgx-h100", "nodes": 1}
    jobs = [{"name": "chat", "template": "chat", "duration": "10 h"},
            {"name": "solo", "serving": CHAT | {"replicas": 1}, "duration": "10 h"},
            {"name": "train", "template": "tiny", "gpus": 6, "duration": "5 h"}]
    data = scenario(jobs, cluster)
    data["jobs"]["templates"]["chat"] = CHAT
    r = run_dict(data)
    chat, solo, train = r.jobs
    assert chat.start_s == solo.start_s == train.start_s == 0.0
    assert chat.gpus_allocated == pytest.approx(5 / 3) and solo.gpus_allocated == pytest.approx(1 / 3)
    assert chat.end_s == pytest.approx(10 * 3600.0) and chat.gpu_hours == pytest.approx(10 * 5 / 3)
    assert r.utilisation.gpu_hours_allocated == pytest.approx(r.utilisation.gpu_hours_jobs)
    # A service draws its instances' share of the GPU's dynamic range at its activity, and the idle share
    # of the GPUs it holds (power/devices.py: a node is affine in its GPUs' activity).
    node = node_power(node_spec("dgx-h100"))
    watts = 5 / 3 * node.idle_w / 8 + 5 * (2 / 7) * (node.peak_w - node.idle_w) / 8 * r.services["chat"].activity
    assert r.accounts.jobs[0].energy_it_kwh == pytest.approx(watts * 10 / 1000.0, rel=1e-9)
    assert r.services["chat"].sustained is True


def test_a_service_above_what_it_completes_when_saturated_is_not_sustained():
    """Offered more than its saturated throughput (as capacity measures it), a service's queue would grow
    without bound: its record says so whatever the SLO over its own requests."""
    cluster = {"node": "dgx-h100", "nodes": 1}
    data = scenario([{"name": "chat", "template": "chat", "duration": "10 h"}], cluster)
    data["jobs"]["templates"]["chat"] = CHAT | {"load": CHAT["load"] | {"rate": "5000/s"}}
    svc = run_dict(data).services["chat"]
    assert svc.sustained is False and svc.requests_per_s < 5000


def test_a_node_failure_interrupts_every_service_with_instances_there():
    cluster = {"node": "dgx-h100", "nodes": 2}
    jobs = [{"name": "a", "template": "chat", "duration": "2 d"}, {"name": "b", "template": "chat", "duration": "2 d"}]
    data = scenario(jobs, cluster) | {"failures": {"enabled": True, "rate_scale": 100, "seed": 4,
                                                   "custom_rates": {"faulty-gpu": 0.002}}}
    data["jobs"]["templates"]["chat"] = CHAT | {"replicas": 4}
    r = run_dict(data)
    assert r.run.failures > 0 and all(j.interruptions > 0 for j in r.jobs)
    assert all(j.status == "finished" and j.end_s > 2 * 86400.0 for j in r.jobs)
    assert r.utilisation.gpu_hours_allocated == pytest.approx(r.utilisation.gpu_hours_jobs)


def test_a_kept_estimated_end_follows_the_jobs_progress_phase_and_speed():
    """The estimate a running job keeps for backfill reservations is the one worked out afresh after every
    change: progress counted, work lost to a failure, a restart (whose estimate moves with the clock)."""
    from twin.jobs.model import Phase
    from twin.operations.jobs import JobRequest, Service
    from twin.operations.progress import service_job

    service = Service("chat", 1, 1, None, 1, 1.0, 0.5, 10.0, 100.0, 0.1, 0.01, True)
    job = service_job(0, JobRequest("j", "a", 0.0, "chat", 1, duration_s=100.0), service)
    job.start_s, job.phase = 0.0, Phase.TRAIN
    job.set_speed(None)

    def end(now: float) -> float:
        return job.ending_at(now)[0]

    def fresh(now: float) -> float:
        job.ending = None
        return end(now)

    assert end(0.0) == fresh(0.0) == 100.0
    job.advance(30.5)
    assert end(30.5) == fresh(30.5) == 100.0
    job.interrupted(30.5)                                  # back to the last whole second: 70 s of work left
    assert end(30.5) == fresh(30.5) == 100.5
    job.advance(30.5)
    job.phase, job.restart_end_s = Phase.RESTART, 40.0
    assert end(31.0) == fresh(31.0) == 40.0 + 70.0
    assert end(35.0) == 40.0 + 70.0 and end(45.0) == 45.0 + 70.0
