"""Cluster-operations figures: utilisation and queue over time, power against the facility limit, a Gantt of
jobs on nodes, wait-time distributions per tenant, and the placement of jobs on the scalable units.

Each takes an operations record (``OperationsResult.to_dict()``, docs/results.md) and returns plain rows or
a ``plotly.graph_objects.Figure``; values carry their unit in the label.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from twin.figures.colours import LEGEND_BELOW
from twin.figures.lazy import make_subplots
from twin.figures.overview import Metric
from twin.formatting import fmt_co2e_kg, fmt_energy_kwh, fmt_money_eur, fmt_number
from twin.units import SECONDS_PER_DAY, SECONDS_PER_HOUR, fmt_duration, fmt_si

# Okabe-Ito, colour-blind safe; tenants take them in order.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
FREE, LIMIT = "#DDDDDD", "#D55E00"
# Above this many jobs, the Gantt shows GPUs held per node and time bin instead of one bar per job.
GANTT_MAX_JOBS = 300


def tenant_colours(r: dict[str, Any]) -> dict[str, str]:
    return {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(r["tenants"])}


def _wait(seconds: float | None) -> str:
    return "n/a" if seconds is None else "0 s" if seconds == 0 else fmt_duration(seconds)


def _band(r: dict[str, Any], key: str, path: tuple[str, ...], fmt: Any) -> str:
    """'error band LOW to HIGH' of a headline number (docs/calibrate.md, "Error bands"); '' without one."""
    low, high = r.get(f"{key}_low"), r.get(f"{key}_high")
    for part in path:
        low = low.get(part) if isinstance(low, dict) else None
        high = high.get(part) if isinstance(high, dict) else None
    return "" if low is None or high is None else f"error band {fmt(low)} to {fmt(high)}"


def _help(text: str, band: str) -> str:
    return "; ".join(t for t in (text, band) if t)


def headline_metrics(r: dict[str, Any]) -> list[Metric]:
    """The numbers a capacity planner reads first, each with its unit and its error band."""
    u, w, p = r["utilisation"], r["wait_s"]["all"], r["power"]
    site = r["country"]
    cluster = r["energy"]["cluster"]
    limit = p["limit_w"]
    share = "{:.1%}".format
    return [
        Metric("Jobs finished", f"{r['jobs_finished']:,} of {r['jobs_submitted']:,}",
               f"{r['jobs_timed_out']:,} at their time limit, {r['jobs_unfinished']:,} unfinished at the horizon",
               lower_is_better=False),
        Metric("GPUs held", share(u["allocated"]), _help("mean share of the cluster's GPUs held by jobs",
                                                         _band(r, "utilisation", ("allocated",), share)),
               lower_is_better=False),
        Metric("GPUs working", share(u["busy"]), _help("mean share of the GPUs training or serving",
                                                       _band(r, "utilisation", ("busy",), share)),
               lower_is_better=False),
        Metric("Queue wait P50", _wait(w["p50"]), _help("start - submit, over the jobs that started",
                                                        _band(r, "wait_s", ("all", "p50"), _wait))),
        Metric("Queue wait P90", _wait(w["p90"]), _band(r, "wait_s", ("all", "p90"), _wait)),
        Metric("Fragmented GPUs", f"{u['fragmented_gpus']:,.1f} GPUs",
               _help("free GPUs no waiting job can use, on average",
                     _band(r, "utilisation", ("fragmented_gpus",), "{:,.1f} GPUs".format))),
        Metric("Peak facility power", fmt_si(p["peak_facility_w"], "W"),
               _help(f"limit {fmt_si(limit, 'W')}: {p['hours_over_limit']:,.1f} h over" if limit else "no limit set",
                     _band(r, "power", ("peak_facility_w",), lambda w_: fmt_si(w_, "W")))),
        Metric("Energy (facility)", fmt_energy_kwh(cluster['energy_facility_kwh']),
               _help("the whole cluster over the run",
                     _band(r, "energy", ("cluster", "energy_facility_kwh"), fmt_energy_kwh))),
        Metric(f"Carbon ({site})", fmt_co2e_kg(cluster['carbon_kg'][site]),
               _help("the whole cluster over the run",
                     _band(r, "energy", ("cluster", "carbon_kg", site), fmt_co2e_kg))),
        Metric("Makespan", fmt_duration(r["makespan_s"]),
               _help("from the start to the last job's end (or the horizon)",
                     _band(r, "makespan_s", (), fmt_duration))),
    ]


def utilisation_figure(r: dict[str, Any]) -> go.Figure:
    """GPUs held and working, fragmented GPUs, and jobs waiting, per time bin (means)."""
    t = r["timeline"]
    days = [s / SECONDS_PER_DAY for s in t["start_s"]]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=days, y=t["gpus_allocated"], name="GPUs held", line={"color": PALETTE[0]}))
    fig.add_trace(go.Scatter(x=days, y=t["gpus_busy"], name="GPUs working", line={"color": PALETTE[2]}))
    fig.add_trace(go.Scatter(x=days, y=t["fragmented_gpus"], name="fragmented GPUs", line={"color": PALETTE[5]}))
    fig.add_trace(go.Scatter(x=days, y=t["queued"], name="jobs waiting", line={"color": PALETTE[1], "dash": "dot"}),
                  secondary_y=True)
    fig.add_hline(y=r["gpus_total"], line_dash="dash", line_color="#999999", annotation_text="all GPUs")
    fig.update_layout(title=f"Utilisation and queue (means over {fmt_duration(t['bin_s'])} bins)", height=420,
                      xaxis_title="time (days)", legend=LEGEND_BELOW, margin={"b": 110})
    fig.update_yaxes(title_text="GPUs", secondary_y=False)
    fig.update_yaxes(title_text="jobs waiting", secondary_y=True)
    return fig


def power_figure(r: dict[str, Any]) -> go.Figure:
    """Facility power per time bin, mean and peak, against the facility limit."""
    t, limit = r["timeline"], r["power"]["limit_w"]
    days = [s / SECONDS_PER_DAY for s in t["start_s"]]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=days, y=[w / 1e6 for w in t["facility_peak_w"]], name="peak", line={"color": LIMIT}))
    fig.add_trace(go.Scatter(x=days, y=[w / 1e6 for w in t["facility_w"]], name="mean", line={"color": PALETTE[0]}))
    if limit:
        fig.add_hline(y=limit / 1e6, line_dash="dash", line_color="#000000", annotation_text="facility limit")
    fig.update_layout(title=f"Cluster power (facility, PUE {r['power']['pue']:.2f})", height=320,
                      xaxis_title="time (days)", yaxis_title="MW")
    return fig


def gantt_figure(r: dict[str, Any]) -> go.Figure:
    """Jobs on nodes over time: one bar per job and node, or GPUs held per node and time bin when large."""
    jobs = [j for j in r["jobs"] if j["nodes"]]
    if len(jobs) <= GANTT_MAX_JOBS:
        return _gantt_bars(r, jobs)
    return _gantt_bins(r, jobs)


def _gantt_bars(r: dict[str, Any], jobs: list[dict[str, Any]]) -> go.Figure:
    colours = tenant_colours(r)
    fig = go.Figure()
    for tenant, colour in colours.items():
        spans = [(j, s) for j in jobs if j["tenant"] == tenant for s in j["nodes"]]
        if not spans:
            continue
        fig.add_trace(go.Bar(
            name=tenant, orientation="h", marker_color=colour,
            base=[s[1] / SECONDS_PER_HOUR for _, s in spans],
            x=[(s[2] - s[1]) / SECONDS_PER_HOUR for _, s in spans],
            y=[s[0] for _, s in spans],
            customdata=[[j["name"], j["gpus"], j["template"]] for j, _ in spans],
            hovertemplate="%{customdata[0]} (%{customdata[1]} GPUs, %{customdata[2]})<br>node %{y}, hour %{base:.1f}"
                          "<extra></extra>",
        ))
    fig.update_layout(title="Jobs on nodes", barmode="overlay", height=max(320, 6 * r["nodes"]),
                      xaxis_title="time (hours)", yaxis_title="node", legend_title="tenant")
    fig.update_yaxes(autorange="reversed")
    return fig


def _gantt_bins(r: dict[str, Any], jobs: list[dict[str, Any]]) -> go.Figure:
    """GPUs held on each node per time bin (the timeline's bins), as a heat map."""
    t = r["timeline"]
    edges = np.append(np.array(t["start_s"]), t["start_s"][-1] + t["bin_s"]) if t["start_s"] else np.array([0.0, 1.0])
    held = np.zeros((r["nodes"], len(edges) - 1))
    width = np.diff(edges)
    for j in jobs:
        per_node = j["gpus_allocated"] if j["gpus_allocated"] <= r["gpus_per_node"] else r["gpus_per_node"]
        for node, start, end in j["nodes"]:
            overlap = np.clip(np.minimum(end, edges[1:]) - np.maximum(start, edges[:-1]), 0.0, None)
            held[node] += per_node * overlap / width
    fig = go.Figure(go.Heatmap(z=held, x=edges[:-1] / SECONDS_PER_DAY, y=list(range(r["nodes"])), zmin=0,
                               zmax=r["gpus_per_node"], colorscale="Blues", colorbar={"title": "GPUs held"},
                               hovertemplate="node %{y}, day %{x:.2f}: %{z:.1f} GPUs held<extra></extra>"))
    fig.update_layout(title=f"GPUs held per node ({len(jobs):,} jobs, {fmt_duration(t['bin_s'])} bins)",
                      height=max(320, 4 * r["nodes"]), xaxis_title="time (days)", yaxis_title="node")
    fig.update_yaxes(autorange="reversed")
    return fig


def wait_figure(r: dict[str, Any]) -> go.Figure:
    """Queue waits of the jobs that started, per tenant (hours, log scale: most jobs wait little)."""
    colours = tenant_colours(r)
    fig = go.Figure()
    for tenant, colour in colours.items():
        waits = [j["wait_s"] / SECONDS_PER_HOUR for j in r["jobs"] if j["tenant"] == tenant and j["wait_s"] is not None]
        fig.add_trace(go.Box(y=[max(w, 1 / 60) for w in waits], name=tenant, marker_color=colour, boxpoints="outliers"))
    fig.update_layout(title="Queue wait per tenant (a wait under a minute is drawn at one minute)", height=360,
                      yaxis_title="wait (hours)", yaxis_type="log", showlegend=False)
    return fig


def busiest_time_s(r: dict[str, Any]) -> float:
    """The start of the bin with the most GPUs held: a time worth looking at."""
    t = r["timeline"]
    if not t["start_s"]:
        return 0.0
    return float(t["start_s"][int(np.argmax(t["gpus_allocated"]))] + t["bin_s"] / 2)


def placement_figure(r: dict[str, Any], at_s: float) -> go.Figure:
    """Which tenant's job holds each node at one time, nodes grouped by scalable unit (columns)."""
    colours = tenant_colours(r)
    units: dict[int, list[int]] = {}
    for node, su in enumerate(r["node_su"]):
        units.setdefault(su, []).append(node)
    holder: dict[int, list[tuple[str, str, int]]] = {}
    for j in r["jobs"]:
        for node, start, end in j["nodes"]:
            if start <= at_s < end:
                holder.setdefault(node, []).append((j["tenant"], j["name"], j["gpus"]))
    fig = go.Figure()
    for tenant, colour in [*colours.items(), ("free", FREE)]:
        xs, ys, text = [], [], []
        for su, nodes in units.items():
            for row, node in enumerate(nodes):
                jobs = holder.get(node, [])
                if (jobs[0][0] if jobs else "free") != tenant:
                    continue
                xs.append(su)
                ys.append(row)
                text.append(f"node {node}: " + (", ".join(f"{name} ({gpus} GPUs)" for _, name, gpus in jobs)
                                                 or "free"))
        if xs:
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", name=tenant, text=text,
                                     marker={"symbol": "square", "size": 14, "color": colour},
                                     hovertemplate="%{text}<extra></extra>"))
    fig.update_layout(title=f"Nodes by scalable unit at day {at_s / SECONDS_PER_DAY:.2f} (colour: the tenant of the "
                            "first job on the node)", height=max(320, 16 * max(map(len, units.values()), default=1)),
                      xaxis={"title": "scalable unit", "dtick": 1}, yaxis={"title": "node in its unit",
                                                                           "autorange": "reversed"},
                      legend_title="tenant")
    return fig


def tenant_rows(r: dict[str, Any]) -> list[dict[str, Any]]:
    """Per tenant: jobs, waits, GPU-hours, energy, and carbon and energy cost in each country."""
    rows = []
    for tenant, t in r["tenants"].items():
        w = r["wait_s"]["by_tenant"].get(tenant, {})
        row = {"tenant": tenant, "jobs": sum(1 for j in r["jobs"] if j["tenant"] == tenant),
               "wait P50": _wait(w.get("p50")), "wait P90": _wait(w.get("p90")), "wait P99": _wait(w.get("p99")),
               "GPU-hours": fmt_number(t["gpu_hours"]), "energy": fmt_energy_kwh(t["energy_facility_kwh"])}
        for code, eur in t["energy_cost_eur"].items():
            row[f"energy cost {code}"] = fmt_money_eur(eur)
        if t["rental_cost_eur"] is not None:
            row["rental"] = fmt_money_eur(t["rental_cost_eur"])
        for code, kg in t["carbon_kg"].items():
            row[f"carbon {code}"] = fmt_co2e_kg(kg)
        rows.append(row)
    return rows


def size_rows(r: dict[str, Any]) -> list[dict[str, Any]]:
    """Queue wait per job size."""
    return [{"job size": size, "jobs": w["count"], "wait P50": _wait(w["p50"]), "wait P90": _wait(w["p90"]),
             "wait P99": _wait(w["p99"])} for size, w in r["wait_s"]["by_size"].items()]
