"""Figures of the whole job: progress against wall time, and the time-to-train distribution.

Both take a Result's dict (``Result.to_dict()``): ``timeline`` (the median run's
segments with a phase: train, checkpoint, restart, repair_wait; events: failure,
checkpoint, restart), ``failures`` (Monte Carlo samples and the checkpoint plan)
and ``tokens_per_s``.

Progress is rebuilt from the timeline: tokens grow at the step's rate while the
job trains (not during checkpoint stalls); a failure rolls them back to the last
durable checkpoint, a whole number of checkpoint intervals into the block of
training it ends (for asynchronous checkpoints, one whose write had finished).
The rate is that of the full data-parallel job: a job that shrank after
failures (``cluster.allow_shrink``) is drawn at its full rate, and its last block
ends at the total.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from twin.figures.colours import FAILURE_COLOUR, NEUTRAL, PHASE_COLOURS, SERIES
from twin.figures.lazy import make_subplots
from twin.formatting import D3_NUMBER, fmt_number
from twin.units import SECONDS_PER_DAY, fmt_count, fmt_duration

# Above this many failures or checkpoints, ticks are aggregated into bins (a count per bin).
MAX_TICKS = 200
BINS = 100
TRAINING = ("train", "checkpoint")


@dataclass(frozen=True)
class Progress:
    """The median run's progress: tokens trained at each time (s), and when it failed or checkpointed."""
    times_s: list[float]
    tokens: list[float]
    failures_s: list[float]
    checkpoints_s: np.ndarray
    ideal_s: float
    total_tokens: float


def _blocks(segments: list[dict[str, Any]], interval_s: float) -> list[dict[str, Any]]:
    """Consecutive train and checkpoint segments merged into blocks of training between two disruptions,
    with the time trained (checkpoint stalls left out) and when each checkpoint began."""
    blocks: list[dict[str, Any]] = []
    previous_training = False
    for s in sorted(segments, key=lambda s: s["start_s"]):
        training = s["phase"] in TRAINING
        if training and not previous_training:
            blocks.append({"start_s": s["start_s"], "end_s": s["end_s"], "trained_s": 0.0, "checkpoints": []})
        if training:
            b = blocks[-1]
            b["end_s"] = s["end_s"]
            duration = s["end_s"] - s["start_s"]
            if s["phase"] == "checkpoint":
                b["checkpoints"].append(s["start_s"])
            elif s.get("checkpoints"):      # a long block recorded whole: checkpoint k begins after k intervals
                n = int(s["checkpoints"])
                stall = s.get("checkpoint_s", 0.0) / n
                b["checkpoints"].extend(s["start_s"] + k * interval_s + (k - 1) * stall for k in range(1, n + 1))
                b["trained_s"] += duration - s.get("checkpoint_s", 0.0)
            else:
                b["trained_s"] += duration
        previous_training = training
    return blocks


def progress(result: dict[str, Any]) -> Progress:
    """Tokens trained against wall time for the median run (see the module's docstring)."""
    timeline = result.get("timeline") or {}
    segments = timeline.get("segments") or []
    failures = [e["t_s"] for e in timeline.get("events") or [] if e["kind"] == "failure"]
    f = result.get("failures") or {}
    rate = float(result.get("tokens_per_s") or 0.0)
    total = float(result.get("tokens") or 0.0)
    interval_s = float(f.get("checkpoint_interval_s") or math.inf)
    lag_s = float(f.get("checkpoint_write_s") or 0.0) if f.get("checkpoint_asynchronous") else 0.0
    blocks = _blocks(segments, interval_s)
    times, tokens = [0.0], [0.0]
    durable = 0.0
    for i, b in enumerate(blocks):
        last = i == len(blocks) - 1
        reached = total if last else min(total, durable + b["trained_s"] * rate)
        times += [b["start_s"], b["end_s"]]
        tokens += [durable, reached]
        if not last:
            saved = math.floor(max(0.0, b["trained_s"] - lag_s) / interval_s) if math.isfinite(interval_s) else 0
            durable = min(reached, durable + saved * interval_s * rate)
            times.append(b["end_s"])
            tokens.append(durable)
    checkpoints = np.array([t for b in blocks for t in b["checkpoints"]], dtype=float)
    ideal = float(result.get("ideal_time_to_train_s") or (total / rate if rate else 0.0))
    return Progress(times, tokens, failures, checkpoints, ideal, total)


def _ticks(fig: go.Figure, row: int, name: str, times_s: np.ndarray, end_s: float, colour: str, symbol: str) -> None:
    """Events on their own row under the progress curve: one tick each, or a count per bin above MAX_TICKS."""
    days = np.asarray(times_s, dtype=float) / SECONDS_PER_DAY
    if len(days) <= MAX_TICKS:
        fig.add_trace(go.Scatter(x=days, y=np.zeros(len(days)), mode="markers", name=f"{name} ({len(days):,})",
                                 marker={"symbol": symbol, "color": colour, "size": 10,
                                         "line": {"width": 1.5, "color": colour}},
                                 hovertemplate=f"{name} at day %{{x:.2f}}<extra></extra>"), row=row, col=1)
        fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, range=[-1, 1], row=row, col=1)
    else:
        last = max(end_s / SECONDS_PER_DAY, float(days.max()))
        width = last / BINS
        counts, edges = np.histogram(days, bins=BINS, range=(0.0, last))
        fig.add_trace(go.Bar(x=(edges[:-1] + edges[1:]) / 2, y=counts, width=width, marker_color=colour,
                             name=f"{name}s per {fmt_duration(width * SECONDS_PER_DAY)} ({len(days):,} in all)",
                             hovertemplate=f"%{{y}} {name}s around day %{{x:.1f}}<extra></extra>"), row=row, col=1)
        fig.update_yaxes(rangemode="tozero", nticks=3, row=row, col=1)
    fig.update_yaxes(title_text=f"{name}s", row=row, col=1)


def job_progress_figure(result: dict[str, Any]) -> go.Figure:
    """Tokens trained against wall-clock days for the median run, with failure and checkpoint ticks below."""
    p = progress(result)
    end_s = max(p.times_s[-1], p.ideal_s) or 1.0
    rows = [("failure", np.array(p.failures_s), FAILURE_COLOUR, "x-thin"),
            ("checkpoint", p.checkpoints_s, PHASE_COLOURS["checkpoint"], "line-ns")]
    rows = [r for r in rows if len(r[1])]
    fig = make_subplots(rows=1 + len(rows), cols=1, shared_xaxes=True, vertical_spacing=0.05,
                        row_heights=[0.64] + [0.36 / max(1, len(rows))] * len(rows))
    days = [t / SECONDS_PER_DAY for t in p.times_s]
    fig.add_trace(go.Scatter(x=[0.0, p.ideal_s / SECONDS_PER_DAY], y=[0.0, p.total_tokens], mode="lines",
                             name="without failures", line={"color": NEUTRAL, "dash": "dot", "width": 1.5},
                             hovertemplate="without failures<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(x=days, y=p.tokens, mode="lines", name="tokens trained (median run)",
                             line={"color": PHASE_COLOURS["train"], "width": 2},
                             hovertemplate="day %{x:.2f}: %{y:.4s} tokens<extra></extra>"), row=1, col=1)
    for i, (name, times, colour, symbol) in enumerate(rows):
        _ticks(fig, i + 2, name, times, end_s, colour, symbol)
    title = (f"The run at the median time: {fmt_count(p.total_tokens)} tokens in {fmt_duration(p.times_s[-1])}, "
             f"{len(p.failures_s):,} failures in this run, {len(p.checkpoints_s):,} checkpoints")
    fig.update_layout(title=title, height=300 + 90 * len(rows), margin={"l": 70, "r": 20, "t": 50, "b": 10},
                      legend={"orientation": "h", "y": -0.12, "yanchor": "top", "x": 0}, bargap=0.1)
    fig.update_yaxes(title_text="tokens", tickformat=".2s", rangemode="tozero", row=1, col=1)
    fig.update_xaxes(range=[0, end_s / SECONDS_PER_DAY * 1.01])
    fig.update_xaxes(title_text="wall-clock time (days)", row=1 + len(rows), col=1)
    return fig


def _tick_step(span: float, ticks: int = 6) -> float:
    """A round tick step (1, 2 or 5 times a power of ten) giving about ``ticks`` ticks over ``span``, so that a
    narrow spread of long runs reads 100, 100.1, 100.2 rather than the bars' centres."""
    raw = max(span, 1e-9) / ticks
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def time_to_train_figure(result: dict[str, Any]) -> go.Figure:
    """Histogram of time to train over the Monte Carlo samples, its axis fitted to their spread;
    P10/P50/P90 and the failure-free time as lines named in the legend."""
    failures = result.get("failures") or {}
    values = (failures.get("samples_values") or {}).get("time_to_train_s") or [result.get("time_to_train_s") or 0.0]
    days = np.array(values, dtype=float) / SECONDS_PER_DAY
    low, high = float(days.min()), float(days.max())
    pad = 0.08 * (high - low) if high > low else 0.01 * max(high, 1e-9)
    bins = int(min(30, max(5, len(days) // 3)))
    counts, edges = np.histogram(days, bins=bins, range=(low - pad / 2, high + pad / 2))
    top = float(counts.max()) * 1.1 or 1.0
    fig = go.Figure(go.Bar(x=(edges[:-1] + edges[1:]) / 2, y=counts, width=edges[1] - edges[0],
                           name="simulated runs", marker_color=PHASE_COLOURS["train"], opacity=0.85,
                           hovertemplate="%{x:.2f} days: %{y} runs<extra></extra>"))
    lines = []
    spread = failures.get("time_to_train_s") or {}
    for i, q in enumerate(("p10", "p50", "p90")):
        if q in spread:
            lines.append((f"{q.upper()} {fmt_number(spread[q] / SECONDS_PER_DAY)} days", spread[q] / SECONDS_PER_DAY,
                          SERIES[(i + 1) % len(SERIES)], "dash"))
    ideal = result.get("ideal_time_to_train_s")
    note = ""
    if ideal:
        ideal_days = ideal / SECONDS_PER_DAY
        if low - pad <= ideal_days <= high + pad:
            lines.append((f"without failures {fmt_number(ideal_days)} days", ideal_days, NEUTRAL, "dot"))
        else:
            note = f"; without failures {fmt_number(ideal_days)} days (off the axis)"
    for name, x, colour, dash in lines:
        fig.add_trace(go.Scatter(x=[x, x], y=[0, top], mode="lines", name=name,
                                 line={"color": colour, "dash": dash, "width": 2}, hoverinfo="name"))
    fig.update_layout(title=f"Time to train over {len(values)} simulated run(s){note}", xaxis_title="days",
                      yaxis_title="runs", bargap=0.05, height=380,
                      xaxis_range=[low - pad, high + pad], yaxis_range=[0, top],
                      xaxis={"tick0": 0.0, "dtick": _tick_step(high - low + pad), "tickformat": D3_NUMBER},
                      legend={"orientation": "h", "y": -0.2, "yanchor": "top", "x": 0},
                      margin={"l": 60, "r": 20, "t": 50, "b": 10})
    return fig
