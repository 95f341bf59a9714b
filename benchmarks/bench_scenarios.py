"""End-to-end speed: `python -m twin run` on every shipped scenario, as a user runs it.

Prints the wall-clock seconds of `twin.api.run_file` per scenario (best of 3, in
this process, after one warm-up run that fills the per-process caches) and the
cold time of the first run. Run with ``python benchmarks/bench_scenarios.py``.
"""

from __future__ import annotations

import time
from pathlib import Path

from twin.api import run_file

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    print(f"{'scenario':32} {'GPUs':>6} {'cold s':>8} {'warm s':>8}")
    for path in sorted((ROOT / "scenarios").glob("*.yaml")):
        start = time.perf_counter()
        result = run_file(path)
        cold = time.perf_counter() - start
        warm = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            run_file(path)
            warm = min(warm, time.perf_counter() - start)
        print(f"{path.name:32} {result.gpus_total:>6} {cold:>8.3f} {warm:>8.3f}")


if __name__ == "__main__":
    main()
