"""Power figures: racks against their limit, IT power over the run, and countries side by side.

Each takes a Result's dict (``Result.to_dict()``) and reads its ``power`` record
(docs/results.md): ``rack_groups`` and ``rack_limit_w``, ``timeline`` (IT power per
segment), and ``countries`` (carbon and cost per country).
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from twin.units import SECONDS_PER_DAY

PHASE_COLOURS = {"train": "#0072B2", "checkpoint": "#E69F00", "restart": "#D55E00", "repair_wait": "#CC79A7"}
KW = 1e3
MW = 1e6


def _racks(power: dict[str, Any]) -> list[dict[str, float]]:
    rows = []
    for g in power.get("rack_groups") or []:
        rows.extend({"avg_w": g["avg_w"], "peak_w": g["peak_w"], "busy": g["busy_nodes"], "idle": g["idle_nodes"]}
                    for _ in range(int(g["racks"])))
    return rows


def rack_power_figure(result: dict[str, Any]) -> go.Figure:
    """Each rack's training average and peak (kW), with the rack power limit as a line."""
    power = result.get("power") or {}
    racks = _racks(power)
    x = list(range(1, len(racks) + 1))
    limit = power.get("rack_limit_w")
    over = [limit is not None and r["peak_w"] > limit for r in racks]
    fig = go.Figure()
    fig.add_trace(go.Bar(name="peak", x=x, y=[r["peak_w"] / KW for r in racks],
                         marker_color=["#D55E00" if o else "#E69F00" for o in over], opacity=0.55,
                         customdata=[[r["busy"], r["idle"]] for r in racks],
                         hovertemplate="rack %{x}: peak %{y:.1f} kW<br>%{customdata[0]} busy, "
                                       "%{customdata[1]} idle nodes<extra></extra>"))
    fig.add_trace(go.Bar(name="training average", x=x, y=[r["avg_w"] / KW for r in racks], marker_color="#0072B2",
                         hovertemplate="rack %{x}: average %{y:.1f} kW<extra></extra>"))
    if limit:
        fig.add_hline(y=limit / KW, line_dash="dash", line_color="#D55E00",
                      annotation_text=f"rack limit {limit / KW:.1f} kW", annotation_position="top left")
    fig.update_layout(title=f"Power per rack ({len(racks)} racks of {power.get('nodes_per_rack', '?')} nodes)",
                      xaxis_title="rack", yaxis_title="power (kW)", barmode="overlay", bargap=0.1)
    return fig


def power_timeline_figure(result: dict[str, Any]) -> go.Figure:
    """Cluster IT power (MW) over the run (days), coloured by job phase."""
    power = result.get("power") or {}
    timeline = power.get("timeline") or []
    fig = go.Figure()
    # The whole run as one stepped line, then each phase's segments on top (one trace per phase).
    xs, ys = [], []
    for seg in timeline:
        xs += [seg["start_s"] / SECONDS_PER_DAY, seg["end_s"] / SECONDS_PER_DAY]
        ys += [seg["it_w"] / MW, seg["it_w"] / MW]
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line={"color": "#999999", "width": 1}, name="IT power",
                             hoverinfo="skip", showlegend=False))
    for phase, colour in PHASE_COLOURS.items():
        px: list[float | None] = []
        py: list[float | None] = []
        for seg in timeline:
            if seg["phase"] == phase:
                px += [seg["start_s"] / SECONDS_PER_DAY, seg["end_s"] / SECONDS_PER_DAY, None]
                py += [seg["it_w"] / MW, seg["it_w"] / MW, None]
        if px:
            fig.add_trace(go.Scatter(x=px, y=py, mode="lines", line={"color": colour, "width": 3},
                                     name=phase.replace("_", " "),
                                     hovertemplate=f"{phase}: %{{y:.3f}} MW<extra></extra>"))
    peak = result.get("peak_power_it_w")
    if peak:
        fig.add_hline(y=peak / MW, line_dash="dot", line_color="#555555",
                      annotation_text=f"peak {peak / MW:.2f} MW", annotation_position="top left")
    fig.update_layout(title="Cluster IT power over the run", xaxis_title="time (days)", yaxis_title="IT power (MW)",
                      yaxis_rangemode="tozero")
    return fig


def country_comparison_figure(result: dict[str, Any]) -> go.Figure:
    """Operational carbon (t CO2e) and energy cost (EUR) of the same run in each country."""
    countries = (result.get("power") or {}).get("countries") or []
    site = result.get("country")
    codes = [c["code"] + (" (site)" if c["code"] == site else "") for c in countries]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("carbon (t CO2e)", "electricity cost (EUR)"))
    fig.add_trace(go.Bar(x=codes, y=[c["carbon_kg"] / 1e3 for c in countries], marker_color="#009E73",
                         name="carbon", customdata=[[c["intensity_g_per_kwh"]] for c in countries],
                         hovertemplate="%{x}: %{y:,.1f} t at %{customdata[0]:.0f} g/kWh<extra></extra>"),
                  row=1, col=1)
    fig.add_trace(go.Bar(x=codes, y=[c["energy_cost_eur"] or 0.0 for c in countries], marker_color="#0072B2",
                         name="energy cost",
                         customdata=[[c["price_eur_per_kwh"] if c["price_eur_per_kwh"] is not None else float("nan")]
                                     for c in countries],
                         hovertemplate="%{x}: %{y:,.0f} EUR at %{customdata[0]:.3f} EUR/kWh<extra></extra>"),
                  row=1, col=2)
    fig.update_layout(title="The same run in each country", showlegend=False)
    return fig
