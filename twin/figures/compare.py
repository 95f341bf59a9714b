"""What-ifs side by side: flat rows (CSV), tables with metrics as rows and variants as
columns, and bar charts grouped by the dimensions varied.

A what-if is a ``Column``: its name, its result dict (``Result.to_dict()``) or the
one-line error that stopped it, and the values of the dimensions that made it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import plotly.graph_objects as go

from twin.figures.colours import SERIES
from twin.figures.lazy import make_subplots
from twin.figures.overview import (GIB, fmt_change, infeasibility, relative_change, site_value,
                                   time_to_train_percentiles, co2e)
from twin.formatting import D3_NUMBER, carbon_axis_kg, energy_axis_kwh, fmt_energy_kwh, fmt_money_eur
from twin.units import SECONDS_PER_DAY, fmt_amount, fmt_bytes, fmt_duration


@dataclass(frozen=True)
class Column:
    name: str                                  # "baseline", "A", or the dimension values "bf16 · FR"
    result: dict[str, Any] | None
    error: str | None = None
    dims: dict[str, str] = field(default_factory=dict)   # dimension → value ("precision" → "bf16")
    note: str = ""                             # what it changes, in words


@dataclass(frozen=True)
class Measure:
    """One number compared across what-ifs: how to read it from a result and how to write it."""
    label: str
    value: Callable[[dict[str, Any]], float | None]
    text: Callable[[float], str]
    lower_is_better: bool = True


def _pct(value: float) -> str:
    return f"{100 * value:.1f} %"


MEASURES = (
    Measure("time to train (P50)", lambda r: time_to_train_percentiles(r)["p50"], fmt_duration),
    Measure("time to train (P90)", lambda r: time_to_train_percentiles(r)["p90"], fmt_duration),
    Measure("GPU-hours", lambda r: r.get("gpu_hours"), lambda v: fmt_amount(v, "GPU·h")),
    Measure("energy (facility)", lambda r: r.get("energy_facility_kwh"), fmt_energy_kwh),
    Measure("carbon at site", lambda r: site_value(r, "carbon_kg"), co2e),
    Measure("energy cost at site", lambda r: site_value(r, "energy_cost_eur"), fmt_money_eur),
    Measure("MFU", lambda r: r.get("mfu"), _pct, lower_is_better=False),
    Measure("step time", lambda r: r.get("step_time_s"), fmt_duration),
    Measure("memory per GPU", lambda r: r.get("memory_per_gpu_bytes"), fmt_bytes),
)
# The numbers drawn as bars: (measure label, factor to the axis unit, axis unit); energy and carbon take the
# unit that suits their largest bar (``bar_scales``).
BARS = (("time to train (P50)", 1 / SECONDS_PER_DAY, "days"), ("GPU-hours", 1.0, "GPU·h"),
        ("energy (facility)", 1.0, "kWh"), ("carbon at site", 1.0, "kg CO2e"),
        ("energy cost at site", 1.0, "EUR"), ("MFU", 100.0, "%"))


def bar_scales(results: list[dict[str, Any]]) -> list[tuple[str, float, str]]:
    """``BARS`` with energy in Wh, kWh, MWh or GWh and carbon in g, kg or t, as the largest bar reads best."""
    energy = max((r.get("energy_facility_kwh") or 0.0 for r in results), default=0.0)
    carbon = max((site_value(r, "carbon_kg") or 0.0 for r in results), default=0.0)
    (e_unit, kwh), (c_unit, kg) = energy_axis_kwh(energy), carbon_axis_kg(carbon)
    scaled = {"energy (facility)": (1 / kwh, e_unit), "carbon at site": (1 / kg, f"{c_unit} CO2e")}
    return [(label, *scaled.get(label, (factor, unit))) for label, factor, unit in BARS]


def status(column: Column) -> str:
    """'runs', or why not: the error, or what makes the plan infeasible."""
    if column.result is None:
        return f"error: {column.error or 'no result'}"
    problem = infeasibility(column.result)
    return f"{problem.title}: {problem.detail}" if problem else "runs"


def _cell(measure: Measure, result: dict[str, Any] | None, reference: dict[str, Any] | None) -> str:
    value = measure.value(result) if result is not None else None
    if value is None:
        return "n/a"
    text = measure.text(value)
    if reference is not None:
        change = fmt_change(relative_change(value, measure.value(reference)))
        text += f" ({change})" if change else " (same)"
    return text


def _country_measures(columns: list[Column]) -> list[Measure]:
    """Carbon, energy cost (and energy + rental, where priced) in every country any column reports."""
    codes: list[str] = []
    rental = False
    for c in columns:
        if c.result is not None:
            codes += [code for code in (c.result.get("carbon_kg") or {}) if code not in codes]
            rental = rental or c.result.get("rental_cost_eur") is not None
    out = [Measure(f"carbon in {code}", lambda r, k=code: (r.get("carbon_kg") or {}).get(k), co2e)
           for code in codes]
    out += [Measure(f"energy cost in {code}", lambda r, k=code: (r.get("energy_cost_eur") or {}).get(k),
                    fmt_money_eur) for code in codes]
    if rental:
        out += [Measure(f"energy + GPU rental in {code}", lambda r, k=code: (r.get("total_cost_eur") or {}).get(k),
                        fmt_money_eur) for code in codes]
    return out


def side_by_side(columns: list[Column], deltas: bool = False, per_country: bool = False) -> list[dict[str, str]]:
    """Metrics as rows, what-ifs as columns, every cell with its unit.

    With ``deltas`` the first column is the reference and every other cell carries its
    change against it; with ``per_country`` carbon and cost come for every country.
    """
    measures = list(MEASURES)
    if per_country:
        measures = [m for m in measures if not m.label.endswith("at site")] + _country_measures(columns)
    reference = columns[0].result if deltas and columns else None
    rows = []
    if any(c.note for c in columns):
        rows.append({"metric": "what-if"} | {c.name: c.note or "as written" for c in columns})
    rows.append({"metric": "status"} | {c.name: status(c) for c in columns})
    if any(c.result is not None and c.result.get("country") for c in columns):
        rows.append({"metric": "site"} | {c.name: (c.result or {}).get("country", "") for c in columns})
    for m in measures:
        rows.append({"metric": m.label} | {
            c.name: _cell(m, c.result, reference if i > 0 else None) for i, c in enumerate(columns)})
    return rows


def summary_row(column: Column) -> dict[str, Any]:
    """One what-if as a flat row of numbers (CSV): units in the column names."""
    row: dict[str, Any] = {"what-if": column.name} | column.dims
    r = column.result
    if r is None:
        return row | {"error": column.error or "no result"}
    ttt = time_to_train_percentiles(r)
    carbon, cost = site_value(r, "carbon_kg"), site_value(r, "energy_cost_eur")
    problem = infeasibility(r)
    return row | {
        "site": r.get("country", ""),
        "GPUs used": r.get("gpus_used"),
        "plan": (r.get("plan") or {}).get("description", ""),
        "step time [s]": round(r.get("step_time_s", 0.0), 3),
        "MFU [%]": round(100 * r.get("mfu", 0.0), 1),
        "time to train P50 [days]": round(ttt["p50"] / SECONDS_PER_DAY, 2),
        "time to train P90 [days]": round(ttt["p90"] / SECONDS_PER_DAY, 2),
        "GPU-hours [GPU·h]": round(r.get("gpu_hours", 0.0)),
        "energy (facility) [MWh]": round(r.get("energy_facility_kwh", 0.0) / 1e3, 1),
        "carbon at site [t CO2e]": round(carbon / 1e3, 1) if carbon is not None else None,
        "energy cost at site [EUR]": round(cost) if cost is not None else None,
        "memory per GPU [GiB]": round(r.get("memory_per_gpu_bytes", 0.0) / GIB, 1),
        "fits memory": bool(r.get("memory_fits")),
        "status": "runs" if problem is None else problem.title,
        "error": "",
    }


def rows_to_csv(rows: list[dict[str, Any]]) -> str:
    """Rows as CSV text (header from the union of the rows' keys, in order)."""
    header: list[str] = []
    for row in rows:
        header += [k for k in row if k not in header]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def compare_figure(columns: list[Column]) -> go.Figure:
    """One small bar chart per compared number. Bars sit at the first dimension's values; a second
    dimension groups them side by side, coloured and named in the legend. Plans that do not run
    are left out; plans that do not fit memory are hatched."""
    ok = [c for c in columns if c.result is not None]
    dims = list(ok[0].dims) if ok and ok[0].dims else []
    by_label = {m.label: m for m in MEASURES}
    bars = bar_scales([c.result for c in ok])
    titles = [f"{label} [{unit}]" for label, _, unit in bars]
    fig = make_subplots(rows=2, cols=3, subplot_titles=titles, vertical_spacing=0.2, horizontal_spacing=0.07)
    x_of = (lambda c: c.dims[dims[0]]) if dims else (lambda c: c.name)
    groups = list(dict.fromkeys(c.dims[dims[1]] for c in ok)) if len(dims) > 1 else [None]
    for g_index, group in enumerate(groups):
        chosen = [c for c in ok if group is None or c.dims[dims[1]] == group]
        for i, (label, factor, unit) in enumerate(bars):
            measure = by_label[label]
            values = [measure.value(c.result) for c in chosen]
            ys = [v * factor if v is not None else None for v in values]
            colours = ([SERIES[g_index % len(SERIES)]] * len(chosen) if group is not None
                       else [SERIES[j % len(SERIES)] for j in range(len(chosen))])
            fig.add_bar(x=[x_of(c) for c in chosen], y=ys, row=i // 3 + 1, col=i % 3 + 1,
                        name=f"{dims[1]} {group}" if group is not None else label,
                        legendgroup=str(group), showlegend=group is not None and i == 0,
                        marker={"color": colours,
                                "pattern": {"shape": ["/" if infeasibility(c.result) else "" for c in chosen]}},
                        texttemplate=f"%{{y:{D3_NUMBER}}}", textposition="auto",
                        hovertemplate=f"%{{x}}: %{{y:{D3_NUMBER}}} {unit}<extra>{'' if group is None else group}</extra>")
    fig.update_layout(height=600, barmode="group", margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      legend={"orientation": "h", "y": -0.08, "yanchor": "top", "x": 0},
                      uniformtext={"minsize": 9, "mode": "hide"})
    fig.update_yaxes(tickformat=D3_NUMBER)
    if dims:
        fig.update_xaxes(title_text=dims[0], type="category")
    return fig
