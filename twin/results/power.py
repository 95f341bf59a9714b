"""The ``power`` block of a training record: device, node, rack, fabric and country figures of the run
(docs/results.md, "power")."""

from __future__ import annotations

from typing import Any

from twin.power.assess import PowerAssessment
from twin.power.pricing import cost_parts
from twin.results.core import plain

# The job phases whose cluster IT power the record lists.
PHASES = ("train", "checkpoint", "restart", "repair_wait")


def _switches(counts: Any) -> dict[str, Any]:
    return {"leaf": counts.leaf, "spine": counts.spine, "core": counts.core, "source": counts.source}


def _infrastructure(pw: PowerAssessment) -> dict[str, Any]:
    infra = pw.infrastructure
    return {
        "compute_fabric": _switches(infra.compute_switches),
        "storage_fabric": _switches(infra.storage_switches),
        "switch_model": infra.switch.name,
        "switch_w": infra.switch.draw_w(),
        "switches_w": infra.switches_w,
        "storage_w": infra.storage_w,
        "storage_source": infra.storage_source,
    }


def _devices(pw: PowerAssessment) -> dict[str, Any]:
    cluster, node = pw.cluster, pw.cluster.node
    return {
        "accounting": pw.accounting,
        "gpu_avg_w": cluster.step.gpu_avg_w,
        "gpu_idle_w": node.gpu.idle_w,
        "gpu_limit_w": node.gpu.limit_w,
        "gpu_phase_w": {p: node.gpu.phase_w(p) for p in node.gpu.activity},
        "step_phases": plain(cluster.step),
        "node_avg_w": cluster.busy_node_w("train"),
        "node_idle_w": node.idle_w,
        "node_peak_w": node.peak_w,
        "node_max_w": node.max_w,
        "host_components_w": node.host.components_w,
        "busy_nodes": cluster.busy_nodes,
        "idle_nodes": cluster.idle_nodes,
        "nodes_w": cluster.nodes_w,
    }


def _racks(pw: PowerAssessment) -> dict[str, Any]:
    racks = pw.racks
    return {
        "racks": racks.racks,
        "nodes_per_rack": racks.nodes_per_rack,
        "rack_avg_w": racks.avg_w,
        "rack_peak_w": racks.peak_w,
        "rack_limit_w": racks.limit_w,
        "racks_over_limit": racks.over_limit,
        "rack_groups": plain(racks.groups),
    }


def _embodied(pw: PowerAssessment) -> dict[str, Any] | None:
    emb = pw.embodied
    return None if emb is None else {
        "gpu_kg": emb.gpu_kg, "server_kg": emb.server_kg, "total_kg": emb.total_kg,
        "per_gpu_kg": emb.spec.gpu_kg, "per_server_kg": emb.spec.server_kg,
        "lifetime_years": emb.spec.lifetime_years, "utilization": emb.spec.utilization,
        "source": emb.spec.source}


def site_cost_record(pw: PowerAssessment) -> dict[str, Any] | None:
    """``cost_eur``: the site's cost by part (gpu, maintenance, space, electricity), its total, the parts the
    total includes and how the GPUs are paid (docs/results.md, docs/power.md "Cost")."""
    parts = pw.cost()
    return None if parts is None else cost_parts(parts)


def power_record(pw: PowerAssessment, timelines: bool = True) -> dict[str, Any]:
    """``power``: device, node, rack, fabric and country figures of the run (docs/results.md);
    ``timelines`` False leaves out the IT power timeline."""
    record = _devices(pw) | {
        "infrastructure": _infrastructure(pw),
        "train_w": pw.cluster.it_w("train"),
        "phase_it_w": {p: pw.cluster.it_w(p) for p in PHASES},
        "energy_by_phase_kwh": pw.energy_by_phase_kwh,
    } | _racks(pw) | {
        "power_cap_w": pw.power_cap_w,
        "power_cap_clock_factor": pw.power_cap_clock_factor,
        "reserved_gpu_hours": pw.reserved_gpu_hours,
        "rental_cost_eur": pw.rental_cost_eur,
        "cost_eur": site_cost_record(pw),
        "gpu_hour_price_eur": None if pw.hour_price is None else {
            "gpu": pw.hour_price.gpu_eur, "maintenance": pw.hour_price.maintenance_eur,
            "space": pw.hour_price.space_eur, "total": pw.hour_price.total_eur, "pricing": pw.hour_price.pricing},
        "embodied": _embodied(pw),
        "countries": plain(pw.countries),
    }
    if timelines:
        record["timeline"] = [{"start_s": s.start_s, "end_s": s.end_s, "phase": s.phase, "it_w": s.it_w,
                               "checkpoint_s": s.checkpoint_s} for s in pw.timeline]
    return record
