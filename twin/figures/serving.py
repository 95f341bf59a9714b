"""Serving figures: latency against throughput from a rate sweep, per-million-token figures by country.

Each takes a serving record (``ServingResult.to_dict()``) or a capacity record
(``CapacityResult.to_dict()``), docs/results.md, and returns plain rows or a
``plotly.graph_objects.Figure``; values carry their unit in the label.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from twin.figures.lazy import make_subplots
from twin.figures.overview import Metric, co2e
from twin.units import fmt_bytes, fmt_duration, fmt_si

MS = 1e3
MET, MISSED = "#009E73", "#D55E00"
SLO_COLOUR = "#CC79A7"


def headline_metrics(r: dict[str, Any]) -> list[Metric]:
    """The numbers a planner reads first about a serving deployment, each with its unit."""
    site = r["country"]
    if r["requests_per_s"] is None:
        return [Metric("Memory per GPU", f"{fmt_bytes(r['memory_per_gpu_bytes'])} — does not fit"),
                Metric("GPUs used", f"{r['gpus_used']:,} of {r['gpus_total']:,}")]
    cost = r["cost_per_million_output_tokens_eur"].get(site)
    return [
        Metric("Output tokens/s", f"{r['output_tokens_per_s']:,.0f} tok/s", "output tokens per second, all replicas",
               lower_is_better=False),
        Metric("Requests/s", f"{r['requests_per_s']:,.2f} req/s", "completed requests per second", lower_is_better=False),
        Metric("TTFT p99", fmt_duration(r["ttft_s"]["p99"]), "time to first token, 99th percentile"),
        Metric("TPOT p99", fmt_duration(r["tpot_s"]["p99"]), "time per output token after the first, 99th percentile"),
        Metric("SLO", "met" if r["slo_met"] else "not met", "p99 TTFT and p99 TPOT within serving.slo"),
        Metric("GPUs used", f"{r['gpus_used']:,} of {r['gpus_total']:,}"),
        Metric("Power (IT)", fmt_si(r["avg_power_it_w"], "W"), "average, GPUs and their share of the hosts"),
        Metric("Energy per M tokens", f"{r['energy_per_million_output_tokens_kwh']:.3g} kWh",
               "facility energy per million output tokens"),
        Metric(f"Cost per M tokens ({site})", "n/a" if cost is None else f"{cost:.3g} EUR",
               "electricity (and GPU rental when priced) per million output tokens"),
        Metric(f"Carbon per M tokens ({site})", co2e(r["carbon_per_million_output_tokens_kg"][site]),
               "operational carbon per million output tokens"),
    ]


def latency_throughput_figure(capacity: dict[str, Any]) -> go.Figure:
    """p99 TTFT and p99 TPOT against output tokens/s at each swept arrival rate, the SLO as lines."""
    sweep = capacity["sweep"]
    slo = capacity["slo"]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Time to first token, p99", "Time per output token, p99"))
    x = [p["output_tokens_per_s"] for p in sweep]
    colours = [MET if p["slo_met"] else MISSED for p in sweep]
    text = [f"{p['rate_per_s']:.3g} req/s offered" for p in sweep]
    for col, (key, limit) in enumerate((("ttft_s", slo["ttft_p99_s"]), ("tpot_s", slo["tpot_p99_s"])), start=1):
        y = [p[key]["p99"] * MS for p in sweep]
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines+markers", marker={"color": colours, "size": 9},
                                 line={"color": "#999999"}, text=text, showlegend=False,
                                 hovertemplate="%{text}<br>%{x:,.0f} output tok/s<br>%{y:,.1f} ms<extra></extra>"),
                      row=1, col=col)
        if limit is not None:
            fig.add_hline(y=limit * MS, line_dash="dash", line_color=SLO_COLOUR, annotation_text="SLO",
                          row=1, col=col)
        fig.update_xaxes(title_text="output tokens/s", row=1, col=col)
        fig.update_yaxes(title_text="ms", type="log", row=1, col=col)
    fig.update_layout(height=380, margin={"t": 40, "b": 10})
    return fig


def per_million_figure(r: dict[str, Any]) -> go.Figure:
    """Cost (EUR) and carbon (kg CO2e) per million output tokens in each country."""
    countries = [c["code"] for c in (r.get("power") or {}).get("countries", [])]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Cost per million output tokens",
                                                        "Carbon per million output tokens"))
    cost = [r["cost_per_million_output_tokens_eur"].get(c) for c in countries]
    fig.add_trace(go.Bar(x=countries, y=cost, marker_color="#E69F00", showlegend=False,
                         hovertemplate="%{x}: %{y:.3g} EUR<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Bar(x=countries, y=[r["carbon_per_million_output_tokens_kg"].get(c) for c in countries],
                         marker_color="#0072B2", showlegend=False,
                         hovertemplate="%{x}: %{y:.3g} kg CO2e<extra></extra>"), row=1, col=2)
    fig.update_yaxes(title_text="EUR", row=1, col=1)
    fig.update_yaxes(title_text="kg CO2e", row=1, col=2)
    fig.update_layout(height=340, margin={"t": 40, "b": 10})
    return fig


def deployment_rows(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The deployment and its alternatives side by side, one row each, units in the column names."""
    site = r["country"]
    rows = []
    for x in [r, *(r.get("alternatives") or [])]:
        fits = x["requests_per_s"] is not None
        cost = x["cost_per_million_output_tokens_eur"].get(site) if fits else None
        rows.append({
            "deployment": x["label"], "GPUs": x["gpus_used"],
            "output tokens/s": round(x["output_tokens_per_s"]) if fits else None,
            "TTFT p99 [ms]": round(x["ttft_s"]["p99"] * MS, 1) if fits else None,
            "TPOT p99 [ms]": round(x["tpot_s"]["p99"] * MS, 1) if fits else None,
            "SLO": ("met" if x["slo_met"] else "not met") if fits else "does not fit",
            "kWh per M tokens": x["energy_per_million_output_tokens_kwh"],
            f"EUR per M tokens ({site})": cost,
            f"kg CO2e per M tokens ({site})": x["carbon_per_million_output_tokens_kg"].get(site) if fits else None,
        })
    return rows


def capacity_rows(capacity: dict[str, Any]) -> list[dict[str, Any]]:
    """Highest rate within the SLO per replica, per GPU and for the deployment, one row per deployment."""
    return [{"deployment": x["label"], "per replica [req/s]": round(x["per_replica_rate_per_s"], 3),
             "per GPU [req/s]": round(x["per_gpu_rate_per_s"], 3), "replicas": x["replicas"],
             "deployment [req/s]": round(x["rate_per_s"], 3),
             "offline [req/s]": round(x["offline_requests_per_s"], 3)}
            for x in [capacity, *(capacity.get("alternatives") or [])]]
