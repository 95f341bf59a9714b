"""The Calibrate page's logic, free of Streamlit: fit a site on dropped logs and compare a run with its twin.

Both run the CLI in a child process, as a user would (``python -m twin calibrate`` and ``python -m twin
compare``, docs/calibrate.md), in a directory named after the inputs, and read its JSON.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from dashboard.core import to_yaml

ROOT = Path(__file__).resolve().parent.parent
WORK_ROOT = Path(tempfile.gettempdir()) / "twin-calibrate"
TIMEOUT_S = 300
# Characters kept from an uploaded file's name (the rest become '_').
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def _directory(kind: str, parts: list[tuple[str, bytes]]) -> Path:
    digest = hashlib.sha256()
    for name, data in parts:
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    path = WORK_ROOT / f"{kind}-{digest.hexdigest()[:16]}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def safe_name(name: str) -> str:
    return _SAFE.sub("_", Path(name).name)[:120] or "log"


def _run(arguments: list[str]) -> tuple[dict[str, Any] | None, str | None]:
    try:
        done = subprocess.run([sys.executable, "-m", "twin", *arguments], cwd=ROOT, capture_output=True, text=True,
                              timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"took more than {TIMEOUT_S} s: run it with python -m twin {arguments[0]}"
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"twin {arguments[0]} failed"]
        return None, lines[-1].removeprefix("twin: error: ")
    return json.loads(done.stdout), None


def calibrate(files: list[tuple[str, bytes]]) -> dict[str, Any]:
    """Fit a site profile on uploaded logs → {"profile": the fits record, "path": the profile file, "error"}."""
    if not files:
        return {"profile": None, "path": None, "error": "drop at least one log"}
    work = _directory("site", files)
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    for name, data in files:
        (logs / safe_name(name)).write_bytes(data)
    out = work / "site.yaml"
    record, error = _run(["calibrate", str(logs), "--out", str(out), "--name", "dropped logs", "--json"])
    if error:
        # the CLI names the file by its path in the work directory; the user knows it by its name
        error = error.replace(str(logs) + "/", "")
    return {"profile": record, "path": str(out) if record else None, "error": error}


def compare(raw: dict[str, Any], log: tuple[str, bytes], profile: str | None) -> dict[str, Any]:
    """The drift of an uploaded run's log from the twin's prediction for ``raw`` → {"drift", "error"}."""
    scenario_text = to_yaml(raw).encode("utf-8")
    work = _directory("drift", [("scenario.yaml", scenario_text), log, ("profile", (profile or "").encode())])
    scenario = work / "scenario.yaml"
    scenario.write_bytes(scenario_text)
    path = work / safe_name(log[0])
    path.write_bytes(log[1])
    arguments = ["compare", str(scenario), str(path), "--json"] + (["--profile", profile] if profile else [])
    drift, error = _run(arguments)
    return {"drift": drift, "error": error.replace(str(work) + "/", "") if error else None}


def fit_rows(profile: dict[str, Any]) -> list[dict[str, Any]]:
    """The fits as table rows: parameter, catalog default, the site's value, change, residual."""
    rows = []
    for f in profile["fits"]:
        default, value = f["default"], f["value"]
        change = f"{value / default - 1:+.1%}" if default else ""
        unit = "" if f["unit"] == "fraction" else f["unit"]
        rows.append({"parameter": f["name"], "catalog": default, "site": value, "unit": unit, "change": change,
                     "residual": f"{f['residual']:.2%}", "points": f["points"],
                     "applied": "yes" if f["applied"] else "reported"})
    return rows


def drift_rows(drift: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"": p["name"], "twin": p["predicted"], "measured": p["measured"], "difference": f"{p['relative']:+.1%}",
             "unit": p["unit"]} for p in (drift["total"], *drift["parts"])]
