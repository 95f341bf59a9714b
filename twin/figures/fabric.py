"""The compute fabric, drawn by scalable unit, from a Result's ``fabric`` record.

Bottom row: one box per scalable unit (its nodes and GPUs); above it the unit's
leaves (one per rail in a rail-optimised fabric), then the spines (shared by
every unit up to the two-tier limit, or each unit's own), then the cores. The
legend lists where each parallel group's traffic climbs to. Large fabrics are
drawn with their first units only (the rest are identical), and say so.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

# Colour-blind safe (Okabe-Ito) colours of the tiers.
TIER_COLOURS = {"su": "#0072B2", "leaf": "#009E73", "spine": "#E69F00", "core": "#D55E00", "link": "#BBBBBB"}
REACH_LABELS = {"none": "stays on one GPU", "node": "inside a node", "leaf": "across nodes under one leaf",
                "spine": "across leaves, through the spines", "core": "across pods, through the core"}
# Most scalable units and switches per row drawn before the figure summarises the rest.
MAX_UNITS_DRAWN = 8
MAX_SWITCHES_DRAWN = 64


def _spread(count: int, left: float, right: float) -> list[float]:
    if count <= 1:
        return [(left + right) / 2] * count
    step = (right - left) / (count - 1)
    return [left + i * step for i in range(count)]


def fabric_figure(fabric: dict[str, Any]) -> go.Figure:
    """A layered drawing of ``Result.fabric``: scalable units, leaves, spines, cores, and the links between them."""
    fig = go.Figure()
    units = list(fabric.get("su") or [])
    drawn = units[:MAX_UNITS_DRAWN]
    width = 10.0
    line_x: list[float | None] = []
    line_y: list[float | None] = []

    def link(x0: float, y0: float, x1: float, y1: float) -> None:
        line_x.extend([x0, x1, None])
        line_y.extend([y0, y1, None])

    su_x, leaf_x, leaf_text, leaf_su = [], [], [], []
    for i, row in enumerate(drawn):
        x = i * width
        su_x.append(x)
        xs = _spread(min(row["leaves"], MAX_SWITCHES_DRAWN), x - 0.4 * width, x + 0.4 * width)
        for j, lx in enumerate(xs):
            leaf_x.append(lx)
            leaf_su.append(i)
            leaf_text.append(f"leaf {j} of SU{row['index']}")
            link(x, 0.0, lx, 1.0)
    total_width = max(1, len(drawn)) * width

    spine_x: list[float] = []
    spine_text: list[str] = []
    if fabric.get("spine_scope", "global") == "global":
        count = min(fabric.get("spines", 0), MAX_SWITCHES_DRAWN)
        spine_x = _spread(count, -0.4 * width, total_width - 0.6 * width)
        spine_text = [f"spine {k}" for k in range(count)]
        for lx in leaf_x:
            for sx in spine_x:
                link(lx, 1.0, sx, 2.0)
    else:
        for i, row in enumerate(drawn):
            xs = _spread(min(row.get("spines", 0), MAX_SWITCHES_DRAWN), su_x[i] - 0.4 * width, su_x[i] + 0.4 * width)
            spine_x += xs
            spine_text += [f"spine {k} of SU{row['index']}" for k in range(len(xs))]
            for lx, su in zip(leaf_x, leaf_su):
                if su == i:
                    for sx in xs:
                        link(lx, 1.0, sx, 2.0)
    core_count = min(fabric.get("cores", 0), MAX_SWITCHES_DRAWN)
    core_x = _spread(core_count, -0.4 * width, total_width - 0.6 * width)
    for sx in spine_x:
        for cx in core_x:
            link(sx, 2.0, cx, 3.0)

    fig.add_trace(go.Scatter(x=line_x, y=line_y, mode="lines", line={"color": TIER_COLOURS["link"], "width": 0.5},
                             hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatter(
        x=su_x, y=[0.0] * len(su_x), mode="markers+text", name="scalable units",
        marker={"symbol": "square", "size": 28, "color": TIER_COLOURS["su"]},
        text=[f"SU{r['index']}" for r in drawn], textposition="bottom center",
        hovertext=[f"SU{r['index']}: {r['nodes']} nodes, {r['gpus']} GPUs, {r['leaves']} leaves" for r in drawn],
        hoverinfo="text"))
    for name, xs, y, texts, colour in (("leaves", leaf_x, 1.0, leaf_text, TIER_COLOURS["leaf"]),
                                       ("spines", spine_x, 2.0, spine_text, TIER_COLOURS["spine"]),
                                       ("cores", core_x, 3.0, [f"core {k}" for k in range(core_count)],
                                        TIER_COLOURS["core"])):
        if xs:
            fig.add_trace(go.Scatter(x=xs, y=[y] * len(xs), mode="markers", name=name,
                                     marker={"size": 9, "color": colour}, hovertext=texts, hoverinfo="text"))

    for kind, g in (fabric.get("groups") or {}).items():
        fig.add_trace(go.Scatter(
            x=[None], y=[None], mode="markers", marker={"size": 0, "color": "white"},
            name=f"{kind} ×{g['count']} ({g['size']} GPUs): {REACH_LABELS.get(g['reach'], g['reach'])}, "
                 f"{g['busbw_Bps'] / 1e9:,.0f} GB/s"))

    hidden = len(units) - len(drawn)
    title = (f"{fabric.get('topology', 'fabric')}: {fabric.get('nodes', 0)} nodes, {fabric.get('gpus', 0)} GPUs, "
             f"{fabric.get('leaves', 0)} leaves, {fabric.get('spines', 0)} spines, {fabric.get('cores', 0)} cores; "
             f"bisection {fabric.get('bisection_Bps', 0) / 1e12:,.1f} TB/s")
    if hidden > 0:
        title += f" (first {len(drawn)} of {len(units)} units drawn)"
    fig.update_layout(
        title=title, showlegend=True, legend={"orientation": "h", "y": -0.15},
        xaxis={"visible": False}, plot_bgcolor="white",
        yaxis={"tickvals": [0, 1, 2, 3], "ticktext": ["nodes", "leaf", "spine", "core"], "range": [-0.6, 3.4],
               "showgrid": False},
        margin={"l": 60, "r": 20, "t": 60, "b": 40})
    return fig
