"""Figures of one training step: the pipeline Gantt chart and the step breakdown.

Both take a Result's dict (``Result.to_dict()``): ``step_timeline`` (spans of
every stage: forward, backward, send, dp_comm, overheads, optimizer) and
``step_breakdown_s``. Each step part has one colour on both charts
(``twin.figures.colours``).
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from twin.engine.step import PART_LABELS
from twin.figures.colours import LEGEND_BELOW, PART_COLOURS, SPAN_PARTS, span_colour
from twin.formatting import fmt_duration_s

SPAN_LABELS = {"forward": "forward pass (GPU compute)", "backward": "backward pass (GPU compute)",
               "send": PART_LABELS["pp_comm"], "dp_comm": PART_LABELS["dp_comm"],
               "overheads": PART_LABELS["overheads"], "optimizer": PART_LABELS["optimizer"]}
# Smallest label size: a micro-batch number that would be drawn smaller is left out (plotly hides it).
MIN_LABEL_PX = 9
ROW_PX = 26                     # height of one pipeline stage's row
# Bars one stage's row may hold and still be labelled: a 1,280-pixel window gives the chart about 1,100 pixels, so
# past 200 bars a row's bars average under 6 pixels, too narrow for a number at MIN_LABEL_PX. Plotly would hide
# every such label, after measuring each (seconds in the browser for the 16K scenario's 4,238 bars).
MAX_LABELLED_BARS_PER_ROW = 200


def step_gantt_figure(result: dict[str, Any]) -> go.Figure:
    """One bar per span on a row per pipeline stage (stage 0 on top); time in seconds.

    Micro-batch numbers are drawn inside the bars wide enough to hold them, where a row holds few enough bars
    for any to be (``MAX_LABELLED_BARS_PER_ROW``); a bar's hover names its micro-batch either way.
    """
    spans = result.get("step_timeline") or []
    fig = go.Figure()
    stages = sorted({s["stage"] for s in spans})
    labelled = len(spans) <= MAX_LABELLED_BARS_PER_ROW * max(1, len(stages))
    for kind in SPAN_PARTS:
        chosen = [s for s in spans if s["kind"] == kind]
        if not chosen:
            continue
        fig.add_trace(go.Bar(
            name=SPAN_LABELS[kind],
            orientation="h",
            base=[s["start_s"] for s in chosen],
            x=[s["end_s"] - s["start_s"] for s in chosen],
            y=[f"stage {s['stage']}" for s in chosen],
            marker_color=span_colour(kind),
            marker_line_width=0.5,
            marker_line_color="white",
            text=[str(s["microbatch"]) if s["microbatch"] >= 0 else "" for s in chosen] if labelled else None,
            textposition="inside",
            insidetextanchor="middle",
            textfont={"size": 11},
            customdata=[[s["microbatch"], s["chunk"], s["start_s"], s["end_s"]] for s in chosen],
            hovertemplate=(f"{kind}<br>micro-batch %{{customdata[0]}}, chunk %{{customdata[1]}}"
                           "<br>%{customdata[2]:.4f} s – %{customdata[3]:.4f} s<extra></extra>"),
        ))
    fig.update_layout(
        title=f"One training step across {len(stages)} pipeline stage(s); "
              + ("numbers are micro-batches" if labelled else "hover a bar for its micro-batch"),
        barmode="overlay",
        xaxis_title="time in the step (s)",
        yaxis={"categoryorder": "array", "categoryarray": [f"stage {s}" for s in reversed(stages)]},
        uniformtext={"minsize": MIN_LABEL_PX, "mode": "hide"},
        height=190 + ROW_PX * max(1, len(stages)),
        legend=LEGEND_BELOW,
        margin={"l": 70, "r": 20, "t": 50, "b": 100},
    )
    return fig


def step_parts(result: dict[str, Any]) -> list[tuple[str, str, float]]:
    """(part key, label, seconds) of the step's parts that take time, in the engine's order."""
    return [(key, PART_LABELS.get(key, key), float(value))
            for key, value in (result.get("step_breakdown_s") or {}).items() if value > 0]


def step_parts_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The step breakdown as table rows: part, seconds, share of the step."""
    step_s = float(result.get("step_time_s") or 1.0)
    return [{"part": label, "time": fmt_duration_s(value), "share of step [%]": round(100 * value / step_s, 1)}
            for _, label, value in step_parts(result)]


def step_breakdown_figure(result: dict[str, Any]) -> go.Figure:
    """Where a step's time goes: one stacked horizontal bar, seconds per part, every part in the legend."""
    parts = step_parts(result)
    fig = go.Figure()
    step_s = float(result.get("step_time_s") or sum(v for _, _, v in parts) or 1.0)
    for key, label, value in parts:
        share = f"{value / step_s:.0%}" if value / step_s >= 0.005 else "<1%"
        fig.add_trace(go.Bar(
            name=f"{label} ({share})",
            orientation="h",
            x=[value],
            y=["step"],
            marker_color=PART_COLOURS.get(key, "#999999"),
            text=[share],
            textposition="inside",
            insidetextanchor="middle",
            hovertemplate=f"{label}: %{{x:.3f}} s ({value / step_s:.1%})<extra></extra>",
        ))
    fig.update_layout(title=f"Step time {fmt_duration_s(step_s)}", barmode="stack", xaxis_title="seconds",
                      uniformtext={"minsize": MIN_LABEL_PX, "mode": "hide"}, height=320,
                      legend=LEGEND_BELOW | {"traceorder": "normal"},
                      margin={"l": 50, "r": 20, "t": 50, "b": 130})
    return fig
