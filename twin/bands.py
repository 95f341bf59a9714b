"""Error bands: every headline number with an interval from measured errors, not a single figure.

The band of an answer is a factor ``f ≥ 1``: the truth is expected between ``value / f`` and
``value · f``. It comes from one of two places (docs/calibrate.md, "Error bands"):

- the twin's errors on its own validation cases nearest to the answer (catalog ``error_bands.yaml``,
  written by ``benchmarks/error_bands.py``): for a serving answer, the rows of the same engine on the same
  GPU at the same tensor-parallel size when there are at least ``MIN_CASES`` of them; then the cases of the
  same software stack (or serving engine) on the same GPU, else the same stack, else the same GPU, else
  all; ``f = exp(q)`` with ``q`` the ``QUANTILE`` of their ``|ln(predicted / published)|``;
- a site profile's residuals when the run uses one: ``f = 1 + band_fraction``.

Time, energy, cost and carbon scale with the same step time, so one factor bands them all
(``with_calibration``; capacity records and a study's rows the same way, ``with_band``, ``banded_row``). A
record of many jobs on one cluster is banded by its runs at the edges of its templates' bands instead:
each number from its lowest to its highest value over them (``with_edges``; the runs: twin.api).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from twin import catalog

# The share of the nearest cases whose error the band must cover.
QUANTILE = 0.9
# Fewer nearest cases than this and the search widens (serving: engine, GPU and tensor-parallel size →) stack and
# GPU → stack → GPU → all.
MIN_CASES = 3
# Headline numbers of each record kind that carry ``_low`` and ``_high`` keys beside them.
TRAINING_KEYS = ("step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "model_tflops_per_gpu",
                 "hardware_tflops_per_gpu", "mfu", "hfu", "time_to_train_s", "gpu_hours", "energy_it_kwh",
                 "energy_facility_kwh", "carbon_kg", "energy_cost_eur", "total_cost_eur", "rental_cost_eur", "cost_eur")
SERVING_KEYS = ("requests_per_s", "output_tokens_per_s", "tokens_per_s", "ttft_s", "tpot_s", "e2e_latency_s",
                "energy_per_million_output_tokens_kwh", "energy_per_million_output_tokens_it_kwh",
                "cost_per_million_output_tokens_eur", "carbon_per_million_output_tokens_kg", "cost_eur")
# A capacity record's headline rates, its trials' measured numbers, and the amounts of a cost by part
# (``cost_eur``: EUR per million output tokens, each inversely proportional to the throughput).
CAPACITY_KEYS = ("per_replica_rate_per_s", "per_gpu_rate_per_s", "rate_per_s", "offline_requests_per_s", "cost_eur")
TRIAL_KEYS = ("requests_per_s", "output_tokens_per_s", "ttft_s", "tpot_s")
COST_AMOUNTS = ("gpu", "maintenance", "space", "electricity", "total", "per_million_input_tokens",
                "per_million_output_tokens")
# Headline numbers of an operations record (many jobs on one cluster), banded by playing the cluster again
# at each edge of its templates' bands; a serving job's steady state, banded by its serving band.
OPERATIONS_KEYS = ("makespan_s", "jobs_finished", "jobs_timed_out", "jobs_unfinished", "utilisation", "wait_s",
                   "turnaround_s", "slowdown", "step_slowdown", "step_slowdown_spanning", "power", "energy",
                   "tenants", "cost_eur")
SERVICE_KEYS = ("requests_per_s", "output_tokens_per_s", "ttft_p99_s", "tpot_p99_s")
# What a plan search's plan and a fit's option show of a training run, banded as a training record
# (``cost_parts_eur``: the site's cost by part, its EUR amounts).
PLAN_KEYS = ("step_time_s", "time_to_train_s", "tokens_per_s", "mfu", "gpu_hours", "energy_facility_kwh", "carbon_kg",
             "cost_eur", "rental_cost_eur", "cost_parts_eur")
FIT_KEYS = ("step_time_s", "tokens_per_s", "mfu", "time_to_train_s", "gpu_hours", "energy_it_kwh",
            "energy_facility_kwh", "carbon_kg", "energy_cost_eur", "total_cost_eur", "cost_parts_eur")


@dataclass(frozen=True)
class Band:
    """The interval of an answer: the truth within value / factor … value · factor."""
    factor: float
    basis: str                     # validation | site profile
    detail: str                    # which cases, or which profile
    cases: int = 0


@dataclass(frozen=True)
class Calibration:
    """What a result was calibrated with: its band, and the site profile when one was used."""
    band: Band
    profile_name: str | None = None
    profile_path: str | None = None
    profile_sha256: str | None = None


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (linear between order statistics)."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    pos = q * (len(ordered) - 1)
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def nearest_band(kind: str, gpu: str, system: str, exclude: str | None = None, tensor: int | None = None) -> Band:
    """The band from the validation cases of ``kind`` (training | serving) nearest to ``gpu`` and
    ``system`` (the training stack or serving engine), and for a serving answer to its tensor-parallel size
    ``tensor`` (the serving rows name theirs); ``exclude`` leaves one case out (to test the band)."""
    field = "stack" if kind == "training" else "engine"
    rows = [r for r in catalog.table("error_bands")[kind] if r["id"] != exclude]
    same_tp = ((f"{field} {system} on {gpu} at TP {tensor}",
                lambda r: r[field] == system and r["gpu"] == gpu and r.get("tensor") == tensor),) if tensor else ()
    tiers = same_tp + ((f"{field} {system} on {gpu}", lambda r: r[field] == system and r["gpu"] == gpu),
             (f"{field} {system}", lambda r: r[field] == system),
             (f"GPU {gpu}", lambda r: r["gpu"] == gpu),
             (f"every {kind} case", lambda r: True))
    for label, keep in tiers:
        chosen = [r for r in rows if keep(r)]
        if len(chosen) >= MIN_CASES:
            q = quantile([abs(math.log1p(r["error"])) for r in chosen], QUANTILE)
            return Band(math.exp(q), "validation", f"{len(chosen)} validation cases ({label})", len(chosen))
    raise ValueError(f"fewer than {MIN_CASES} {kind} rows in error_bands.yaml")


def profile_band(fraction: float, name: str) -> Band:
    """The band of a run priced with a site profile: its fits' residuals."""
    return Band(1.0 + fraction, "site profile", f"residuals of site profile '{name}'")


def _scaled(value: Any, factor: float, only: tuple[str, ...] | None = None) -> Any:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return value * factor if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _scaled(v, factor) for k, v in value.items() if only is None or k in only}
    return None


def with_band(record: dict[str, Any], factor: float, keys: tuple[str, ...],
              only: dict[str, tuple[str, ...]] | None = None) -> dict[str, Any]:
    """``record`` with ``KEY_low = KEY / factor`` and ``KEY_high = KEY · factor`` right after each key of
    ``keys`` (objects key by key; ``only`` names the keys of an object that are amounts, the rest left
    out of its band); no existing key changes."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        out[key] = value
        if key in keys:
            part = (only or {}).get(key)
            out[f"{key}_low"] = _scaled(value, 1.0 / factor, part)
            out[f"{key}_high"] = _scaled(value, factor, part)
    return out


def band_record(calibration: Calibration) -> dict[str, Any]:
    """The ``band`` and ``profile`` keys of a record: where its band comes from, the site profile used."""
    band = calibration.band
    return {"band": {"factor": band.factor, "basis": band.basis, "detail": band.detail, "cases": band.cases,
                     "quantile": QUANTILE if band.basis == "validation" else None},
            "profile": None if calibration.profile_name is None else {
                "name": calibration.profile_name, "path": calibration.profile_path,
                "sha256": calibration.profile_sha256}}


def banded_row(row: dict[str, Any], calibration: Calibration | None, keys: tuple[str, ...]) -> dict[str, Any]:
    """A study's row (a plan, a fit option) with ``KEY_low``/``KEY_high`` beside each key of ``keys`` and
    its ``band``; the row as it is without a calibration."""
    if calibration is None:
        return row
    return (with_band(row, calibration.band.factor, keys, {"cost_parts_eur": COST_AMOUNTS})
            | {"band": band_record(calibration)["band"]})


def with_calibration(record: dict[str, Any], calibration: Calibration | None, keys: tuple[str, ...]) -> dict[str, Any]:
    """``record`` with ``KEY_low`` and ``KEY_high`` after each headline key, and ``band`` and ``profile``
    keys; no existing key changes."""
    if calibration is None:
        return record
    return with_band(record, calibration.band.factor, keys, {"cost_eur": COST_AMOUNTS}) | band_record(calibration)


@dataclass(frozen=True)
class Edges:
    """The band of a record of many jobs: each template's band, and how the cluster was played at its edges."""
    templates: dict[str, Calibration]    # job template → its band (training stack or serving engine, or profile)
    method: str                          # how the edges were played, in words


def spread(values: list[Any], pick: Any) -> Any:
    """``pick`` (min or max) over the same number in several records; objects key by key, the first
    record's keys; texts, lists and booleans have no band (None)."""
    first = values[0]
    if isinstance(first, bool) or first is None:
        return None
    if isinstance(first, (int, float)):
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
        return pick(numbers) if math.isfinite(first) else None
    if isinstance(first, dict):
        return {k: spread([v.get(k) if isinstance(v, dict) else None for v in values], pick) for k in first}
    return None


def with_edges(record: dict[str, Any], edges: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, Any]:
    """``record`` with ``KEY_low`` and ``KEY_high`` after each key of ``keys``: the lowest and highest value
    of ``KEY`` over the record and the ``edges`` (the same run played at its band's edges)."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        out[key] = value
        if key in keys:
            values = [value, *(e.get(key) for e in edges)]
            out[f"{key}_low"], out[f"{key}_high"] = spread(values, min), spread(values, max)
    return out


def edges_record(edges: Edges) -> dict[str, Any]:
    """The ``band`` and ``profile`` keys of a record of many jobs: the widest template band (``factor``),
    each template's, and how they were propagated."""
    bands = {name: band_record(c)["band"] for name, c in edges.templates.items()}
    widest = max(edges.templates.values(), key=lambda c: c.band.factor)
    profile = band_record(widest)["profile"]
    return {"band": band_record(widest)["band"] | {"method": edges.method, "templates": bands},
            "profile": profile}


def band_line(record: dict[str, Any]) -> str:
    """The band of a record in words ("" without one): its range and where it comes from."""
    band = record.get("band")
    if not isinstance(band, dict):
        return ""
    factor = band["factor"]
    if band.get("templates"):
        return (f"error bands: {band['method']}; the widest template band is {1 / factor - 1:+.0%} to "
                f"{factor - 1:+.0%} ({band['detail']})")
    return (f"error band {1 / factor - 1:+.0%} to {factor - 1:+.0%} on every headline number "
            f"({band['detail']}" + (f", {band['quantile']:.0%} of their errors)" if band.get("quantile") else ")"))
