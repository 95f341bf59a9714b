"""Figures of a study (``python -m twin sweep``): sweep curves, the Pareto front, the best points.

Every function takes the study's rows (mappings of its table's columns: ``point``, the
varied keys, ``error``, ``pareto_front`` and the flat result fields) and returns plain
data or a ``plotly.graph_objects.Figure``. Known columns leave here in a readable unit
(days, GiB, ms) named in the label, energy and carbon in the unit their largest value reads best in (Wh to
TWh, g to t: the one formatter's rule); others as they are.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from twin.formatting import carbon_axis_kg, energy_axis_kwh
from twin.units import SECONDS_PER_DAY

# Column → (label with its unit, factor from the column's unit).
UNITS: dict[str, tuple[str, float]] = {
    "time_to_train_s": ("time to train [days]", 1 / SECONDS_PER_DAY),
    "ideal_time_to_train_s": ("ideal time to train [days]", 1 / SECONDS_PER_DAY),
    "step_time_s": ("step time [s]", 1.0),
    "site_total_cost_eur": ("cost at the site [EUR]", 1.0),
    "site_energy_cost_eur": ("energy cost at the site [EUR]", 1.0),
    "site_carbon_kg": ("carbon at the site [t CO2e]", 1e-3),        # unit by the values (ADAPTIVE)
    "energy_facility_kwh": ("facility energy [MWh]", 1e-3),
    "energy_it_kwh": ("IT energy [MWh]", 1e-3),
    "gpu_hours": ("GPU-hours [k GPU·h]", 1e-3),
    "peak_power_it_w": ("peak IT power [MW]", 1e-6),
    "avg_power_it_w": ("average IT power [MW]", 1e-6),
    "memory_per_gpu_bytes": ("memory per GPU [GiB]", 2.0**-30),
    "mfu": ("MFU [%]", 100.0),
    "goodput": ("goodput [%]", 100.0),
    "tokens_per_s": ("throughput [tokens/s]", 1.0),
    "ttft_s.p99": ("p99 time to first token [ms]", 1e3),
    "tpot_s.p99": ("p99 time per output token [ms]", 1e3),
    "output_tokens_per_s": ("output tokens/s", 1.0),
    "site_cost_per_million_output_tokens_eur": ("cost per M output tokens [EUR]", 1.0),
    "site_carbon_per_million_output_tokens_kg": ("carbon per M output tokens [kg CO2e]", 1.0),
}
# Columns a study page offers as metrics first, when the study has them.
PREFERRED = tuple(UNITS)
LINE_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")


# Columns whose unit follows their values: (label without its unit, the axis rule, what the unit counts).
ADAPTIVE = {"site_carbon_kg": ("carbon at the site", carbon_axis_kg, " CO2e"),
            "energy_facility_kwh": ("facility energy", energy_axis_kwh, ""),
            "energy_it_kwh": ("IT energy", energy_axis_kwh, "")}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _unit(column: str, rows: list[dict[str, Any]] = ()) -> tuple[str, float]:
    """(label with its unit, factor from the column's unit) for ``column`` over ``rows``."""
    if column in ADAPTIVE and rows:
        name, axis, counted = ADAPTIVE[column]
        largest = max((abs(r[column]) for r in rows if _number(r.get(column))), default=None)
        unit, per_unit = axis(largest)
        return f"{name} [{unit}{counted}]", 1.0 / per_unit
    return UNITS.get(column, (column, 1.0))


def label(column: str, rows: list[dict[str, Any]] = ()) -> str:
    return _unit(column, rows)[0]


def scaled(column: str, value: Any, rows: list[dict[str, Any]] = ()) -> Any:
    """A column's value in its label's unit (``rows``: the values its unit is chosen for)."""
    if not _number(value):
        return value
    return value * _unit(column, rows)[1]


def ok_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of points that ran (no error)."""
    return [r for r in rows if not r.get("error")]


def metrics(rows: list[dict[str, Any]], keys: list[str]) -> list[str]:
    """Numeric result columns a study can plot: the preferred ones it has first, then the others."""
    done = ok_rows(rows)
    numeric = [c for c in (done[0] if done else {}) if c not in keys and c != "point"
               and any(isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool) for r in done)]
    return [c for c in PREFERRED if c in numeric] + [c for c in numeric if c not in PREFERRED]


def varies_across(rows: list[dict[str, Any]], metric: str, x: str, line: str) -> bool:
    """True when ``metric`` differs between the lines of ``line`` at some value of ``x`` (the lines are not one)."""
    seen: dict[Any, set] = {}
    for r in ok_rows(rows):
        if r.get(metric) is not None:
            seen.setdefault(r.get(x), set()).add(round(float(r[metric]), 9))
    return any(len(values) > 1 for values in seen.values())


def default_metric(rows: list[dict[str, Any]], choices: list[str], x: str, line: str | None) -> str:
    """The first metric whose lines differ (time to train is the same in every country: five identical lines
    would say nothing), else the first metric."""
    if line:
        for metric in choices:
            if varies_across(rows, metric, x, line):
                return metric
    return choices[0]


def _order(value: Any) -> tuple:
    return (0, value, "") if isinstance(value, (int, float)) and not isinstance(value, bool) else (1, 0, str(value))


def sweep_figure(rows: list[dict[str, Any]], metric: str, x: str, line: str | None = None) -> go.Figure:
    """``metric`` against the varied key ``x``, one line per value of the key ``line`` (one line without)."""
    done = [r for r in ok_rows(rows) if r.get(metric) is not None]
    groups: dict[Any, list[dict[str, Any]]] = {}
    for r in done:
        groups.setdefault(r.get(line) if line else None, []).append(r)
    fig = go.Figure()
    for i, (value, members) in enumerate(sorted(groups.items(), key=lambda kv: _order(kv[0]))):
        members = sorted(members, key=lambda r: _order(r.get(x)))
        fig.add_trace(go.Scatter(
            x=[r.get(x) for r in members], y=[scaled(metric, r[metric], done) for r in members],
            mode="lines+markers", name=f"{line} = {value}" if line else label(metric, done),
            line={"color": LINE_COLOURS[i % len(LINE_COLOURS)]},
            hovertemplate=f"{x} = %{{x}}<br>{label(metric, done)} = %{{y:,.4~r}}<extra></extra>"))
    fig.update_layout(xaxis_title=x, yaxis_title=label(metric, done), legend_title=line or "", height=420,
                      margin={"t": 30, "b": 40})
    return fig


def _hover(row: dict[str, Any], keys: list[str], objectives: list[str], rows: list[dict[str, Any]]) -> str:
    parts = [f"point {row.get('point')}"] + [f"{k} = {row.get(k)}" for k in keys]
    parts += [f"{label(o, rows)} = {scaled(o, row[o], rows):,.4g}" for o in objectives if row.get(o) is not None]
    return "<br>".join(parts)


def pareto_figure(rows: list[dict[str, Any]], keys: list[str], objectives: list[str]) -> go.Figure:
    """Every point on the first two objectives, the Pareto front's points marked and joined; the third
    objective (when there is one) colours the front."""
    x, y = objectives[0], objectives[1]
    done = [r for r in ok_rows(rows) if r.get(x) is not None and r.get(y) is not None]
    front = sorted((r for r in done if r.get("pareto_front")), key=lambda r: r[x])
    others = [r for r in done if not r.get("pareto_front")]
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=[scaled(x, r[x], done) for r in others], y=[scaled(y, r[y], done) for r in others], mode="markers",
        name="beaten by another point", marker={"color": "#BBBBBB", "size": 6},
        text=[_hover(r, keys, objectives, done) for r in others], hovertemplate="%{text}<extra></extra>"))
    colour = objectives[2] if len(objectives) > 2 else None
    marker: dict[str, Any] = {"size": 11, "line": {"width": 1, "color": "#333333"}}
    if colour and all(r.get(colour) is not None for r in front):
        marker |= {"color": [scaled(colour, r[colour], done) for r in front], "colorscale": "Viridis",
                   "showscale": True, "colorbar": {"title": label(colour, done)}}
    else:
        marker["color"] = "#D55E00"
    fig.add_trace(go.Scatter(
        x=[scaled(x, r[x], done) for r in front], y=[scaled(y, r[y], done) for r in front], mode="lines+markers",
        name="Pareto front", marker=marker, line={"color": "#D55E00", "dash": "dot"},
        text=[_hover(r, keys, objectives, done) for r in front], hovertemplate="%{text}<extra></extra>"))
    fig.update_layout(xaxis_title=label(x, done), yaxis_title=label(y, done), height=460, margin={"t": 30, "b": 40},
                      legend={"orientation": "h", "y": -0.2})
    return fig


def best_rows(rows: list[dict[str, Any]], metric: str, keys: list[str], columns: list[str],
              top: int = 10) -> list[dict[str, Any]]:
    """The ``top`` points lowest in ``metric``, with their varied keys and ``columns`` in readable units."""
    done = sorted((r for r in ok_rows(rows) if r.get(metric) is not None), key=lambda r: r[metric])[:top]
    shown = [metric] + [c for c in columns if c != metric]
    return [{"point": r.get("point"), **{k: r.get(k) for k in keys},
             **{label(c, done): scaled(c, r.get(c), done) for c in shown if c in r},
             "on the front": bool(r.get("pareto_front"))}
            for r in done]
