"""Carbon and cost of a run, in its country and in each country it is compared with.

Operational carbon = facility energy × the country's grid intensity (codecarbon's
dataset, or the scenario's override for the site). Energy cost = facility energy ×
the country's electricity price. GPU cost (``rental_cost_eur``) = reserved GPU-hours ×
the site's price of a GPU-hour (``power/pricing.py``: rented, or owned with its
maintenance and space; taken as excluding electricity, so a quote that includes it
should come with ``electricity_price: 0 EUR/kWh``). Total cost = energy + GPU cost.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.power.country import carbon_intensity, electricity_price, site_and_compared
from twin.power.pricing import GpuHourPrice


@dataclass(frozen=True)
class CountryFigures:
    code: str                         # ISO 3166 alpha-2
    name: str
    intensity_g_per_kwh: float
    intensity_year: int | None
    intensity_source: str
    carbon_kg: float                  # operational
    price_eur_per_kwh: float | None
    price_year: int | None
    price_source: str
    energy_cost_eur: float | None
    total_cost_eur: float | None      # energy + rental (None when the energy price is unknown)


def rental_cost_eur(price: GpuHourPrice | None, reserved_gpu_hours: float) -> float | None:
    """What holding ``reserved_gpu_hours`` costs, every part but electricity; None when GPUs are not priced."""
    if price is None:
        return None
    return reserved_gpu_hours * price.total_eur


@dataclass(frozen=True)
class CountryRates:
    """A country's grid intensity and electricity price, before any energy is counted."""
    code: str
    name: str
    intensity_g_per_kwh: float
    intensity_year: int | None
    intensity_source: str
    price_eur_per_kwh: float | None
    price_year: int | None
    price_source: str


def country_rates(codes: list[str], intensity_override: float | None = None,
                  price_override: tuple[float, str] | None = None) -> list[CountryRates]:
    """The site (first code) and each compared country, once each; overrides apply to the site only."""
    out: list[CountryRates] = []
    for i, place in enumerate(site_and_compared(codes)):
        is_site = i == 0
        ci = carbon_intensity(place, intensity_override if is_site else None)
        pr = electricity_price(place, price_override if is_site else None)
        out.append(CountryRates(
            code=place.alpha2, name=place.name,
            intensity_g_per_kwh=ci.g_per_kwh, intensity_year=ci.year, intensity_source=ci.source,
            price_eur_per_kwh=pr.eur_per_kwh if pr else None, price_year=pr.year if pr else None,
            price_source=pr.source if pr else "no price known; set site.electricity_price",
        ))
    return out


def country_figures(rates: list[CountryRates], facility_kwh: float, rental_eur: float | None) -> list[CountryFigures]:
    """Carbon and cost of ``facility_kwh`` (and the rental) in each country."""
    out: list[CountryFigures] = []
    for r in rates:
        energy_cost = facility_kwh * r.price_eur_per_kwh if r.price_eur_per_kwh is not None else None
        total = None if energy_cost is None else energy_cost + (rental_eur or 0.0)
        out.append(CountryFigures(
            code=r.code, name=r.name,
            intensity_g_per_kwh=r.intensity_g_per_kwh, intensity_year=r.intensity_year,
            intensity_source=r.intensity_source,
            carbon_kg=facility_kwh * r.intensity_g_per_kwh / 1000.0,
            price_eur_per_kwh=r.price_eur_per_kwh, price_year=r.price_year, price_source=r.price_source,
            energy_cost_eur=energy_cost, total_cost_eur=total,
        ))
    return out
