"""The formatting every report shares: aligned tables and amounts with their units, as planners read them."""

from __future__ import annotations

from typing import Any

from twin.text import table  # noqa: F401  (the reports' tables, shared with the catalog listing)
from twin.units import fmt_duration

# The fine-tuning methods in words.
METHOD_NAMES = {"full": "full fine-tuning", "lora": "LoRA", "qlora": "QLoRA"}


def cell(value: Any) -> str:
    """A value of a study's table as text: '-' for none, floats in their shortest form."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def ms(seconds: float | None) -> str:
    """A latency in the unit a reader expects (ms below a second); n/a when there is none."""
    return "n/a" if seconds is None else fmt_duration(seconds)


def triple(p: dict[str, float] | None) -> str:
    """P50 / P90 / P99 latencies; n/a when there are none."""
    return "n/a" if not p else " / ".join(ms(p[q]) for q in ("p50", "p90", "p99"))


def rate(rate_per_s: float | None) -> str:
    """An arrival rate in requests/s; None is the offline load."""
    return "offline (every request queued at t = 0)" if rate_per_s is None else f"{rate_per_s:,.3g} requests/s"


def slo(targets: dict[str, float | None]) -> str:
    """A serving SLO's targets in words ('none' when it sets none)."""
    parts = [f"{name} ≤ {ms(targets[key])}" for name, key in (("p99 TTFT", "ttft_p99_s"), ("p99 TPOT", "tpot_p99_s"))
             if targets[key] is not None]
    return ", ".join(parts) if parts else "none"


def duration(seconds: float) -> str:
    """A duration, with no wait written as 0 s."""
    return "0 s" if seconds == 0 else fmt_duration(seconds)


def spread(p: dict[str, Any], fmt=duration) -> str:
    """P50 / P90 / P99 of a percentile record; n/a when it counts nothing."""
    if not p or not p.get("count"):
        return "n/a"
    return " / ".join(fmt(p[q]) for q in ("p50", "p90", "p99"))


def times(value: float) -> str:
    """A ratio as '1.25x'."""
    return f"{value:.2f}x"
