"""Quantities with units, parsed once at the scenario boundary.

Users write ``400 Gb/s``, ``80 GiB``, ``25 kW``, ``2T`` tokens, ``30 min``;
inside the twin every quantity is a float in SI base units (bytes, bytes/s,
W, s, J) and its name says which (``_Bps``, ``_bytes``, ``_w``, ``_s``, ``_j``).

Conventions: a lower-case ``b`` is a bit, an upper-case ``B`` a byte; decimal
prefixes (k, M, G, T, P) are powers of 1000, binary ones (Ki, Mi, Gi, Ti, Pi)
powers of 1024. For counts (tokens, parameters) ``K/M/B/T`` mean thousand,
million, billion (10^9) and trillion (10^12), as in "2T tokens".
"""

from __future__ import annotations

import math
import re

from twin.errors import ScenarioError

_NUMBER = re.compile(r"^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(.*?)\s*$")

_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}

BITS_PER_BYTE = 8.0
SECONDS_PER_US = 1e-6
SECONDS_PER_MS = 1e-3
SECONDS_PER_MINUTE = 60.0
SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86400.0
SECONDS_PER_YEAR = 365 * SECONDS_PER_DAY
HZ_PER_MHZ = 1e6
JOULES_PER_KWH = 3.6e6
# Digits a whole number may have where a user writes one (a scenario, --vary): the largest the twin takes,
# a 64-bit seed, has 20. Checked before Python's own guard (4,300 digits) turns the value into an internal error.
MAX_INT_DIGITS = 100


def _prefixed(suffixes: dict[str, float], allow_binary: bool = True) -> dict[str, float]:
    """Every prefix combined with every base suffix → factor."""
    table: dict[str, float] = {}
    prefixes = dict(_DECIMAL)
    if allow_binary:
        prefixes.update(_BINARY)
    for prefix, pf in prefixes.items():
        for suffix, sf in suffixes.items():
            table[prefix + suffix] = pf * sf
    return table


_BYTES = _prefixed({"B": 1.0})
_BYTES.update({"bytes": 1.0, "byte": 1.0})
_BANDWIDTH = _prefixed({"B/s": 1.0, "b/s": 1 / BITS_PER_BYTE, "bit/s": 1 / BITS_PER_BYTE, "bps": 1 / BITS_PER_BYTE})
_POWER = _prefixed({"W": 1.0}, allow_binary=False)
_ENERGY = _prefixed({"J": 1.0, "Wh": SECONDS_PER_HOUR}, allow_binary=False)
_FLOPS = _prefixed({"FLOP/s": 1.0, "FLOPS": 1.0, "flop/s": 1.0}, allow_binary=False)
_TIME = {
    "s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0,
    "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9,
    "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": SECONDS_PER_HOUR, "hr": SECONDS_PER_HOUR, "hour": SECONDS_PER_HOUR, "hours": SECONDS_PER_HOUR,
    "d": SECONDS_PER_DAY, "day": SECONDS_PER_DAY, "days": SECONDS_PER_DAY,
    "week": 7 * SECONDS_PER_DAY, "weeks": 7 * SECONDS_PER_DAY,
}
_COUNT = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}
# carbon intensity → grams CO2e per kWh
_CARBON = {"g/kWh": 1.0, "gCO2/kWh": 1.0, "gCO2e/kWh": 1.0, "kg/kWh": 1e3, "kgCO2/kWh": 1e3,
           "kgCO2e/kWh": 1e3, "g/MWh": 1e-3, "kg/MWh": 1.0, "t/MWh": 1e3}

# arrival rates → per second
_RATE = {"/s": 1.0, "/sec": 1.0, "/min": 1 / SECONDS_PER_MINUTE, "/h": 1 / SECONDS_PER_HOUR,
         "/hour": 1 / SECONDS_PER_HOUR}

_DIMENSIONS: dict[str, tuple[dict[str, float], str, bool]] = {
    # name: (unit table, example, bare number allowed)
    "bytes": (_BYTES, "80 GiB", False),
    "bandwidth": (_BANDWIDTH, "400 Gb/s or 2.7 TB/s", False),
    "power": (_POWER, "25 kW", False),
    "energy": (_ENERGY, "10 kWh", False),
    "flops": (_FLOPS, "989 TFLOP/s", False),
    "time": (_TIME, "30 min", True),
    "count": (_COUNT, "2T", True),
    "carbon_intensity": (_CARBON, "56 g/kWh", True),
    "rate": (_RATE, "20/s", True),
}


def parse_quantity(value: object, dimension: str, field: str) -> float:
    """Parse ``value`` (number or string with unit) into SI base units of ``dimension``.

    Raises ScenarioError naming ``field`` when the value or its unit is wrong.
    """
    table, example, bare_ok = _DIMENSIONS[dimension]
    if isinstance(value, bool):
        raise ScenarioError(field, f"{value!r} is not a {dimension} (write e.g. '{example}')")
    if isinstance(value, (int, float)):
        if not bare_ok:
            raise ScenarioError(field, f"{value!r} needs a unit (write e.g. '{example}')")
        return float(value)
    if not isinstance(value, str):
        raise ScenarioError(field, f"{value!r} is not a {dimension} (write e.g. '{example}')")
    match = _NUMBER.match(value)
    if not match:
        raise ScenarioError(field, f"'{value}' is not a number with a unit (write e.g. '{example}')")
    number, unit = float(match.group(1)), match.group(2).replace(" ", "")
    if unit == "":
        if not bare_ok:
            raise ScenarioError(field, f"'{value}' needs a unit (write e.g. '{example}')")
        return number
    if unit not in table:
        raise ScenarioError(field, f"unknown unit '{unit}' in '{value}' for a {dimension} (write e.g. '{example}')")
    return number * table[unit]


def parse_price_per_kwh(value: object, field: str) -> tuple[float, str]:
    """'0.10 EUR/kWh' → (0.10, 'EUR'); '80 EUR/MWh' → (0.08, 'EUR')."""
    text = str(value).strip()
    match = re.match(r"^([+-]?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)\s*([A-Za-z]{3})\s*/\s*(kWh|MWh)$", text)
    if not match:
        raise ScenarioError(field, f"'{value}' is not a price per energy (write e.g. '0.10 EUR/kWh')")
    amount = float(match.group(1)) / (1000.0 if match.group(3) == "MWh" else 1.0)
    return amount, match.group(2).upper()


def _price_per(value: object, field: str, per: str, what: str, example: str) -> tuple[float, str]:
    """An unsigned amount, a 3-letter currency, '/', then the regular expression ``per``: (amount, currency)."""
    match = re.match(rf"^(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)\s*([A-Za-z]{{3}})\s*/\s*{per}$", str(value).strip())
    if not match:
        raise ScenarioError(field, f"'{value}' is not a price per {what} (write e.g. '{example}')")
    return float(match.group(1)), match.group(2).upper()


def parse_price_per_gpu_hour(value: object, field: str) -> tuple[float, str]:
    """'2.5 USD/GPU-h' → (2.5, 'USD')."""
    return _price_per(value, field, r"GPU[- ]?(?:h|hr|hour)", "GPU-hour", "2.50 USD/GPU-h")


def parse_price_per_core_hour(value: object, field: str) -> tuple[float, str]:
    """'0.01 EUR/core-h' → (0.01, 'EUR'): a CPU core (vCPU) rented for an hour."""
    return _price_per(value, field, r"(?:v?CPU|core)[- ]?(?:h|hr|hour)", "core-hour", "0.01 EUR/core-h")


# Amounts of money and masses: an unsigned number, a prefix, a unit.
_AMOUNT = r"([0-9]*\.?[0-9]+(?:[eE][+-]?\d+)?)"
_MONEY = re.compile(rf"^\s*{_AMOUNT}\s*([kKMB]?)\s*(EUR|€)?\s*$")
_MONEY_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9}
_MASS = re.compile(rf"^\s*{_AMOUNT}\s*(kg|t|kt)\s*$")
_MASS_KG = {"kg": 1.0, "t": 1e3, "kt": 1e6}          # t: the metric tonne


def parse_money_eur(value: object, field: str) -> float:
    """An amount in euros: '2M EUR' → 2e6, '1e5 EUR' → 1e5, '500k€' → 5e5, '500000' → 5e5 (k, M, B:
    thousand, million, billion; the currency, when written, is EUR, the twin's currency of account)."""
    match = _MONEY.match(str(value)) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None
    amount = float(match.group(1)) * _MONEY_PREFIX[match.group(2)] if match else math.inf
    if not math.isfinite(amount):
        raise ScenarioError(field, f"'{value}' is not an amount in euros (write e.g. '2M EUR' or '500000')")
    return amount


_MONEY_WITH_CURRENCY = re.compile(rf"^\s*{_AMOUNT}\s*([kKMB]?)\s*([A-Za-z]{{3}}|€)\s*$")


def parse_money(value: object, field: str) -> tuple[float, str]:
    """An amount with its currency: '270000 USD' → (270000.0, 'USD'), '250k EUR' → (250000.0, 'EUR')."""
    text = value if isinstance(value, str) else ""
    match = _MONEY_WITH_CURRENCY.match(text)
    amount = float(match.group(1)) * _MONEY_PREFIX[match.group(2)] if match else math.inf
    if not math.isfinite(amount):
        raise ScenarioError(field, f"'{value}' is not an amount with a currency "
                            "(write e.g. '270000 USD' or '250k EUR')")
    currency = match.group(3).upper()
    return amount, "EUR" if currency == "€" else currency


def parse_price_per_kw_month(value: object, field: str) -> tuple[float, str]:
    """'184 USD/kW-month' → (184.0, 'USD'): a price per kW of provisioned power and month."""
    text = str(value).strip()
    match = re.match(rf"^{_AMOUNT}\s*([A-Za-z]{{3}})\s*/\s*kW[- ]?(?:month|mo)$", text)
    if not match:
        raise ScenarioError(field, f"'{value}' is not a price per kW and month (write e.g. '184 USD/kW-month')")
    return float(match.group(1)), match.group(2).upper()


def parse_mass_kg(value: object, field: str) -> float:
    """A mass in kilograms: '500t' → 5e5, '20000 kg' → 2e4, '1.5 kt' → 1.5e6 (a unit is required)."""
    match = _MASS.match(value) if isinstance(value, str) else None
    mass = float(match.group(1)) * _MASS_KG[match.group(2)] if match else math.inf
    if not math.isfinite(mass):
        raise ScenarioError(field, f"'{value}' is not a mass (write e.g. '500t' or '20000 kg')")
    return mass


def parse_energy_kwh(value: object, field: str) -> float:
    """An energy in kWh, as the twin reports energy: '5 GWh' → 5e6, '10 kWh' → 10, '3.6 MJ' → 1."""
    return parse_quantity(value, "energy", field) / JOULES_PER_KWH


def fmt_bytes(n_bytes: float) -> str:
    """Binary-prefixed size, as memory is sold: 85.9e9 → '80.0 GiB'."""
    for unit, factor in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n_bytes) >= factor:
            return f"{n_bytes / factor:.1f} {unit}"
    return f"{n_bytes:.0f} B"


def fmt_duration(seconds: float) -> str:
    """Human duration: '3.1 years', '21.3 days', '4.2 h', '35 min', '1.20 s'."""
    if seconds >= 2 * SECONDS_PER_YEAR:
        return f"{seconds / SECONDS_PER_YEAR:,.1f} years"
    if seconds >= 2 * SECONDS_PER_DAY:
        return f"{seconds / SECONDS_PER_DAY:.1f} days"
    if seconds >= 2 * SECONDS_PER_HOUR:
        return f"{seconds / SECONDS_PER_HOUR:.1f} h"
    if seconds >= 2 * SECONDS_PER_MINUTE:
        return f"{seconds / SECONDS_PER_MINUTE:.0f} min"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    return f"{seconds * 1e3:.1f} ms"


def fmt_count(value: float, digits: int = 3) -> str:
    """A count as scenarios write it: 2e12 → '2T', 1.4e12 → '1.4T', 3e11 → '300B', 5e6 → '5M'."""
    if abs(value) >= 1e15:
        return f"{value / 1e12:,.0f}T"
    for suffix, factor in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= factor:
            return f"{value / factor:.{digits}g}{suffix}"
    return f"{value:.{digits}g}"


def fmt_si(value: float, unit: str, digits: int = 3) -> str:
    """Decimal-prefixed value: fmt_si(1.2e6, 'W') → '1.20 MW'."""
    for prefix, factor in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= factor:
            return f"{value / factor:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}"


def fmt_amount(value: float, unit: str, digits: int = 3) -> str:
    """A large amount with a decimal prefix set apart from its unit: 4.24e7 GPU·h → '42.4 M GPU·h'.

    The prefix is the largest that keeps the rounded number at 1 or more (999,600 → '1 M').
    """
    scaled, prefix = value, ""
    for name, factor in (("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12)):
        if abs(float(f"{value / factor:.{digits}g}")) >= 1:
            scaled, prefix = value / factor, f"{name} "
    return f"{scaled:.{digits}g} {prefix}{unit}"
