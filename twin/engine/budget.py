"""The work bound of the job simulation, checked before any sample runs.

The job engine simulates at most ``limit`` failures over all the samples of one job
(``twin.engine.job.MAX_SIMULATED_FAILURES``); a sample that reaches its share stops
there. For a job that finishes, stopping a sample would report a shorter time to
train than the job takes, so such a run is refused up front with the number of
samples that fit. A job that fails faster than it restarts, or outlasts its horizon,
never finishes: its samples stop at a bound either way and the result says which.

The expected wall time of one sample, with ample spares, is the first-order model
the engine's tests check (docs/engine.md):
W = T·(1 + δ/τ) / (1 − (R + cycle/2)/M), with T the failure-free time, δ/τ the
checkpoint time per unit of training, R a restart, ``cycle`` one interval with its
checkpoint and M the job's MTBF. A sample draws about W/M failures (Poisson).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from twin.errors import ScenarioError

if TYPE_CHECKING:
    from twin.engine.job import JobSpec

# Standard deviations of a Poisson count kept between the expected failures of a sample
# and its share of the bound, so that a sample of a finishing job is not stopped by chance.
# Bernstein's inequality for a Poisson N of mean n, t = 5·sqrt(n) + 5:
# P(N ≥ n + t) ≤ exp(−t² / (2·(n + t/3))) < exp(−7.5) ≈ 6e-4 for any n, and about 4e-6 for large n.
SIGMAS = 5.0


@dataclass(frozen=True)
class JobCosts:
    """What the expected number of failures of one sample depends on, in seconds."""
    ideal_s: float                  # failure-free training time (steps only)
    train_s: float                  # training between two checkpoints
    checkpoint_s: float             # time one checkpoint adds to the wall time
    restart_s: float                # detection + relaunch + reading the checkpoint back
    mtbf_s: float                   # the job's mean time between failures
    horizon_s: float                # the simulation stops here


def job_costs(spec: JobSpec, mtbf_s: float) -> JobCosts:
    """What the expected failures of one sample of ``spec`` depend on (a cycle charged as the engine does)."""
    ck = spec.checkpoint
    train_s = spec.interval_s
    checkpoint_s = ck.stall_s + max(0.0, ck.write_s - train_s) if ck.asynchronous else ck.write_s
    return JobCosts(ideal_s=spec.ideal_s, train_s=train_s, checkpoint_s=checkpoint_s,
                    restart_s=spec.detection_s + spec.relaunch_s + ck.read_s, mtbf_s=mtbf_s,
                    horizon_s=spec.horizon_s)


def expected_wall_s(costs: JobCosts) -> float:
    """Expected wall time of a sample with ample spares; inf when the job makes no progress."""
    if not math.isfinite(costs.mtbf_s):
        return costs.ideal_s
    overhead = costs.checkpoint_s / costs.train_s if costs.train_s > 0 else 0.0
    cycle_s = min(costs.train_s + costs.checkpoint_s, costs.ideal_s * (1 + overhead))
    progress = 1.0 - (costs.restart_s + cycle_s / 2) / costs.mtbf_s
    if progress <= 0:
        return math.inf
    return costs.ideal_s * (1 + overhead) / progress


def expected_failures(costs: JobCosts) -> float | None:
    """Failures one sample of a finishing job is expected to draw; None when it is not expected to finish."""
    wall_s = expected_wall_s(costs)
    if not wall_s < costs.horizon_s:
        return None
    return wall_s / costs.mtbf_s if math.isfinite(costs.mtbf_s) else 0.0


def failures_needed(expected: float) -> int:
    """A per-sample share that a sample expecting ``expected`` failures stays within (SIGMAS margin)."""
    return math.ceil(expected + SIGMAS * math.sqrt(expected) + SIGMAS)


def per_sample_share(costs: JobCosts, samples: int, limit: int) -> int:
    """Each sample's share of ``limit`` simulated failures; refuses a finishing job whose samples would not fit.

    The refusal is one line naming ``failures.samples`` with the number of samples that fit.
    """
    share = max(1, limit // samples)
    expected = expected_failures(costs)
    if expected is None:
        return share                # stops at the horizon or the bound anyway, and says so
    if expected == 0:
        return share                # no failure is ever drawn
    needed = failures_needed(expected)
    if needed > share:
        fit = limit // needed
        advice = (f"at most {fit:,} samples fit" if fit >= 1 else
                  "not even one sample fits; lower failures.rate_scale or training.tokens")
        raise ScenarioError("failures.samples",
                            f"{samples:,} samples of this job would each draw up to about {needed:,} failures "
                            f"({expected:,.0f} expected), beyond their share ({share:,}) of the {limit:,} failures "
                            f"the twin simulates for one job; {advice}")
    return share
