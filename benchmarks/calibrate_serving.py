"""Fit the serving efficiencies on the TensorRT-LLM 0.13.0 calibration rows; print the errors.

Run ``python benchmarks/calibrate_serving.py`` (about 2 minutes on 2 cores). A grid over
(matmul, memory, iteration_overhead_s) minimises the root mean square of
log(predicted / published) over the calibration rows; the check rows are then run
once with the fitted values and never enter the fit. ``--write`` stores the result in
twin/catalog/data/calibration.yaml.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import re
from datetime import date
from pathlib import Path

import numpy as np

from twin.calibration import ServingEfficiency
from twin.validation.serving import run_cases

GRID = {"matmul": (0.7, 0.75, 0.8, 0.85), "memory": (0.55, 0.6, 0.65, 0.7, 0.75, 0.8),
        "iteration_overhead_s": (0.0, 0.0005, 0.001)}
REQUESTS = 600
WORKERS = os.cpu_count() or 1
ROOT = Path(__file__).resolve().parents[1]


def rms_log(outcomes) -> float:
    e = np.array([math.log(o.predicted / o.case.published) for o in outcomes if math.isfinite(o.predicted)])
    return float(np.sqrt(np.mean(e**2)))


def summary(label: str, outcomes) -> None:
    err = np.array([o.error for o in outcomes if math.isfinite(o.error)])
    print(f"{label}: {len(outcomes)} rows, {len(outcomes) - len(err)} do not fit; mean |error| "
          f"{np.mean(np.abs(err)):.1%}, median error {np.median(err):+.1%}, rms log {rms_log(outcomes):.3f}, "
          f"within 25%: {np.mean(np.abs(err) <= 0.25):.0%}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    best = None
    for values in itertools.product(*GRID.values()):
        eff = ServingEfficiency(*values)
        score = rms_log(run_cases("calibration", eff, REQUESTS, WORKERS))
        if best is None or score < best[0]:
            best = (score, eff)
        print(f"  {values} rms log {score:.3f}")
    eff = best[1]
    print(f"fitted: {eff}")
    summary("calibration", run_cases("calibration", eff, REQUESTS, WORKERS))
    checks = run_cases("check", eff, REQUESTS, WORKERS)
    summary("check", checks)
    for o in checks:
        print(f"  {o.case.id:58s} published {o.case.published:9.0f} twin {o.predicted:9.0f} {o.error:+.0%}")
    if args.write:
        path = ROOT / "twin" / "catalog" / "data" / "calibration.yaml"
        text = path.read_text(encoding="utf-8")
        head, serving = text.split("\nserving:\n", 1)
        for name in GRID:
            serving = re.sub(rf"(  {name}:\n    value: )[^\n]+", rf"\g<1>{getattr(eff, name):g}", serving)
        path.write_text(head + "\nserving:\n" + serving, encoding="utf-8")
        print(f"written {path} ({date.today()})")


if __name__ == "__main__":
    main()
