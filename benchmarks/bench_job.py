"""Speed of the job engine (level 3) and of the step engine (level 2).

Prints wall-clock seconds; run with ``python benchmarks/bench_job.py``. The
target: a 16,384-GPU, 54-day run with the Llama 3 failure profile and 100
Monte Carlo samples in under 5 s on 2 cores, its cost growing with the number
of events (failures) and not with iterations or GPUs.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from twin.api import build, run_file
from twin.engine.iteration import _simulate_cached, simulate_iteration
from twin.engine.job import JobSpec, monte_carlo
from twin.jobs.checkpoint import CheckpointCost
from twin.jobs.failures import failure_profile
from twin.jobs.rules import interval_iterations
from twin.scenario import load_scenario
from twin.units import SECONDS_PER_DAY

ROOT = Path(__file__).resolve().parents[1]


def spec(gpus: int, days: float, step_s: float, rate_scale: float = 1.0) -> JobSpec:
    profile = failure_profile("llama3-h100", rate_scale=rate_scale)
    nodes = gpus // 8
    size = 405e9 * 14
    ck = CheckpointCost(size, 2e12, 2e12, size / 2e12, size / 2e12, size / 2e12, False)
    every = interval_iterations(None, step_s, ck, profile.mtbf_s(gpus, nodes))
    return JobSpec(int(days * SECONDS_PER_DAY / step_s), step_s, nodes, gpus, gpus // 128, 32, ck, every,
                   120.0, 180.0, 48 * 3600.0, False, profile)


def timed(label: str, job: JobSpec, samples: int = 100) -> float:
    t0 = time.perf_counter()
    stats = monte_carlo(job, seed=1, samples=samples)
    elapsed = time.perf_counter() - t0
    print(f"{label:<58} {elapsed:6.2f} s   mean failures {stats.mean('interruptions'):7.1f}   "
          f"iterations {job.iterations:>9,}   events/s {samples * stats.mean('interruptions') / elapsed:,.0f}")
    return elapsed


def main() -> None:
    print("job engine, 100 Monte Carlo samples each")
    timed("16,384 GPUs, 54 days, 10 s step (the target)", spec(16384, 54, 10.0))
    timed("16,384 GPUs, 54 days, 1 s step (10x iterations)", spec(16384, 54, 1.0))
    timed("2,048 GPUs, 54 days, rates x8 (same failures, 8x fewer GPUs)", spec(2048, 54, 10.0, rate_scale=8.0))
    timed("16,384 GPUs, 54 days, rates x2 (2x failures)", spec(16384, 54, 10.0, rate_scale=2.0))
    timed("16,384 GPUs, 54 days, rates x4 (4x failures)", spec(16384, 54, 10.0, rate_scale=4.0))

    print("\nstep engine (SimPy, one rank per stage)")
    for path in ("superpod.yaml", "llama3-405b-16k.yaml"):
        built = build(load_scenario(ROOT / "scenarios" / path))
        _simulate_cached.cache_clear()
        t0 = time.perf_counter()
        simulate_iteration(built.costs, built.plan)
        elapsed = time.perf_counter() - t0
        p = built.plan
        print(f"{path:<58} {elapsed * 1e3:6.1f} ms  ({p.pipeline} stages x {p.virtual_stages} chunks x "
              f"{p.microbatches} micro-batches)")
    big = build(load_scenario(ROOT / "scenarios" / "llama3-405b-16k.yaml"))
    plan = replace(big.plan, global_batch=big.plan.global_batch * 16)
    _simulate_cached.cache_clear()
    t0 = time.perf_counter()
    simulate_iteration(big.costs, plan)
    print(f"{'llama3 405B plan with 256 micro-batches':<58} {(time.perf_counter() - t0) * 1e3:6.1f} ms")

    print("\nwhole scenarios (python -m twin run)")
    for path in ("superpod.yaml", "llama3-405b-16k.yaml"):
        _simulate_cached.cache_clear()
        t0 = time.perf_counter()
        run_file(ROOT / "scenarios" / path)
        print(f"{path:<58} {time.perf_counter() - t0:6.2f} s")


if __name__ == "__main__":
    main()
