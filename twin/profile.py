"""A site profile: the parameters fitted on one site's own measurements, as data at the catalog's level.

``twin calibrate`` writes it (docs/calibrate.md); a scenario names it (``site.profile``) or a command
takes it (``--profile``). It holds values, never code: overrides of the calibrated efficiencies
(catalog calibration.yaml), a scale of the failure profile's rates, and the measured power of the
site's GPUs, each with the residual of its fit. ``overlay`` turns it into scenario keys that sit
*under* what the scenario writes itself, so the same code path prices a run with or without it.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from twin.errors import ScenarioError

# A profile is a few kilobytes; anything far larger is not one.
MAX_PROFILE_BYTES = 1 << 20
# The efficiencies a profile may override (calibration.yaml names; fractions in (0, 1]).
EFFICIENCY_KEYS = ("matmul", "memory", "attention", "nvlink", "network", "nvls", "pcie", "overlap_compute")
# The smallest band a profile gives: its fits' residuals may be tiny, the model's structure is not
# exact (the median |error| of the validation's calibration rows is about this; docs/validation.md).
MIN_BAND_FRACTION = 0.02
# The largest relative band a profile may state (beyond it the profile says nothing useful).
MAX_BAND_FRACTION = 1.0
# A failure-rate scale outside this range is a unit slip (Llama 3's rate x 1000 or / 1000).
MAX_RATE_SCALE = 1000.0


@dataclass(frozen=True)
class Fit:
    """One fitted parameter next to the catalog's value."""
    name: str
    value: float
    default: float
    residual: float          # relative scatter of the measurements about the fit (RMS, fraction)
    points: int              # measurements the fit used
    unit: str = ""
    source: str = ""         # the file(s) it came from
    applied: bool = True     # False: reported only (the twin has no input for it yet)

    @property
    def change(self) -> float:
        """value / default - 1."""
        return self.value / self.default - 1.0 if self.default else math.nan


@dataclass(frozen=True)
class SiteProfile:
    """The fitted parameters of one site."""
    name: str
    efficiency: dict[str, float] = field(default_factory=dict)
    rate_scale: float | None = None        # multiplies the failure profile's rates
    band_fraction: float = MIN_BAND_FRACTION
    gpu: str | None = None
    fits: tuple[Fit, ...] = ()
    path: str = ""
    sha256: str = ""

    def overlay(self) -> dict[str, Any]:
        """Scenario keys this profile sets (a scenario's own keys win over them)."""
        out: dict[str, Any] = {}
        if self.efficiency:
            out["efficiency"] = dict(self.efficiency)
        if self.rate_scale is not None:
            out["failures"] = {"rate_scale": self.rate_scale}
        return out


def _number(value: Any, where: str, low: float, high: float, low_open: bool = True) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and (value > low if low_open else value >= low) and value <= high:
        return float(value)
    bracket = "(" if low_open else "["
    raise ScenarioError(where, f"{value!r} is not allowed: a number in {bracket}{low:g}, {high:g}]")


def _fits(rows: Any, where: str) -> tuple[Fit, ...]:
    if rows is None:
        return ()
    if not isinstance(rows, list):
        raise ScenarioError(f"{where}.fits", "is a list of fitted parameters")
    out = []
    for i, row in enumerate(rows):
        at = f"{where}.fits[{i}]"
        if not isinstance(row, dict) or not isinstance(row.get("name"), str):
            raise ScenarioError(at, "a fit is a mapping with name, value, default, residual, points")
        try:
            out.append(Fit(row["name"], float(row["value"]), float(row["default"]), float(row.get("residual", 0)),
                           int(row.get("points", 0)), str(row.get("unit", "")), str(row.get("source", "")),
                           bool(row.get("applied", True))))
        except (KeyError, TypeError, ValueError):
            raise ScenarioError(at, "a fit needs numbers for value, default, residual and points") from None
    return tuple(out)


def parse_profile(data: Any, where: str, path: str = "", digest: str = "") -> SiteProfile:
    """A SiteProfile from parsed YAML; anything malformed raises one ScenarioError naming the key."""
    allowed = ("name", "gpu", "efficiency", "failures", "band_fraction", "fits", "written_by")
    if not isinstance(data, dict):
        raise ScenarioError(where, "a site profile is a mapping (write one with `python -m twin calibrate`)")
    for key in data:
        if key not in allowed:
            raise ScenarioError(f"{where}: {key}", f"unknown key; allowed: {', '.join(allowed)}")
    efficiency = data.get("efficiency") or {}
    if not isinstance(efficiency, dict):
        raise ScenarioError(f"{where}: efficiency", "is a mapping of efficiency names to fractions")
    eff = {}
    for key, value in efficiency.items():
        if key not in EFFICIENCY_KEYS:
            raise ScenarioError(f"{where}: efficiency.{key}",
                                f"unknown efficiency; allowed: {', '.join(EFFICIENCY_KEYS)}")
        eff[key] = _number(value, f"{where}: efficiency.{key}", 0.0, 1.0)
    failures = data.get("failures") or {}
    if not isinstance(failures, dict) or set(failures) - {"rate_scale"}:
        raise ScenarioError(f"{where}: failures", "is a mapping with one key, rate_scale")
    scale = failures.get("rate_scale")
    scale = None if scale is None else _number(scale, f"{where}: failures.rate_scale", 0.0, MAX_RATE_SCALE, False)
    band = _number(data.get("band_fraction", MIN_BAND_FRACTION), f"{where}: band_fraction", 0.0, MAX_BAND_FRACTION)
    gpu = data.get("gpu")
    return SiteProfile(str(data.get("name", "site")), eff, scale, max(band, MIN_BAND_FRACTION),
                       None if gpu is None else str(gpu), _fits(data.get("fits"), where), path, digest)


def load_profile(path: str | Path, field_name: str = "site.profile") -> SiteProfile:
    """Read a site profile file; a missing, large or malformed file raises one ScenarioError."""
    p = Path(path)
    try:
        if not p.is_file():
            raise ScenarioError(field_name, f"'{path}' is not a file (write one with `python -m twin calibrate`)")
        raw = p.read_bytes()[:MAX_PROFILE_BYTES + 1]
    except OSError as exc:
        raise ScenarioError(field_name, f"cannot read '{path}': {exc.strerror}") from None
    if len(raw) > MAX_PROFILE_BYTES:
        raise ScenarioError(field_name, f"'{path}' is larger than {MAX_PROFILE_BYTES:,} bytes: not a site profile")
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ScenarioError(field_name, f"'{path}' is not a YAML site profile: {type(exc).__name__}") from None
    return parse_profile(data, f"{field_name} '{path}'", str(p), hashlib.sha256(raw).hexdigest())


def profile_text(profile: SiteProfile, comment: str = "") -> str:
    """The YAML of a profile as ``twin calibrate`` writes it (``load_profile`` reads it back)."""
    data: dict[str, Any] = {"name": profile.name, "gpu": profile.gpu,
                            "efficiency": {k: round(v, 6) for k, v in profile.efficiency.items()}}
    if profile.rate_scale is not None:
        data["failures"] = {"rate_scale": round(profile.rate_scale, 6)}
    data["band_fraction"] = round(profile.band_fraction, 6)
    data["fits"] = [{"name": f.name, "value": _rounded(f.value), "default": _rounded(f.default),
                     "residual": round(f.residual, 6), "points": f.points, "unit": f.unit, "source": f.source,
                     "applied": f.applied} for f in profile.fits]
    head = "".join(f"# {line}\n" for line in comment.splitlines())
    return head + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def _rounded(value: float) -> float:
    return float(f"{value:.6g}")
