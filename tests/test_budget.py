"""The job simulation's bound on failures: a finishing job is refused up front rather than cut short."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from twin.api import build, run_dict
from twin.api.specs import checkpoint_policy_of, failure_policy_of
from twin.engine.budget import (JobCosts, expected_failures, expected_wall_s, failures_needed, job_costs,
                                per_sample_share)
from twin.engine.job import job_spec, monte_carlo
from twin.errors import ScenarioError
from twin.scenario import parse_scenario

ROOT = Path(__file__).resolve().parents[1]


def costs(**over: float) -> JobCosts:
    values = dict(ideal_s=100.0, train_s=10.0, checkpoint_s=1.0, restart_s=2.0, mtbf_s=100.0, horizon_s=math.inf)
    return JobCosts(**(values | over))


def test_expected_wall_time_by_hand():
    # W = T·(1 + δ/τ) / (1 − (R + cycle/2)/M) = 100·1.1 / (1 − (2 + 5.5)/100) = 110 / 0.925
    assert expected_wall_s(costs()) == pytest.approx(110 / 0.925)
    assert expected_failures(costs()) == pytest.approx(110 / 0.925 / 100)
    assert expected_failures(costs(mtbf_s=math.inf)) == 0.0


def test_jobs_that_never_finish_are_left_to_their_bounds():
    never = costs(restart_s=200.0)                    # fails faster than it restarts
    assert expected_wall_s(never) == math.inf and expected_failures(never) is None
    assert expected_failures(costs(horizon_s=50.0)) is None     # outlasts its horizon
    assert per_sample_share(never, samples=1000, limit=10) == 1
    assert per_sample_share(costs(mtbf_s=math.inf), samples=1000, limit=10) == 1     # nothing ever fails


def test_needed_share_keeps_five_poisson_deviations():
    assert failures_needed(0.0) == 5
    assert failures_needed(100.0) == 100 + 50 + 5


def test_a_finishing_job_beyond_its_share_is_refused_with_what_fits():
    job = costs(ideal_s=9_000.0)
    needed = failures_needed(expected_failures(job))
    limit = 10 * needed
    assert per_sample_share(job, samples=10, limit=limit) == needed
    with pytest.raises(ScenarioError) as refused:
        per_sample_share(job, samples=11, limit=limit)
    assert refused.value.field == "failures.samples"
    assert "at most 10 samples fit" in str(refused.value) and "\n" not in str(refused.value)
    with pytest.raises(ScenarioError, match="not even one sample fits"):
        per_sample_share(job, samples=1, limit=needed - 1)


def _job_args(samples: int):
    data = {
        "cluster": {"node": "dgx-h100", "nodes": 2},
        "training": {"model": "llama2-70b", "tokens": "20B", "seq_len": 4096, "global_batch": 16,
                     "parallelism": {"tensor": 8, "pipeline": 2, "data": 1, "recompute": "full"}},
        "failures": {"enabled": True, "rate_scale": 100, "samples": samples, "seed": 4},
    }
    scenario = parse_scenario(data)
    b = build(scenario)
    tr = scenario.training
    return (failure_policy_of(scenario.failures, scenario.cluster), checkpoint_policy_of(tr.checkpoint), b.cluster,
            b.model.params, tr.precision, tr.tokens, b.plan.gpus, b.plan.data, b.plan.tokens_per_step, 10.0)


def test_job_spec_refuses_up_front_and_what_fits_finishes_every_sample():
    probe = job_spec(*_job_args(1))
    expected = expected_failures(job_costs(probe, probe.profile.mtbf_s(probe.gpus, probe.nodes)))
    assert 10 < expected < 100
    limit = 20 * failures_needed(expected)
    with pytest.raises(ScenarioError, match="at most 20 samples fit"):
        job_spec(*_job_args(21), max_simulated_failures=limit)
    spec = job_spec(*_job_args(20), max_simulated_failures=limit)
    stats = monte_carlo(spec, seed=4, samples=20)
    assert all(s.finished for s in stats.samples)
    counts = [s.interruptions for s in stats.samples]
    # The estimate is the mean of a Poisson count: within 4 standard errors of 20 samples.
    assert abs(sum(counts) / 20 - expected) < 4 * math.sqrt(expected / 20)


def test_too_many_samples_of_a_finishing_run_is_one_line_naming_the_field():
    data = yaml.safe_load((ROOT / "scenarios" / "superpod.yaml").read_text(encoding="utf-8"))
    data["failures"] |= {"rate_scale": 100, "samples": 1000}
    with pytest.raises(ScenarioError) as refused:
        run_dict(data)
    assert refused.value.field == "failures.samples" and "samples fit" in str(refused.value)


def test_the_bound_admits_the_most_samples_of_the_16k_job():
    # The 405B job on 16,384 GPUs expects about 868 failures per sample (docs/engine.md): each of the
    # 1,000 samples failures.samples allows must fit its share of the bound, never be cut short.
    from twin.engine.job import MAX_SIMULATED_FAILURES

    job = costs(ideal_s=868 * 100.0 * 0.925 / 1.1, mtbf_s=100.0)
    assert expected_failures(job) == pytest.approx(868)
    share = per_sample_share(job, samples=1000, limit=MAX_SIMULATED_FAILURES)
    assert share == MAX_SIMULATED_FAILURES // 1000 >= failures_needed(868) == 1021
