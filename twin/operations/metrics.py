"""What a cluster run answers: waits, completion and slowdown, utilisation, fragmentation, power over time.

Queue wait = start - submit (a carbon-aware hold counts as waiting; it is also
reported alone). Turnaround = end - submit. Slowdown = turnaround / the job's run
time alone, packed and without failures (1 for a job that neither waits nor is
slowed). Step slowdown = the job's mean step time while training / its packed step
time: what its placement and the other jobs' traffic cost it. Quantiles are
linear interpolations between order statistics (numpy's default).

The time series are step functions from the event log; the timeline reports their
mean over bins of at least an hour (at most ``MAX_BINS`` bins), and the peak
facility power in each bin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from twin import quantiles
from twin.operations.records import FINISHED, ClusterRun, JobOutcome
from twin.units import SECONDS_PER_HOUR

# Bins of the reported timeline, at most: a month in hours is 720.
MAX_BINS = 1000


@dataclass(frozen=True)
class Quantiles:
    count: int
    mean: float | None
    p50: float | None
    p90: float | None
    p99: float | None


def percentiles(values: list[float] | np.ndarray) -> Quantiles:
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return Quantiles(0, None, None, None, None)
    p50, p90, p99 = quantiles.percentiles(v, [50, 90, 99])
    return Quantiles(int(v.size), float(v.mean()), float(p50), float(p90), float(p99))


def size_class(gpus: int) -> str:
    """Power-of-two bands of GPUs: '1 GPU', '2-3 GPUs', '8-15 GPUs', ..."""
    low = 1 << (gpus.bit_length() - 1)
    return "1 GPU" if low == 1 else f"{low}-{2 * low - 1} GPUs"


def _grouped(jobs: list[JobOutcome], value, key) -> dict[str, Quantiles]:
    groups: dict[str, list[float]] = {}
    for j in jobs:
        v = value(j)
        if v is not None:
            groups.setdefault(key(j), []).append(v)
    return {k: percentiles(groups[k]) for k in sorted(groups, key=_order_key)}


def _order_key(label: str) -> tuple:
    head = label.split(" ")[0].split("-")[0]
    return (0, int(head), label) if head.isdigit() else (1, 0, label)


@dataclass(frozen=True)
class Waits:
    all: Quantiles
    by_tenant: dict[str, Quantiles]
    by_size: dict[str, Quantiles]
    hold: Quantiles                # carbon-aware holds of the deferred jobs


@dataclass(frozen=True)
class Completion:
    finished: int
    timed_out: int
    unfinished: int                  # running or queued at the horizon
    turnaround_s: Quantiles
    slowdown: Quantiles
    step_slowdown: Quantiles       # mean step time / packed step time, over jobs that trained
    spanning_jobs: int               # jobs that started over more than one scalable unit
    step_slowdown_spanning: Quantiles


def waits(jobs: tuple[JobOutcome, ...]) -> Waits:
    started = [j for j in jobs if j.start_s is not None]
    return Waits(
        percentiles([j.wait_s for j in started]),
        _grouped(started, lambda j: j.wait_s, lambda j: j.tenant),
        _grouped(started, lambda j: j.wait_s, lambda j: size_class(j.gpus)),
        percentiles([j.carbon_hold_s for j in jobs if j.carbon_hold_s > 0]),
    )


def completion(jobs: tuple[JobOutcome, ...]) -> Completion:
    done = [j for j in jobs if j.status == FINISHED]
    trained = [j for j in jobs if j.start_s is not None and j.iterations_done > 0]
    spanning = [j for j in trained if j.scalable_units > 1]
    return Completion(
        finished=len(done),
        timed_out=sum(j.status == "timeout" for j in jobs),
        unfinished=sum(j.status == "unfinished" for j in jobs),
        turnaround_s=percentiles([j.turnaround_s for j in done]),
        slowdown=percentiles([j.turnaround_s / j.ideal_s for j in done]),
        step_slowdown=percentiles([j.mean_step_s / j.packed_step_s for j in trained]),
        spanning_jobs=sum(j.scalable_units > 1 for j in jobs if j.start_s is not None),
        step_slowdown_spanning=percentiles([j.mean_step_s / j.packed_step_s for j in spanning]),
    )


@dataclass(frozen=True)
class Utilisation:
    gpus: int
    allocated: float                 # mean share of the GPUs held by jobs
    busy: float                      # mean share of the GPUs training or serving
    gpu_hours_allocated: float       # integral of the GPUs held
    gpu_hours_jobs: float            # the jobs' own sum: equal to the above
    fragmented_gpus: float           # mean free GPUs no waiting job can use
    fragmented: float                # as a share of the GPUs


@dataclass(frozen=True)
class PowerUse:
    pue: float
    mean_facility_w: float
    peak_facility_w: float
    limit_w: float | None            # facility power available (jobs.power_limit)
    hours_over_limit: float
    share_over_limit: float


@dataclass(frozen=True)
class Timeline:
    """Means over bins (and the peak facility power) of the cluster's step functions."""
    bin_s: float
    start_s: tuple[float, ...]
    gpus_allocated: tuple[float, ...]
    gpus_busy: tuple[float, ...]
    queued: tuple[float, ...]
    running: tuple[float, ...]
    fragmented_gpus: tuple[float, ...]
    facility_w: tuple[float, ...]
    facility_peak_w: tuple[float, ...]


def _durations(run: ClusterRun) -> np.ndarray:
    return np.diff(np.append(run.series.t_s, run.end_s))


def _mean(run: ClusterRun, values: np.ndarray) -> float:
    dt = _durations(run)
    return float((values * dt).sum() / dt.sum()) if dt.sum() > 0 else float(values[-1]) if len(values) else 0.0


def utilisation(run: ClusterRun) -> Utilisation:
    s, dt = run.series, _durations(run)
    mean_fragmented = _mean(run, s.fragmented_gpus)
    return Utilisation(
        gpus=run.gpus_total,
        allocated=_mean(run, s.gpus_allocated) / run.gpus_total,
        busy=_mean(run, s.gpus_busy) / run.gpus_total,
        gpu_hours_allocated=float((s.gpus_allocated * dt).sum()) / SECONDS_PER_HOUR,
        gpu_hours_jobs=float(sum(j.gpu_hours for j in run.jobs)),
        fragmented_gpus=mean_fragmented,
        fragmented=mean_fragmented / run.gpus_total,
    )


def power_use(run: ClusterRun, pue: float, limit_w: float | None) -> PowerUse:
    s, dt = run.series, _durations(run)
    facility = s.it_w * pue
    over = float(dt[facility > limit_w].sum()) if limit_w is not None else 0.0
    return PowerUse(pue, _mean(run, facility), float(facility.max(initial=0.0)), limit_w, over / SECONDS_PER_HOUR,
                    over / float(dt.sum()) if dt.sum() > 0 else 0.0)


def timeline(run: ClusterRun, pue: float) -> Timeline:
    s = run.series
    end = max(run.end_s, SECONDS_PER_HOUR)
    bin_s = SECONDS_PER_HOUR * max(1, math.ceil(end / SECONDS_PER_HOUR / MAX_BINS))
    edges = np.arange(0.0, end + bin_s, bin_s)
    edges[-1] = min(edges[-1], max(end, edges[-2] + 1e-9))
    t = np.append(s.t_s, run.end_s)

    def mean(values: np.ndarray) -> tuple[float, ...]:
        cumulative = np.concatenate([[0.0], np.cumsum(values * np.diff(t))])
        at = np.interp(edges, t, cumulative)
        return tuple(float(v) for v in np.diff(at) / np.diff(edges))

    facility = s.it_w * pue
    first = np.maximum(0, np.searchsorted(s.t_s, edges[:-1], side="right") - 1)
    last = np.maximum(first, np.searchsorted(s.t_s, edges[1:], side="left") - 1)
    peak = tuple(float(facility[a:b + 1].max()) for a, b in zip(first, last))
    return Timeline(bin_s, tuple(float(e) for e in edges[:-1]), mean(s.gpus_allocated), mean(s.gpus_busy),
                    mean(s.queued), mean(s.running), mean(s.fragmented_gpus), mean(facility), peak)
