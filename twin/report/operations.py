"""The terminal summary of a cluster-operations record (``OperationsResult.to_dict()``): the cluster, its
scheduler and jobs, waits, power and energy, and carbon and cost by country and by tenant."""

from __future__ import annotations

from typing import Any

from twin.formatting import fmt_co2e_kg, fmt_energy_kwh, fmt_money_eur, fmt_number
from twin.report.format import duration, spread, table, times
from twin.units import fmt_duration, fmt_si


def _cluster_lines(r: dict[str, Any]) -> list[str]:
    """The cluster, the scheduler, what became of the jobs, utilisation, waits and placement."""
    u, w, units = r["utilisation"], r["wait_s"], r["scalable_units"]
    return [
        f"Cluster       {r['nodes']:,} nodes of {r['gpus_per_node']} GPUs ({r['gpus_total']:,} GPUs), "
        f"{r['spare_nodes']} in the spare pool; {r['topology']}, {units} scalable unit{'s' * (units != 1)} of "
        f"{r['nodes_per_su']}, 1:{r['oversubscription']:g}",
        f"Scheduler     {r['policy']}, {r['placement']} placement; {r['jobs_submitted']:,} jobs over "
        f"{fmt_duration(r['makespan_s'])} (horizon {fmt_duration(r['horizon_s'])})",
        f"Jobs          {r['jobs_finished']:,} finished, {r['jobs_timed_out']:,} at their time limit, "
        f"{r['jobs_unfinished']:,} unfinished; {r['spanning_jobs']:,} started over more than one scalable unit",
        f"Utilisation   GPUs held {u['allocated']:.1%}, working {u['busy']:.1%}; "
        f"{u['gpu_hours_allocated']:,.0f} GPU-hours held; fragmented {u['fragmented_gpus']:,.1f} GPUs "
        f"({u['fragmented']:.1%}) on average (free GPUs no waiting job can use)",
        f"Queue wait    P50/P90/P99 {spread(w['all'])} (mean {duration(w['all']['mean'] or 0.0)})"
        + (f"; carbon-aware holds {spread(w['hold'])}" if w["hold"]["count"] else ""),
        f"Completion    turnaround P50/P90/P99 {spread(r['turnaround_s'])}; slowdown "
        f"{spread(r['slowdown'], times)}",
        f"Placement     step time over packed: mean {times(r['step_slowdown']['mean'] or 1.0)}; jobs over "
        f"several units P50/P90/P99 {spread(r['step_slowdown_spanning'], times)}",
    ]


def _service_lines(r: dict[str, Any]) -> list[str]:
    """The serving templates the jobs ran, and the failures."""
    out = []
    for name, svc in r["services"].items():
        on = f"{svc['devices']:,} MIG {svc['profile']} instances on {svc['gpus']:,} GPUs" if svc["profile"] else \
            f"{svc['gpus']:,} GPUs"
        out.append(f"Serving       {name}: {svc['replicas']:,} replicas on {on}; "
                   f"{svc['requests_per_s']:,.2f} requests/s, "
                   f"p99 TTFT {fmt_duration(svc['ttft_p99_s'])}, SLO {'met' if svc['slo_met'] else 'NOT met'}"
                   + (", not sustained (more than it completes when saturated)" if svc["sustained"] is False else ""))
    f = r["failures"]
    if f["enabled"]:
        out.append(f"Failures      {f['node_failures']:,} node failures, {f['interruptions']:,} job interruptions; "
                   f"{f['replacements']:,} failed nodes replaced ({f['spare_swaps']:,} from the spare pool); "
                   f"work lost {fmt_duration(f['lost_work_s'])}")
    return out


def _energy_lines(r: dict[str, Any]) -> list[str]:
    """Facility power against its limit, energy, and what the carbon-aware policy saved."""
    p, cluster, jobs = r["power"], r["energy"]["cluster"], r["energy"]["jobs"]
    limit = p["limit_w"]
    out = [f"Power         facility mean {fmt_si(p['mean_facility_w'], 'W')}, "
           f"peak {fmt_si(p['peak_facility_w'], 'W')}"
           + (f" against a {fmt_si(limit, 'W')} limit: {p['hours_over_limit']:,.1f} h over" if limit else "")]
    share = jobs["energy_it_kwh"] / cluster["energy_it_kwh"] if cluster["energy_it_kwh"] else 0.0
    out.append(f"Energy        IT {fmt_energy_kwh(cluster['energy_it_kwh'])}, facility "
               f"{fmt_energy_kwh(cluster['energy_facility_kwh'])} (PUE {p['pue']:.2f}); jobs {share:.0%}, idle nodes, "
               "spares and fabric the rest")
    aware, site = r["carbon_aware"], r["country"]
    if aware:
        out.append(f"Carbon-aware  {aware['deferred_jobs']:,} deferrable jobs held "
                   f"{fmt_duration(aware['mean_hold_s'])} "
                   f"on average: {fmt_co2e_kg(aware['saved_kg'][site])} saved at the site "
                   f"({aware['saved_kg'][site] / aware['baseline_carbon_kg'][site]:.2%}); mean wait "
                   f"{fmt_duration(aware['mean_wait_s'] or 0.0)} against "
                   f"{fmt_duration(aware['baseline_mean_wait_s'] or 0.0)}")
    return out


def _country_table(r: dict[str, Any]) -> str:
    cluster, site = r["energy"]["cluster"], r["country"]
    rows = []
    for c in r["countries"]:
        code = c["code"]
        cost = cluster["energy_cost_eur"][code]
        rows.append([code + (" (site)" if code == site else ""),
                     f"{c['intensity_g_per_kwh']:.0f} g CO2e/kWh " + ("hourly" if c["hourly"] else "annual"),
                     fmt_co2e_kg(cluster['carbon_kg'][code]), fmt_money_eur(cost)])
    return table(rows, ["country", "intensity", "carbon", "energy cost"])


def _tenant_table(r: dict[str, Any]) -> str:
    site, rental = r["country"], r["energy"]["cluster"]["rental_cost_eur"]
    rows = []
    for name, t in r["tenants"].items():
        jobs_n = sum(1 for j in r["jobs"] if j["tenant"] == name)
        cost = t["energy_cost_eur"][site]
        wait = r["wait_s"]["by_tenant"].get(name, {})
        rows.append([name, f"{jobs_n:,}", spread(wait), fmt_number(t['gpu_hours']),
                     fmt_energy_kwh(t['energy_facility_kwh']), fmt_co2e_kg(t['carbon_kg'][site]), fmt_money_eur(cost)]
                    + ([fmt_money_eur(t['rental_cost_eur'])] if rental is not None else []))
    return table(rows, ["tenant", "jobs", "wait P50/P90/P99", "GPU-hours", "energy (facility)",
                        f"carbon ({site})", f"energy cost ({site})"] + (["rental"] if rental is not None else []))


def operations_summary(record: dict[str, Any]) -> str:
    """The terminal summary of a cluster-operations record (``OperationsResult.to_dict()``)."""
    r = record
    sizes = [[size, f"{v['count']:,}", spread(v)] for size, v in r["wait_s"]["by_size"].items()]
    out = [f"twin — {r['scenario']}", "", *_cluster_lines(r), *_service_lines(r), *_energy_lines(r),
           "", _country_table(r), "", _tenant_table(r), "", table(sizes, ["job size", "jobs", "wait P50/P90/P99"])]
    out += [f"warning: {warning}" for warning in r["warnings"]]
    return "\n".join(out)
