"""Energy, carbon and cost of a shared cluster: per job, per tenant and for the whole cluster, per country.

A job is charged the IT power the cluster simulation attributes to it (the idle
share of the GPUs it holds and the dynamic power of those it uses), times the
site's PUE. Idle nodes, spares, nodes in repair and the switches and storage are
the cluster's own overhead: the cluster total minus the jobs' sum.

Carbon = ∫ facility power × grid intensity dt. With an hourly profile the
intensity follows the country's typical day of each month (``power/hourly.py``);
with the annual average (or a flat profile, the same thing) it is facility
energy × the annual intensity, as for a single job. Energy cost = facility energy ×
the country's price; rental = GPU-hours held × the price per GPU-hour.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.operations.records import ClusterRun
from twin.power.cost import rental_cost_eur
from twin.power.pricing import Cost, GpuHourPrice, cost
from twin.power.country import carbon_intensity, electricity_price, site_and_compared
from twin.power.hourly import CarbonClock, HourlyShape, flat_shape
from twin.units import JOULES_PER_KWH, SECONDS_PER_HOUR

GRAMS_PER_KG = 1000.0


@dataclass(frozen=True)
class CountryGrid:
    """A country's intensity over time and its electricity price."""
    code: str                                  # ISO 3166 alpha-2
    name: str
    annual_g_per_kwh: float
    intensity_source: str
    intensity_year: int | None
    shape: HourlyShape                         # flat: the annual average at every hour
    price_eur_per_kwh: float | None
    price_source: str

    @property
    def hourly(self) -> bool:
        return not self.shape.flat


def country_grids(codes: list[str], hourly: dict[str, HourlyShape | None], intensity_override: float | None,
                  price_override: tuple[float, str] | None) -> list[CountryGrid]:
    """The site (first code) and each compared country; overrides apply to the site only."""
    out = []
    for i, place in enumerate(site_and_compared(codes)):
        ci = carbon_intensity(place, intensity_override if i == 0 else None)
        price = electricity_price(place, price_override if i == 0 else None)
        shape = hourly.get(place.alpha2) or flat_shape(place.alpha2)
        out.append(CountryGrid(place.alpha2, place.name, ci.g_per_kwh, ci.source, ci.year, shape,
                               price.eur_per_kwh if price else None,
                               price.source if price else "no price known; set site.electricity_price"))
    return out


@dataclass(frozen=True)
class Charge:
    """Energy, carbon and cost of one job, one tenant or the cluster."""
    energy_it_kwh: float
    energy_facility_kwh: float
    gpu_hours: float                           # held
    carbon_kg: dict[str, float]                # per country
    energy_cost_eur: dict[str, float | None]
    rental_cost_eur: float | None


@dataclass(frozen=True)
class Accounts:
    jobs: tuple[Charge, ...]
    tenants: dict[str, Charge]
    cluster: Charge                            # every node, spares and fabric included, over the run
    overhead: Charge                           # the cluster less the jobs: idle nodes, spares, repairs, fabric
    countries: tuple[CountryGrid, ...]
    pue: float
    price: GpuHourPrice | None = None          # the site's GPU-hour (power/pricing.py)

    def cost(self, charge: Charge) -> Cost | None:
        """``charge`` at the site by part (GPU, maintenance, space, electricity); None when GPUs are not priced."""
        if self.price is None:
            return None
        return cost(self.price, charge.gpu_hours, charge.energy_facility_kwh, self.countries[0].price_eur_per_kwh)


def _weighted_seconds(clock: CarbonClock, start: np.ndarray, end: np.ndarray, horizon_s: float) -> np.ndarray:
    """``∫ s(t) dt`` over each interval: seconds weighted by the hourly shape (plain seconds when flat)."""
    if clock.shape.flat:
        return end - start
    return clock.integral_s(end, horizon_s) - clock.integral_s(start, horizon_s)


def account(run: ClusterRun, pue: float, grids: list[CountryGrid], start_month: int,
            price: GpuHourPrice | None) -> Accounts:
    """Charges per job, per tenant and for the cluster in every country of ``grids``."""
    seg = run.segments
    n = len(run.jobs)
    clocks = {g.code: CarbonClock(g.shape, start_month) for g in grids}
    joules = np.bincount(seg.job, weights=seg.w * (seg.end_s - seg.start_s), minlength=n)
    # grams per job per country: W · weighted s · PUE · g/kWh / (J/kWh)
    grams = {g.code: np.bincount(seg.job, weights=seg.w * _weighted_seconds(clocks[g.code], seg.start_s, seg.end_s,
                                                                            run.end_s), minlength=n)
             * pue * g.annual_g_per_kwh / JOULES_PER_KWH for g in grids}
    held_h = np.array([j.gpu_hours for j in run.jobs])

    def charge(it_j: float, g_by_code: dict[str, float], gpu_h: float) -> Charge:
        facility = it_j * pue / JOULES_PER_KWH
        return Charge(it_j / JOULES_PER_KWH, facility, gpu_h, {c: v / GRAMS_PER_KG for c, v in g_by_code.items()},
                      {g.code: facility * g.price_eur_per_kwh if g.price_eur_per_kwh is not None else None
                       for g in grids},
                      rental_cost_eur(price, gpu_h))

    jobs = tuple(charge(float(joules[i]), {c: float(grams[c][i]) for c in grams}, float(held_h[i])) for i in range(n))
    tenants: dict[str, Charge] = {}
    for name in sorted({j.tenant for j in run.jobs}):
        mine = np.array([j.tenant == name for j in run.jobs])
        tenants[name] = charge(float(joules[mine].sum()), {c: float(grams[c][mine].sum()) for c in grams},
                               float(held_h[mine].sum()))
    s = run.series
    t = np.append(s.t_s, run.end_s)
    start, end = t[:-1], t[1:]
    it_j = float((s.it_w * (end - start)).sum())
    cluster_g = {g.code: float((s.it_w * _weighted_seconds(clocks[g.code], start, end, run.end_s)).sum())
                 * pue * g.annual_g_per_kwh / JOULES_PER_KWH for g in grids}
    total_gpu_h = run.gpus_total * run.end_s / SECONDS_PER_HOUR
    cluster = charge(it_j, cluster_g, total_gpu_h)
    overhead = charge(it_j - float(joules.sum()), {c: cluster_g[c] - float(grams[c].sum()) for c in grams},
                      total_gpu_h - float(held_h.sum()))
    return Accounts(jobs, tenants, cluster, overhead, tuple(grids), pue, price)


def idle_tail_kg(run: ClusterRun, pue: float, grids: list[CountryGrid], start_month: int,
                 until_s: float) -> dict[str, float]:
    """Carbon of the idle cluster from the end of the run to ``until_s``: two runs of the same jobs
    compare over a common window (the cluster draws its idle power whether jobs run or not)."""
    out = {}
    for g in grids:
        clock = CarbonClock(g.shape, start_month)
        seconds = float(_weighted_seconds(clock, np.array([run.end_s]), np.array([max(until_s, run.end_s)]),
                                          until_s)[0])
        out[g.code] = run.base_it_w * seconds * pue * g.annual_g_per_kwh / JOULES_PER_KWH / GRAMS_PER_KG
    return out
