"""The discrete-event training step (level 2) against pipeline theory and the closed form."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.api import build, run_dict
from twin.engine.iteration import Span, _plan_key, _simulate, schedule_order, simulate_iteration
from twin.engine.iteration_simpy import SimPyPipeline
from twin.engine.stage_costs import ChunkCost, StepCosts
from twin.engine.step import step_time, with_stragglers
from twin.scenario import parse_scenario, with_overrides
from twin.workload.plan import ParallelPlan

SUPERPOD = Path(__file__).resolve().parents[1] / "scenarios" / "superpod.yaml"


def plan(p: int, m: int, v: int = 1, schedule: str = "1f1b", overlap: bool = True, zero: int = 0) -> ParallelPlan:
    return ParallelPlan(tensor=1, pipeline=p, data=1, expert=1, microbatch=1, virtual_stages=v, schedule=schedule,
                        sequence_parallel=False, recompute="none", zero=zero, overlap_grad_reduce=overlap,
                        overlap_param_gather=overlap, global_batch=m, seq_len=1)


def equal_costs(p: int, v: int = 1, fwd: float = 1.0, bwd: float = 2.0, p2p: float = 0.0,
                dp: float = 0.0, optimizer: float = 0.0, layers: int = 4) -> StepCosts:
    chunk = ChunkCost(fwd / v, bwd / v, 0.0, 0.0, layers)
    return StepCosts([chunk] * (p * v), p2p, dp, 0.0, optimizer)


@pytest.mark.parametrize("p,m", [(2, 4), (4, 8), (4, 32), (8, 16)])
def test_1f1b_bubble_is_p_minus_1_over_m(p, m):
    r = simulate_iteration(equal_costs(p), plan(p, m)).breakdown
    ideal = m * 3.0                                 # m micro-batches of forward 1 s + backward 2 s
    assert r.step_s == pytest.approx((m + p - 1) * 3.0)
    assert r.bubble_s / ideal == pytest.approx((p - 1) / m)


@pytest.mark.parametrize("p,m,v", [(4, 8, 2), (4, 16, 4), (8, 32, 2), (2, 4, 3)])
def test_interleaved_bubble_is_p_minus_1_over_v_m(p, m, v):
    r = simulate_iteration(equal_costs(p, v), plan(p, m, v, "interleaved")).breakdown
    assert r.bubble_s / (m * 3.0) == pytest.approx((p - 1) / (v * m))


def test_gpipe_same_time_as_1f1b_but_holds_all_microbatches():
    p, m = 4, 12
    gpipe = simulate_iteration(equal_costs(p), plan(p, m, schedule="gpipe"))
    one_f_one_b = simulate_iteration(equal_costs(p), plan(p, m))
    assert gpipe.breakdown.step_s == pytest.approx(one_f_one_b.breakdown.step_s)
    assert gpipe.peak_in_flight == (m,) * p
    assert one_f_one_b.peak_in_flight == tuple(p - s for s in range(p))     # p - stage (Narayanan et al. 2021)
    assert max(gpipe.peak_in_flight) > max(one_f_one_b.peak_in_flight)


def test_interleaved_first_stage_holds_korthikanti_in_flight():
    p, m, v = 4, 8, 2
    r = simulate_iteration(equal_costs(p, v), plan(p, m, v, "interleaved"))
    # p·(1 + (p-1)/(p·v)) micro-batches of the stage's layers = that many · v chunks
    assert r.peak_in_flight[0] / v == pytest.approx(p * (1 + (p - 1) / (p * v)))


def test_unequal_stages_lengthen_the_step():
    p, m = 4, 8
    light, heavy = ChunkCost(1.0, 2.0, 0, 0, 4), ChunkCost(1.5, 3.0, 0, 0, 4)     # embedding / LM head stages
    chunks = [heavy, light, light, heavy]
    r = simulate_iteration(StepCosts(chunks, 0, 0, 0, 0), plan(p, m)).breakdown
    mean_u = sum(c.forward_s + c.backward_s for c in chunks) / p
    assert r.step_s > (m + p - 1) * mean_u                                   # longer than the equal-stage formula
    u = [c.forward_s + c.backward_s for c in chunks]
    assert r.step_s == pytest.approx(m * max(u) + sum(u) - max(u))          # slowest stage sets the pace


def test_schedules_run_every_pass_once_in_dependency_order():
    p, m, v = 4, 8, 2
    r = simulate_iteration(equal_costs(p, v, p2p=0.1), plan(p, m, v, "interleaved"))
    passes = [s for s in r.timeline if s.kind in ("forward", "backward")]
    assert len(passes) == 2 * p * v * m
    end = {(s.kind, s.chunk, s.microbatch): s.end_s for s in passes}
    for s in passes:
        if s.kind == "forward" and s.chunk > 0:
            assert s.start_s >= end[("forward", s.chunk - 1, s.microbatch)] + 0.1 - 1e-9
        if s.kind == "backward":
            before = ("backward", s.chunk + 1, s.microbatch) if s.chunk < p * v - 1 else ("forward", s.chunk, s.microbatch)
            assert s.start_s >= end[before] - 1e-9
    for stage in range(p):                     # one compute stream per stage: no two passes overlap
        own = sorted((s for s in r.timeline if s.stage == stage and s.kind in ("forward", "backward", "send")),
                     key=lambda s: s.start_s)
        assert all(a.end_s <= b.start_s + 1e-9 for a, b in zip(own, own[1:]))


def test_megatron_warmup_counts():
    p, m, v = 4, 8, 2
    for stage in range(p):
        order = schedule_order("interleaved", p, v, m, stage)
        warmup = next(i for i, op in enumerate(order) if op[0] == "backward") - 1
        assert warmup == (p - stage - 1) * 2 + (v - 1) * p
        assert schedule_order("1f1b", p, 1, m, stage)[: p - stage] == [("forward", j, 0) for j in range(p - stage)]


def test_gradient_reduction_overlaps_the_backward():
    costs = equal_costs(1, fwd=1.0, bwd=2.0, dp=1.0, layers=8)
    overlapped = simulate_iteration(costs, plan(1, 4, overlap=True)).breakdown
    serial = simulate_iteration(costs, plan(1, 4, overlap=False)).breakdown
    assert serial.dp_comm_s == pytest.approx(1.0)
    # Buckets finish one per layer during the last 2 s backward: only the last bucket is exposed.
    assert overlapped.dp_comm_s == pytest.approx(1.0 / 8)
    assert overlapped.step_s < serial.step_s


def test_breakdown_sums_to_step_and_matches_closed_form():
    data = yaml.safe_load(SUPERPOD.read_text())
    for change in ({}, {"training.parallelism.virtual_stages": 2, "training.parallelism.schedule": "interleaved"}, {"training.parallelism.zero": 3},
                   {"training.parallelism.overlap_grad_reduce": False}):
        b = build(parse_scenario(with_overrides(data, change)))
        des = simulate_iteration(b.costs, b.plan).breakdown
        closed = step_time(b.costs, b.plan)
        assert sum(des.parts().values()) == pytest.approx(des.step_s)
        assert des.step_s == pytest.approx(closed.step_s, rel=0.02)


def test_identical_plans_are_simulated_once():
    costs, p = equal_costs(4), plan(4, 8)
    assert simulate_iteration(costs, p) is simulate_iteration(equal_costs(4), plan(4, 8))


def test_result_carries_one_step_timeline():
    data = yaml.safe_load(SUPERPOD.read_text())
    timeline = run_dict(data).to_dict()["step_timeline"]
    kinds = {s["kind"] for s in timeline}
    assert kinds <= {"forward", "backward", "send", "dp_comm", "overheads", "optimizer"}
    assert {"forward", "backward", "optimizer"} <= kinds
    # the wait for the slowest GPU (stragglers) follows the drawn step
    result = run_dict(data)
    assert max(s["end_s"] for s in timeline) == pytest.approx(result.step_time_s - result.step.straggler_s)
    assert set(timeline[0]) == {"stage", "microbatch", "chunk", "kind", "start_s", "end_s"}


@pytest.mark.parametrize("change", [
    {"training.global_batch": 4096},                                              # 1 stage, 256 micro-batches
    {"training.global_batch": 4096, "training.parallelism.pipeline": 4},
    {"training.global_batch": 8192, "training.parallelism.pipeline": 4, "training.parallelism.virtual_stages": 2,
     "training.parallelism.schedule": "interleaved"},
    {"training.global_batch": 2048, "training.parallelism.pipeline": 8, "training.parallelism.schedule": "gpipe"},
])
def test_a_long_step_is_extended_exactly_from_its_steady_state(change):
    """Many micro-batches are played in the steady state and extended linearly: the same breakdown as playing all."""
    data = {"cluster": {"node": "dgx-h100", "nodes": 2},
            "training": {"model": "llama2-7b", "tokens": "1B", "seq_len": 2048, "global_batch": 64,
                         "parallelism": {"tensor": 1, "pipeline": 1}}}
    b = build(parse_scenario(with_overrides(data, change)))
    assert b.plan.microbatches > 32
    extended = simulate_iteration(b.costs, b.plan).breakdown
    played = with_stragglers(b.costs, _simulate(b.costs, *_plan_key(b.plan, b.plan.microbatches)).breakdown)
    for part, value in played.parts().items():
        assert extended.parts()[part] == pytest.approx(value, rel=1e-9, abs=1e-12), part
    assert extended.step_s == pytest.approx(played.step_s, rel=1e-12)


_SECONDS = st.floats(1e-3, 2.0, allow_nan=False, allow_infinity=False)


@st.composite
def _steps(draw) -> tuple[StepCosts, tuple]:
    """A step of random unequal chunks: every schedule, both overlaps, ZeRO-3 passes, sends free or not."""
    schedule = draw(st.sampled_from(["gpipe", "1f1b", "interleaved"]))
    p = draw(st.integers(1, 6))
    v = draw(st.integers(2, 3)) if schedule == "interleaved" else 1
    m = p * draw(st.integers(1, 4)) if schedule == "interleaved" else draw(st.integers(1, 12))
    chunks = []
    for _ in range(p * v):
        forward, backward, dp = draw(_SECONDS), draw(_SECONDS), draw(st.sampled_from([0.0, 0.01, 0.3]))
        chunks.append(ChunkCost(forward, backward, forward / 4, backward / 5, draw(st.integers(1, 4)),
                                forward / 100, backward / 100, dp, 2 * dp, dp / 10, dp / 5))
    costs = StepCosts(chunks, draw(st.sampled_from([0.0, 0.002, 0.05])), draw(st.sampled_from([0.0, 0.4, 3.0])),
                      draw(st.sampled_from([0.0, 0.2, 2.5])), 0.1, draw(st.sampled_from([0.0, 0.08])), 0.01)
    return costs, (schedule, p, v, m, draw(st.booleans()), draw(st.booleans()))


@settings(max_examples=150, deadline=None)
@given(_steps())
def test_the_loop_plays_the_simpy_reference_step_to_the_last_digit(step):
    """The plain loop the twin plays a step with and the SimPy processes (the reference) give the same breakdown,
    spans and activations in flight, float for float."""
    costs, key = step
    loop = _simulate(costs, *key)
    reference = SimPyPipeline(costs, *key).run()
    assert repr(loop.breakdown) == repr(reference.breakdown)        # reprs: 0 is not 0.0 in a record
    assert repr(loop.played) == repr(reference.played)
    assert loop.peak_in_flight == reference.peak_in_flight
    assert loop.timeline[0] == Span(*(loop.played[0][i] for i in (0, 4, 5, 2, 1, 3)))
