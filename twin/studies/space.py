"""The points of a study: ``--vary KEY=V1,V2,…`` on dotted scenario keys, crossed (grid) or paired (zip).

Grammar of one ``--vary``:

    KEY=ITEM[,ITEM…]       KEY: a dotted scenario key (cluster.nodes, site.country, efficiency.matmul)
    ITEM: VALUE            64, 1.2, FR, dgx-h100, 700W, true, [DE, US]
        | A..B[:STEP]      32..256:32 → 32, 64, …, 256; the step defaults to 1; A, B and STEP may
                           share a unit suffix (400W..700W:100W → 400W, 500W, 600W, 700W)

A value is an integer, a decimal number, ``true``/``false``/``null``, a YAML flow list or
mapping (``[DE, US]``), or else the text as written (``NO`` stays Norway). Commas inside
brackets do not split items. Every key is checked against the scenario schema before any
point runs; each point is then validated as a whole scenario when it runs.

``grid`` (the default) takes every combination, the last key varying fastest; ``zip``
pairs the i-th values of every key, which must then have equally many.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Any, Iterator, Literal

import yaml

from twin.api import check_key
from twin.errors import ScenarioError
from twin.units import MAX_INT_DIGITS

Mode = Literal["grid", "zip"]
# A range may not expand to more values than this: a slip (a missing colon) would otherwise
# allocate without bound before the first point runs.
MAX_RANGE_VALUES = 1_000_000
# A study holds at most this many points (docs/studies.md, "Limits").
MAX_POINTS = 10_000_000

_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_RANGE = re.compile(rf"^\s*({_NUMBER})\s*([A-Za-z%/ ]*?)\s*\.\.\s*({_NUMBER})\s*([A-Za-z%/ ]*?)"
                    rf"(?:\s*:\s*({_NUMBER})\s*([A-Za-z%/ ]*?))?\s*$")
_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(rf"^{_NUMBER}$")


@dataclass(frozen=True)
class Axis:
    """One ``--vary``: a key and its values, as written on the command line."""
    key: str
    values: tuple[Any, ...]
    text: str                          # the --vary argument, for study.yaml


@dataclass(frozen=True)
class Point:
    """One scenario of a study: the index in the study and the value of every varied key."""
    index: int
    values: dict[str, Any]


@dataclass(frozen=True)
class Space:
    axes: tuple[Axis, ...]
    mode: Mode = "grid"

    @property
    def keys(self) -> list[str]:
        return [a.key for a in self.axes]

    def __len__(self) -> int:
        if not self.axes:
            return 1
        if self.mode == "zip":
            return len(self.axes[0].values)
        return math.prod(len(a.values) for a in self.axes)

    def points(self) -> Iterator[Point]:
        """Every point in study order (grid: the last key varies fastest)."""
        columns = [a.values for a in self.axes]
        combos = zip(*columns) if self.mode == "zip" else itertools.product(*columns)
        for index, combo in enumerate(combos):
            yield Point(index, dict(zip(self.keys, combo)))


def parse_value(text: str) -> Any:
    """One value as written: a number, true/false/null, a YAML flow list or mapping, else the text."""
    item = text.strip()
    if _INT.match(item):
        return _integer(item, "--vary")
    if _FLOAT.match(item):
        return float(item)
    if item in ("true", "false"):
        return item == "true"
    if item == "null":
        return None
    if item[:1] in "[{":
        try:
            return yaml.safe_load(item)
        except (yaml.YAMLError, ValueError, RecursionError):     # ValueError: an integer of thousands of digits
            raise ScenarioError("--vary", f"'{_shown(item)}' is not a YAML list or mapping of short values") from None
    return item


def _shown(text: str, chars: int = 60) -> str:
    """A value as quoted in a message: cut to ``chars`` characters."""
    return text if len(text) <= chars else text[:chars - 1] + "…"


def _integer(text: str, field: str) -> int:
    """A whole number as written, refused in one line past ``MAX_INT_DIGITS`` digits."""
    if len(text.lstrip("+-")) > MAX_INT_DIGITS:
        raise ScenarioError(field, f"'{text[:20]}…' has {len(text.lstrip('+-')):,} digits; at most {MAX_INT_DIGITS}")
    return int(text)


def _range_count(text: str, field: str, a: float, b: float, s: float, integral: bool) -> int:
    """How many values ``A..B:STEP`` holds; refused when a bound is not finite or the count is too large."""
    if not all(math.isfinite(float(x)) for x in (a, b, s)):
        raise ScenarioError(field, f"range '{_shown(text)}': every bound and the step must be finite numbers")
    if s <= 0:
        raise ScenarioError(field, f"range '{_shown(text)}': the step must be above 0")
    if b < a:
        raise ScenarioError(field, f"range '{_shown(text)}': the end is below the start")
    span = (b - a) // s if integral else (b - a) / s
    if not math.isfinite(float(span)) or span + 1 > MAX_RANGE_VALUES:
        raise ScenarioError(field, f"range '{_shown(text)}' holds more than {MAX_RANGE_VALUES:,} values; "
                            f"at most {MAX_RANGE_VALUES:,}")
    return int(span) + 1 if integral else int(math.floor(span + 1e-9)) + 1


def expand_range(text: str, field: str = "--vary", limit: int = MAX_RANGE_VALUES) -> list[Any] | None:
    """The values of ``A..B[:STEP]`` (with an optional shared unit), or None when ``text`` is no range."""
    match = _RANGE.match(text)
    if not match:
        return None
    start, unit_a, stop, unit_b, step, unit_s = match.groups()
    units = {u.strip() for u in (unit_a, unit_b, unit_s) if u and u.strip()}
    if len(units) > 1:
        raise ScenarioError(field, f"range '{_shown(text)}' mixes units {', '.join(sorted(units))}; write one unit")
    unit = units.pop() if units else ""
    step = step or "1"
    integral = all(_INT.match(x) for x in (start, stop, step))
    a, b, s = (_integer(x, field) if integral else float(x) for x in (start, stop, step))
    count = _range_count(text, field, a, b, s, integral)
    if count > limit:                            # the study would pass MAX_POINTS: refused before allocating
        raise ScenarioError(field, f"range '{_shown(text)}' holds {count:,} values; with the other keys the study would "
                            f"hold more than {MAX_POINTS:,} points")
    decimals = max(_decimals(start), _decimals(step))
    values = [a + i * s if integral else round(a + i * s, decimals) for i in range(count)]
    if not unit:
        return values
    return [f"{v}{unit}" if integral else f"{v:.{decimals}f}".rstrip("0").rstrip(".") + unit for v in values]


def _decimals(number: str) -> int:
    mantissa, _, exponent = number.lower().partition("e")
    places = len(mantissa.partition(".")[2])
    return max(0, places - int(exponent or 0))


def split_items(text: str) -> list[str]:
    """Split on commas outside brackets."""
    items, depth, current = [], 0, ""
    for ch in text:
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += ch
    items.append(current)
    return items


def parse_axis(text: str, field: str = "--vary", limit: int = MAX_RANGE_VALUES) -> Axis:
    """``KEY=ITEM[,ITEM…]`` → an axis; the key is checked against the scenario schema."""
    key, sep, rest = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ScenarioError(field, f"'{_shown(text)}' is not allowed: write KEY=V1,V2,… (e.g. cluster.nodes=64,128)")
    check_key(key, field)
    values: list[Any] = []
    for item in split_items(rest):
        if not item.strip():
            raise ScenarioError(field, f"'{_shown(text)}' has an empty value; write KEY=V1,V2,…")
        expanded = expand_range(item, field, max(1, limit - len(values)))
        values.extend(expanded if expanded is not None else [parse_value(item)])
    return Axis(key, tuple(values), text)


def space(varies: list[str], mode: Mode = "grid", field: str = "--vary") -> Space:
    """The study of the ``--vary`` arguments; a key varied twice, or zipped lists of unequal lengths, are errors."""
    axes: tuple[Axis, ...] = ()
    points = 1
    for text in varies:                          # refused as soon as the grid passes the limit: bounded memory
        axes += (parse_axis(text, field, MAX_RANGE_VALUES if mode == "zip" else max(1, MAX_POINTS // points)),)
        points = len(axes[-1].values) if mode == "zip" else points * len(axes[-1].values)
        if points > MAX_POINTS:
            raise ScenarioError(field, f"the study holds more than {MAX_POINTS:,} points "
                                f"({' x '.join(f'{len(a.values):,}' for a in axes)}); at most {MAX_POINTS:,}")
    seen: set[str] = set()
    for a in axes:
        if a.key in seen:
            raise ScenarioError(field, f"{a.key} is varied twice; give all its values in one --vary")
        seen.add(a.key)
    if mode == "zip" and len({len(a.values) for a in axes}) > 1:
        counts = ", ".join(f"{a.key} {len(a.values)}" for a in axes)
        raise ScenarioError("--zip", f"pairs the i-th values of every key, so each needs as many values: {counts}")
    return Space(axes, mode)
