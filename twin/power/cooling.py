"""The building: PUE as a result of a cooling design and the site's climate, hour by hour.

Hourly outdoor temperature (no hourly record is shipped): each month's climate normal
(mean ``T̄`` and mean daily range ``ΔT``, ``catalog/data/climates.yaml``) gives every day of
the month the same cosine day, warmest at 15 h and coolest at 3 h local time:

    T(h) = T̄ + ΔT/2 · cos(2π (h − 15) / 24)

Per watt of IT heat, with ``f`` of it taken by direct liquid cooling:

- air economiser: outdoor air supplied at ``T + approach`` removes the share
  ``e = clip((T_ret − max(T + approach, T_sup)) / (T_ret − T_sup), 0, 1)`` of the air heat,
  ``T_ret = T_sup + RACK_DELTA_T_C``; the chiller (or, without one, adiabatic assist) takes the rest;
- liquid loop: dry coolers take it all while ``T + DRY_COOLER_APPROACH_C ≤ T_liquid``, else the chiller;
- chiller: ``COP = η · T_evap / (T_cond − T_evap)`` (kelvin), ``T_evap`` the supply less
  ``CHILLER_EVAPORATOR_APPROACH_C``, ``T_cond = T + CHILLER_CONDENSER_APPROACH_C``, ``η`` the
  Carnot fraction, capped at ``CHILLER_COP_MAX``;
- fans per W of air heat, pumps per W of liquid heat, UPS and distribution losses per W of IT.

    PUE(h) = 1 + fans + pumps + losses + chiller(h) + adiabatic(h)

The yearly PUE is the mean over the 8,760 hours (a constant IT load weighs every hour alike).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from twin import catalog

# Days of the months of a 365-day year.
DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
HOURS_PER_YEAR = 8760
# The warmest hour of a day at mid-latitudes, local solar time (the cosine day above).
WARMEST_HOUR = 15
# Air warms by about 10-15 C across a server (ASHRAE TC 9.9, Thermal Guidelines, 5th ed., 2021).
RACK_DELTA_T_C = 12.0
# Chilled water this much below the air it cools; an air-cooled condenser this much above the
# outdoor air (estimates, typical design approaches).
CHILLER_EVAPORATOR_APPROACH_C = 8.0
CHILLER_CONDENSER_APPROACH_C = 10.0
# Chillers reach about half the Carnot COP: a water-cooled chiller rated at AHRI 550/590 conditions
# (6.7 C leaving chilled water, 29.4 C entering condenser water) has COP ~6, Carnot 12.3.
CHILLER_CARNOT_FRACTION = 0.5
CHILLER_COP_MAX = 15.0
# Dry coolers return warm water this much above the outdoor air (estimate).
DRY_COOLER_APPROACH_C = 5.0
# ASHRAE A1 allowable inlet upper bound (TC 9.9, 2021) and the cooling adiabatic assist gives
# (estimate; it depends on humidity, which the climate file does not carry).
ASHRAE_A1_ALLOWABLE_MAX_C = 32.0
ADIABATIC_DEPRESSION_C = 8.0


@dataclass(frozen=True)
class Climate:
    """A country's representative monthly climate normal (``catalog/data/climates.yaml``)."""
    country: str
    station: str
    mean_c: tuple[float, ...]             # 12 monthly means
    range_c: tuple[float, ...]            # 12 mean daily ranges
    source: str


@dataclass(frozen=True)
class CoolingDesign:
    """A cooling design (``catalog/data/cooling_designs.yaml``); fractions are W per W of heat."""
    name: str
    supply_c: float
    approach_c: float
    economizer: bool
    chiller: bool
    fan_w_per_w: float
    loss_w_per_w: float
    adiabatic_w_per_w: float = 0.0
    liquid_fraction: float = 0.0
    liquid_supply_c: float = 32.0
    pump_w_per_w: float = 0.0
    source: str = ""


@lru_cache(maxsize=None)
def climate(country: str, field_name: str = "site.country") -> Climate:
    """A country's climate normal; unknown countries are a ScenarioError naming ``field_name``."""
    row = catalog.entry("climates", country.upper(), field_name)
    return Climate(country.upper(), row["station"], tuple(float(v) for v in row["mean_c"]),
                   tuple(float(v) for v in row["range_c"]), row.get("source", ""))


@lru_cache(maxsize=None)
def cooling_design(name: str, field_name: str = "site.cooling.design") -> CoolingDesign:
    """A catalog cooling design by name."""
    row = catalog.entry("cooling_designs", name, field_name)
    known = {f for f in CoolingDesign.__dataclass_fields__ if f not in ("name",)}
    return CoolingDesign(name=name, **{k: v for k, v in row.items() if k in known})


def hourly_temperatures_c(c: Climate) -> np.ndarray:
    """8,760 outdoor temperatures, January 1st 0 h first (module docstring)."""
    day = np.array([math.cos(2 * math.pi * (h - WARMEST_HOUR) / 24) for h in range(24)])   # math's: any CPU
    months = [np.tile(c.mean_c[m] + c.range_c[m] / 2 * day, DAYS_IN_MONTH[m]) for m in range(12)]
    return np.concatenate(months)


def chiller_cop(outdoor_c: np.ndarray, evaporator_c: float) -> np.ndarray:
    """COP of a chiller cooling to ``evaporator_c`` against outdoor air (module docstring)."""
    t_evap = evaporator_c + 273.15
    lift = np.maximum(outdoor_c + CHILLER_CONDENSER_APPROACH_C + 273.15 - t_evap, 1e-6)
    return np.minimum(CHILLER_CARNOT_FRACTION * t_evap / lift, CHILLER_COP_MAX)


def air_free_share(d: CoolingDesign, outdoor_c: np.ndarray) -> np.ndarray:
    """Share of the air heat outdoor air removes each hour (0 without an economiser)."""
    if not d.economizer:
        return np.zeros_like(outdoor_c)
    ret = d.supply_c + RACK_DELTA_T_C
    delivered = np.maximum(outdoor_c + d.approach_c, d.supply_c)
    return np.clip((ret - delivered) / RACK_DELTA_T_C, 0.0, 1.0)


def hourly_pue(d: CoolingDesign, outdoor_c: np.ndarray) -> np.ndarray:
    """PUE of every hour of ``outdoor_c`` under design ``d`` (module docstring)."""
    air, liquid = 1.0 - d.liquid_fraction, d.liquid_fraction
    rest_air = air * (1.0 - air_free_share(d, outdoor_c))
    liquid_free = outdoor_c + DRY_COOLER_APPROACH_C <= d.liquid_supply_c
    rest_liquid = np.where(liquid_free, 0.0, liquid)
    pue = 1.0 + d.fan_w_per_w * air + d.pump_w_per_w * liquid + d.loss_w_per_w + np.zeros_like(outdoor_c)
    if d.chiller:
        pue = pue + rest_air / chiller_cop(outdoor_c, d.supply_c - CHILLER_EVAPORATOR_APPROACH_C)
        pue = pue + rest_liquid / chiller_cop(outdoor_c, d.liquid_supply_c - CHILLER_EVAPORATOR_APPROACH_C)
    else:
        pue = pue + d.adiabatic_w_per_w * (rest_air + rest_liquid)
    return pue


@dataclass(frozen=True)
class BuildingYear:
    """A year of the building at one site: PUE by hour and what drives it."""
    country: str
    design: str
    pue: float                            # yearly: mean of the hourly PUE
    pue_min: float
    pue_max: float
    pue_by_month: tuple[float, ...]
    free_cooling_hours: int               # hours the economiser takes all the air heat
    mechanical_hours: int                 # hours a chiller (or adiabatic assist) runs
    excursion_hours: int                  # chiller-less hours above ASHRAE A1 allowable inlet
    hourly_pue: tuple[float, ...]
    hourly_outdoor_c: tuple[float, ...]
    sources: tuple[str, ...]


@lru_cache(maxsize=64)      # a fit answers hundreds of options at one site: the year is worked out once
def building_year(country: str, design: str) -> BuildingYear:
    """PUE per hour and per year of cooling ``design`` at ``country``'s climate (a frozen record, shared)."""
    c, d = climate(country), cooling_design(design)
    temps = hourly_temperatures_c(c)
    pue = hourly_pue(d, temps)
    free = air_free_share(d, temps)
    bounds = np.cumsum((0,) + tuple(n * 24 for n in DAYS_IN_MONTH))
    by_month = tuple(float(pue[bounds[m]:bounds[m + 1]].mean()) for m in range(12))
    excursion = 0
    if not d.chiller:
        excursion = int(np.sum(temps + d.approach_c - ADIABATIC_DEPRESSION_C > ASHRAE_A1_ALLOWABLE_MAX_C))
    return BuildingYear(c.country, d.name, float(pue.mean()), float(pue.min()), float(pue.max()), by_month,
                        int(np.sum(free >= 1.0)), int(np.sum(free < 1.0)), excursion,
                        tuple(float(round(v, 5)) for v in pue), tuple(float(round(v, 3)) for v in temps),
                        (c.source, d.source))
