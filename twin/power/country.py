"""Per-country carbon intensity and electricity price.

Carbon intensity comes from codecarbon's maintained per-country dataset
(``codecarbon/data/private_infra/global_energy_mix.json``: lifecycle g CO2e/kWh
from Ember and Our World in Data, 213 countries by ISO-3, with the data year).
Electricity prices come from ``catalog/data/electricity_prices.yaml`` with
their sources; prices in other currencies are converted at sourced rates.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pycountry

from twin import catalog
from twin.errors import ScenarioError, did_you_mean

CARBON_DATASET = "codecarbon global_energy_mix.json (Ember / Our World in Data)"

# EU member states (ISO-2), for the EU-average price fallback.
EU_MEMBERS = frozenset("AT BE BG HR CY CZ DK EE FI FR DE GR HU IE IT LV LT LU MT NL PL PT RO SK SI ES SE".split())


@dataclass(frozen=True)
class Country:
    alpha2: str
    alpha3: str
    name: str


@lru_cache(maxsize=1)
def _energy_mix() -> dict[str, dict]:
    # The data file alone: importing the codecarbon package would start its tracker's imports (psutil, …).
    spec = importlib.util.find_spec("codecarbon")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("codecarbon is not installed; its energy-mix dataset gives carbon intensity")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "private_infra" / "global_energy_mix.json"
    return json.loads(path.read_text(encoding="utf-8"))


def country(code: str, field: str) -> Country:
    """Resolve an ISO 3166 alpha-2 or alpha-3 code; unknown codes get a suggestion."""
    text = str(code).strip().upper()
    found = None
    if len(text) == 2:
        found = pycountry.countries.get(alpha_2=text)
    elif len(text) == 3:
        found = pycountry.countries.get(alpha_3=text)
    if found is None:
        by_name = {c.name: c.alpha_2 for c in pycountry.countries}
        hint = did_you_mean(text, [c.alpha_2 for c in pycountry.countries] + list(by_name))
        close_name = next((n for n in by_name if hint == f" (did you mean '{n}'?)"), None)
        if close_name:
            hint = f" (did you mean '{by_name[close_name]}' for {close_name}?)"
        if not hint:
            try:
                guess = pycountry.countries.search_fuzzy(str(code))[0]
                hint = f" (did you mean '{guess.alpha_2}' for {guess.name}?)"
            except LookupError:
                hint = ""
        raise ScenarioError(field, f"unknown country code '{code}'{hint}; use ISO 3166 alpha-2 (FR) or alpha-3 (FRA)")
    return Country(found.alpha_2, found.alpha_3, found.name)


def site_and_compared(codes: list[str]) -> list[Country]:
    """The site (first code) and each compared country, once each; an unknown code names its key."""
    out: list[Country] = []
    for i, code in enumerate(codes):
        place = country(code, "site.country" if i == 0 else f"site.compare[{i - 1}]")
        if all(place.alpha2 != other.alpha2 for other in out):
            out.append(place)
    return out


@dataclass(frozen=True)
class CarbonIntensity:
    g_per_kwh: float
    year: int | None
    source: str


def carbon_intensity(place: Country, override_g_per_kwh: float | None = None) -> CarbonIntensity:
    if override_g_per_kwh is not None:
        return CarbonIntensity(override_g_per_kwh, None, "scenario override (site.carbon_intensity)")
    row = _energy_mix().get(place.alpha3)
    if row is None or row.get("carbon_intensity") is None:
        raise ScenarioError("site.country", f"{place.alpha2} ({place.name}) has no carbon intensity in the "
                            f"{CARBON_DATASET}; set site.carbon_intensity")
    return CarbonIntensity(float(row["carbon_intensity"]), row.get("year"), CARBON_DATASET)


@dataclass(frozen=True)
class Price:
    eur_per_kwh: float
    source: str
    year: int | None = None


def to_eur(amount: float, currency: str, field: str) -> float:
    rates = catalog.table("currencies")
    if currency not in rates:
        raise ScenarioError(field, f"unknown currency '{currency}'{did_you_mean(currency, rates)}; "
                            f"known: {', '.join(rates)}")
    return amount * float(rates[currency]["eur_per_unit"])


def electricity_price(place: Country, override: tuple[float, str] | None = None) -> Price | None:
    """Price per kWh in euros, or None when neither the table nor the scenario gives one."""
    if override is not None:
        amount, currency = override
        return Price(to_eur(amount, currency, "site.electricity_price"), "scenario override (site.electricity_price)")
    prices = catalog.table("electricity_prices")
    key = place.alpha2 if place.alpha2 in prices else ("EU" if place.alpha2 in EU_MEMBERS else None)
    if key is None:
        return None
    row = prices[key]
    note = "" if key == place.alpha2 else f" (EU average used for {place.alpha2})"
    return Price(to_eur(float(row["price"]), row["currency"], f"catalog electricity_prices.{key}"),
                 row["source"] + note, row.get("year"))
