"""The job model's rules (twin/jobs/), checked on small cases worked by hand.

Both the single-job engine and the cluster use these rules; the cases below are the
arithmetic of docs/engine.md's checkpoint cycle, done on paper.
"""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import pytest

from twin.jobs.checkpoint import CheckpointCost
from twin.jobs.failures import Component, FailureProfile, drawn_component
from twin.jobs.model import Phase
from twin.jobs.rules import (checkpoint_cycle, checkpoint_plan, checkpoints_before_end, durable_steps,
                             fluid_rate_per_s, interrupted, interval_iterations, requeue_s, restart_s, stall_share,
                             young_daly_interval_s)

ROOT = Path(__file__).resolve().parents[1]


def cost(write_s: float, stall_s: float | None = None, asynchronous: bool = False) -> CheckpointCost:
    """A checkpoint that takes ``write_s`` to write and to read, stalling ``stall_s`` (the write when sync)."""
    stall = write_s if stall_s is None else stall_s
    return CheckpointCost(1e9, 1e9 / write_s, 1e9 / write_s, write_s, write_s, stall, asynchronous)


SYNC = cost(5.0)                                   # writes for 5 s, training stopped meanwhile
ASYNC = cost(30.0, stall_s=1.0, asynchronous=True)  # stops 1 s for the host copy, durable 30 s later


def test_young_daly_interval_by_hand():
    # δ = 2 s, M = 100 s: x = δ/2M = 0.01, sqrt(2δM) = 20, τ = 20·(1 + 0.1/3 + 0.01/9) − 2 = 18.6889 s
    assert young_daly_interval_s(2.0, 100.0) == pytest.approx(20 * (1 + 0.1 / 3 + 0.01 / 9) - 2)
    assert young_daly_interval_s(2.0, 100.0) == pytest.approx(18.68889, abs=1e-5)
    assert young_daly_interval_s(300.0, 100.0) == 100.0      # δ ≥ 2M: checkpoint once per MTBF
    assert young_daly_interval_s(0.0, 100.0) == 0.0
    assert young_daly_interval_s(2.0, math.inf) == math.inf
    # Young's first order for δ << M
    assert young_daly_interval_s(1.0, 1e8) == pytest.approx(math.sqrt(2e8), rel=1e-4)


def test_interval_in_iterations():
    stall_2s = cost(2.0)
    assert interval_iterations(None, 1.0, stall_2s, 100.0) == 19             # round(18.69)
    assert interval_iterations(None, 1.0, cost(50.0, 2.0, True), 100.0) == 50   # async: at least one write
    assert interval_iterations(30.0, 7.0, stall_2s, 100.0) == 4              # a set interval: round(30/7)
    assert interval_iterations(0.1, 7.0, stall_2s, 100.0) == 1               # at least every step
    assert interval_iterations(None, 1.0, stall_2s, math.inf) is None        # no failures: never


def test_checkpoint_cycle_by_hand():
    sync = checkpoint_cycle(10, 2.0, SYNC)
    assert (sync.train_s, sync.checkpoint_s, sync.durable_lag_s, sync.cycle_s) == (20.0, 5.0, 0.0, 25.0)
    # async: 1 s stall, plus the 30 − 20 = 10 s the previous write still needs
    asy = checkpoint_cycle(10, 2.0, ASYNC)
    assert (asy.train_s, asy.checkpoint_s, asy.durable_lag_s, asy.cycle_s) == (20.0, 11.0, 30.0, 31.0)
    assert checkpoint_cycle(100, 2.0, ASYNC).checkpoint_s == 1.0           # the write ends within the cycle
    assert checkpoint_cycle(None, 2.0, SYNC).train_s == math.inf


def test_checkpoints_before_the_end():
    assert checkpoints_before_end(100, 10) == 9            # none after the last step
    assert checkpoints_before_end(101, 10) == 10
    assert checkpoints_before_end(5, 10) == 0
    assert checkpoints_before_end(100, None) == 0


def test_progress_lost_on_a_failure_synchronous():
    cycle = checkpoint_cycle(10, 2.0, SYNC)                # 20 s training + 5 s checkpoint
    # 60 s in: two cycles (50 s), then 10 s of training: both checkpoints durable, 10 s lost
    cut = interrupted(60.0, cycle, 9)
    assert (cut.cycles, cut.in_checkpoint, cut.trained_s, cut.saved, cut.checkpoint_s) == (2, False, 50.0, 2, 10.0)
    assert cut.lost_s(cycle) == 10.0
    # 72 s in: caught writing the third checkpoint (2 s into it): its 20 s of training are lost
    cut = interrupted(72.0, cycle, 9)
    assert (cut.in_checkpoint, cut.trained_s, cut.saved, cut.checkpoint_s) == (True, 60.0, 2, 12.0)
    assert cut.lost_s(cycle) == 20.0


def test_progress_lost_on_a_failure_asynchronous():
    cycle = checkpoint_cycle(10, 2.0, ASYNC)               # 20 s training + 11 s stall; durable 30 s later
    # 50 s in: the first snapshot (taken at 20 s) is durable only at 20 + 1 + 30 = 51 s: all 39 s are lost
    cut = interrupted(50.0, cycle, 9)
    assert (cut.cycles, cut.trained_s, cut.saved) == (1, 39.0, 0)
    assert cut.lost_s(cycle) == 39.0
    # 62 s in: the first is durable, the second is not: 40 − 20 = 20 s lost
    cut = interrupted(62.0, cycle, 9)
    assert (cut.trained_s, cut.saved, cut.lost_s(cycle)) == (40.0, 1, 20.0)


def test_without_checkpoints_a_failure_loses_everything():
    cycle = checkpoint_cycle(None, 2.0, SYNC)
    cut = interrupted(1234.5, cycle, 0)
    assert (cut.trained_s, cut.saved, cut.checkpoint_s, cut.lost_s(cycle)) == (1234.5, 0, 0.0, 1234.5)


def test_fluid_progress_kept_across_a_failure():
    assert durable_steps(57.3, 10) == 50
    assert durable_steps(9.9, 10) == 0
    assert durable_steps(57.3, None) == 0.0
    assert durable_steps(3.7, 1) == 3.0                    # a service: the second in progress is lost


def test_fluid_rate_spreads_the_stall_and_matches_the_cycle():
    # 10 steps of 2 s and one 5 s stall: 25 s per 10 steps
    assert fluid_rate_per_s(2.0, SYNC, 10) == pytest.approx(0.4)
    assert fluid_rate_per_s(2.0, SYNC, None) == 0.5
    assert stall_share(2.0, SYNC, 10) == pytest.approx(0.2)
    assert stall_share(2.0, SYNC, None) == 0.0
    # invariant: a synchronous cycle takes as long in the fluid picture as in the discrete one
    for every, step in ((1, 0.3), (7, 1.9), (500, 12.0)):
        assert every / fluid_rate_per_s(step, SYNC, every) == pytest.approx(checkpoint_cycle(every, step, SYNC).cycle_s)


def test_restart_costs():
    assert restart_s(600.0, 300.0, 120.0) == 1020.0        # detection + relaunch + read
    assert requeue_s(300.0, 120.0) == 420.0                 # after a wait: the failure is known


def test_a_failure_belongs_to_a_component_in_proportion_to_its_rate():
    parts = tuple(Component(name, "gpu", "gpu", rate, True) for name, rate in (("a", 1.0), ("b", 3.0)))
    profile = FailureProfile("p", "", "", parts)
    cumulative = [0.25, 1.0]
    assert drawn_component(profile, cumulative, 0.0).name == "a"
    assert drawn_component(profile, cumulative, 0.2499).name == "a"
    assert drawn_component(profile, cumulative, 0.25).name == "b"
    assert drawn_component(profile, cumulative, 0.9999).name == "b"
    draws = [drawn_component(profile, cumulative, (i + 0.5) / 1000).name for i in range(1000)]
    assert draws.count("b") == 750


def test_phases_read_as_their_names():
    assert Phase.TRAIN == "train" and Phase.REPAIR_WAIT == "repair_wait"
    assert json.dumps({"phase": Phase.CHECKPOINT}) == '{"phase": "checkpoint"}'
    assert f"{Phase.RESTART}" == "restart"


def test_operations_uses_the_rules_not_the_engines():
    """The cluster takes the job rules from twin.jobs and nothing from the training engine or serving."""
    rules_users = set()
    for path in sorted((ROOT / "twin" / "operations").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith(("twin.engine", "twin.serving")), f"{path.name}: {node.module}"
                if node.module == "twin.jobs.rules":
                    rules_users.add(path.name)
    assert rules_users


def test_both_kinds_answer_the_whole_interface():
    from twin.operations.progress import ClusterJob, ServiceJob, TrainingJob

    assert {"compute_gpus", "activity", "set_speed", "place", "used_nodes"} <= ClusterJob.__abstractmethods__
    assert not TrainingJob.__abstractmethods__ and not ServiceJob.__abstractmethods__


def test_checkpoint_plan_for_both_engines():
    """A 70B model in bf16 checkpoints 70e9 · (2 + 12) bytes; its interval follows its own failure rate."""
    from twin.api import build
    from twin.jobs.checkpoint import CheckpointPolicy
    from twin.jobs.failures import failure_profile
    from twin.scenario import parse_scenario

    cluster = build(parse_scenario({
        "cluster": {"node": "dgx-h100", "nodes": 2, "storage": {"read": "60 GB/s", "write": "30 GB/s"}},
        "training": {"model": "llama2-70b", "tokens": "1B", "seq_len": 4096, "global_batch": 16,
                     "parallelism": {"tensor": 8, "pipeline": 2, "data": 1, "recompute": "full"}}})).cluster
    auto = CheckpointPolicy()
    cost, every = checkpoint_plan(auto, 70e9, "bf16", False, cluster, 2, 16, 10.0, None)
    assert cost.bytes == pytest.approx(70e9 * 14) and every is None          # no failures: no checkpoints
    assert cost.write_s == pytest.approx(70e9 * 14 / 30e9)
    profile = failure_profile("llama3-h100", rate_scale=1000)
    _, every = checkpoint_plan(auto, 70e9, "bf16", False, cluster, 2, 16, 10.0, profile)
    tau = young_daly_interval_s(cost.stall_s, profile.mtbf_s(16, 2))
    assert every == max(1, round(tau / 10.0))
    _, every = checkpoint_plan(CheckpointPolicy(interval_s=3600.0), 70e9, "bf16", False, cluster, 2, 16, 10.0, profile)
    assert every == 360
