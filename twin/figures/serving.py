"""Serving figures: latency against throughput from a rate sweep, per-million-token figures by country.

Each takes a serving record (``ServingResult.to_dict()``) or a capacity record
(``CapacityResult.to_dict()``), docs/results.md, and returns plain rows or a
``plotly.graph_objects.Figure``; values carry their unit in the label.
"""

from __future__ import annotations

import math
import re
from typing import Any

import plotly.graph_objects as go

from twin.bands import band_line
from twin.figures.colours import SERIES
from twin.figures.lazy import make_subplots
from twin.figures.overview import Metric, co2e, fmt_change, relative_change
from twin.formatting import D3_NUMBER, carbon_axis_kg, fmt_energy_kwh, fmt_money_eur, fmt_number
from twin.units import fmt_bytes, fmt_duration, fmt_si

MS = 1e3
MET, MISSED = "#009E73", "#D55E00"
SLO_COLOUR = "#CC79A7"

# Headline number → (its value in a serving record, lower is better), in the order headline_metrics lists them.
_HEADLINE_VALUES = {
    "Output tokens/s": (lambda r: r.get("output_tokens_per_s"), False),
    "Requests/s": (lambda r: r.get("requests_per_s"), False),
    "TTFT p99": (lambda r: (r.get("ttft_s") or {}).get("p99"), True),
    "TPOT p99": (lambda r: (r.get("tpot_s") or {}).get("p99"), True),
    "SLO": (lambda r: None, True),
    "GPUs used": (lambda r: r.get("gpus_used"), True),
    "Power (IT)": (lambda r: r.get("avg_power_it_w"), True),
    "Energy per M tokens": (lambda r: r.get("energy_per_million_output_tokens_kwh"), True),
    "Cost per M tokens": (lambda r: (r.get("cost_per_million_output_tokens_eur") or {}).get(r.get("country")), True),
    "Carbon per M tokens": (lambda r: (r.get("carbon_per_million_output_tokens_kg") or {}).get(r.get("country")),
                            True),
}
# Headline numbers that carry the record's error band (twin.bands: its serving engine's validation rows) in
# their help text: all but the verdict, the GPU count and the power, which no validation row measures.
_BANDED = set(_HEADLINE_VALUES) - {"SLO", "GPUs used", "Power (IT)"}


def _verdict(r: dict[str, Any]) -> str:
    """The SLO over the run, and whether the offered rate is sustained (the record's ``sustained``)."""
    return ("met" if r["slo_met"] else "not met") + (", not sustained" if r["sustained"] is False else "")


def _metrics(r: dict[str, Any]) -> list[Metric]:
    """The headline numbers of a deployment that runs, in the order of ``_HEADLINE_VALUES``."""
    site = r["country"]
    return [
        Metric("Output tokens/s", f"{fmt_number(r['output_tokens_per_s'])} tok/s",
               "output tokens per second, all replicas"),
        Metric("Requests/s", f"{fmt_number(r['requests_per_s'])} req/s", "completed requests per second"),
        Metric("TTFT p99", fmt_duration(r["ttft_s"]["p99"]), "time to first token, 99th percentile"),
        Metric("TPOT p99", fmt_duration(r["tpot_s"]["p99"]), "time per output token after the first, 99th percentile"),
        Metric("SLO", "not sustained" if r["sustained"] is False else "met" if r["slo_met"] else "not met",
               "p99 TTFT and p99 TPOT within serving.slo over the run; not sustained: the offered rate is above what "
               "the deployment completes when saturated, so a queue that builds never drains, whatever the run "
               "showed"),
        Metric("GPUs used", f"{r['gpus_used']:,} of {r['gpus_total']:,}"),
        Metric("Power (IT)", fmt_si(r["avg_power_it_w"], "W"), "average, GPUs and their share of the hosts"),
        Metric("Energy per M tokens", fmt_energy_kwh(r["energy_per_million_output_tokens_kwh"]),
               "facility energy per million output tokens"),
        Metric(f"Cost per M tokens ({site})", fmt_money_eur(r["cost_per_million_output_tokens_eur"].get(site)),
               "electricity (and GPU rental when priced) per million output tokens"),
        Metric(f"Carbon per M tokens ({site})", co2e(r["carbon_per_million_output_tokens_kg"][site]),
               "operational carbon per million output tokens"),
    ]


def headline_metrics(r: dict[str, Any], baseline: dict[str, Any] | None = None) -> list[Metric]:
    """The numbers a planner reads first about a serving deployment, each with its unit; with a baseline
    (the scenario as written), each one's change against it."""
    if r["requests_per_s"] is None:
        return [Metric("Memory per GPU", f"{fmt_bytes(r['memory_per_gpu_bytes'])} — does not fit"),
                Metric("GPUs used", f"{r['gpus_used']:,} of {r['gpus_total']:,}")]
    usable = baseline if baseline and baseline.get("requests_per_s") is not None else None
    band = band_line(r)
    out = []
    for (key, (value_of, lower)), m in zip(_HEADLINE_VALUES.items(), _metrics(r)):
        delta = fmt_change(relative_change(value_of(r), value_of(usable))) if usable else None
        out.append(Metric(m.label, m.value, m.help + (f"; {band}" if band and key in _BANDED else ""), delta, lower))
    return out


def warnings_in_words(r: dict[str, Any]) -> list[str]:
    """Every warning of a deployment and its alternatives, the config path ('serving.compare[0]') replaced by
    the deployment it names."""
    alternatives = r.get("alternatives") or []
    out = []
    for x in [r, *alternatives]:
        for w in x.get("warnings") or []:
            match = re.match(r"^serving\.compare\[(\d+)\]:\s*", w)
            if match and int(match.group(1)) < len(alternatives):
                w = f"{alternatives[int(match.group(1))]['label']}: {w[match.end():]}"
            elif w.startswith("serving:"):
                w = f"{r['label']}: {w.removeprefix('serving:').strip()}"
            out.append(w)
    return out


def _slo_line(fig: go.Figure, limit_ms: float, col: int) -> None:
    """The SLO as a dashed line on a log axis, its label at the line (a log axis places annotations by log10)."""
    fig.add_hline(y=limit_ms, line_dash="dash", line_color=SLO_COLOUR, row=1, col=col)
    fig.add_annotation(x=1, xref=f"x{'' if col == 1 else col} domain", xanchor="right", yanchor="bottom",
                       y=math.log10(limit_ms), yref=f"y{'' if col == 1 else col}", text="SLO", showarrow=False,
                       font={"color": SLO_COLOUR})


def _by_length(sweep: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """The trials of a capacity search by their requests, shortest first (each length its own curve: the p99
    of a longer run meets bursts a shorter one misses)."""
    out: dict[int, list[dict[str, Any]]] = {}
    for p in sweep:
        out.setdefault(p["requests"], []).append(p)
    return dict(sorted(out.items()))


def latency_throughput_figure(capacity: dict[str, Any]) -> go.Figure:
    """p99 TTFT and p99 TPOT against output tokens/s at each swept arrival rate, one curve per trial length,
    the SLO as lines."""
    slo = capacity["slo"]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Time to first token, p99", "Time per output token, p99"))
    lengths = _by_length(capacity["sweep"])
    for k, (requests, sweep) in enumerate(lengths.items()):
        x = [p["output_tokens_per_s"] for p in sweep]
        colours = [MET if p["slo_met"] else MISSED for p in sweep]
        text = [f"{fmt_number(p['rate_per_s'])} req/s offered, {requests:,} requests" for p in sweep]
        for col, key in enumerate(("ttft_s", "tpot_s"), start=1):
            fig.add_trace(go.Scatter(x=x, y=[p[key]["p99"] * MS for p in sweep], mode="lines+markers",
                                     marker={"color": colours, "size": 9, "symbol": k % 8},
                                     line={"color": SERIES[k % len(SERIES)]}, text=text,
                                     name=f"{requests:,} requests a trial", legendgroup=str(requests),
                                     showlegend=col == 1 and len(lengths) > 1,
                                     hovertemplate=f"%{{text}}<br>%{{x:{D3_NUMBER}}} output tok/s<br>"
                                                   f"%{{y:{D3_NUMBER}}} ms<extra></extra>"),
                          row=1, col=col)
    for col, limit in enumerate((slo["ttft_p99_s"], slo["tpot_p99_s"]), start=1):
        if limit is not None:
            _slo_line(fig, limit * MS, col)
        fig.update_xaxes(title_text="output tokens/s", tickformat=D3_NUMBER, row=1, col=col)
        fig.update_yaxes(title_text="ms", type="log", tickformat=D3_NUMBER, row=1, col=col)
    fig.update_layout(height=380, margin={"t": 40, "b": 10})
    return fig


def per_gpu_per_user_figure(capacity: dict[str, Any]) -> go.Figure:
    """Output tokens/s per GPU against output tokens/s per user (1 / median TPOT) at each swept rate, every
    deployment side by side: the trade-off serving engineers read (up and to the right is better)."""
    fig = go.Figure()
    for i, x in enumerate([capacity, *(capacity.get("alternatives") or [])]):
        gpus = x["replicas"] * x["gpus_per_replica"]
        shortest = next(iter(_by_length(x.get("sweep") or []).values()), [])   # the scenario's own trials
        points = [p for p in shortest if p["tpot_s"]["p50"]]
        if not points or not gpus:
            continue
        fig.add_trace(go.Scatter(
            x=[1.0 / p["tpot_s"]["p50"] for p in points], y=[p["output_tokens_per_s"] / gpus for p in points],
            mode="lines+markers", name=x["label"], line={"color": SERIES[i % len(SERIES)]},
            text=[f"{fmt_number(p['rate_per_s'])} req/s offered" for p in points],
            hovertemplate=f"%{{text}}<br>%{{x:{D3_NUMBER}}} tok/s per user<br>%{{y:{D3_NUMBER}}} tok/s per GPU"
                          "<extra></extra>"))
    fig.update_xaxes(title_text="output tokens/s per user (1 / median TPOT)", tickformat=D3_NUMBER)
    fig.update_yaxes(title_text="output tokens/s per GPU", tickformat=D3_NUMBER, rangemode="tozero")
    fig.update_layout(height=420, margin={"t": 30, "b": 10},
                      legend={"orientation": "h", "y": -0.2, "yanchor": "top", "x": 0})
    return fig


def per_million_figure(r: dict[str, Any]) -> go.Figure:
    """Cost (EUR) and carbon (g, kg or t CO2e) per million output tokens in each country."""
    countries = [c["code"] for c in (r.get("power") or {}).get("countries", [])]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Cost per million output tokens",
                                                        "Carbon per million output tokens"))
    cost = [r["cost_per_million_output_tokens_eur"].get(c) for c in countries]
    carbon = [r["carbon_per_million_output_tokens_kg"].get(c) for c in countries]
    unit, kg = carbon_axis_kg(max((c or 0.0 for c in carbon), default=0.0))
    fig.add_trace(go.Bar(x=countries, y=cost, marker_color="#E69F00", showlegend=False,
                         hovertemplate=f"%{{x}}: %{{y:{D3_NUMBER}}} EUR<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Bar(x=countries, y=[c / kg if c is not None else None for c in carbon],
                         marker_color="#0072B2", showlegend=False,
                         hovertemplate=f"%{{x}}: %{{y:{D3_NUMBER}}} {unit} CO2e<extra></extra>"), row=1, col=2)
    fig.update_yaxes(title_text="EUR", tickformat=D3_NUMBER, row=1, col=1)
    fig.update_yaxes(title_text=f"{unit} CO2e", tickformat=D3_NUMBER, row=1, col=2)
    fig.update_layout(height=340, margin={"t": 40, "b": 10})
    return fig


def deployment_rows(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The deployment and its alternatives side by side, one row each, costs first after the name, every
    number through the one formatter."""
    site = r["country"]
    rows = []
    for x in [r, *(r.get("alternatives") or [])]:
        fits = x["requests_per_s"] is not None
        rows.append({
            "deployment": x["label"], "GPUs": x["gpus_used"],
            "SLO": _verdict(x) if fits else "does not fit",
            f"cost / M tok ({site})": fmt_money_eur(x["cost_per_million_output_tokens_eur"].get(site)) if fits else "",
            "output tok/s": fmt_number(x["output_tokens_per_s"]) if fits else "",
            "TTFT p99": fmt_duration(x["ttft_s"]["p99"]) if fits else "",
            "TPOT p99": fmt_duration(x["tpot_s"]["p99"]) if fits else "",
            "energy / M tok": fmt_energy_kwh(x["energy_per_million_output_tokens_kwh"]) if fits else "",
            f"carbon / M tok ({site})": co2e(x["carbon_per_million_output_tokens_kg"].get(site)) if fits else "",
        })
    return rows


def capacity_rows(capacity: dict[str, Any]) -> list[dict[str, Any]]:
    """Highest rate within the SLO per replica, per GPU and for the deployment, one row per deployment."""
    return [{"deployment": x["label"], "deployment [req/s]": fmt_number(x["rate_per_s"]), "replicas": x["replicas"],
             "per replica [req/s]": fmt_number(x["per_replica_rate_per_s"]),
             "per GPU [req/s]": fmt_number(x["per_gpu_rate_per_s"]),
             "offline [req/s]": fmt_number(x["offline_requests_per_s"]),
             "SLO met over [requests]": x["requests_per_trial"]}
            for x in [capacity, *(capacity.get("alternatives") or [])]]
