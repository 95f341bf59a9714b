"""Speed of `python -m twin fit`: the whole search on the shipped fine-tuning scenario, as a user runs it.

Prints the options searched, the plans whose memory was computed and whose step was played, and
the wall-clock seconds of a fresh process (`python -m twin fit FILE`, the number a user waits
for; the target is under 10 s) and of a second search in this process (caches warm).
Run with ``python benchmarks/bench_fit.py``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from twin.api import load_scenario
from twin.studies.search import fit

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "finetune-70b-qlora.yaml"


def main() -> None:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "twin", "fit", str(SCENARIO)], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    fresh = time.perf_counter() - start
    scenario = load_scenario(SCENARIO)
    fit(scenario)
    start = time.perf_counter()
    report = fit(scenario)
    warm = time.perf_counter() - start
    rows = report.rows
    print(f"{SCENARIO.name}: {len(rows)} options, {sum(r.result is not None for r in rows)} fit; "
          f"{sum(r.plans_tried for r in rows)} plans sized, {sum(r.plans_timed for r in rows)} played")
    print(f"python -m twin fit: {fresh:.2f} s (fresh process, target < 10 s); search again in-process: {warm:.2f} s")


if __name__ == "__main__":
    main()
