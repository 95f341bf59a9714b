"""How the capacity within the SLO depends on the requests each trial runs, for the shipped serving scenarios.

Run ``python benchmarks/capacity_lengths.py`` (about two minutes on 2 cores). For every deployment of
``scenarios/serve-*.yaml`` it prints the capacity the bisection finds when every trial runs the scenario's
``load.requests`` times 1, 4, 16 and 64 (the search held at that length: no lengthening), then what
``python -m twin capacity`` answers (lengthened until a run four times longer confirms it,
``twin/serving/capacity.py``). The table in docs/serving.md ("Long enough runs") comes from it.
Nothing here is fitted or written.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

from twin.api import load_scenario
from twin.api.serving import deployments
from twin.serving import capacity as search

SCENARIOS = sorted(Path(__file__).resolve().parent.parent.glob("scenarios/serve-*.yaml"))
FACTORS = (1, 4, 16, 64)


def held(spec, rep, requests: int) -> float:
    """The capacity with every trial at ``requests`` requests and no lengthening."""
    return search.capacity(replace(spec, load=replace(spec.load, requests=requests)), rep,
                           max_trial_requests=requests).rate_per_s


def main() -> None:
    header = "".join(f"{'×' + str(f):>10s}" for f in FACTORS)
    print(f"{'scenario':22s} {'deployment':46s} {'requests':>8s}{header}{'answer':>10s} {'over':>7s} {'s':>6s}")
    for path in SCENARIOS:
        for d in deployments(load_scenario(path)):
            if d.replica.memory.kv_blocks <= 0 or not d.spec.slo.any:
                continue
            n = d.spec.load.requests
            rates = "".join(f"{held(d.spec, d.replica, n * f):10.4g}" for f in FACTORS)
            start = time.perf_counter()
            answer = search.capacity(d.spec, d.replica)
            print(f"{path.stem:22s} {d.label[:46]:46s} {n:8,d}{rates}{answer.rate_per_s:10.4g} "
                  f"{answer.requests_per_trial:7,d} {time.perf_counter() - start:6.2f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
