"""Write twin/catalog/data/error_bands.yaml: the validation cases' errors, from which every answer's band is drawn.

    python benchmarks/error_bands.py            # runs the validation (a few minutes), rewrites the file
    python benchmarks/error_bands.py --workers 2

One row per training-throughput case (``twin/validation/cases``) and per serving row
(``cases/serving``): its id, group, GPU, stack or engine (and a serving row's tensor-parallel size), and its
error, predicted / published - 1.
``twin.bands`` reads the rows at run time, so a run never re-runs the validation
(docs/calibrate.md, "Error bands"). Rerun after a change that moves the validation's numbers.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "twin" / "catalog" / "data" / "error_bands.yaml"
HEADER = """\
# Errors of the twin on its own validation cases (predicted / published - 1), one row per case,
# written by benchmarks/error_bands.py from `python -m twin validate` (twin/validation/cases).
# twin.bands draws each answer's error band from the rows nearest to it (serving: same engine, GPU
# and tensor-parallel size; then same stack and GPU, then same stack, then same GPU, then all):
# docs/calibrate.md, "Error bands".
"""


def _stack(scenario: dict) -> str:
    stack = scenario.get("training", {}).get("stack", "megatron-lm")
    return stack if isinstance(stack, str) else str(stack.get("name", "megatron-lm"))


def _gpu(scenario: dict) -> str:
    """The catalog GPU of a case's node."""
    from twin import catalog

    node = scenario.get("cluster", {}).get("node", "")
    return str(catalog.table("nodes").get(node, {}).get("gpu", node or "unknown"))


def training_rows(workers: int) -> list[dict]:
    from twin.validation import load_cases, run_cases

    cases = [c for c in load_cases() if c.throughput]
    rows = []
    for outcome in run_cases(cases, workers=workers):
        if outcome.error is None:
            continue
        c = outcome.case
        rows.append({"id": c.id, "group": c.group, "role": c.role, "gpu": _gpu(c.scenario), "stack": _stack(c.scenario),
                     "metric": c.metric, "error": round(outcome.error, 5)})
    return rows


def serving_rows(workers: int) -> list[dict]:
    from twin.serving.profiles import engine_family
    from twin.validation.serving import run_cases

    return [{"id": o.case.id, "group": o.case.group, "role": o.case.role, "gpu": o.case.gpu,
             "engine": engine_family(o.case.engine), "tensor": o.case.tensor, "metric": o.case.metric,
             "error": round(o.error, 5)}
            for o in run_cases(workers=workers) if not math.isnan(o.error)]


def main() -> int:
    import yaml

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1, help="processes that run the validation (default 1)")
    workers = max(1, parser.parse_args().workers)
    sys.path.insert(0, str(ROOT))
    data = {"source": "python benchmarks/error_bands.py (the validation of twin/validation/cases)",
            "training": training_rows(workers), "serving": serving_rows(workers)}
    TARGET.write_text(HEADER + yaml.safe_dump(data, sort_keys=False, width=200), encoding="utf-8")
    print(f"wrote {TARGET}: {len(data['training'])} training and {len(data['serving'])} serving rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
