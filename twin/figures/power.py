"""Power figures: the rack floor against its limit, IT power over the run, and countries side by side.

Each takes a Result's dict (``Result.to_dict()``) and reads its ``power`` record
(docs/results.md): ``rack_groups`` and ``rack_limit_w``, ``timeline`` (IT power per
segment), and ``countries`` (carbon and cost per country).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import plotly.graph_objects as go

from twin.figures.colours import LIMIT_LINE, NEAR, NEUTRAL, OVER, PHASE_COLOURS, WITHIN
from twin.figures.lazy import make_subplots
from twin.formatting import D3_NUMBER, carbon_axis_kg, fmt_number
from twin.units import SECONDS_PER_DAY, fmt_duration

KW = 1e3
MW = 1e6
# Above this many racks, each cell of the floor map holds several neighbouring racks (their hottest shown).
MAX_CELLS = 100
# Above this many segments, the power timeline is averaged over BINS bins.
MAX_SEGMENTS = 200
BINS = 200


def _rack_arrays(power: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per rack, in fill order (busy racks first): peak W, training average W, busy and idle nodes."""
    groups = power.get("rack_groups") or []
    counts = [int(g["racks"]) for g in groups]

    def each(key: str) -> np.ndarray:
        return np.repeat(np.array([float(g[key]) for g in groups]), counts)

    return each("peak_w"), each("avg_w"), each("busy_nodes"), each("idle_nodes")


def rack_floor(power: dict[str, Any]) -> tuple[int, int, int]:
    """(racks per cell, cells per row, rows) of the floor map: one rack per cell up to MAX_CELLS racks."""
    racks = sum(int(g["racks"]) for g in power.get("rack_groups") or [])
    per_cell = max(1, math.ceil(racks / MAX_CELLS))
    cells = math.ceil(racks / per_cell) if racks else 0
    per_row = max(1, min(cells, math.ceil(math.sqrt(2.5 * cells))))
    return per_cell, per_row, math.ceil(cells / per_row) if cells else 0


def rack_power_figure(result: dict[str, Any]) -> go.Figure:
    """The rack floor as a heatmap (rows × racks): each cell's peak power against the rack limit
    (as a share of it when a limit is set, else in kW); neighbouring racks share a cell above MAX_CELLS."""
    power = result.get("power") or {}
    peak, avg, busy, idle = _rack_arrays(power)
    per_cell, per_row, rows = rack_floor(power)
    limit = power.get("rack_limit_w")
    n = len(peak)
    z = np.full((rows, per_row), np.nan)
    text = np.full((rows, per_row), "", dtype=object)
    for cell in range(math.ceil(n / per_cell) if n else 0):
        first, last = cell * per_cell, min(n, (cell + 1) * per_cell)
        hottest = float(peak[first:last].max())
        row, col = divmod(cell, per_row)
        z[row, col] = 100 * hottest / limit if limit else hottest / KW
        racks = f"rack {first + 1}" if last - first == 1 else f"racks {first + 1}–{last}"
        text[row, col] = (f"{racks}: peak {hottest / KW:.1f} kW"
                          + (f" ({100 * hottest / limit:.0f} % of the limit)" if limit else "")
                          + f", training average {float(avg[first:last].mean()) / KW:.1f} kW, "
                          f"{int(busy[first:last].sum())} busy and {int(idle[first:last].sum())} idle nodes")
    if limit:
        top = max(120.0, float(np.nanmax(z)) if n else 120.0)
        at = lambda pct: pct / top  # noqa: E731 - position of a share of the limit on the colour scale
        scale = [[0.0, "#F2F2F2"], [at(90), WITHIN], [at(100), NEAR], [min(1.0, at(100) + 1e-6), OVER], [1.0, OVER]]
        bar = {"title": {"text": f"peak, % of the {limit / KW:.1f} kW limit"}, "tickvals": [0, 50, 100],
               "ticktext": ["0", "50", "100 (limit)"]}
        zmin, zmax = 0.0, top
    else:
        scale, bar = [[0.0, "#F2F2F2"], [1.0, WITHIN]], {"title": {"text": "peak (kW)"}}
        zmin, zmax = 0.0, float(np.nanmax(z)) if n else 1.0
    fig = go.Figure(go.Heatmap(z=z, text=text, hoverinfo="text", colorscale=scale, zmin=zmin, zmax=zmax,
                               colorbar=bar, xgap=2, ygap=2, hoverongaps=False,
                               x=list(range(1, per_row + 1)), y=[f"row {r + 1}" for r in range(rows)]))
    over = int(power.get("racks_over_limit") or 0)
    title = (f"Rack floor: {n:,} racks of {power.get('nodes_per_rack', '?')} nodes"
             + (f", {per_cell} racks per cell (hottest shown)" if per_cell > 1 else "")
             + (f"; {over:,} over the {limit / KW:.1f} kW limit" if limit else "; no rack limit set"))
    fig.update_layout(title=title, height=140 + 34 * rows, plot_bgcolor="white",
                      xaxis={"title": "position in the row" + (" (cells)" if per_cell > 1 else ""), "showgrid": False,
                             "dtick": 1 if per_row <= 20 else 5},
                      yaxis={"autorange": "reversed", "showgrid": False},
                      margin={"l": 60, "r": 20, "t": 50, "b": 40})
    return fig


def hottest_racks(result: dict[str, Any], top: int = 10) -> list[dict[str, Any]]:
    """The racks with the highest peak, as table rows; racks that are alike share a row."""
    power = result.get("power") or {}
    limit = power.get("rack_limit_w")
    rows, first = [], 1
    for g in power.get("rack_groups") or []:
        count = int(g["racks"])
        rows.append({"racks": f"{first}" if count == 1 else f"{first}–{first + count - 1}", "count": count,
                     "busy nodes per rack": int(g["busy_nodes"]), "idle nodes per rack": int(g["idle_nodes"]),
                     "training average [kW]": round(g["avg_w"] / KW, 1), "peak [kW]": round(g["peak_w"] / KW, 1),
                     **({"peak / limit [%]": round(100 * g["peak_w"] / limit)} if limit else {})})
        first += count
    return sorted(rows, key=lambda r: -r["peak [kW]"])[:top]


def _binned(timeline: list[dict[str, Any]], bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Average IT power (W) in ``bins`` equal bins of the run: energy in each bin over its length."""
    starts = np.array([s["start_s"] for s in timeline], dtype=float)
    ends = np.array([s["end_s"] for s in timeline], dtype=float)
    watts = np.array([s["it_w"] for s in timeline], dtype=float)
    times = np.concatenate([[starts[0]], ends])
    energy = np.concatenate([[0.0], np.cumsum((ends - starts) * watts)])
    edges = np.linspace(times[0], times[-1], bins + 1)
    return edges, np.diff(np.interp(edges, times, energy)) / np.diff(edges)


def _level(fig: go.Figure, watts: float | None, name: str, colour: str, dash: str, end_s: float) -> None:
    """A constant power level across the run, named in the legend (never an annotation over the data)."""
    if watts:
        fig.add_trace(go.Scatter(x=[0.0, end_s / SECONDS_PER_DAY], y=[watts / MW, watts / MW], mode="lines",
                                 name=f"{name} {fmt_number(watts / MW)} MW", line={"color": colour, "dash": dash, "width": 1.5},
                                 hoverinfo="name"))


def power_timeline_figure(result: dict[str, Any]) -> go.Figure:
    """Cluster IT power (MW) over the run (days): by job phase, or averaged over bins when the
    run has more than MAX_SEGMENTS segments."""
    power = result.get("power") or {}
    timeline = power.get("timeline") or []
    fig = go.Figure()
    note = ""
    if len(timeline) > MAX_SEGMENTS:
        edges, watts = _binned(timeline, BINS)
        width_s = float(edges[1] - edges[0])
        note = f", averaged over {fmt_duration(width_s)} bins"
        fig.add_trace(go.Scatter(x=edges / SECONDS_PER_DAY, y=np.append(watts, watts[-1]) / MW, mode="lines",
                                 line={"color": PHASE_COLOURS["train"], "width": 2, "shape": "hv"},
                                 name=f"average IT power per {fmt_duration(width_s)}",
                                 hovertemplate="day %{x:.1f}: %{y:.3f} MW<extra></extra>"))
        _level(fig, power.get("train_w"), "while training", NEUTRAL, "dash", timeline[-1]["end_s"])
    else:
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
    _level(fig, result.get("peak_power_it_w"), "peak", LIMIT_LINE, "dot", timeline[-1]["end_s"] if timeline else 0.0)
    fig.update_layout(title=f"Cluster IT power over the run{note}", xaxis_title="time (days)",
                      yaxis_title="IT power (MW)", yaxis_rangemode="tozero", height=380,
                      legend={"orientation": "h", "y": -0.2, "yanchor": "top", "x": 0},
                      margin={"l": 60, "r": 20, "t": 50, "b": 10})
    return fig


def country_comparison_figure(result: dict[str, Any]) -> go.Figure:
    """Operational carbon (g, kg or t CO2e, as the largest bar reads best) and energy cost (EUR, no SI prefix)
    of the same run in each country."""
    countries = (result.get("power") or {}).get("countries") or []
    site = result.get("country")
    codes = [c["code"] + (" (site)" if c["code"] == site else "") for c in countries]
    unit, kg = carbon_axis_kg(max((c["carbon_kg"] for c in countries), default=0.0))
    fig = make_subplots(rows=1, cols=2, subplot_titles=(f"carbon ({unit} CO2e)", "electricity cost (EUR)"))
    fig.add_trace(go.Bar(x=codes, y=[c["carbon_kg"] / kg for c in countries], marker_color="#009E73",
                         name="carbon", customdata=[[c["intensity_g_per_kwh"]] for c in countries],
                         hovertemplate=f"%{{x}}: %{{y:{D3_NUMBER}}} {unit} at %{{customdata[0]:.0f}} g/kWh"
                                       "<extra></extra>"),
                  row=1, col=1)
    fig.add_trace(go.Bar(x=codes, y=[c["energy_cost_eur"] or 0.0 for c in countries], marker_color="#0072B2",
                         name="energy cost",
                         customdata=[[c["price_eur_per_kwh"] if c["price_eur_per_kwh"] is not None else float("nan")]
                                     for c in countries],
                         hovertemplate=f"%{{x}}: %{{y:{D3_NUMBER}}} EUR at %{{customdata[0]:.3f}} EUR/kWh<extra></extra>"),
                  row=1, col=2)
    fig.update_traces(texttemplate=f"%{{y:{D3_NUMBER}}}", textposition="auto")
    fig.update_yaxes(tickformat=D3_NUMBER)
    fig.update_layout(title="The same run in each country (electricity only)", showlegend=False,
                      uniformtext={"minsize": 9, "mode": "hide"})
    return fig
