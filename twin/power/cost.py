"""Carbon and cost of a run, in its country and in each country it is compared with.

Operational carbon = facility energy × the country's grid intensity (codecarbon's
dataset, or the scenario's override for the site). Energy cost = facility energy ×
the country's electricity price. Rental cost = reserved GPU-hours × the scenario's
price per GPU-hour (taken as excluding electricity; a quote that includes it
should come with ``electricity_price: 0 EUR/kWh``). Total cost = energy + rental.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.power.country import carbon_intensity, electricity_price, site_and_compared, to_eur


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


def rental_cost_eur(gpu_hour_price: tuple[float, str] | None, reserved_gpu_hours: float) -> float | None:
    if gpu_hour_price is None:
        return None
    amount, currency = gpu_hour_price
    return reserved_gpu_hours * to_eur(amount, currency, "site.gpu_hour_price")


def country_figures(codes: list[str], facility_kwh: float, rental_eur: float | None,
                    intensity_override: float | None = None,
                    price_override: tuple[float, str] | None = None) -> list[CountryFigures]:
    """The site (first code) and each compared country; overrides apply to the site only."""
    out: list[CountryFigures] = []
    for i, place in enumerate(site_and_compared(codes)):
        is_site = i == 0
        ci = carbon_intensity(place, intensity_override if is_site else None)
        pr = electricity_price(place, price_override if is_site else None)
        energy_cost = facility_kwh * pr.eur_per_kwh if pr else None
        total = None if energy_cost is None else energy_cost + (rental_eur or 0.0)
        out.append(CountryFigures(
            code=place.alpha2, name=place.name,
            intensity_g_per_kwh=ci.g_per_kwh, intensity_year=ci.year, intensity_source=ci.source,
            carbon_kg=facility_kwh * ci.g_per_kwh / 1000.0,
            price_eur_per_kwh=pr.eur_per_kwh if pr else None, price_year=pr.year if pr else None,
            price_source=pr.source if pr else "no price known; set site.electricity_price",
            energy_cost_eur=energy_cost, total_cost_eur=total,
        ))
    return out
