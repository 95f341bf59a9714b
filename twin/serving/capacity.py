"""Level 4s: the highest arrival rate a deployment sustains within its SLO, and the GPUs a target rate needs.

The bisection runs the request-level engine at trial rates between 0 and the
deployment's offline throughput (no rate can be sustained at or above it). A rate is
sustained when the SLO holds (p99 TTFT and p99 TPOT within their targets); TTFT
grows without bound once arrivals outpace the engine, so saturation fails the TTFT
target. Without an SLO the capacity is the offline throughput itself. Requests, their
lengths and the uniform draws behind the arrivals are the same at every trial rate
(only the time scale changes), so the answer is monotone in the rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from twin.serving.deployment import Replica, ServingRun, ServingSpec, simulate

# Bisection stops when the bracket is this narrow relative to the rate.
RELATIVE_TOLERANCE = 0.01
MAX_TRIALS = 20


@dataclass(frozen=True)
class Capacity:
    per_replica_rate_per_s: float       # highest sustained arrival rate of one replica
    rate_per_s: float                   # of the whole deployment
    offline_requests_per_s: float       # the deployment's throughput with every request queued at t = 0
    sweep: tuple[ServingRun, ...]       # every trial, by rate
    slo_bound: bool                     # False when the scenario sets no SLO


@dataclass(frozen=True)
class Sizing:
    target_rate_per_s: float
    replicas: int
    devices: int                        # GPUs, or MIG instances
    gpus: int                           # physical GPUs


def capacity(spec: ServingSpec, rep: Replica) -> Capacity:
    offline = simulate(spec, rep, offline=True)
    ceiling = offline.requests_per_s
    runs: list[ServingRun] = []
    if not spec.slo.any:
        return Capacity(ceiling / rep.replicas, ceiling, ceiling, (), False)
    low, high = 0.0, ceiling
    for _ in range(MAX_TRIALS):
        if high - low <= RELATIVE_TOLERANCE * high:
            break
        rate = (low + high) / 2
        run = simulate(spec, rep, rate_per_s=rate)
        runs.append(run)
        if run.slo_met:
            low = rate
        else:
            high = rate
    runs.sort(key=lambda r: r.rate_per_s or 0.0)
    return Capacity(low / rep.replicas, low, ceiling, tuple(runs), True)


def sizing(cap: Capacity, rep: Replica, target_rate_per_s: float) -> Sizing:
    """Replicas, devices and physical GPUs to serve ``target_rate_per_s`` within the SLO."""
    if cap.per_replica_rate_per_s <= 0:
        return Sizing(target_rate_per_s, 0, 0, 0)
    replicas = math.ceil(target_rate_per_s / cap.per_replica_rate_per_s - 1e-9)
    devices = replicas * rep.devices
    gpus = devices if rep.profile is None else math.ceil(devices / rep.profile.instances)
    return Sizing(target_rate_per_s, replicas, devices, gpus)
