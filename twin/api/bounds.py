"""Work a ``jobs:`` scenario asks of the cluster simulation, bounded before it starts.

The scheduler keeps its queue in order (``twin.operations.scheduler.Queue``) and a pass reads the jobs
that start, the blocked head and at most ``depth`` jobs behind it: its work grows as arrivals × the
jobs a pass reads, which is the queue while it is short and ``SCAN_JOBS`` once it is long. A stream
of jobs that asks for more GPU-time than the cluster gives keeps the queue long at every arrival:
100,000 jobs at one a minute on 32 GPUs read about ten million queued jobs. ``queue_work`` estimates
that work with a fluid model of the queue (GPU-seconds asked, drained at the cluster's GPUs), from the
jobs as drawn or read, and ``check_queue_work`` refuses a scenario past ``MAX_QUEUE_WORK`` in one line.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from twin.errors import ScenarioError
from twin.operations.jobs import JobRequest
from twin.operations.scheduler import DEFAULT_BACKFILL_DEPTH

# Jobs one scheduling pass reads from a long queue: the blocked head and the backfill depth behind it.
SCAN_JOBS = 1 + DEFAULT_BACKFILL_DEPTH
# Queued jobs the scheduler may read, summed over arrivals: measured at about 4 µs a job read on one core
# (50,000 jobs in a month on the 127-node SuperPOD at ten times its load read about 5 million: 18.5 CPU-s),
# this keeps the simulation under about 10 s. The shipped month of shared use (scenarios/superpod-shared.yaml)
# reads about 3,000.
MAX_QUEUE_WORK = 2_000_000


def queue_work(jobs: Iterable[tuple[float, float]], gpus: int) -> float:
    """Σ over arrivals of (1 + the jobs a pass reads then: those waiting, at most ``SCAN_JOBS``), for (submit
    time s, GPU-seconds) pairs on ``gpus`` GPUs. Jobs waiting are the GPU-seconds not yet served over the mean
    GPU-seconds of a job.
    """
    ordered = sorted(jobs)
    if not ordered or gpus <= 0:
        return float(len(ordered))
    per_job = max(sum(w for _, w in ordered) / len(ordered), 1e-9)
    backlog = work = 0.0
    clock = ordered[0][0]
    for submit, gpu_s in ordered:
        backlog = max(0.0, backlog - gpus * (submit - clock)) + gpu_s
        clock = submit
        work += 1.0 + min(backlog / per_job, SCAN_JOBS)
    return work


def check_queue_work(requests: Iterable[JobRequest], gpus: int, field: str = "jobs") -> None:
    """Refuse jobs whose queue would outgrow ``MAX_QUEUE_WORK`` (jobs measured in tokens are left out:
    at most the 10,000 of jobs.list)."""
    timed = [(r.submit_s, r.gpus * r.duration_s) for r in requests if r.duration_s is not None]
    work = queue_work(timed, gpus)
    if work > MAX_QUEUE_WORK:
        raise ScenarioError(field, _too_much(len(timed), gpus, work))


def capped_lognormal_mean(median: float, sigma: float, cap: float) -> float:
    """E[min(X, cap)] for a log-normal X of this median and log standard deviation."""
    if sigma <= 0:
        return min(median, cap)
    if cap == float("inf"):
        return median * math.exp(sigma ** 2 / 2)
    mu, z = math.log(median), math.log(cap)

    def phi(x: float) -> float:
        return 0.5 * (1 + math.erf(x / math.sqrt(2)))

    return (math.exp(mu + sigma ** 2 / 2) * phi((z - mu - sigma ** 2) / sigma)
            + cap * (1 - phi((z - mu) / sigma)))


def generator_work(jobs: int, rate_per_s: float, gpu_s_per_job: float, gpus: int) -> float:
    """``queue_work`` of ``jobs`` arriving evenly at ``rate_per_s``, each asking ``gpu_s_per_job``, in closed
    form: the queue grows by g = 1 - 1/load jobs an arrival when the load is above 1, and a pass reads
    g·i jobs at arrival i until that reaches ``SCAN_JOBS``."""
    load = rate_per_s * gpu_s_per_job / max(gpus, 1)
    growth = max(0.0, 1.0 - 1.0 / load) if load > 0 else 0.0
    if growth == 0.0:
        return float(jobs)
    short = min(jobs, math.floor(SCAN_JOBS / growth))     # arrivals before the queue outgrows one pass's read
    return jobs + growth * short * (short + 1) / 2 + SCAN_JOBS * (jobs - short)


def check_generator_work(jobs: int, rate_per_s: float, gpu_s_per_job: float, gpus: int,
                         field: str = "jobs.generator") -> None:
    """Refuse a generator whose jobs would outgrow ``MAX_QUEUE_WORK``, before any job is drawn."""
    work = generator_work(jobs, rate_per_s, gpu_s_per_job, gpus)
    if work > MAX_QUEUE_WORK:
        raise ScenarioError(field, _too_much(jobs, gpus, work))


def _too_much(jobs: int, gpus: int, work: float) -> str:
    return (f"{jobs:,} jobs ask for more GPU-time than the cluster's {gpus:,} GPUs give: about "
            f"{work / max(jobs, 1):,.0f} queued jobs to read at each arrival, past what the scheduler reads in bounded "
            f"time ({MAX_QUEUE_WORK:,} over all arrivals); write fewer jobs, a lower rate or more nodes")
