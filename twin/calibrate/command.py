"""The bodies of ``python -m twin calibrate`` and ``python -m twin compare`` (docs/calibrate.md)."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from twin.calibrate.compare import Drift, power_drift, serving_drift, training_drift
from twin.calibrate.detect import read, read_folder
from twin.calibrate.fit import FIT_HEADER, fit_rows, profile_of
from twin.calibrate.power import PowerLog
from twin.calibrate.serving import ServingMeasurement
from twin.calibrate.training_log import TrainingLog
from twin.errors import ScenarioError
from twin.outputs import check_file, write_atomic
from twin.profile import SiteProfile, profile_text


def calibrate(folder: str, out: str, name: str | None = None) -> SiteProfile:
    """Read every log of ``folder``, fit the site, write the profile to ``out`` (only when all went well)."""
    target = check_file(out, "--out")
    readings = read_folder(folder)
    profile = profile_of(readings, name or Path(folder).resolve().name or "site")
    if not profile.fits:
        raise ScenarioError(folder, f"{len(readings)} logs read, none with a parameter to fit (nccl-tests, operator "
                                    "timings, GPU power or sacct; training and serving logs go to `twin compare`)")
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    comment = (f"Site profile written by `python -m twin calibrate {folder}` on {stamp} from {len(readings)} logs.\n"
               "Use it with `site: {profile: FILE}` in a scenario or --profile FILE (docs/calibrate.md).")
    try:
        write_atomic(target, profile_text(profile, comment))
    except OSError as exc:
        raise ScenarioError("--out", f"cannot write '{target}': {exc.strerror}") from None
    return profile


def calibrate_text(profile: SiteProfile, out: str) -> str:
    band = f"error band with this profile: ±{profile.band_fraction:.1%}"
    return f"{table(fit_rows(profile), FIT_HEADER)}\n\n{band}\nwrote {out}"


def profile_record(profile: SiteProfile, out: str) -> dict[str, Any]:
    return {"name": profile.name, "gpu": profile.gpu, "efficiency": profile.efficiency,
            "failure_rate_scale": profile.rate_scale, "band_fraction": profile.band_fraction, "written": out,
            "fits": [{"name": f.name, "default": _finite(f.default), "value": f.value, "residual": f.residual,
                      "points": f.points, "unit": f.unit, "source": f.source, "applied": f.applied}
                     for f in profile.fits]}


def compare(scenario_path: str, log_path: str, profile: str | None = None) -> Drift:
    """The drift of a measured run from the twin's prediction for its scenario."""
    from twin.api import run_file

    reading = read(log_path)              # a bad log is refused before the simulation runs
    if not isinstance(reading, (TrainingLog, ServingMeasurement, PowerLog)):
        raise ScenarioError(log_path, f"is a {type(reading).__name__} reading; compare takes a training log "
                                      "(Megatron-LM, torchtitan), a serving benchmark (vLLM, trtllm-bench) or a GPU "
                                      "power log (nvidia-smi, DCGM)")
    record = run_file(scenario_path, profile).to_dict()
    kind = record.get("workload")
    if isinstance(reading, TrainingLog):
        _expect(kind, "training", scenario_path, log_path)
        return training_drift(record, reading, scenario_path)
    if isinstance(reading, ServingMeasurement):
        _expect(kind, "serving", scenario_path, log_path)
        return serving_drift(record, reading, scenario_path)
    return power_drift(record, reading, scenario_path)


def _expect(kind: str | None, wanted: str, scenario: str, log: str) -> None:
    if kind != wanted:
        raise ScenarioError(scenario, f"describes {kind}, but '{log}' is a {wanted} log")


def drift_record(drift: Drift) -> dict[str, Any]:
    def part(p) -> dict[str, Any]:
        return {"name": p.name, "unit": p.unit, "predicted": p.predicted, "measured": p.measured,
                "difference": p.difference, "relative": p.relative}

    return {"scenario": drift.scenario, "log": drift.log, "total": part(drift.total),
            "parts": [part(p) for p in drift.parts], "largest": drift.largest, "note": drift.note}


def drift_text(drift: Drift) -> str:
    rows = [[p.name, f"{p.predicted:.6g}", f"{p.measured:.6g}", f"{p.relative:+.1%}", p.unit]
            for p in (drift.total, *drift.parts)]
    lines = [table(rows, ["", "twin", "measured", "difference", "unit"]),
             "", f"largest difference: {drift.largest}"]
    if drift.note:
        lines.append(drift.note)
    return "\n".join(lines)


def as_json(record: dict[str, Any]) -> str:
    return json.dumps(record, indent=2)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def table(rows: list[list[str]], header: list[str]) -> str:
    """A plain aligned text table."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
                     for cells in [header, ["-" * w for w in widths], *rows])
