"""Grid carbon intensity hour by hour: a typical day per month, scaled to the annual average.

``catalog/data/grid_hourly.yaml`` gives, for a few countries, the mean intensity of
each UTC hour of each month (288 values, with their source). The twin keeps their
*shape*: ``s(m, h)`` = value / (the year's day-weighted mean), so a year of
``s`` averages exactly 1. The intensity at time ``t`` is then

    I(t) = I_annual · s(month(t), hour(t))

with ``I_annual`` the figure an annual-average run uses (codecarbon's dataset or
``site.carbon_intensity``). The carbon of a load ``P(t)`` is ``∫ P(t)·I(t) dt``; with
``s ≡ 1`` (a flat profile) it is exactly the annual-average result.

The clock: ``t = 0`` is 00:00 UTC on the first day of ``start_month``; months follow
a 365-day calendar and the year repeats.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twin import catalog
from twin.units import SECONDS_PER_HOUR

DAYS_PER_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
HOURS_PER_YEAR = 24 * sum(DAYS_PER_MONTH)


@dataclass(frozen=True)
class HourlyShape:
    """Intensity relative to the annual mean, by (month, UTC hour); the day-weighted mean over a year is 1."""
    code: str                                  # ISO 3166 alpha-2
    factors: tuple[tuple[float, ...], ...]     # 12 months × 24 hours
    source: str

    @property
    def flat(self) -> bool:
        return all(f == 1.0 for month in self.factors for f in month)


def flat_shape(code: str) -> HourlyShape:
    """The same intensity at every hour: the annual average."""
    return HourlyShape(code, tuple((1.0,) * 24 for _ in range(12)), "flat: the annual average at every hour")


def shipped_codes() -> list[str]:
    """Countries with an hourly profile in the catalog."""
    return catalog.names("grid_hourly")


def hourly_shape(code: str) -> HourlyShape | None:
    """The catalog's typical days of a country as a shape, or None when none is shipped."""
    row = catalog.table("grid_hourly").get(code)
    if row is None:
        return None
    values = np.array(row["months"], dtype=float)
    if values.shape != (12, 24):
        raise ValueError(f"catalog grid_hourly.{code}: expected 12 months of 24 hours, got {values.shape}")
    days = np.array(DAYS_PER_MONTH, dtype=float)
    mean = float((values.mean(axis=1) * days).sum() / days.sum())
    return HourlyShape(code, tuple(tuple(float(v) for v in month / mean) for month in values), row["source"])


@dataclass(frozen=True)
class CarbonClock:
    """Hour-by-hour shape factors from the simulation's start, and their integral over time."""
    shape: HourlyShape
    start_month: int = 1                       # 1 = January

    _years: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def factors(self, hours: int) -> np.ndarray:
        """Shape factor of each hour from t = 0 (``hours`` of them)."""
        return self._table(hours)[0][:hours]

    def _table(self, hours: int) -> tuple[np.ndarray, np.ndarray]:
        """(factor of each hour, ``∫_0 s`` in seconds at the start of each hour and after the last) over the whole
        years that hold ``hours``: built once per year count, their prefixes serve every shorter span."""
        reps = max(1, -(-hours // HOURS_PER_YEAR))
        table = self._years.get(reps)
        if table is None:
            year = np.concatenate([np.tile(np.array(self.shape.factors[(self.start_month - 1 + m) % 12]),
                                           DAYS_PER_MONTH[(self.start_month - 1 + m) % 12]) for m in range(12)])
            f = np.tile(year, reps)
            table = (f, np.concatenate([[0.0], np.cumsum(f) * SECONDS_PER_HOUR]))
            for a in table:
                a.flags.writeable = False
            self._years[reps] = table
        return table

    def integral_s(self, t_s: np.ndarray, horizon_s: float) -> np.ndarray:
        """``∫_0^t s(τ) dτ`` in seconds for every ``t`` (0 ≤ t ≤ horizon): equals ``t`` for a flat shape."""
        t = np.asarray(t_s, dtype=float)
        if self.shape.flat:
            return t.copy()
        hours = int(np.ceil(max(horizon_s, float(t.max(initial=0.0))) / SECONDS_PER_HOUR)) + 1
        f, cumulative = self._table(hours)      # a running sum's prefix is the running sum of the prefix
        h = np.minimum((t // SECONDS_PER_HOUR).astype(np.int64), hours - 1)
        return cumulative[h] + f[h] * (t - h * SECONDS_PER_HOUR)

    def mean_factor(self, start_s: float, duration_s: float) -> float:
        """Mean shape factor over ``[start, start + duration]`` (the factor at ``start`` for an instant)."""
        if duration_s <= 0:
            return float(self.factors(int(start_s // SECONDS_PER_HOUR) + 1)[-1])
        ends = self.integral_s(np.array([start_s, start_s + duration_s]), start_s + duration_s)
        return float(ends[1] - ends[0]) / duration_s
