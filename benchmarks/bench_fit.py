"""Speed of `python -m twin fit`: the whole search on the shipped fine-tuning scenario, as a user runs it.

Prints the options searched, the plans whose memory was computed and whose step was played, and
the wall-clock seconds of a fresh process (`python -m twin fit FILE`, the number a user waits
for) and of a second search in this process (caches warm). ``--all`` times, in a fresh process
each, the fit of every shipped training scenario instead (the goal: each under 2 s, docs/speed.md).
Run with ``python benchmarks/bench_fit.py [--all]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from twin.api import load_scenario
from twin.studies.fit import fit

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "finetune-70b-qlora.yaml"


def fresh_s(scenario: Path, *flags: str) -> float:
    """Wall-clock seconds of ``python -m twin fit SCENARIO [FLAGS]`` in a new process."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "twin", "fit", str(scenario), *flags], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def every_scenario() -> None:
    """The fresh-process fit of every shipped scenario with a training section."""
    for path in sorted((ROOT / "scenarios").glob("*.yaml")):
        if load_scenario(path).training is None:
            continue
        print(f"{path.stem:24} table {fresh_s(path):6.2f} s   --json {fresh_s(path, '--json'):6.2f} s", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--all", action="store_true", help="time the fit of every shipped training scenario")
    if p.parse_args().all:
        every_scenario()
        return
    fresh = fresh_s(SCENARIO)
    scenario = load_scenario(SCENARIO)
    fit(scenario)
    start = time.perf_counter()
    report = fit(scenario)
    warm = time.perf_counter() - start
    rows = report.rows
    print(f"{SCENARIO.name}: {len(rows)} options, {sum(r.result is not None for r in rows)} fit; "
          f"{sum(r.plans_tried for r in rows)} plans sized, {sum(r.plans_timed for r in rows)} played")
    print(f"python -m twin fit: {fresh:.2f} s (fresh process, goal < 2 s); search again in-process: {warm:.2f} s")


if __name__ == "__main__":
    main()
