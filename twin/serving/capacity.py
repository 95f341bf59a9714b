"""Level 4s: the highest arrival rate a deployment sustains within its SLO, and the GPUs a target rate needs.

The bisection runs the request-level engine at trial rates between 0 and the
deployment's saturated throughput (its steady state with the queue never empty): no
higher rate is sustained, since the queue, hence TTFT, then grows without bound,
although a finite run of ``load.requests`` requests may not show it yet. Below it a
rate is sustained when the SLO holds (p99 TTFT and p99 TPOT within their targets).
Without an SLO the capacity is the saturated throughput itself. Requests, their lengths
and the uniform draws behind the arrivals are the same at every trial rate (only the
time scale changes), so the answer is monotone in the rate. With Grace offload a
saturated engine admits more sequences than HBM holds and runs slower than at moderate
load, so the bound is conservative there.

A p99 over a finite run misses the bursts a longer run meets, and near saturation those
bursts decide it: Llama 3 8B on eight L4s sustains 39.8 requests/s within its SLO over
1,000 requests a trial, 32.4 over 16,000 and 33.7 over 64,000. So the rate found is
replayed with ``LENGTHEN`` times as many requests; where the SLO fails there, the search
goes on at that length, down from the rate found, until the rate found at one length
meets the SLO over a run ``LENGTHEN`` times longer (``converged``), or a trial would pass
``MAX_TRIAL_REQUESTS`` (not converged: the capacity may be lower).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from twin.serving.deployment import Replica, ServingRun, ServingSpec, simulate

# Bisection stops when the bracket is this narrow relative to the rate.
RELATIVE_TOLERANCE = 0.01
# Full batches of requests the saturated-throughput run queues at least (several generations
# of sequences pass through the engine, so ramp-up and drain are a small part of it).
SATURATION_BATCHES = 8
MAX_TRIALS = 20
# A capacity is confirmed over a run this many times longer than the trials that found it.
LENGTHEN = 4
# The most requests (per replica) a trial may run: past it the capacity is reported as not converged. At 64,000
# the shipped scenarios' p99 has settled (Llama 3 8B on eight L4s: 34.0 requests/s held at 32,000 requests a
# trial, 33.7 at 64,000; benchmarks/capacity_lengths.py), and a trial costs about 0.1 s of CPU (compiled).
MAX_TRIAL_REQUESTS = 65_536
# Below a rate that misses the SLO over longer trials, the next trial rate down (a fraction of it).
STEP_DOWN = 0.85
# A search's trials of at least this many requests (per replica) play the replica engine's compiled loop
# (``engine_compiled``, the same times): the search pays once for loading it and for its tables (0.2-0.3 s),
# which its longer trials repay (the Python loop takes about 13 µs a request, the compiled one about 2 µs). A
# lone run decides by ``engine.COMPILED_FROM_REQUESTS``.
COMPILED_TRIAL_FROM_REQUESTS = 2_000


@dataclass(frozen=True)
class Capacity:
    per_replica_rate_per_s: float       # highest sustained arrival rate of one replica
    rate_per_s: float                   # of the whole deployment
    offline_requests_per_s: float       # the deployment's saturated throughput (``saturated_rate_per_s``)
    sweep: tuple[ServingRun, ...]       # every trial, by rate
    slo_bound: bool                     # False when the scenario sets no SLO
    requests_per_trial: int = 0         # per replica: the longest trial at the capacity rate within the SLO
    converged: bool = True              # it meets the SLO over a run ``LENGTHEN`` times longer
    at_capacity: ServingRun | None = None   # the capacity rate over the scenario's requests, as ``run`` gives it


@dataclass(frozen=True)
class Sizing:
    target_rate_per_s: float
    replicas: int
    devices: int                        # GPUs, or MIG instances
    gpus: int                           # physical GPUs


def saturated_rate_per_s(spec: ServingSpec, rep: Replica, play=simulate) -> float:
    """The deployment's steady-state throughput with its queue never empty (requests/s).

    Every request is queued at t = 0 (at least ``SATURATION_BATCHES`` full batches of them, so
    that the engine runs full for several generations of sequences); the rate is counted between
    the 10th and the 90th percentile of completion times, leaving out the ramp-up and the drain. ``play``: how
    the run is simulated (``simulate``, or a search's ``_trial``).
    """
    count = max(spec.load.requests, SATURATION_BATCHES * spec.engine.max_batch)
    run = play(spec, rep, offline=True, count=count)
    done = np.sort(run.engine.requests.finish_s)
    first, last = int(0.1 * len(done)), int(0.9 * len(done)) - 1
    span = done[last] - done[first]
    if span <= 0:                              # completions in lock-step (fixed lengths): the whole run
        return run.requests_per_s
    return float(rep.replicas * (last - first) / span)


def sustained(rate_per_s: float | None, saturated_per_s: float | None) -> bool | None:
    """Whether an offered rate is sustained: not above the saturated throughput (None offline, or unknown)."""
    return None if rate_per_s is None or saturated_per_s is None else rate_per_s <= saturated_per_s


def capacity(spec: ServingSpec, rep: Replica, grid: tuple[float, ...] = (),
             max_trial_requests: int | None = None) -> Capacity:
    """Bisection over the arrival rate between 0 and the saturated throughput, lengthened until it converges
    (module docstring); ``grid`` adds trial rates at these fractions of the saturated throughput (a sweep to
    draw), at the scenario's own request count; ``max_trial_requests``: the longest trial (default
    ``MAX_TRIAL_REQUESTS``)."""
    limit = MAX_TRIAL_REQUESTS if max_trial_requests is None else max_trial_requests
    ceiling = saturated_rate_per_s(spec, rep, _trial)
    requests = spec.load.requests
    if not spec.slo.any:
        return Capacity(ceiling / rep.replicas, ceiling, ceiling, (), False, requests)
    runs = [_trial(spec, rep, rate_per_s=f * ceiling) for f in grid if f > 0]
    low = max((r.rate_per_s for r in runs if r.slo_met and r.rate_per_s < ceiling), default=0.0)
    high = min((r.rate_per_s for r in runs if r.rate_per_s > low and not (r.slo_met and r.rate_per_s < ceiling)),
               default=ceiling)
    low = _bisected(spec, rep, requests, low, high, runs)
    converged = low <= 0
    while not converged and requests * LENGTHEN <= limit:
        requests *= LENGTHEN
        check = _trial(spec, rep, rate_per_s=low, count=requests)
        runs.append(check)
        if check.slo_met:
            converged = True
            break
        low = _bisected(spec, rep, requests, *_stepped_down(spec, rep, requests, low, runs), runs)
        converged = low <= 0
    own = spec.load.requests
    at = next((r for r in runs if r.rate_per_s == low and r.requests == own), None)
    if at is None and low > 0:
        at = _trial(spec, rep, rate_per_s=low)
    runs.sort(key=lambda r: r.rate_per_s or 0.0)
    return Capacity(low / rep.replicas, low, ceiling, tuple(runs), True, requests, converged, at)


def _trial(spec: ServingSpec, rep: Replica, rate_per_s: float | None = None, offline: bool | None = None,
           count: int | None = None) -> ServingRun:
    """One trial of a search: ``simulate``, in the compiled loop from ``COMPILED_TRIAL_FROM_REQUESTS`` requests."""
    n = count if count is not None else spec.load.requests
    return simulate(spec, rep, rate_per_s, offline, count, compiled=n >= COMPILED_TRIAL_FROM_REQUESTS)


def _bisected(spec: ServingSpec, rep: Replica, requests: int, low: float, high: float,
              runs: list[ServingRun]) -> float:
    """The highest rate in ``[low, high)`` that meets the SLO over ``requests`` requests, to
    ``RELATIVE_TOLERANCE``; each trial appended to ``runs``."""
    for _ in range(MAX_TRIALS):
        if high - low <= RELATIVE_TOLERANCE * high:
            break
        rate = (low + high) / 2
        run = _trial(spec, rep, rate_per_s=rate, count=requests)
        runs.append(run)
        if run.slo_met:
            low = rate
        else:
            high = rate
    return low


def _stepped_down(spec: ServingSpec, rep: Replica, requests: int, high: float,
                  runs: list[ServingRun]) -> tuple[float, float]:
    """A bracket ``(low, high)`` below a rate ``high`` that misses the SLO over ``requests`` requests: trial
    rates ``STEP_DOWN`` apart down from it, to the first that meets it (0 when none of ``MAX_TRIALS`` does)."""
    rate = high
    for _ in range(MAX_TRIALS):
        rate *= STEP_DOWN
        run = _trial(spec, rep, rate_per_s=rate, count=requests)
        runs.append(run)
        if run.slo_met:
            return rate, high
        high = rate
    return 0.0, high


def sizing(per_replica_rate_per_s: float, devices_per_replica: int, instances_per_gpu: int,
           target_rate_per_s: float) -> Sizing:
    """Replicas, devices and physical GPUs to serve ``target_rate_per_s`` within the SLO: ⌈target ÷ the
    replica's capacity⌉ replicas, their GPUs or MIG instances packed onto whole GPUs."""
    if per_replica_rate_per_s <= 0:
        return Sizing(target_rate_per_s, 0, 0, 0)
    replicas = math.ceil(target_rate_per_s / per_replica_rate_per_s - 1e-9)
    devices = replicas * devices_per_replica
    return Sizing(target_rate_per_s, replicas, devices, math.ceil(devices / instances_per_gpu))
