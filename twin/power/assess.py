"""Power, energy, carbon and cost of one run: the power layer's single entry point.

``assess`` puts together the device power (``devices``), the cluster's power by
phase and its timeline (``energy``), racks (``rack``), switches and storage
(``infrastructure``), embodied carbon (``embodied``) and carbon and cost per
country (``cost``). The API calls it once per result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from twin.engine.step import StepBreakdown
from twin.hardware.specs import ClusterSpec
from twin.jobs.model import Segment
from twin.network.records import FabricSummary
from twin.options import Accounting
from twin.power.capping import clock_factor
from twin.power.cost import CountryFigures, CountryRates, country_figures, country_rates, rental_cost_eur
from twin.power.energy import (
    ClusterPower,
    PowerSegment,
    cluster_power,
    facility_energy_kwh,
    gpu_hours,
    gpu_tdp_energy_kwh,
    phase_energy_kwh,
    power_timeline,
    timeline_energy_j,
    training_segments,
)
from twin.power.devices import NodePower, node_power
from twin.power.infrastructure import Infrastructure, infrastructure
from twin.power.pricing import Cost, GpuHourPrice, cost
from twin.power.rack import RackPower, rack_power, rack_warning
from twin.power.site import SiteSpec
from twin.units import JOULES_PER_KWH

if TYPE_CHECKING:
    from twin.power.embodied import Embodied


@dataclass(frozen=True)
class PowerAssessment:
    """Power, energy, carbon and cost of one run (``Result.power`` and the headline energy figures)."""
    accounting: Accounting
    energy_it_kwh: float
    energy_facility_kwh: float
    avg_power_it_w: float
    peak_power_it_w: float
    cluster: ClusterPower
    infrastructure: Infrastructure
    racks: RackPower
    timeline: list[PowerSegment]
    energy_by_phase_kwh: dict[str, float]
    power_cap_w: float | None
    power_cap_clock_factor: float
    reserved_gpu_hours: float
    countries: list[CountryFigures]
    embodied: Embodied | None
    rental_cost_eur: float | None
    warnings: list[str] = field(default_factory=list)
    hour_price: GpuHourPrice | None = None    # the site's GPU-hour, rented or owned (power/pricing.py)

    @property
    def site(self) -> CountryFigures:
        return self.countries[0]

    def carbon_kg(self) -> dict[str, float]:
        return {c.code: c.carbon_kg for c in self.countries}

    def energy_cost_eur(self) -> dict[str, float | None]:
        return {c.code: c.energy_cost_eur for c in self.countries}

    def total_cost_eur(self) -> dict[str, float | None]:
        return {c.code: c.total_cost_eur for c in self.countries}

    def intensity(self) -> dict[str, float]:
        return {c.code: c.intensity_g_per_kwh for c in self.countries}

    def price(self) -> dict[str, float | None]:
        return {c.code: c.price_eur_per_kwh for c in self.countries}

    def sources(self) -> dict[str, str]:
        out = {}
        for c in self.countries:
            out[f"carbon_intensity.{c.code}"] = c.intensity_source + (f", {c.intensity_year}" if c.intensity_year else "")
            out[f"electricity_price.{c.code}"] = c.price_source
        if self.embodied:
            out["embodied_carbon"] = self.embodied.spec.source
        if self.hour_price is not None and self.hour_price.sources:
            out["gpu_hour_price"] = "; ".join(self.hour_price.sources)
        return out

    def cost(self) -> Cost | None:
        """The site's cost by part (GPU, maintenance, space, electricity); None when GPUs are not priced."""
        if self.hour_price is None:
            return None
        return cost(self.hour_price, self.reserved_gpu_hours, self.energy_facility_kwh, self.site.price_eur_per_kwh)


@dataclass(frozen=True)
class Facility:
    """A cluster at its site before a job runs on it: node and infrastructure power, country rates.
    Built once (``facility``) and shared by every run assessed on that cluster and site."""
    cluster: ClusterSpec
    site: SiteSpec
    node: NodePower
    infrastructure: Infrastructure
    rates: list[CountryRates]


def facility(cluster: ClusterSpec, site: SiteSpec, fabric: FabricSummary) -> Facility:
    return Facility(cluster, site, node_power(cluster.node, cluster.gpu_power_cap_w), infrastructure(cluster, fabric),
                    country_rates([site.country, *site.compare], site.carbon_intensity_g_per_kwh,
                                  site.electricity_price))


def assess(cluster: ClusterSpec, step: StepBreakdown, gpus_used: int, site: SiteSpec, time_s: float,
           segments: list[Segment] | None, fabric: FabricSummary) -> PowerAssessment:
    """Power of every device by phase, the run's energy, and its carbon and cost per country."""
    return assess_at(facility(cluster, site, fabric), step, gpus_used, time_s, segments)


def assess_at(f: Facility, step: StepBreakdown, gpus_used: int, time_s: float,
              segments: list[Segment] | None) -> PowerAssessment:
    """``assess`` on a facility built beforehand (a search assesses many runs on one)."""
    cluster, site, infra = f.cluster, f.site, f.infrastructure
    power = cluster_power(cluster, step, gpus_used, infra.total_w, f.node)
    racks = rack_power(power, cluster.nodes_per_rack, cluster.rack_power_limit_w)
    warnings = [w for w in [rack_warning(racks, power, cluster.node.name), site.price_warning] if w]
    gpu = cluster.node.gpu
    if cluster.gpu_power_cap_w is not None and cluster.gpu_power_cap_w >= gpu.tdp_w:
        warnings.append(f"gpu_power_cap {cluster.gpu_power_cap_w:.0f} W is at or above the {gpu.name} TDP "
                        f"({gpu.tdp_w:.0f} W): no effect")

    timeline = power_timeline(power, segments if segments else training_segments(time_s))
    wall_s = max((s.end_s for s in timeline), default=time_s)
    used_gpu_hours = gpu_hours(gpus_used, time_s)
    if site.accounting == "gpu-tdp":
        it_kwh = gpu_tdp_energy_kwh(used_gpu_hours, gpu.tdp_w)
    else:
        it_kwh = timeline_energy_j(timeline) / JOULES_PER_KWH
    facility_kwh = facility_energy_kwh(it_kwh, site.pue)
    avg_w = it_kwh * JOULES_PER_KWH / wall_s if wall_s > 0 else 0.0

    reserved_gpu_hours = gpu_hours(cluster.gpus, wall_s)       # every GPU of the cluster, spares included
    rental = rental_cost_eur(site.price, reserved_gpu_hours)
    countries = country_figures(f.rates, facility_kwh, rental)
    emb = None
    asked = site.embodied
    if asked is not None:
        from twin.power.embodied import embodied, embodied_spec      # only for a site that asks for it

        spec = embodied_spec(gpu, asked.method, asked.gpu_kg, asked.server_kg, asked.lifetime_years, asked.utilization)
        emb = embodied(spec, reserved_gpu_hours, cluster.node.gpus)
    return PowerAssessment(
        accounting=site.accounting,
        energy_it_kwh=it_kwh,
        energy_facility_kwh=facility_kwh,
        avg_power_it_w=avg_w,
        peak_power_it_w=power.peak_w,
        cluster=power,
        infrastructure=infra,
        racks=racks,
        timeline=timeline,
        energy_by_phase_kwh=phase_energy_kwh(timeline, power),
        power_cap_w=cluster.gpu_power_cap_w,
        power_cap_clock_factor=clock_factor(gpu, cluster.gpu_power_cap_w),
        reserved_gpu_hours=reserved_gpu_hours,
        countries=countries,
        embodied=emb,
        rental_cost_eur=rental,
        warnings=warnings,
        hour_price=site.price,
    )
