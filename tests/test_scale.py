"""Training at scale: the slowest of N GPUs and DeepSpeed's lockstep pipeline, against hand-computed cases."""

from __future__ import annotations

import math

import pytest

from twin.api import run_dict
from twin.engine.deepspeed_pipe import lockstep_pipeline, pass_at
from twin.engine.stage_costs import ChunkCost, StepCosts
from twin.engine.step import step_time
from twin.engine.stragglers import (PER_GPU_SPREAD, SINHA_AVERAGE_VARIATION, SINHA_CLUSTER_GPUS,
                                    expected_max_standard_normal, straggler_fraction)
from twin.workload.plan import ParallelPlan


def test_expected_maximum_of_n_normals_matches_exact_values_and_grows_with_n():
    assert expected_max_standard_normal(1) == 0.0
    # Exact: E[max of 2] = 1/sqrt(pi); E[max of 1000] = 3.2414 (Harter 1961 tables)
    assert expected_max_standard_normal(2) == pytest.approx(1 / math.sqrt(math.pi), rel=0.05)
    assert expected_max_standard_normal(1000) == pytest.approx(3.2414, rel=0.01)
    values = [expected_max_standard_normal(n) for n in (2, 8, 64, 512, 4096, 16384, 65536)]
    assert values == sorted(values) and len(set(values)) == len(values)


def test_spread_reproduces_sinhas_range_and_the_wait_grows_with_gpus():
    assert 2 * PER_GPU_SPREAD * expected_max_standard_normal(SINHA_CLUSTER_GPUS) == pytest.approx(
        SINHA_AVERAGE_VARIATION)
    waits = [straggler_fraction(n, PER_GPU_SPREAD) for n in (1, 8, 1024, 16384)]
    assert waits[0] == 0.0 and waits == sorted(waits)
    assert 0.04 < waits[-1] < 0.06          # about 5% of compute on 16k GPUs
    assert straggler_fraction(16384, 0.0) == 0.0


def plan(p: int, m: int, schedule: str) -> ParallelPlan:
    return ParallelPlan(tensor=1, pipeline=p, data=1, expert=1, microbatch=1, virtual_stages=1, schedule=schedule,
                        sequence_parallel=False, recompute="none", zero=0, overlap_grad_reduce=False,
                        overlap_param_gather=False, global_batch=m, seq_len=1)


def costs(p: int, fwd: float = 1.0, bwd: float = 2.0, p2p: float = 0.0, straggler: float = 0.0) -> StepCosts:
    return StepCosts([ChunkCost(fwd, bwd, 0.0, 0.0, 4)] * p, p2p, 0.0, 0.0, 0.0, straggler_fraction=straggler)


def test_deepspeed_runs_every_pass_once_per_stage_in_its_step_order():
    p, m = 4, 6
    for stage in range(p):
        passes = [pass_at(k, stage, p, m) for k in range(2 * (m + p - 1))]
        done = [x for x in passes if x is not None]
        assert sorted(done) == sorted([("forward", j) for j in range(m)] + [("backward", j) for j in range(m)])
        assert passes[stage] == ("forward", 0)                        # stage s starts at step s
        assert passes[2 * p - 1 - stage] == ("backward", 0)


def test_deepspeed_lockstep_by_hand():
    # p = 2, m = 2, F = 1, B = 2: steps F, F, B, B, B, B (a stage's forward waits for its neighbour's backward)
    assert lockstep_pipeline(costs(2), plan(2, 2, "deepspeed")).pipeline_s == pytest.approx(2 * 1 + 4 * 2)
    # Megatron's 1F1B: (m + p - 1)(F + B) = 9
    assert step_time(costs(2), plan(2, 2, "1f1b")).step_s == pytest.approx(9.0)
    # each step adds a send and a receive
    assert lockstep_pipeline(costs(2, p2p=0.1), plan(2, 2, "deepspeed")).sends_s == pytest.approx(6 * 2 * 0.1)


@pytest.mark.parametrize("p", [2, 4, 8, 16])
def test_deepspeed_at_one_microbatch_per_stage_is_slower_than_1f1b(p):
    ds = step_time(costs(p, p2p=0.01), plan(p, p, "deepspeed"))
    megatron = step_time(costs(p, p2p=0.01), plan(p, p, "1f1b"))
    assert ds.step_s > megatron.step_s
    assert ds.lockstep_s > 0 and megatron.lockstep_s == 0
    assert sum(v for k, v in ds.parts().items()) == pytest.approx(ds.step_s)
    assert ds.bubble_s == pytest.approx((p - 1) * 3.0)               # 1F1B's fill and drain of the passes


def test_straggler_part_is_its_own_and_adds_to_the_step():
    plain = step_time(costs(4), plan(4, 8, "1f1b"))
    waiting = step_time(costs(4, straggler=0.05), plan(4, 8, "1f1b"))
    assert waiting.straggler_s == pytest.approx(0.05 * plain.compute_s)
    assert waiting.step_s == pytest.approx(plain.step_s + waiting.straggler_s)
    assert sum(waiting.parts().values()) == pytest.approx(waiting.step_s)


def scenario(nodes: int, stragglers: bool) -> dict:
    return {"cluster": {"node": "dgx-a100-80gb", "nodes": nodes},
            "training": {"model": "llama2-7b", "tokens": "1B", "seq_len": 2048, "global_batch": 512,
                         "precision": "bf16", "stragglers": stragglers,
                         "parallelism": {"tensor": 8, "pipeline": 1, "data": nodes, "microbatch": 1}}}


def test_stragglers_switch_off_and_cost_more_on_more_gpus():
    off = run_dict(scenario(4, False))
    small, large = run_dict(scenario(4, True)), run_dict(scenario(64, True))
    assert off.step.straggler_s == 0.0
    assert small.step.step_s == pytest.approx(off.step.step_s + small.step.straggler_s)
    assert large.step.straggler_s / large.step.compute_s > small.step.straggler_s / small.step.compute_s > 0
