"""Fit a site's parameters on its readings: each a ``twin.profile.Fit`` next to the catalog's value.

Every fit asks the twin's own model what it predicts for the measured case (the collective on that
many ranks and nodes, the GEMM of that shape on that GPU) and scales the efficiency until the
prediction meets the measurement: ``e ← e · measured / predicted``, repeated until they agree to
0.01% (a handful of rounds: the predictions are proportional to the efficiency where it binds).
The residual is the RMS of ``measured / fitted prediction - 1`` over the points (docs/calibrate.md).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Sequence

from twin.calibrate.fit_sources import collective_fits, operator_fits, power_fits, failure_fits
from twin.calibrate.detect import Reading
from twin.profile import MIN_BAND_FRACTION, SiteProfile

# A fit's band is this many residuals wide on each side (about 95% of normal scatter).
BAND_RESIDUALS = 2.0


def fit_scale(predict: Callable[[float], Sequence[float]], measured: Sequence[float], start: float,
              rounds: int = 12) -> tuple[float, float]:
    """The efficiency at which ``predict`` meets ``measured`` (geometric mean of the ratios), and the RMS residual."""
    value = start
    for _ in range(rounds):
        ratio = math.exp(statistics.fmean(math.log(m / p) for m, p in zip(measured, predict(value))))
        new = min(1.0, value * ratio)
        if abs(new / value - 1.0) < 1e-4:
            value = new
            break
        value = new
    return value, rms([m / p - 1.0 for m, p in zip(measured, predict(value))])


def rms(values: Sequence[float]) -> float:
    return math.sqrt(statistics.fmean(v * v for v in values)) if values else 0.0


def profile_of(readings: list[Reading], name: str = "site") -> SiteProfile:
    """The site profile the readings imply: applied fits become overrides, the rest are reported."""
    fits = collective_fits(readings, fit_scale) + operator_fits(readings, fit_scale)
    fits += power_fits(readings) + failure_fits(readings)
    efficiency = {f.name: f.value for f in fits if f.applied and f.unit == "fraction"}
    scale = next((f.value for f in fits if f.applied and f.name == "failure_rate_scale"), None)
    residuals = [f.residual for f in fits if f.applied and f.unit == "fraction"]
    band = max([MIN_BAND_FRACTION] + [BAND_RESIDUALS * r for r in residuals])
    gpus = Counter(g for r in readings if (g := getattr(r, "gpu", None)))
    return SiteProfile(name, efficiency, scale, min(band, 1.0), gpus.most_common(1)[0][0] if gpus else None,
                       tuple(fits))


def fit_rows(profile: SiteProfile) -> list[list[str]]:
    """One table row per fit: parameter, catalog default, fitted value, change, residual, points, applied, source."""
    rows = []
    for f in profile.fits:
        def shown(v: float, unit: str = "" if f.unit == "fraction" else f" {f.unit}".rstrip()) -> str:
            return "-" if math.isnan(v) else f"{v:.4g}{unit}"

        change = "" if math.isnan(f.change) else f"{f.change:+.1%}"
        rows.append([f.name, shown(f.default), shown(f.value), change, f"{f.residual:.2%}", str(f.points),
                     "yes" if f.applied else "reported", f.source])
    return rows


FIT_HEADER = ["parameter", "catalog", "site", "change", "residual", "points", "applied", "from"]
