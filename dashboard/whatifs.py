"""The what-ifs set side by side: the pinned ones, and the Compare page's grid of dimensions.

Both the Compare page and the Markdown export build them here, from the sidebar's
``Context`` and the Compare page's widget values; ``evaluate`` is the simulation
to use (cached on the page, plain in the export's background thread).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dashboard import core
from dashboard.panel import Context
from twin.figures.compare import Column

Evaluate = Callable[[dict[str, Any]], dict[str, Any]]
SLOTS = ("first", "second")
DEFAULT_DIMENSIONS = {"first": "node type", "second": "country"}
CROSS_KEY = "compare.cross"


def dimension_key(slot: str) -> str:
    return "compare.dimension" if slot == "first" else f"compare.dimension.{slot}"


def values_key(slot: str, name: str) -> str:
    return f"compare.values.{name}" if slot == "first" else f"compare.values.{slot}.{name}"


def dimension_names(slot: str, first: str | None = None) -> list[str]:
    """The dimensions offered in a slot (the second never repeats the first)."""
    return [n for n in core.DIMENSIONS if slot == "first" or n != first]


def axis(state: Mapping[str, Any], knobs: core.Knobs, slot: str, first: str | None = None) -> tuple[str, list[str]]:
    """A slot's dimension and values as the Compare page's widgets hold them, or their defaults."""
    names = dimension_names(slot, first)
    default = DEFAULT_DIMENSIONS[slot] if DEFAULT_DIMENSIONS[slot] in names else names[0]
    name = state.get(dimension_key(slot), default)
    name = name if name in names else default
    defaults = core.default_values(name, knobs)
    held = state.get(values_key(slot, name))
    if core.DIMENSIONS[name].kind == "choice":
        options = core.dimension_options(name)
        values = list(held) if held is not None else [v for v in defaults if v in options]
    else:
        values = core.split_values(held if held is not None else ", ".join(defaults))
    return name, values


def axes(state: Mapping[str, Any], knobs: core.Knobs) -> list[tuple[str, list[str]]]:
    """The dimensions the Compare page crosses, with their values."""
    first = axis(state, knobs, "first")
    if not state.get(CROSS_KEY):
        return [first]
    return [first, axis(state, knobs, "second", first[0])]


def compare_columns(ctx: Context, grid: list[tuple[str, list[str]]], evaluate: Evaluate) -> list[Column]:
    """Every combination of the grid's values, simulated (a bad value raises ScenarioError)."""
    assert ctx.raw is not None
    out = []
    for dims, raw in core.cross_variants(ctx.raw, grid):
        answer = evaluate(ctx.simulated(raw, refined=False))
        out.append(Column(core.variant_name(dims), answer["result"], answer["error"], dims))
    return out


def pinned_columns(ctx: Context, evaluate: Evaluate) -> list[Column]:
    """The scenario as written, then each pinned what-if (A, B, ...), simulated alike."""
    assert ctx.base_raw is not None
    base = evaluate(ctx.simulated(ctx.base_raw, refined=False))
    out = [Column("as written", base["result"], base["error"], note="the scenario's own values")]
    for i, pin in enumerate(ctx.pins):
        answer = evaluate(ctx.simulated(ctx.pinned_raw(pin), refined=False))
        out.append(Column(core.pin_label(i), answer["result"], answer["error"], note=core.describe_pin(pin)))
    return out
