"""Power, energy, carbon and cost of one run: the power layer's single entry point.

``assess`` puts together the device power (``devices``), the cluster's power by
phase and its timeline (``energy``), racks (``rack``), switches and storage
(``infrastructure``), embodied carbon (``embodied``) and carbon and cost per
country (``cost``). The API calls it once per result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from twin.engine.step import StepBreakdown
from twin.hardware.specs import ClusterSpec
from twin.power.capping import clock_factor
from twin.power.cost import CountryFigures, country_figures, rental_cost_eur
from twin.power.embodied import Embodied, embodied, embodied_spec
from twin.power.energy import (
    cluster_power,
    facility_energy_kwh,
    gpu_hours,
    gpu_tdp_energy_kwh,
    phase_energy_kwh,
    power_timeline,
    timeline_energy_j,
    training_segments,
)
from twin.power.infrastructure import infrastructure
from twin.power.rack import rack_power, rack_warning
from twin.scenario import Site
from twin.units import JOULES_PER_KWH

@dataclass(frozen=True)
class PowerAssessment:
    energy_it_kwh: float
    energy_facility_kwh: float
    avg_power_it_w: float
    peak_power_it_w: float
    countries: list[CountryFigures]
    embodied: Embodied | None
    rental_cost_eur: float | None
    power: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

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
        return out


def assess(cluster: ClusterSpec, step: StepBreakdown, gpus_used: int, site: Site, time_s: float,
           segments: list[dict[str, Any]] | None, fabric: dict[str, Any],
           storage_named: bool = True) -> PowerAssessment:
    """Power of every device by phase, the run's energy, and its carbon and cost per country."""
    infra = infrastructure(cluster, fabric, storage_named)
    power = cluster_power(cluster, step, gpus_used, infra.total_w)
    racks = rack_power(power, cluster.nodes_per_rack, cluster.rack_power_limit_w)
    warnings = [w for w in [rack_warning(racks, power, cluster.node.name)] if w]
    gpu = cluster.node.gpu
    if cluster.gpu_power_cap_w is not None and cluster.gpu_power_cap_w >= gpu.tdp_w:
        warnings.append(f"gpu_power_cap {cluster.gpu_power_cap_w:.0f} W is at or above the {gpu.name} TDP "
                        f"({gpu.tdp_w:.0f} W): no effect")

    segs = segments if segments else training_segments(time_s)
    timeline = power_timeline(power, segs)
    wall_s = max((s["end_s"] for s in timeline), default=time_s)
    used_gpu_hours = gpu_hours(gpus_used, time_s)
    if site.accounting == "gpu-tdp":
        it_kwh = gpu_tdp_energy_kwh(used_gpu_hours, gpu.tdp_w)
    else:
        it_kwh = timeline_energy_j(timeline) / JOULES_PER_KWH
    facility_kwh = facility_energy_kwh(it_kwh, site.pue)
    avg_w = it_kwh * JOULES_PER_KWH / wall_s if wall_s > 0 else 0.0

    reserved_gpus = (cluster.nodes + cluster.spare_nodes) * cluster.node.gpus
    reserved_gpu_hours = gpu_hours(reserved_gpus, wall_s)
    rental = rental_cost_eur(site.gpu_hour_price, reserved_gpu_hours)
    countries = country_figures([site.country, *site.compare], facility_kwh, rental,
                                site.carbon_intensity, site.electricity_price)
    emb = None
    asked = site.embodied
    if asked.enabled:
        spec = embodied_spec(gpu, asked.method, asked.gpu_kg, asked.server_kg, asked.lifetime_years, asked.utilization)
        emb = embodied(spec, reserved_gpu_hours, cluster.node.gpus)

    node = power.node
    details = {
        "accounting": site.accounting,
        "gpu_avg_w": power.step.gpu_avg_w,
        "gpu_idle_w": node.gpu.idle_w,
        "gpu_limit_w": node.gpu.limit_w,
        "gpu_phase_w": {p: node.gpu.phase_w(p) for p in node.gpu.activity},
        "step_phases": power.step.as_dict(),
        "node_avg_w": power.busy_node_w("train"),
        "node_idle_w": node.idle_w,
        "node_peak_w": node.peak_w,
        "node_max_w": node.max_w,
        "host_components_w": node.host.components_w,
        "busy_nodes": power.busy_nodes,
        "idle_nodes": power.idle_nodes,
        "nodes_w": power.nodes_w,
        "infrastructure": infra.as_dict(),
        "train_w": power.it_w("train"),
        "phase_it_w": {p: power.it_w(p) for p in ("train", "checkpoint", "restart", "repair_wait")},
        "energy_by_phase_kwh": phase_energy_kwh(timeline, power),
        "racks": racks.racks,
        "nodes_per_rack": racks.nodes_per_rack,
        "rack_avg_w": racks.avg_w,
        "rack_peak_w": racks.peak_w,
        "rack_limit_w": racks.limit_w,
        "racks_over_limit": racks.over_limit,
        "rack_groups": [g.__dict__ for g in racks.groups],
        "power_cap_w": cluster.gpu_power_cap_w,
        "power_cap_clock_factor": clock_factor(gpu, cluster.gpu_power_cap_w),
        "reserved_gpu_hours": reserved_gpu_hours,
        "rental_cost_eur": rental,
        "embodied": emb.as_dict() if emb else None,
        "countries": [c.as_dict() for c in countries],
        "timeline": timeline,
    }
    return PowerAssessment(
        energy_it_kwh=it_kwh,
        energy_facility_kwh=facility_kwh,
        avg_power_it_w=avg_w,
        peak_power_it_w=power.peak_w,
        countries=countries,
        embodied=emb,
        rental_cost_eur=rental,
        power=details,
        warnings=warnings,
    )
