"""Figures of one training step: the pipeline Gantt chart and the step breakdown.

Both take a Result's dict (``Result.to_dict()``): ``step_timeline`` (spans of
every stage: forward, backward, send, dp_comm, overheads, optimizer) and
``step_breakdown_s``.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from twin.engine.step import PART_LABELS

# Okabe-Ito colours (colour-blind safe), one per kind of span.
SPAN_COLOURS = {"forward": "#0072B2", "backward": "#56B4E9", "send": "#E69F00", "dp_comm": "#009E73",
                "overheads": "#CC79A7", "optimizer": "#D55E00"}
BREAKDOWN_COLOURS = {"compute": "#0072B2", "tp_comm": "#E69F00", "pp_comm": "#56B4E9", "dp_comm": "#009E73",
                     "bubble": "#BBBBBB", "overheads": "#CC79A7", "optimizer": "#D55E00"}


def step_gantt_figure(result: dict[str, Any]) -> go.Figure:
    """One bar per span on a row per pipeline stage (stage 0 on top); time in seconds."""
    spans = result.get("step_timeline") or []
    fig = go.Figure()
    stages = sorted({s["stage"] for s in spans})
    for kind, colour in SPAN_COLOURS.items():
        chosen = [s for s in spans if s["kind"] == kind]
        if not chosen:
            continue
        fig.add_trace(go.Bar(
            name=kind.replace("_", " "),
            orientation="h",
            base=[s["start_s"] for s in chosen],
            x=[s["end_s"] - s["start_s"] for s in chosen],
            y=[f"stage {s['stage']}" for s in chosen],
            marker_color=colour,
            marker_line_width=0.5,
            marker_line_color="white",
            text=[str(s["microbatch"]) if s["microbatch"] >= 0 else "" for s in chosen],
            customdata=[[s["microbatch"], s["chunk"], s["start_s"], s["end_s"]] for s in chosen],
            hovertemplate=(f"{kind}<br>micro-batch %{{customdata[0]}}, chunk %{{customdata[1]}}"
                           "<br>%{customdata[2]:.4f} s – %{customdata[3]:.4f} s<extra></extra>"),
        ))
    fig.update_layout(
        title=f"One training step across {len(stages)} pipeline stage(s)",
        barmode="overlay",
        xaxis_title="time in the step (s)",
        yaxis={"categoryorder": "array", "categoryarray": [f"stage {s}" for s in reversed(stages)]},
        legend_title="span",
    )
    return fig


def step_breakdown_figure(result: dict[str, Any]) -> go.Figure:
    """Where a step's time goes: one stacked horizontal bar, seconds per part."""
    parts = result.get("step_breakdown_s") or {}
    fig = go.Figure()
    step_s = float(result.get("step_time_s") or sum(parts.values()) or 1.0)
    for key, value in parts.items():
        fig.add_trace(go.Bar(
            name=PART_LABELS.get(key, key),
            orientation="h",
            x=[value],
            y=["step"],
            marker_color=BREAKDOWN_COLOURS.get(key, "#999999"),
            hovertemplate=f"{PART_LABELS.get(key, key)}: %{{x:.3f}} s ({value / step_s:.1%})<extra></extra>",
        ))
    fig.update_layout(title=f"Step time {step_s:.3f} s", barmode="stack", xaxis_title="seconds", height=260)
    return fig
