"""Headline numbers, memory per GPU, step breakdown and what-if comparison figures.

Every function takes a Result's dict (``Result.to_dict()``) or rows built from
such dicts, and returns plain data or a ``plotly.graph_objects.Figure``. Values
leave here with their unit attached (in the label or the column name).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from twin.units import SECONDS_PER_DAY, fmt_bytes, fmt_count, fmt_duration, fmt_si

GIB = 2**30

# Colours of the memory parts (colour-blind safe, Okabe-Ito).
MEMORY_COLOURS = {
    "weights": "#0072B2", "gradients": "#56B4E9", "optimizer": "#E69F00",
    "activations": "#009E73", "runtime": "#999999",
}


@dataclass(frozen=True)
class Metric:
    """One headline number: its label (naming what), its value (with unit), a help text, and its
    change against a baseline (e.g. '-50.0 %'; None without baseline or change)."""
    label: str
    value: str
    help: str = ""
    delta: str | None = None
    lower_is_better: bool = True


def time_to_train_percentiles(result: dict[str, Any]) -> dict[str, float]:
    """Time to train (s) at P10/P50/P90 over failure samples; without failures all three are the same."""
    base = float(result.get("time_to_train_s") or 0.0)
    spread = (result.get("failures") or {}).get("time_to_train_s")
    spread = spread if isinstance(spread, dict) else {}
    return {q: float(spread.get(q, base)) for q in ("p10", "p50", "p90")}


def _site_value(result: dict[str, Any], key: str) -> float | None:
    return (result.get(key) or {}).get(result.get("country", ""))


# Headline number → (its value in a result, lower is better), in the order headline_metrics lists them.
_HEADLINE_VALUES = {
    "Time to train (P50)": (lambda r: time_to_train_percentiles(r)["p50"], True),
    "Time to train (P90)": (lambda r: time_to_train_percentiles(r)["p90"], True),
    "MFU": (lambda r: r.get("mfu"), False),
    "GPU-hours": (lambda r: r.get("gpu_hours"), True),
    "Energy (facility)": (lambda r: r.get("energy_facility_kwh"), True),
    "Carbon (site)": (lambda r: _site_value(r, "carbon_kg"), True),
    "Energy cost (site)": (lambda r: _site_value(r, "energy_cost_eur"), True),
    "Step time": (lambda r: r.get("step_time_s"), True),
    "Throughput": (lambda r: r.get("tokens_per_s"), False),
    "Memory per GPU": (lambda r: r.get("memory_per_gpu_bytes"), True),
}


def _delta(key: str, result: dict[str, Any], baseline: dict[str, Any] | None) -> tuple[str | None, bool]:
    """The relative change of one headline number against the baseline, and whether lower is better."""
    value_of, lower = _HEADLINE_VALUES[key]
    if baseline is None:
        return None, lower
    new, old = value_of(result), value_of(baseline)
    if not isinstance(new, (int, float)) or not isinstance(old, (int, float)) or not old:
        return None, lower
    change = new / old - 1.0
    return (f"{100 * change:+.1f} %" if abs(change) >= 5e-4 else None), lower


def headline_metrics(result: dict[str, Any], baseline: dict[str, Any] | None = None) -> list[Metric]:
    """The numbers a planner reads first, each with its unit; with a baseline result, each one's change."""
    ttt = time_to_train_percentiles(result)
    site = result.get("country", "")
    carbon = (result.get("carbon_kg") or {}).get(site)
    cost = (result.get("energy_cost_eur") or {}).get(site)
    gpus = result.get("gpus_used", 0)
    metrics = [
        Metric("Time to train (P50)", fmt_duration(ttt["p50"]),
               f"median wall-clock time for {fmt_count(result.get('tokens', 0))} tokens, failures and restarts included"),
        Metric("Time to train (P90)", fmt_duration(ttt["p90"]), "9 runs in 10 finish sooner"),
        Metric("MFU", f"{100 * result.get('mfu', 0):.1f} %",
               f"model FLOPs utilisation; {result.get('model_tflops_per_gpu', 0):.0f} TFLOP/s per GPU"),
        Metric("GPU-hours", f"{fmt_count(result.get('gpu_hours', 0))} GPU·h",
               f"{result.get('gpu_hours', 0):,.0f} GPU·h: {gpus:,} GPUs × time to train"),
        Metric("Energy (facility)", fmt_si(result.get("energy_facility_kwh", 0) * 1e3, "Wh"),
               f"IT energy × PUE {result.get('pue', 1):.2f}"),
        Metric(f"Carbon ({site})", _tonnes(carbon) if carbon is not None else "n/a",
               f"facility energy × {(result.get('carbon_intensity_g_per_kwh') or {}).get(site, 0):.0f} g CO2e/kWh"),
        Metric(f"Energy cost ({site})", f"{fmt_count(cost)} EUR" if cost is not None else "n/a",
               (f"{cost:,.0f} EUR: " if cost is not None else "") + "facility energy × electricity price"),
        Metric("Step time", f"{result.get('step_time_s', 0):.2f} s",
               f"{result.get('tokens_per_step', 0):,} tokens per step; {result.get('bottleneck', '')}"),
        Metric("Throughput", f"{fmt_count(result.get('tokens_per_s', 0))} tok/s",
               f"{result.get('tokens_per_s', 0):,.0f} tokens/s; "
               f"{result.get('tokens_per_s_per_gpu', 0):,.0f} tokens/s per GPU"),
        Metric("Memory per GPU", f"{fmt_bytes(result.get('memory_per_gpu_bytes', 0))}",
               f"of {fmt_bytes(result.get('memory_capacity_bytes', 0))}; "
               + ("fits" if result.get("memory_fits") else "does NOT fit")),
    ]
    out = []
    for key, m in zip(_HEADLINE_VALUES, metrics):
        delta, lower = _delta(key, result, baseline)
        out.append(Metric(m.label, m.value, m.help, delta, lower))
    return out


def _tonnes(kg: float) -> str:
    return f"{kg / 1e3:,.1f} t CO2e" if kg < 1e6 else f"{kg / 1e3:,.0f} t CO2e"


def country_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Carbon and energy cost of the run in each country of the site's comparison list."""
    rows = []
    for code, kg in (result.get("carbon_kg") or {}).items():
        price = (result.get("electricity_price_eur_per_kwh") or {}).get(code)
        cost = (result.get("energy_cost_eur") or {}).get(code)
        rows.append({
            "country": code + (" (site)" if code == result.get("country") else ""),
            "carbon intensity [g CO2e/kWh]": round((result.get("carbon_intensity_g_per_kwh") or {}).get(code, 0.0), 1),
            "carbon [t CO2e]": round(kg / 1e3, 1) if kg is not None else None,
            "electricity [EUR/kWh]": round(price, 4) if price is not None else None,
            "energy cost [EUR]": round(cost) if cost is not None else None,
        })
        total = (result.get("total_cost_eur") or {}).get(code)
        if total is not None:
            rows[-1]["energy + GPU rental [EUR]"] = round(total)
    return rows


def plan_rows(result: dict[str, Any]) -> list[dict[str, str]]:
    """The parallel plan as (dimension, value) rows."""
    plan = result.get("plan") or {}
    names = [("tensor", "tensor parallel (TP)"), ("pipeline", "pipeline parallel (PP)"),
             ("data", "data parallel (DP)"), ("expert", "expert parallel (EP)"),
             ("virtual_stages", "virtual stages per GPU"), ("schedule", "pipeline schedule"),
             ("microbatch", "micro-batch [sequences]"), ("microbatches", "micro-batches per step"),
             ("global_batch", "global batch [sequences]"), ("seq_len", "sequence length [tokens]"),
             ("zero", "ZeRO stage"), ("recompute", "activation recomputation"),
             ("sequence_parallel", "sequence parallel"), ("gpus", "GPUs used")]
    return [{"dimension": label, "value": str(plan[key])} for key, label in names if key in plan]


def memory_figure(result: dict[str, Any]) -> go.Figure:
    """Memory per GPU by part (GiB) as one stacked bar, against the GPU's capacity."""
    parts = {k: v for k, v in (result.get("memory_breakdown_bytes") or {}).items() if k != "total"}
    capacity = result.get("memory_capacity_bytes", 0) / GIB
    fig = go.Figure()
    for name, value in parts.items():
        fig.add_bar(y=["per GPU"], x=[value / GIB], name=name, orientation="h",
                    marker_color=MEMORY_COLOURS.get(name), hovertemplate=f"{name}: %{{x:.1f}} GiB<extra></extra>")
    fits = result.get("memory_fits", True)
    fig.add_vline(x=capacity, line_width=3, line_dash="dash", line_color="#222222" if fits else "#D55E00",
                  annotation_text=f"capacity {capacity:.0f} GiB", annotation_position="top")
    total = result.get("memory_per_gpu_bytes", 0) / GIB
    fig.update_layout(barmode="stack", height=230, margin=dict(l=10, r=10, t=50, b=40),
                      title=f"Memory per GPU: {total:.1f} GiB of {capacity:.0f} GiB — "
                            + ("fits" if fits else "does NOT fit"),
                      xaxis_title="GiB per GPU", xaxis_range=[0, max(capacity, total) * 1.08],
                      legend=dict(orientation="h", y=-0.45))
    return fig


# ---------------------------------------------------------------------------
# What-if comparison

# The columns of a what-if comparison drawn as bars (keys of ``summary_row``).
COMPARE_COLUMNS = ("time to train P50 [days]", "GPU-hours [k GPU·h]", "energy (facility) [MWh]",
                   "carbon at site [t CO2e]", "energy cost at site [k EUR]", "MFU [%]")


def summary_row(label: str, result: dict[str, Any] | None, error: str | None = None) -> dict[str, Any]:
    """One what-if as a flat row: the numbers to compare, units in the column names."""
    if result is None:
        return {"what-if": label, "error": error or "no result"}
    ttt = time_to_train_percentiles(result)
    site = result.get("country", "")
    carbon = (result.get("carbon_kg") or {}).get(site)
    cost = (result.get("energy_cost_eur") or {}).get(site)
    return {
        "what-if": label,
        "site": site,
        "GPUs used": result.get("gpus_used"),
        "plan": (result.get("plan") or {}).get("description", ""),
        "step time [s]": round(result.get("step_time_s", 0.0), 3),
        "MFU [%]": round(100 * result.get("mfu", 0.0), 1),
        "time to train P50 [days]": round(ttt["p50"] / SECONDS_PER_DAY, 2),
        "time to train P90 [days]": round(ttt["p90"] / SECONDS_PER_DAY, 2),
        "GPU-hours [k GPU·h]": round(result.get("gpu_hours", 0.0) / 1e3, 1),
        "energy (facility) [MWh]": round(result.get("energy_facility_kwh", 0.0) / 1e3, 1),
        "carbon at site [t CO2e]": round(carbon / 1e3, 1) if carbon is not None else None,
        "energy cost at site [k EUR]": round(cost / 1e3, 1) if cost is not None else None,
        "memory per GPU [GiB]": round(result.get("memory_per_gpu_bytes", 0.0) / GIB, 1),
        "fits memory": bool(result.get("memory_fits")),
        "error": error or "",
    }


def compare_figure(rows: list[dict[str, Any]]) -> go.Figure:
    """What-ifs side by side: one small bar chart per headline number."""
    ok = [r for r in rows if not r.get("error")]
    columns = list(COMPARE_COLUMNS)
    fig = make_subplots(rows=2, cols=3, subplot_titles=columns, vertical_spacing=0.22, horizontal_spacing=0.08)
    palette = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#999999"]
    labels = [str(r["what-if"]) for r in ok]
    for i, column in enumerate(columns):
        values = [r.get(column) for r in ok]
        fig.add_bar(x=labels, y=values, row=i // 3 + 1, col=i % 3 + 1, showlegend=False,
                    marker_color=[palette[j % len(palette)] for j in range(len(ok))],
                    text=[f"{v:,.1f}" if isinstance(v, (int, float)) else "n/a" for v in values],
                    textposition="auto", hovertemplate=f"%{{x}}: %{{y:,.2f}} {column}<extra></extra>")
    fig.update_layout(height=560, margin=dict(l=10, r=10, t=40, b=10))
    return fig


def rows_to_csv(rows: list[dict[str, Any]]) -> str:
    """Comparison rows as CSV text (header from the union of the rows' keys, in order)."""
    header: list[str] = []
    for row in rows:
        header += [k for k in row if k not in header]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()

