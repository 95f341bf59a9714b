"""Hourly grid carbon: the shipped typical days, their shape, and the clock that integrates them."""

from __future__ import annotations

import numpy as np
import pytest

from twin import catalog
from twin.power.hourly import DAYS_PER_MONTH, HOURS_PER_YEAR, CarbonClock, flat_shape, hourly_shape, shipped_codes
from twin.units import SECONDS_PER_HOUR


@pytest.mark.parametrize("code", shipped_codes())
def test_every_shipped_profile_has_a_source_and_a_year_averaging_one(code):
    row = catalog.table("grid_hourly")[code]
    assert row["source"] and row["hours"] == "UTC"
    shape = hourly_shape(code)
    days = np.array(DAYS_PER_MONTH, dtype=float)
    assert float((np.array(shape.factors).mean(axis=1) * days).sum() / days.sum()) == pytest.approx(1.0, abs=1e-12)
    assert CarbonClock(shape).factors(HOURS_PER_YEAR).mean() == pytest.approx(1.0, abs=1e-12)


def test_the_shape_keeps_the_source_values_ratios():
    row = catalog.table("grid_hourly")["DE"]
    shape = hourly_shape("DE")
    assert shape.factors[6][12] / shape.factors[6][19] == pytest.approx(row["months"][6][12] / row["months"][6][19])


def test_german_summer_noons_are_cleaner_than_evenings():
    """Solar output at midday (Wiesner et al.'s ENTSO-E data, UTC hours)."""
    july = hourly_shape("DE").factors[6]
    assert july[11] < 0.8 * july[19]


def test_a_flat_shape_integrates_to_plain_seconds():
    clock = CarbonClock(flat_shape("FR"), start_month=5)
    t = np.array([0.0, 1.5, 3600.0, 1e7])
    assert np.array_equal(clock.integral_s(t, 1e7), t)


def test_the_clock_starts_at_the_start_month_and_follows_the_calendar():
    shape = hourly_shape("GB")
    clock = CarbonClock(shape, start_month=3)
    f = clock.factors(24 * 40)
    assert f[0] == shape.factors[2][0] and f[23] == shape.factors[2][23]
    assert f[31 * 24] == shape.factors[3][0]                  # April 1st, 00:00 UTC
    # The integral over whole hours is the sum of the hours' factors.
    assert clock.integral_s(np.array([10 * SECONDS_PER_HOUR]), 1e6)[0] == pytest.approx(f[:10].sum() * SECONDS_PER_HOUR)
    assert clock.mean_factor(5 * SECONDS_PER_HOUR, SECONDS_PER_HOUR) == pytest.approx(f[5])
