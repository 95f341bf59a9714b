"""Every number a person reads, written one way: in the terminal, the Markdown report, the dashboard and figures.

- **Money**: euros with thousands separators and no SI prefix (``5,120,000 EUR``, never ``5.12M EUR``);
  at most four significant digits (``105,700 EUR``), cents kept below 100 EUR (``23.60 EUR``).
- **Energy**: the unit of Wh, kWh, MWh, GWh or TWh that puts the number between 1 and 999.
- **Carbon** (CO2e): g, kg or t, the same way; tonnes past 999 t keep their separators (``10,230 t``).
- **Durations**: s, min, h or d (``42 s``, ``35 min``, ``4.2 h``, ``111.8 d``); below a second, ms.
- **Plain numbers**: at most four significant digits, thousands separators (``3,497,000``).

The number shown is the number rounded to four significant digits first, so a boundary is decided on what
the reader sees: 999.96 kWh reads ``1 MWh``, not ``1,000 kWh``.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

SIGNIFICANT_DIGITS = 4
J_PER_WH = 3600.0
ENERGY_UNITS = (("TWh", 1e12), ("GWh", 1e9), ("MWh", 1e6), ("kWh", 1e3), ("Wh", 1.0))     # in Wh
CARBON_UNITS = (("t", 1e3), ("kg", 1.0), ("g", 1e-3))                                     # in kg
DURATION_UNITS = (("d", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0))


def round_significant(value: float, digits: int = SIGNIFICANT_DIGITS) -> float:
    """``value`` rounded half up to ``digits`` significant digits, as written in decimal (0 stays 0)."""
    if value == 0 or not math.isfinite(value):
        return value
    exponent = math.floor(math.log10(abs(value))) - digits + 1
    return float(Decimal(repr(value)).quantize(Decimal(1).scaleb(exponent), rounding=ROUND_HALF_UP))


def fmt_number(value: float | None, digits: int = SIGNIFICANT_DIGITS) -> str:
    """At most ``digits`` significant digits, thousands separators, no exponent: 3497355 → '3,497,000'."""
    if value is None:
        return "n/a"
    if not math.isfinite(value):
        return "∞" if value > 0 else "-∞" if value < 0 else "n/a"
    shown = round_significant(value, digits)
    if shown == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(shown))))
    text = f"{shown:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def fmt_money_eur(amount: float | None) -> str:
    """Euros, no SI prefix: 5.12e6 → '5,120,000 EUR'; 23.6 → '23.60 EUR'; 0.0236 → '0.0236 EUR'."""
    if amount is None:
        return "n/a"
    shown = round_significant(amount)
    if 1 <= abs(shown) < 100:
        return f"{shown:,.2f} EUR"
    return f"{fmt_number(shown)} EUR"


def _scaled(value: float, units: tuple[tuple[str, float], ...]) -> str:
    """``value`` (in the smallest listed unit's base) in the largest unit that keeps the shown number ≥ 1."""
    if value is None:
        return "n/a"
    for name, factor in units:
        shown = round_significant(value / factor)
        if abs(shown) >= 1:
            return f"{fmt_number(shown)} {name}"
    name, factor = units[-1]
    return f"{fmt_number(value / factor)} {name}"


def fmt_energy_j(joules: float | None) -> str:
    """Energy in the unit that gives 1–999: 3.6e9 J → '1 MWh'; 5.4e5 J → '150 Wh'."""
    return "n/a" if joules is None else _scaled(joules / J_PER_WH, ENERGY_UNITS)


def fmt_energy_kwh(kwh: float | None) -> str:
    """The same, from kilowatt-hours (the records' unit)."""
    return "n/a" if kwh is None else fmt_energy_j(kwh * 1e3 * J_PER_WH)


def fmt_carbon_kg(kg: float | None) -> str:
    """CO2e in g, kg or t: 0.151 → '151 g'; 350 → '350 kg'; 10234.0e3 → '10,230 t'."""
    return "n/a" if kg is None else _scaled(kg, CARBON_UNITS)


def fmt_duration_s(seconds: float | None) -> str:
    """A duration in s, min, h or d: 42 → '42 s'; 2100 → '35 min'; 9.66e6 → '111.8 d'; 0.0123 → '12.3 ms'."""
    if seconds is None:
        return "n/a"
    if 0 < abs(seconds) < 1:
        return f"{fmt_number(seconds * 1e3)} ms"
    return _scaled(seconds, DURATION_UNITS)


def fmt_co2e_kg(kg: float | None) -> str:
    """Carbon as emissions read: '151 g CO2e', '350 kg CO2e', '17,100 t CO2e'; n/a when there is none."""
    return "n/a" if kg is None else f"{fmt_carbon_kg(kg)} CO2e"


# The d3 format of a figure's money and plain-number axes, hover texts and bar labels: thousands separators,
# at most four significant digits, no SI prefix (plotly's default '~s' would write 2.5M for 2,500,000 EUR).
D3_NUMBER = ",.4~r"


def axis_unit(largest: float | None, units: tuple[tuple[str, float], ...]) -> tuple[str, float]:
    """The unit (name, size in the base unit) that puts an axis's largest value between 1 and 999."""
    for name, factor in units:
        if largest and abs(largest) / factor >= 1:
            return name, factor
    return units[-1]


def energy_axis_kwh(largest_kwh: float | None) -> tuple[str, float]:
    """An energy axis's unit from its largest value in kWh: ('MWh', 1e3) for 46,000 kWh; ('Wh', 1e-3) for 0.5 kWh."""
    name, wh = axis_unit(None if largest_kwh is None else largest_kwh * 1e3, ENERGY_UNITS)
    return name, wh / 1e3


def carbon_axis_kg(largest_kg: float | None) -> tuple[str, float]:
    """A carbon axis's unit from its largest value in kg: ('t', 1e3), ('kg', 1.0) or ('g', 1e-3)."""
    return axis_unit(largest_kg, CARBON_UNITS)
