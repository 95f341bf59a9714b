"""Accuracy benchmark: the twin against published runs, per case, per group and per role.

    python benchmarks/accuracy.py          # table
    python benchmarks/accuracy.py --json   # machine-readable, for tracking over commits

The same cases and numbers as ``python -m twin validate`` (docs/validation.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from twin.validation import load_cases, report, run_cases, summarize  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    start = time.perf_counter()
    outcomes = run_cases(load_cases(), workers=os.cpu_count() or 1)
    s = summarize(outcomes)
    elapsed = time.perf_counter() - start
    if args.json:
        print(json.dumps({
            "groups": {g.name: {"role": g.role, "cases": g.cases, "mape": g.mape, "worst": g.worst,
                                "worst_error": g.worst_error} for g in s.groups},
            "throughput_mape": s.throughput_mape, "overall_mape": s.overall_mape,
            "check_throughput_mape_by_gpu": {gpu: mape for gpu, (_, mape) in s.by_gpu.items()},
            "failed": s.failed, "beyond_20": s.beyond_20, "seconds": elapsed,
        }, indent=2))
        return 0
    print(report.text(outcomes, s))
    print(f"({len(outcomes)} cases in {elapsed:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
