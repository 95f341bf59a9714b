"""The one formatter: every unit at its boundaries, as a reader sees it."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from twin.formatting import (fmt_carbon_kg, fmt_duration_s, fmt_energy_j, fmt_energy_kwh, fmt_money_eur, fmt_number,
                             round_significant)


@pytest.mark.parametrize("value, text", [
    (0, "0"), (3497355, "3,497,000"), (1234.5, "1,235"), (999.96, "1,000"), (12.345, "12.35"), (0.012345, "0.01235"),
    (-2500.4, "-2,500"), (None, "n/a"), (math.inf, "∞"), (1.0, "1"),
])
def test_numbers(value, text):
    assert fmt_number(value) == text


@pytest.mark.parametrize("amount, text", [
    (5.12e6, "5,120,000 EUR"), (105663, "105,700 EUR"), (389e6, "389,000,000 EUR"), (23.6, "23.60 EUR"),
    (99.994, "99.99 EUR"), (99.996, "100 EUR"), (1.0, "1.00 EUR"), (0.0236, "0.0236 EUR"), (0, "0 EUR"),
    (None, "n/a"),
])
def test_money_has_no_prefix_and_four_digits_at_most(amount, text):
    assert fmt_money_eur(amount) == text


@pytest.mark.parametrize("kwh, text", [
    (0.5e-3, "0.5 Wh"), (1e-3, "1 Wh"), (0.99996, "1 kWh"), (0.999, "999 Wh"), (1.0, "1 kWh"), (999.0, "999 kWh"),
    (999.96, "1 MWh"), (1234.0, "1.234 MWh"), (2.5e6, "2.5 GWh"), (1.2e9, "1.2 TWh"), (0.151, "151 Wh"),
])
def test_energy_takes_the_unit_that_gives_one_to_999(kwh, text):
    assert fmt_energy_kwh(kwh) == text


def test_energy_from_joules():
    assert fmt_energy_j(3.6e9) == "1 MWh"


@pytest.mark.parametrize("kg, text", [
    (0.000151, "0.151 g"), (0.151, "151 g"), (0.9999, "999.9 g"), (0.99996, "1 kg"), (350.0, "350 kg"), (999.96, "1 t"), (1500.0, "1.5 t"),
    (10_234_000.0, "10,230 t"),
])
def test_carbon_in_grams_kilograms_or_tonnes(kg, text):
    assert fmt_carbon_kg(kg) == text


@pytest.mark.parametrize("seconds, text", [
    (0.0123, "12.3 ms"), (1.0, "1 s"), (42.0, "42 s"), (59.99, "59.99 s"), (59.9999, "1 min"), (2100.0, "35 min"), (3600.0, "1 h"),
    (4.2 * 3600, "4.2 h"), (86400.0, "1 d"), (9.66e6, "111.8 d"), (0.0, "0 s"),
])
def test_durations_in_s_min_h_or_d(seconds, text):
    assert fmt_duration_s(seconds) == text


@given(st.floats(min_value=1e-9, max_value=1e15, allow_nan=False))
def test_no_number_shows_more_than_four_significant_digits(value):
    for text in (fmt_number(value), fmt_money_eur(value), fmt_energy_kwh(value), fmt_carbon_kg(value),
                 fmt_duration_s(value)):
        digits = "".join(ch for ch in text.split(" ")[0] if ch.isdigit()).lstrip("0").rstrip("0")
        assert len(digits) <= 4 or text.endswith("EUR") and 1 <= round_significant(value) < 100, text
        assert "e+" not in text and "e-" not in text, text


def test_axis_units_put_the_largest_value_between_1_and_999():
    """Figures pick one unit per axis the way the formatter picks one per number."""
    from twin.formatting import carbon_axis_kg, energy_axis_kwh
    assert energy_axis_kwh(46.3e6) == ("GWh", 1e6)
    assert energy_axis_kwh(2.69) == ("kWh", 1.0)
    assert energy_axis_kwh(0.5) == ("Wh", 1e-3)
    assert energy_axis_kwh(None) == ("Wh", 1e-3) and energy_axis_kwh(0.0) == ("Wh", 1e-3)
    assert carbon_axis_kg(17.1e6) == ("t", 1e3) and carbon_axis_kg(3.11) == ("kg", 1.0)
    assert carbon_axis_kg(0.151) == ("g", 1e-3)


def test_co2e_names_what_it_counts():
    from twin.formatting import fmt_co2e_kg
    assert fmt_co2e_kg(0.151) == "151 g CO2e" and fmt_co2e_kg(17.1e6) == "17,100 t CO2e"
    assert fmt_co2e_kg(None) == "n/a"
