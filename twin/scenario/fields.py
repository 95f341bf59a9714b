"""Typed fields of the scenario: every number parsed once, finite, and within a documented limit.

A number may be written as a YAML number or as a string holding one (``"1.2"``),
on every key alike; quantities may carry a unit (``400 Gb/s``, ``25 kW``, ``2T``)
and are converted to SI floats here, once. NaN, ±inf and values outside a key's
limits are refused with the limit and its reason (docs/scenario.md, "Limits").
"""


import math
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

from twin.errors import ScenarioError
from twin.units import parse_quantity

# Values quoted in error messages are cut to this many characters.
MAX_SHOWN_CHARS = 80


def shown(value: Any) -> str:
    """A value as an error message quotes it: its repr, cut to ``MAX_SHOWN_CHARS``."""
    text = repr(value)
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS - 1] + "…"


class Strict(BaseModel):
    """A scenario section: unknown keys are errors; once validated, nothing changes."""
    model_config = ConfigDict(extra="forbid", frozen=True)


def _plain_number(value: Any) -> float:
    """A number written as a YAML number or as a string holding one."""
    if isinstance(value, bool):
        raise ValueError(f"{shown(value)} is not a number")
    if isinstance(value, (int, float)):
        return float(value) if isinstance(value, float) or abs(value) < 2**53 else float("inf")
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise ValueError(f"{shown(value)} is not a number")


def _limit(text: str, dimension: str | None) -> float:
    return parse_quantity(text, dimension, "") if dimension else float(text)


def number(dimension: str | None = None, *, ge: str | None = None, gt: str | None = None,
           le: str | None = None, why: str = "", integer: bool = False):
    """A pydantic type for a number (optionally with a unit of ``dimension``) within limits.

    ``ge``/``gt``/``le`` are written as a user would write them (``"1 Gb/s"``) and parsed
    with the same parser as the value, so the message quotes them as written. ``why``
    says where the limit comes from.
    """
    low = _limit(ge or gt, dimension) if (ge or gt) else None
    high = _limit(le, dimension) if le else None
    if gt and le:
        allowed = f"above {gt}, up to {le}"
    elif gt:
        allowed = f"above {gt}"
    elif ge and le:
        allowed = f"{ge} to {le}"
    elif ge:
        allowed = f"at least {ge}"
    else:
        allowed = f"up to {le}"
    reason = f" ({why})" if why else ""

    def parse(value: Any) -> float | int:
        if dimension is None:
            x = _plain_number(value)
        else:
            if isinstance(value, str) and _is_plain_number(value):
                value = float(value)
            try:
                x = parse_quantity(value, dimension, "")
            except ScenarioError as exc:
                raise ValueError(str(exc)) from None
        if math.isnan(x) or math.isinf(x):
            raise ValueError(f"{shown(value)} is not allowed: not a finite number; allowed {allowed}{reason}")
        if integer and x != int(x):
            raise ValueError(f"{shown(value)} is not allowed: not a whole number; allowed {allowed}{reason}")
        if (low is not None and (x < low or (gt and x == low))) or (high is not None and x > high):
            raise ValueError(f"{shown(value)} is not allowed: allowed {allowed}{reason}")
        return int(x) if integer else x

    return Annotated[int if integer else float, BeforeValidator(parse)]


def _is_plain_number(text: str) -> bool:
    try:
        float(text.strip())
    except ValueError:
        return False
    return True


# Shared kinds of field ------------------------------------------------------------

def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise ValueError(f"{shown(value)} is not allowed: write true or false")


Flag = Annotated[bool, BeforeValidator(_flag)]


def name_text(max_chars: int = 200):
    """A free-text name, at most ``max_chars`` characters."""

    def parse(value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError(f"{shown(value)} is not allowed: write a text")
        if len(value) > max_chars:
            raise ValueError(f"{shown(value)} is not allowed: at most {max_chars} characters")
        return value

    return Annotated[str, BeforeValidator(parse)]


def price_parser(parser, ceiling: float, unit: str, example: str):
    """A validator of an amount with a currency per ``unit`` (``parser`` from ``twin.units``), 0 to ``ceiling``."""
    def parse(value: Any) -> tuple[float, str]:
        if isinstance(value, bool) or not isinstance(value, str):
            raise ValueError(f"{shown(value)} is not allowed: write an amount with a currency, e.g. '{example}'")
        try:
            amount, currency = parser(value, "")
        except ScenarioError as exc:
            raise ValueError(str(exc)) from None
        if not 0 <= amount <= ceiling:        # also refuses NaN
            raise ValueError(f"{shown(value)} is not allowed: allowed 0 to {ceiling:g} {currency}{unit}")
        return amount, currency

    return parse


def price(parser, ceiling: float, unit: str, example: str):
    """A scenario field holding (amount, currency) per ``unit``, checked by ``price_parser``."""
    return Annotated[tuple[float, str], BeforeValidator(price_parser(parser, ceiling, unit, example))]
