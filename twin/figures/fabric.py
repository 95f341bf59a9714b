"""The compute fabric, drawn by scalable unit, from a Result's ``fabric`` record.

Bottom row: one box per scalable unit (its nodes and GPUs); above it the unit's
leaves (one per rail in a rail-optimised fabric), then the spines (shared by
every unit up to the two-tier limit, or each unit's own), then the cores. The
legend lists where each parallel group's traffic climbs to. Large fabrics are
drawn with their first units only (the rest are identical), and say so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from twin.formatting import fmt_number

# Colour-blind safe (Okabe-Ito) colours of the tiers.
TIER_COLOURS = {"su": "#0072B2", "leaf": "#009E73", "spine": "#E69F00", "core": "#D55E00", "link": "#BBBBBB"}
REACH_LABELS = {"none": "stays on one GPU", "node": "inside a node", "leaf": "across nodes under one leaf",
                "spine": "across leaves, through the spines", "core": "across pods, through the core"}
# Most scalable units and switches per row drawn before the figure summarises the rest.
MAX_UNITS_DRAWN = 8
MAX_SWITCHES_DRAWN = 64
# Width of one scalable unit in the drawing (axis units; the axis is hidden).
UNIT_WIDTH = 10.0


def _spread(count: int, left: float, right: float) -> list[float]:
    if count <= 1:
        return [(left + right) / 2] * count
    step = (right - left) / (count - 1)
    return [left + i * step for i in range(count)]


class _Links:
    """The links between tiers, drawn as one trace of segments separated by gaps."""

    def __init__(self) -> None:
        self.x: list[float | None] = []
        self.y: list[float | None] = []

    def add(self, x0: float, y0: float, x1: float, y1: float) -> None:
        self.x.extend([x0, x1, None])
        self.y.extend([y0, y1, None])


@dataclass(frozen=True)
class _Tier:
    """One row of switches (or units) as drawn: x positions, hover texts, and for leaves their unit."""
    x: list[float]
    text: list[str]
    unit: list[int]


def _leaves(drawn: list[dict[str, Any]], links: _Links) -> tuple[list[float], _Tier]:
    """Each drawn unit's x and its leaves above it, linked to it."""
    su_x: list[float] = []
    leaves = _Tier([], [], [])
    for i, row in enumerate(drawn):
        x = i * UNIT_WIDTH
        su_x.append(x)
        xs = _spread(min(row["leaves"], MAX_SWITCHES_DRAWN), x - 0.4 * UNIT_WIDTH, x + 0.4 * UNIT_WIDTH)
        for j, lx in enumerate(xs):
            leaves.x.append(lx)
            leaves.unit.append(i)
            leaves.text.append(f"leaf {j} of SU{row['index']}")
            links.add(x, 0.0, lx, 1.0)
    return su_x, leaves


def _spines(fabric: dict[str, Any], drawn: list[dict[str, Any]], su_x: list[float], leaves: _Tier,
            links: _Links) -> _Tier:
    """The spines: one row shared by every unit (global scope) or each unit's own, linked to their leaves."""
    spines = _Tier([], [], [])
    if fabric.get("spine_scope", "global") == "global":
        count = min(fabric.get("spines", 0), MAX_SWITCHES_DRAWN)
        spines.x.extend(_spread(count, -0.4 * UNIT_WIDTH, max(1, len(drawn)) * UNIT_WIDTH - 0.6 * UNIT_WIDTH))
        spines.text.extend(f"spine {k}" for k in range(count))
        for lx in leaves.x:
            for sx in spines.x:
                links.add(lx, 1.0, sx, 2.0)
        return spines
    for i, row in enumerate(drawn):
        xs = _spread(min(row.get("spines", 0), MAX_SWITCHES_DRAWN), su_x[i] - 0.4 * UNIT_WIDTH,
                     su_x[i] + 0.4 * UNIT_WIDTH)
        spines.x.extend(xs)
        spines.text.extend(f"spine {k} of SU{row['index']}" for k in range(len(xs)))
        for lx, su in zip(leaves.x, leaves.unit):
            if su == i:
                for sx in xs:
                    links.add(lx, 1.0, sx, 2.0)
    return spines


def _cores(fabric: dict[str, Any], drawn: list[dict[str, Any]], spines: _Tier, links: _Links) -> _Tier:
    """The cores, linked to every spine."""
    count = min(fabric.get("cores", 0), MAX_SWITCHES_DRAWN)
    cores = _Tier(_spread(count, -0.4 * UNIT_WIDTH, max(1, len(drawn)) * UNIT_WIDTH - 0.6 * UNIT_WIDTH),
                  [f"core {k}" for k in range(count)], [])
    for sx in spines.x:
        for cx in cores.x:
            links.add(sx, 2.0, cx, 3.0)
    return cores


def _title(fabric: dict[str, Any], drawn: int, units: int) -> str:
    """Two short lines, so that the title fits a laptop's width: the topology and its size, then its switches."""
    title = (f"{fabric.get('topology', 'fabric')}: {fabric.get('nodes', 0):,} nodes, {fabric.get('gpus', 0):,} GPUs"
             + (f" (first {drawn} of {units} units drawn)" if units > drawn else "")
             + f"<br>{fabric.get('leaves', 0):,} leaves, {fabric.get('spines', 0):,} spines, "
             f"{fabric.get('cores', 0):,} cores; bisection {fmt_number(fabric.get('bisection_Bps', 0) / 1e12)} TB/s")
    return title


def _group_legend(fig: go.Figure, fabric: dict[str, Any]) -> None:
    """One legend entry per parallel group: how many, how large, where its traffic climbs to, its bus bandwidth."""
    for kind, g in (fabric.get("groups") or {}).items():
        fig.add_trace(go.Scatter(
            x=[None], y=[None], mode="markers", marker={"size": 0, "color": "white"},
            name=f"{kind} ×{g['count']} ({g['size']} GPUs): {REACH_LABELS.get(g['reach'], g['reach'])}, "
                 f"{fmt_number(g['busbw_Bps'] / 1e9)} GB/s"))


def fabric_figure(fabric: dict[str, Any]) -> go.Figure:
    """A layered drawing of ``Result.fabric``: scalable units, leaves, spines, cores, and the links between them."""
    units = list(fabric.get("su") or [])
    drawn = units[:MAX_UNITS_DRAWN]
    links = _Links()
    su_x, leaves = _leaves(drawn, links)
    spines = _spines(fabric, drawn, su_x, leaves, links)
    cores = _cores(fabric, drawn, spines, links)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=links.x, y=links.y, mode="lines", line={"color": TIER_COLOURS["link"], "width": 0.5},
                             hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatter(
        x=su_x, y=[0.0] * len(su_x), mode="markers+text", name="scalable units",
        marker={"symbol": "square", "size": 28, "color": TIER_COLOURS["su"]},
        text=[f"SU{r['index']}" for r in drawn], textposition="bottom center",
        hovertext=[f"SU{r['index']}: {r['nodes']} nodes, {r['gpus']} GPUs, {r['leaves']} leaves" for r in drawn],
        hoverinfo="text"))
    for name, tier, y, colour in (("leaves", leaves, 1.0, TIER_COLOURS["leaf"]),
                                  ("spines", spines, 2.0, TIER_COLOURS["spine"]),
                                  ("cores", cores, 3.0, TIER_COLOURS["core"])):
        if tier.x:
            fig.add_trace(go.Scatter(x=tier.x, y=[y] * len(tier.x), mode="markers", name=name,
                                     marker={"size": 9, "color": colour}, hovertext=tier.text, hoverinfo="text"))
    _group_legend(fig, fabric)
    fig.update_layout(
        title=_title(fabric, len(drawn), len(units)), showlegend=True, legend={"orientation": "h", "y": -0.15},
        xaxis={"visible": False}, plot_bgcolor="white",
        yaxis={"tickvals": [0, 1, 2, 3], "ticktext": ["nodes", "leaf", "spine", "core"], "range": [-0.6, 3.4],
               "showgrid": False},
        margin={"l": 60, "r": 20, "t": 80, "b": 40})
    return fig
