"""Figures of the whole job: its timeline of phases and events, and the time-to-train distribution.

Both take a Result's dict (``Result.to_dict()``): ``timeline`` (segments with a
phase: train, checkpoint, restart, repair_wait; events: failure, checkpoint,
restart) and ``failures`` (Monte Carlo samples).
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from twin.units import SECONDS_PER_DAY, SECONDS_PER_HOUR, SECONDS_PER_MINUTE

PHASE_COLOURS = {"train": "#0072B2", "checkpoint": "#E69F00", "restart": "#D55E00", "repair_wait": "#CC79A7"}


def job_timeline_figure(result: dict[str, Any]) -> go.Figure:
    """The median run's phases as bars (days) with its failures marked."""
    timeline = result.get("timeline") or {}
    segments = timeline.get("segments") or []
    events = timeline.get("events") or []
    fig = go.Figure()
    for phase, colour in PHASE_COLOURS.items():
        chosen = [s for s in segments if s["phase"] == phase]
        if not chosen:
            continue
        fig.add_trace(go.Bar(
            name=phase.replace("_", " "),
            orientation="h",
            base=[s["start_s"] / SECONDS_PER_DAY for s in chosen],
            x=[(s["end_s"] - s["start_s"]) / SECONDS_PER_DAY for s in chosen],
            y=["job"] * len(chosen),
            marker_color=colour,
            customdata=[[s["start_s"] / SECONDS_PER_HOUR, (s["end_s"] - s["start_s"]) / SECONDS_PER_MINUTE]
                        for s in chosen],
            hovertemplate=f"{phase}<br>from hour %{{customdata[0]:.2f}}, %{{customdata[1]:.1f}} min<extra></extra>",
        ))
    failures = [e for e in events if e["kind"] == "failure"]
    if failures:
        fig.add_trace(go.Scatter(
            name="failure",
            mode="markers",
            x=[e["t_s"] / SECONDS_PER_DAY for e in failures],
            y=["failures"] * len(failures),
            marker={"symbol": "x", "color": "#000000", "size": 7},
            text=[e["component"] for e in failures],
            hovertemplate="%{text} at day %{x:.2f}<extra></extra>",
        ))
    fig.update_layout(title=f"Job timeline (median run): {len(failures)} failures", barmode="overlay",
                      xaxis_title="wall-clock time (days)", legend_title="phase", height=320)
    return fig


def time_to_train_figure(result: dict[str, Any]) -> go.Figure:
    """Histogram of time to train over the Monte Carlo samples, with P10/P50/P90 and the failure-free time."""
    failures = result.get("failures") or {}
    values = (failures.get("samples_values") or {}).get("time_to_train_s") or [result.get("time_to_train_s") or 0.0]
    days = [v / SECONDS_PER_DAY for v in values]
    fig = go.Figure(go.Histogram(x=days, name="samples", marker_color="#0072B2",
                                 hovertemplate="%{x:.2f} days: %{y} runs<extra></extra>"))
    ideal = result.get("ideal_time_to_train_s")
    if ideal:
        fig.add_vline(x=ideal / SECONDS_PER_DAY, line_dash="dot", annotation_text="no failures")
    spread = failures.get("time_to_train_s") or {}
    for q in ("p10", "p50", "p90"):
        if q in spread:
            fig.add_vline(x=spread[q] / SECONDS_PER_DAY, line_dash="dash", annotation_text=q.upper())
    fig.update_layout(title=f"Time to train over {len(values)} simulated run(s)", xaxis_title="days",
                      yaxis_title="runs", showlegend=False)
    return fig
