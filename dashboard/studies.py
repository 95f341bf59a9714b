"""The Study page's logic, free of Streamlit: find, load and run studies (``python -m twin sweep``).

A live sweep runs the CLI in a child process, as a user would, into a directory named
after what it runs (the scenario, the varied keys, the engine): asking again finds the
study done. Loading reads the directory's ``results.parquet`` and ``study.yaml``.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import yaml

from dashboard.core import to_yaml
from twin.figures.study import UNITS

ROOT = Path(__file__).resolve().parent.parent
# Where live sweeps go, and where results directories are looked for.
LIVE_ROOT = Path(tempfile.gettempdir()) / "twin-studies"
SEARCHED = (ROOT / "runs", LIVE_ROOT)
# A live sweep runs in the page's request: at most this many points, within this many seconds.
MAX_LIVE_POINTS = 64
LIVE_TIMEOUT_S = 600
# Columns read from a study besides its keys and the metrics the figures know (``UNITS``).
COLUMNS = ("point", "error", "pareto_front", "workload", "country")


def find_studies() -> list[str]:
    """Directories holding a study's results under ``runs/`` and the live sweeps' directory."""
    found = []
    for root in SEARCHED:
        if root.is_dir():
            found += sorted(str(p.parent) for p in root.glob("**/results.parquet")
                            if len(p.relative_to(root).parts) <= 3)
    return found


def has_results(directory: str | Path) -> bool:
    return (Path(directory).expanduser() / "results.parquet").is_file()


def load(directory: str) -> dict[str, Any]:
    """A study → {"study": study.yaml, "rows": the table's rows, "keys", "objectives", "error"}."""
    path = Path(directory).expanduser()
    if not has_results(path):
        return {"error": f"'{directory}' holds no results.parquet: run python -m twin sweep … --out {directory}"}
    try:
        study = yaml.safe_load((path / "study.yaml").read_text(encoding="utf-8")) if (path / "study.yaml").is_file() \
            else {}
        table = pq.read_table(path / "results.parquet")
    except (OSError, yaml.YAMLError, ValueError) as exc:
        return {"error": f"'{directory}' could not be read: {exc}"}
    keys = [k for k in study.get("keys", []) if k in table.column_names]
    metrics = [c for c in (*UNITS, *study.get("objectives", [])) if c in table.column_names]
    wanted = list(dict.fromkeys(c for c in (*COLUMNS, *keys, *metrics) if c in table.column_names))
    return {"study": study, "rows": table.select(wanted).to_pylist(), "keys": keys,
            "objectives": list(study.get("objectives", [])), "error": None}


def live_directory(raw: dict[str, Any], varies: list[str], closed_form: bool) -> Path:
    """The directory a live sweep of ``raw`` over ``varies`` writes to (the same inputs, the same directory)."""
    text = json.dumps({"scenario": raw, "vary": varies, "closed_form": closed_form}, sort_keys=True, default=str)
    return LIVE_ROOT / hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def run_live(raw: dict[str, Any], varies: list[str], closed_form: bool) -> dict[str, Any]:
    """Run ``python -m twin sweep`` on ``raw`` → {"directory", "error" (the CLI's one line) or None}."""
    directory = live_directory(raw, varies, closed_form)
    directory.mkdir(parents=True, exist_ok=True)
    scenario = directory / "scenario.yaml"
    scenario.write_text(to_yaml(raw), encoding="utf-8")
    command = [sys.executable, "-m", "twin", "sweep", str(scenario), "--out", str(directory), "--workers", "1",
               "--max-points", str(MAX_LIVE_POINTS), "--json"]
    command += [arg for v in varies for arg in ("--vary", v)]
    if closed_form:
        command.append("--closed-form")
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=LIVE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"directory": str(directory), "error": f"the sweep took more than {LIVE_TIMEOUT_S} s: run it with "
                                                      "python -m twin sweep and load its directory"}
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["the sweep failed"]
        return {"directory": str(directory), "error": lines[-1].removeprefix("twin: error: ")}
    return {"directory": str(directory), "error": None}
