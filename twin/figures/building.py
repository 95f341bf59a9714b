"""Data and the building: the data path of a step, storage use over the run, PUE by hour.

Each takes a Result's dict (``Result.to_dict()``) and reads its ``storage`` and ``building``
records (docs/results.md, docs/storage.md, docs/building.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from twin.figures.colours import LIMIT_LINE, PART_COLOURS
from twin.formatting import fmt_duration_s
from twin.units import SECONDS_PER_HOUR

TB = 1e12
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _feed_parts(result: dict[str, Any]) -> list[tuple[str, float]]:
    """The loader's parts of one step and the GPUs' step without waiting, then the wait (seconds)."""
    feed = (result.get("storage") or {}).get("feed") or {}
    if not feed:
        return []
    return [("read from " + feed["tier"], feed["read_s"]), ("metadata (file opens)", feed["metadata_s"]),
            ("CPU decode and augmentation", feed["decode_s"]), ("GPU step without waiting", feed["step_s"]),
            ("GPUs wait for data", feed["wait_s"])]


def data_path_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The loader's parts of one step against the GPUs' step, as table rows (durations as people read them)."""
    return [{"part": part, "time": fmt_duration_s(seconds)} for part, seconds in _feed_parts(result)]


def data_path_figure(result: dict[str, Any]) -> go.Figure:
    """Bars: what the loader needs per step (read, metadata, decode) against the GPUs' step."""
    parts = _feed_parts(result)[:4]
    labels = [part for part, _ in parts]
    values = [seconds for _, seconds in parts]
    colours = [PART_COLOURS["data"]] * 3 + [PART_COLOURS["compute"]]
    fig = go.Figure(go.Bar(x=values, y=labels, orientation="h", marker_color=colours,
                           hovertemplate="%{y}: %{x:.3g} s<extra></extra>"))
    fig.update_layout(title=(result.get("storage") or {}).get("verdict", ""), xaxis_title="seconds per step",
                      height=280, margin={"l": 220, "r": 20, "t": 60, "b": 40}, title_font_size=12)
    return fig


def storage_use_figure(result: dict[str, Any]) -> go.Figure:
    """File-system use after each checkpoint over the run (hours), against its capacity."""
    storage = result.get("storage") or {}
    use = storage.get("use") or {}
    used = np.array(use.get("used_bytes") or [], dtype=float) / TB
    hours = np.arange(1, len(used) + 1) * (storage.get("checkpoint_interval_s") or 0.0) / SECONDS_PER_HOUR
    fig = go.Figure(go.Scatter(x=hours.tolist(), y=used.tolist(), mode="lines+markers",
                               name="dataset + checkpoints",
                               line={"color": PART_COLOURS["optimizer"]},
                               hovertemplate="%{x:.3g} h: %{y:.4g} TB<extra></extra>"))
    if use.get("capacity_bytes"):
        fig.add_hline(y=use["capacity_bytes"] / TB, line={"color": LIMIT_LINE, "dash": "dash"},
                      annotation_text="capacity")
    fig.update_layout(xaxis_title="hours of training", yaxis_title="TB on the file system", height=320,
                      margin={"l": 60, "r": 20, "t": 30, "b": 40})
    return fig


def pue_by_hour_figure(result: dict[str, Any]) -> go.Figure:
    """PUE of every hour of the year (a heat map: hour of day by day of year) from the building record."""
    b = result.get("building") or {}
    hourly = np.array(b.get("hourly_pue") or [], dtype=float)
    days = hourly.reshape(-1, 24).T if hourly.size % 24 == 0 and hourly.size else np.zeros((24, 1))
    fig = go.Figure(go.Heatmap(z=days.tolist(), x=list(range(1, days.shape[1] + 1)), y=list(range(24)),
                               colorscale="Viridis",
                               colorbar={"title": "PUE"},
                               hovertemplate="day %{x}, %{y} h: PUE %{z:.3f}<extra></extra>"))
    fig.update_layout(title=f"{b.get('design', '')} at {b.get('country', '')}: yearly PUE {b.get('pue', 0):.3f}",
                      xaxis_title="day of the year", yaxis_title="hour of the day", height=320,
                      margin={"l": 60, "r": 20, "t": 50, "b": 40}, title_font_size=12)
    return fig
