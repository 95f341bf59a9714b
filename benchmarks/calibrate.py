"""Fit the named efficiencies on the calibration cases, and write them where the model reads them.

    python benchmarks/calibrate.py            # fit, rewrite twin/catalog/data/calibration.yaml and docs/validation.md
    python benchmarks/calibrate.py --dry-run  # fit and print only

Only cases with ``role: calibration`` (twin/validation/cases/*.yaml) enter the
fit; check cases never do. The objective is the mean squared log error,
ln(predicted / published)^2, over those cases: symmetric in over- and
under-prediction, with a unique optimum when two cases disagree. Each parameter
is searched by golden section inside physically plausible bounds, one at a
time, for a few sweeps (coordinate descent): the NCCL cases fix nvlink, network
and nvls; the training runs fix matmul. The inner loop plays steps with the
closed-form schedule (milliseconds per case); a last golden search on matmul
uses the discrete-event engine that ``python -m twin run`` uses, so the written
value fits the product as shipped. memory and attention keep their literature
values unless named with --fit: the calibration runs cannot separate them from
matmul (docs/validation.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from twin import catalog  # noqa: E402
from twin.calibration import Efficiency  # noqa: E402
from twin.validation import load_cases, run_cases  # noqa: E402
from twin.validation.metrics import METRICS  # noqa: E402

CALIBRATION_FILE = ROOT / "twin" / "catalog" / "data" / "calibration.yaml"
# Physically plausible range of each efficiency (fractions of a measured or datasheet ceiling).
BOUNDS = {"matmul": (0.60, 1.00), "memory": (0.60, 0.95), "attention": (0.40, 1.00),
          "nvlink": (0.60, 0.95), "network": (0.80, 1.00), "nvls": (0.40, 0.95)}
DEFAULT_FIT = ("nvlink", "network", "nvls", "matmul")
GOLDEN = (math.sqrt(5) - 1) / 2


def objective(cases, values: dict[str, float], closed_form: bool) -> float:
    outcomes = run_cases(cases, values, closed_form=closed_form)
    errors = [math.log(o.predicted / o.case.published) ** 2 for o in outcomes if o.status == "ok" and o.predicted]
    return sum(errors) / len(errors)


def golden(f, lo: float, hi: float, tol: float = 5e-4) -> float:
    a, b = lo, hi
    c, d = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
    fc, fd = f(c), f(d)
    while b - a > tol:
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - GOLDEN * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + GOLDEN * (b - a)
            fd = f(d)
    return round((a + b) / 2, 3)


# Each efficiency is fitted on the cases that measure it: link efficiencies on the NCCL
# bus-bandwidth figures (direct measurements), kernel efficiencies on training runs.
MEASURED_BY = {"nvlink": "collective", "network": "collective", "nvls": "collective",
               "matmul": "run", "memory": "run", "attention": "run"}


def sensitive_cases(cases, name: str, values: dict[str, float]) -> list:
    """Cases of the kind that measures ``name`` whose prediction moves by > 0.1% when it moves by 10%."""
    cases = [c for c in cases if METRICS[c.metric].kind == MEASURED_BY[name]]
    base = run_cases(cases, values, closed_form=True)
    moved = run_cases(cases, values | {name: min(1.0, values[name] * 1.1)}, closed_form=True)
    return [b.case for b, m in zip(base, moved)
            if b.predicted and m.predicted and abs(m.predicted / b.predicted - 1) > 1e-3]


def fit(names: tuple[str, ...], sweeps: int = 3) -> tuple[dict[str, float], dict[str, list[str]]]:
    cases = [c for c in load_cases() if c.role == "calibration"]
    values = {n: float(catalog.table("calibration")[n]["value"]) for n in Efficiency.names()}
    used: dict[str, list[str]] = {}
    for _ in range(sweeps):
        for name in names:
            members = sensitive_cases(cases, name, values)
            if not members:
                continue
            used[name] = [c.id for c in members]
            lo, hi = BOUNDS[name]
            values[name] = golden(lambda x: objective(members, values | {name: x}, True), lo, hi)
    if "matmul" in names and used.get("matmul"):
        members = [c for c in cases if c.id in used["matmul"]]
        x = values["matmul"]
        values["matmul"] = golden(lambda v: objective(members, values | {"matmul": v}, False),
                                  max(BOUNDS["matmul"][0], x - 0.03), min(BOUNDS["matmul"][1], x + 0.03), tol=4e-3)
    return values, used


def write(values: dict[str, float], used: dict[str, list[str]], today: str) -> None:
    """Rewrite the fitted rows of calibration.yaml in place, keeping its comments and other rows."""
    lines = CALIBRATION_FILE.read_text(encoding="utf-8").splitlines()
    out, block = [], None
    for line in lines:
        top = re.match(r"^([a-z_]+):\s*$", line)
        if top:
            block = top.group(1)
        elif line and not line.startswith(" "):
            block = None
        if block in used and line.startswith("  fitted:"):
            continue
        if block in used and line.startswith("  value:"):
            out.append(f"  value: {values[block]:.3f}")
            out.append(f"  fitted: \"{today}\"")
            continue
        if block in used and line.startswith("  fitted_on:"):
            out.append(f"  fitted_on: [{', '.join(used[block])}]")
            continue
        out.append(line)
    CALIBRATION_FILE.write_text("\n".join(out) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fit", nargs="+", default=list(DEFAULT_FIT), choices=list(BOUNDS),
                   help="efficiencies to fit (default: %(default)s)")
    p.add_argument("--dry-run", action="store_true", help="print the fit, do not write calibration.yaml")
    p.add_argument("--no-report", action="store_true", help="do not regenerate docs/validation.md after writing")
    args = p.parse_args(argv)
    before = {n: float(catalog.table("calibration")[n]["value"]) for n in Efficiency.names()}
    values, used = fit(tuple(args.fit))
    for name in Efficiency.names():
        mark = f"fitted on {len(used[name])} cases" if name in used else "kept (not fitted)"
        print(f"{name:10} {before[name]:.3f} -> {values[name]:.3f}  {mark}")
    if not args.dry_run:
        write(values, used, dt.date.today().isoformat())
        catalog.table.cache_clear()
        print(f"wrote {CALIBRATION_FILE.relative_to(ROOT)}")
        if not args.no_report:
            from twin.validation.report import write_report

            report = ROOT / "docs" / "validation.md"
            text = write_report(str(report))
            print(f"wrote {report.relative_to(ROOT)}\n")
            print(text.split("\n\n", 1)[1])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
