"""Headline numbers, whether the plan runs at all, the parallel plan, memory per GPU, countries.

Every function takes a Result's dict (``Result.to_dict()``) and returns plain
data or a ``plotly.graph_objects.Figure``. Values leave here with their unit
attached (in the label or the column name); headline values are abbreviated to
fit a narrow box (``42.4 M GPU·h``), with the full value in their help text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from twin.bands import band_line
from twin.figures.colours import LIMIT_LINE, MEMORY_COLOURS, NEUTRAL
from twin.formatting import fmt_co2e_kg, fmt_energy_kwh, fmt_money_eur, fmt_number
from twin.units import SECONDS_PER_DAY, fmt_amount, fmt_bytes, fmt_count, fmt_duration, fmt_si

GIB = 2**30


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


def site_value(result: dict[str, Any], key: str) -> float | None:
    """A per-country figure (``carbon_kg``, ``energy_cost_eur``...) at the run's own site."""
    return (result.get(key) or {}).get(result.get("country", ""))


# Headline number → (its value in a result, lower is better), in the order headline_metrics lists them.
_HEADLINE_VALUES = {
    "Time to train (P50)": (lambda r: time_to_train_percentiles(r)["p50"], True),
    "Time to train (P90)": (lambda r: time_to_train_percentiles(r)["p90"], True),
    "MFU": (lambda r: r.get("mfu"), False),
    "GPU-hours": (lambda r: r.get("gpu_hours"), True),
    "Energy (facility)": (lambda r: r.get("energy_facility_kwh"), True),
    "Carbon (site)": (lambda r: site_value(r, "carbon_kg"), True),
    "Energy cost (site)": (lambda r: site_value(r, "energy_cost_eur"), True),
    "Peak power (IT)": (lambda r: r.get("peak_power_it_w"), True),
    "Step time": (lambda r: r.get("step_time_s"), True),
    "Throughput": (lambda r: r.get("tokens_per_s"), False),
    "Memory per GPU": (lambda r: r.get("memory_per_gpu_bytes"), True),
    "Goodput": (lambda r: r.get("goodput"), False),
}


# Headline numbers that carry the record's error band (twin.bands) in their help text.
_BANDED = {"Time to train (P50)", "Time to train (P90)", "MFU", "GPU-hours", "Energy (facility)", "Carbon (site)",
           "Energy cost (site)", "Step time", "Throughput"}


def relative_change(new: Any, old: Any) -> float | None:
    """new / old - 1, or None when either is missing or the old value is zero."""
    if not isinstance(new, (int, float)) or not isinstance(old, (int, float)) or not old:
        return None
    return new / old - 1.0


def fmt_change(change: float | None) -> str | None:
    """'+12.5 %', or None for no change (under 0.05 %) or no comparison."""
    return f"{100 * change:+.1f} %" if change is not None and abs(change) >= 5e-4 else None


def co2e(kg: float | None) -> str:
    """Carbon through the one formatter: 17.1e6 kg → '17,100 t CO2e', 3.11 → '3.11 kg CO2e', 0.0178 → '17.8 g CO2e'."""
    return fmt_co2e_kg(kg)


def headline_metrics(result: dict[str, Any], baseline: dict[str, Any] | None = None) -> list[Metric]:
    """The numbers a planner reads first, each with its unit; with a baseline result, each one's change."""
    ttt = time_to_train_percentiles(result)
    site = result.get("country", "")
    carbon = site_value(result, "carbon_kg")
    cost = site_value(result, "energy_cost_eur")
    gpus = result.get("gpus_used", 0)
    gpu_hours = result.get("gpu_hours", 0)
    kwh = result.get("energy_facility_kwh", 0)
    tokens_per_s = result.get("tokens_per_s", 0)
    metrics = [
        Metric("Time to train (P50)", fmt_duration(ttt["p50"]),
               f"{fmt_number(ttt['p50'] / SECONDS_PER_DAY)} days: median wall-clock time for "
               f"{fmt_count(result.get('tokens', 0))} tokens, failures and restarts included"),
        Metric("Time to train (P90)", fmt_duration(ttt["p90"]),
               f"{fmt_number(ttt['p90'] / SECONDS_PER_DAY)} days: 9 runs in 10 finish sooner"),
        Metric("MFU", f"{100 * result.get('mfu', 0):.1f} %",
               f"model FLOPs utilisation; {result.get('model_tflops_per_gpu', 0):.0f} TFLOP/s per GPU"),
        Metric("GPU-hours", fmt_amount(gpu_hours, "GPU·h"),
               f"{fmt_number(gpu_hours)} GPU·h: {gpus:,} GPUs × time to train"),
        Metric("Energy (facility)", fmt_energy_kwh(kwh),
               f"IT energy × PUE {result.get('pue', 1):.2f}"),
        Metric(f"Carbon ({site})", co2e(carbon),
               f"facility energy × {(result.get('carbon_intensity_g_per_kwh') or {}).get(site, 0):.0f} g CO2e/kWh"),
        Metric(f"Energy cost ({site})", fmt_money_eur(cost),
               "facility energy × the site's electricity price (electricity only)"),
        Metric("Peak power (IT)", fmt_si(result.get("peak_power_it_w", 0), "W"),
               f"{fmt_number(result.get('peak_power_it_w', 0) / 1e3)} kW: every busy GPU at its limit, with hosts, "
               f"switches and storage; average {fmt_si(result.get('avg_power_it_w', 0), 'W')}"),
        Metric("Step time", fmt_duration(result.get("step_time_s", 0)),
               f"{fmt_number(result.get('step_time_s', 0))} s for {result.get('tokens_per_step', 0):,} tokens; "
               f"{result.get('bottleneck', '')}"),
        Metric("Throughput", fmt_amount(tokens_per_s, "tok/s"),
               f"{fmt_number(tokens_per_s)} tokens/s; {fmt_number(result.get('tokens_per_s_per_gpu', 0))} tokens/s per GPU"),
        Metric("Memory per GPU", fmt_bytes(result.get("memory_per_gpu_bytes", 0)),
               f"of {fmt_bytes(result.get('memory_capacity_bytes', 0))}; "
               + ("fits" if result.get("memory_fits") else "does NOT fit")),
        Metric("Goodput", f"{100 * result.get('goodput', 1.0):.1f} %",
               "share of wall-clock time spent on steps that count (failures, restarts and checkpoints "
               "take the rest)"),
    ]
    out = []
    for key, m in zip(_HEADLINE_VALUES, metrics):
        value_of, lower = _HEADLINE_VALUES[key]
        delta = fmt_change(relative_change(value_of(result), value_of(baseline))) if baseline else None
        band = f"; {band_line(result)}" if key in _BANDED and band_line(result) else ""
        out.append(Metric(m.label, m.value, m.help + band, delta, lower))
    return out


@dataclass(frozen=True)
class Infeasible:
    """Why a result has no meaningful headline numbers, and what would fix it."""
    title: str
    detail: str
    suggestions: tuple[str, ...]


def infeasibility(result: dict[str, Any]) -> Infeasible | None:
    """A plan that does not fit memory, or a job that never finishes; None when the plan runs."""
    if not result.get("memory_fits", True):
        need, have = result.get("memory_per_gpu_bytes", 0.0), result.get("memory_capacity_bytes", 0.0)
        advice = tuple(result.get("memory_advice") or ()) or (
            "no single change of ZeRO stage, recomputation, pipeline or tensor parallelism fits: "
            "add GPUs, or choose a GPU with more memory",)
        return Infeasible("The plan does not fit in GPU memory",
                          f"each GPU needs {fmt_bytes(need)} and has {fmt_bytes(have)} ({fmt_bytes(need - have)} over)",
                          advice)
    time_s = result.get("time_to_train_s")
    if result.get("finished") is False or time_s is None or not math.isfinite(time_s) \
            or not result.get("tokens_per_s"):
        why = next((w.removeprefix("did not finish: ") for w in result.get("warnings", [])
                    if w.startswith("did not finish")), "the job makes no lasting progress")
        return Infeasible("The job does not finish", why,
                          ("more spare nodes (cluster.spare_nodes) or a shorter repair time (failures.repair_time)",
                           "a shorter checkpoint interval, or faster storage, so that less work is lost",
                           "fewer tokens, or more GPUs or a faster plan",
                           "a longer failures.horizon, if the run is meant to last that long"))
    return None


def country_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Carbon and energy cost of the run in each country of the site's comparison list."""
    rows = []
    for code, kg in (result.get("carbon_kg") or {}).items():
        price = (result.get("electricity_price_eur_per_kwh") or {}).get(code)
        cost = (result.get("energy_cost_eur") or {}).get(code)
        rows.append({
            "country": code + (" (site)" if code == result.get("country") else ""),
            "carbon intensity [g CO2e/kWh]": round((result.get("carbon_intensity_g_per_kwh") or {}).get(code, 0.0), 1),
            "carbon": fmt_co2e_kg(kg),
            "electricity [EUR/kWh]": round(price, 4) if price is not None else None,
            "energy cost": fmt_money_eur(cost),
        })
        total = (result.get("total_cost_eur") or {}).get(code)
        if result.get("rental_cost_eur") is not None and total is not None:
            rows[-1]["energy + GPU rental"] = fmt_money_eur(total)
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
    shown = lambda v: f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)  # noqa: E731
    return [{"dimension": label, "value": shown(plan[key])} for key, label in names if key in plan]


def memory_figure(result: dict[str, Any]) -> go.Figure:
    """Memory per GPU by part (GiB) as one stacked bar, against the GPU's capacity."""
    parts = {k: v for k, v in (result.get("memory_breakdown_bytes") or {}).items() if k != "total"}
    capacity = result.get("memory_capacity_bytes", 0) / GIB
    fig = go.Figure()
    for name, value in parts.items():
        fig.add_bar(y=["per GPU"], x=[value / GIB], name=name, orientation="h",
                    marker_color=MEMORY_COLOURS.get(name), hovertemplate=f"{name}: %{{x:.1f}} GiB<extra></extra>")
    fits = result.get("memory_fits", True)
    fig.add_vline(x=capacity, line_width=3, line_dash="dash", line_color=NEUTRAL if fits else LIMIT_LINE,
                  annotation_text=f"capacity {capacity:.0f} GiB", annotation_position="top")
    total = result.get("memory_per_gpu_bytes", 0) / GIB
    fig.update_layout(barmode="stack", height=230, margin=dict(l=10, r=10, t=50, b=40),
                      title=f"Memory per GPU: {total:.1f} GiB of {capacity:.0f} GiB — "
                            + ("fits" if fits else "does NOT fit"),
                      xaxis_title="GiB per GPU", xaxis_range=[0, max(capacity, total) * 1.08],
                      legend=dict(orientation="h", y=-0.45, traceorder="normal"))
    return fig
