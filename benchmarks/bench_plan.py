"""Speed of studies: plans per second in a plan search, points per second in a sweep.

``python benchmarks/bench_plan.py`` prints:

1. **Plan search, closed form, one process, SuperPOD scenario** (``scenarios/superpod.yaml``,
   992 GPUs): the closed-form pass of ``python -m twin plan`` on a cold fabric (its routes,
   collective rates and summary built on the way), as distinct plans evaluated per second
   of wall clock and of this process's CPU time (the CPU figure holds on a shared machine).
   Beside it, the same plans through the whole API one by one (a scenario validated and
   simulated in closed form per plan), the way a search had to go before plans were priced
   on one prepared scenario. Calculon's exhaustive search evaluates about 86 plans per
   second on the same 2 cores.
2. **Sweep**: ``--points`` points (default 100,000) of a study of the SuperPOD scenario with
   failures, run by ``twin sweep`` on ``--workers`` local processes (default 2): points per
   second and the wall time. Its slowest keys come first, so that each batch of points
   shares its cluster and the engines' caches.

``--quick`` runs a 2,000-point sweep instead.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from twin.api import estimate, parse_scenario, prepare, scenario_data, simulate, with_overrides
from twin.errors import InfeasibleError
from twin.network.fabric_cache import _cached_fabric, _cached_graph
from twin.studies.executor import executor
from twin.cores import one_core
from twin.studies.search import _Bound, _closed_form_pass, _Tally
from twin.studies.space import Axis, Space, space
from twin.studies.sweep import sweep

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "superpod.yaml"
CALCULON_PLANS_PER_S = 86.0
# 3 × 3 × 10 × 5 × 6 × 2 × 21 = 113,400 points; the first keys vary slowest.
SWEEP = ["cluster.nodes=64,96,127", "cluster.gpu_power_cap=500W,600W,700W",
         "site.country=FR,DE,US,SE,PL,NL,IE,ES,IT,FI", "site.pue=1.1..1.5:0.1",
         "site.gpu_hour_price=aws,azure,gcp,lambda,modal,list", "site.accounting=full,gpu-tdp",
         "site.electricity_price=0.05..0.25:0.01 EUR/kWh"]


def plan_search() -> None:
    data = scenario_data(SCENARIO)
    rates = []
    for _ in range(3):                                   # best of three, each on a cold fabric
        _cached_fabric.cache_clear()
        _cached_graph.cache_clear()
        wall, cpu = time.perf_counter(), time.process_time()
        prepared = prepare(parse_scenario(data))
        tally = _Tally()
        _closed_form_pass(prepared, {}, [], tally, 10**9, _Bound(0))     # every sized plan evaluated
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        rates.append((tally.evaluated / wall, tally.evaluated / cpu, tally))
    wall_rate, cpu_rate, tally = max(rates, key=lambda r: r[1])
    print(f"plan search, closed form, SuperPOD ({tally.considered:,} plans of the space, {tally.evaluated:,} "
          f"evaluated, {tally.considered - tally.evaluated - tally.rejected:,} pruned):")
    print(f"  {wall_rate:8,.0f} plans/s wall clock   {cpu_rate:8,.0f} plans/s of CPU   "
          f"({cpu_rate / CALCULON_PLANS_PER_S:,.0f}x Calculon's {CALCULON_PLANS_PER_S:.0f}/s)")

    sample = list(itertools.islice(_fitting_requests(prepare(parse_scenario(data))), 40))
    wall, cpu = time.perf_counter(), time.process_time()
    for request in sample:
        settings = {f"training.parallelism.{k}": getattr(request, k) for k in
                    ("tensor", "pipeline", "microbatch", "virtual_stages", "schedule", "recompute", "zero")}
        scenario = parse_scenario(with_overrides(data, settings | {"failures.enabled": False}))
        simulate(scenario, closed_form=True)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"  {len(sample) / wall:8,.0f} plans/s wall clock   {len(sample) / cpu:8,.0f} plans/s of CPU   "
          "through the whole API, a scenario validated and simulated per plan")


def _fitting_requests(prepared):
    """Plans of the space that fit, in search order."""
    from twin.studies.search import plan_space

    for request in plan_space(prepared):
        try:
            guess = estimate(prepared, request)
        except InfeasibleError:
            continue
        if guess.memory_fits:
            yield replace(request, data=None)


def sweep_speed(points: int, workers: int) -> None:
    study = space(SWEEP)
    if points < len(study):                              # the first points of the grid, paired
        combos = list(itertools.islice(itertools.product(*(a.values for a in study.axes)), points))
        study = Space(tuple(Axis(a.key, tuple(c[i] for c in combos), a.text) for i, a in enumerate(study.axes)),
                      "zip")
    data = scenario_data(SCENARIO)
    with tempfile.TemporaryDirectory() as tmp, executor(workers=workers) as pool:
        report = sweep(data, str(SCENARIO), study, Path(tmp) / "study", pool)
    print(f"sweep of {report.points:,} points ({len(SWEEP)} keys, SuperPOD with failures) on {pool.where}: "
          f"{report.seconds:,.0f} s, {report.points_per_s:,.0f} points/s, {report.errors:,} errors, "
          f"{len(report.front):,} on the Pareto front")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100_000, help="points of the sweep (default 100,000)")
    parser.add_argument("--workers", type=int, default=2, help="local worker processes of the sweep (default 2)")
    parser.add_argument("--quick", action="store_true", help="a 2,000-point sweep")
    args = parser.parse_args()
    one_core()                 # the plan search in this one process; the sweep's workers are processes of their own
    plan_search()
    sweep_speed(2_000 if args.quick else args.points, args.workers)


if __name__ == "__main__":
    main()
