"""The records of serving scenarios: one deployment over the load (``ServingResult``) and the highest
rate it sustains within its SLO (``CapacityResult``), docs/results.md "Serving records" and "Capacity
records". Each record's keys are its dataclass fields, in order, plus those its ``Layout`` derives."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from twin.bands import (CAPACITY_KEYS, COST_AMOUNTS, SERVING_KEYS, TRIAL_KEYS, Calibration, band_record, with_band,
                        with_calibration)
from twin.power.api_prices import ApiComparison
from twin.power.pricing import cost_parts
from twin.power.serving import ServingPower
from twin.results.core import SCHEMA_VERSION, Layout, Result, finite, grouped, plain
from twin.serving.capacity import Capacity, Sizing, sizing, sustained
from twin.serving.deployment import ServingRun
from twin.serving.kv_cache import MemoryPlan
from twin.serving.specs import SLOSpec



@dataclass(frozen=True, kw_only=True)
class Compared(Result):
    """A serving record followed by the deployments it is compared with (``alternatives``, records of the
    same kind, after the record's own keys)."""
    alternatives: tuple[Compared, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        own = self.record() | {"alternatives": [a.banded(a.record()) for a in self.alternatives]}
        return finite(self.banded(own))


def _throughput(r: ServingResult) -> dict[str, Any]:
    run, mem = r.run, r.memory
    return {
        "requests_per_s": run.requests_per_s if run else None,
        "output_tokens_per_s": run.output_tokens_per_s if run else None,
        "tokens_per_s": run.tokens_per_s if run else None,
        "ttft_s": plain(run.ttft_s if run else None),
        "tpot_s": plain(run.tpot_s if run else None),
        "e2e_latency_s": plain(run.e2e_latency_s if run else None),
        "kv_cache_capacity_tokens": mem.kv_capacity_tokens,
        "memory_per_gpu_bytes": mem.total_bytes,
        "memory_capacity_bytes": mem.hbm_bytes,
    }


def serving_cost_record(pw: ServingPower | None) -> dict[str, Any] | None:
    """``cost_eur`` of a serving deployment: the site's cost of one million output tokens by part, and that
    cost split between input and output tokens (docs/results.md; power/serving.py)."""
    if pw is None or pw.cost is None:
        return None
    split = pw.per_million_tokens_eur()
    return cost_parts(pw.cost) | {"per": "one million output tokens", "input_share": pw.input_share,
                                  "input_per_output_token": pw.input_per_output_token,
                                  "per_million_input_tokens": split["input"],
                                  "per_million_output_tokens": split["output"]}


def api_record(comparisons: tuple[ApiComparison, ...]) -> list[dict[str, Any]]:
    """``api_comparison``: self-hosting against each hosted API of the model (catalog api_prices.yaml)."""
    return [{"api": c.api.name, "provider": c.api.provider, "date": c.api.date,
             "input_eur_per_million": c.api.input_eur_per_million,
             "output_eur_per_million": c.api.output_eur_per_million,
             "api_eur_per_million_output_tokens": c.api_eur_per_million_output,
             "self_hosted_eur_per_million_output_tokens": c.self_hosted_eur_per_million_output,
             "cheaper": c.cheaper, "break_even_rate_per_s": c.break_even_rate_per_s, "source": c.api.source}
            for c in comparisons]


def _per_million(r: ServingResult) -> dict[str, Any]:
    pw = r.power
    return {
        "energy_per_million_output_tokens_kwh": pw.facility_per_million_output_tokens_kwh if pw else None,
        "energy_per_million_output_tokens_it_kwh": pw.energy_per_million_output_tokens_kwh if pw else None,
        "cost_per_million_output_tokens_eur": pw.cost_eur() if pw else {},
        "carbon_per_million_output_tokens_kg": pw.carbon_kg() if pw else {},
        "cost_eur": serving_cost_record(pw),
        "avg_power_it_w": pw.avg_power_it_w if pw else None,
        "slo_met": bool(r.run.slo_met) if r.run else False,
        "saturated_requests_per_s": r.saturated_requests_per_s,
        "sustained": sustained(r.rate_per_s, r.saturated_requests_per_s),
        "schema_version": SCHEMA_VERSION,
    }


def _memory(r: ServingResult) -> dict[str, Any]:
    mem = r.memory
    return {
        "memory_breakdown_bytes": {
            "weights": mem.weights_bytes - mem.weights_grace_bytes, "reserve": mem.reserve_bytes,
            "kv_cache": mem.kv_hbm_tokens * mem.kv_bytes_per_token,
            "weights_grace": mem.weights_grace_bytes, "kv_cache_grace": mem.kv_host_tokens * mem.kv_bytes_per_token,
        },
        "kv_bytes_per_token": mem.kv_bytes_per_token,
    }


def _engine(r: ServingResult) -> dict[str, Any]:
    run = r.run
    return {"engine": None if run is None else {
        "iterations": run.engine.iterations, "clock_advances": run.engine.steps,
        "busy_fraction": run.busy_fraction, "makespan_s": run.engine.makespan_s,
        "preemptions": run.engine.preemptions, "max_running": run.engine.max_running,
        "kv_peak_tokens": run.engine.kv_peak_tokens,
    }}


def _power(r: ServingResult) -> dict[str, Any] | None:
    pw = r.power
    return None if pw is None else {
        "gpu_avg_w": pw.gpu_avg_w, "avg_power_it_w": pw.avg_power_it_w,
        "rental_per_million_output_tokens_eur": pw.rental_per_million_output_tokens_eur,
        "countries": plain(pw.countries),
    }


@dataclass(frozen=True, kw_only=True)
class ServingResult(Compared):
    """The answer for a serving scenario: one deployment over the load, and the alternatives it is compared with.

    ``run`` and ``power`` are None when the deployment cannot hold the load (``memory_fits`` False):
    the warnings say by how much and what would fit.
    """
    workload: ClassVar[str] = "serving"
    layout: ClassVar[Layout] = Layout(
        convert={"power": _power, "api_comparison": lambda r: api_record(r.api_comparison)},
        after={"label": _throughput, "gpus_used": _per_million, "memory": _memory, "run": _engine},
        omit=frozenset({"memory", "run", "alternatives", "calibration"}))
    label: str                       # the deployment in words
    memory_fits: bool
    gpus_total: int                  # every GPU of the cluster
    gpus_used: int                   # physical GPUs the replicas occupy
    slo: SLOSpec
    rate_per_s: float | None         # offered arrival rate, whole deployment (None: offline)
    # its throughput with the queue never empty (``capacity.saturated_rate_per_s``); None offline or when it
    # does not fit. An offered rate above it is not sustained.
    saturated_requests_per_s: float | None = None
    model: str = grouped("deployment")
    node: str = grouped("deployment")
    gpu: str = grouped("deployment")
    mig: str | None = grouped("deployment")
    precision: str = grouped("deployment")
    kv_cache: str = grouped("deployment")
    tensor: int = grouped("deployment")
    pipeline: int = grouped("deployment")
    replicas: int = grouped("deployment")
    devices_per_replica: int = grouped("deployment")  # GPUs, or MIG instances, of one replica
    instances_used: int = grouped("deployment")       # GPUs, or MIG instances, the replicas run on
    memory: MemoryPlan               # one GPU (or instance) of a replica
    memory_advice: list[str] = field(default_factory=list)
    run: ServingRun | None = None
    country: str
    pue: float
    power: ServingPower | None = None
    api_comparison: tuple[ApiComparison, ...] = ()   # at the offered rate (docs/results.md)
    calibration: Calibration | None = None     # error band and site profile (twin.bands), set by twin.api

    def banded(self, record: dict[str, Any]) -> dict[str, Any]:
        """``record`` with the error band's ``KEY_low``/``KEY_high`` beside each headline number."""
        return with_calibration(record, self.calibration, SERVING_KEYS)


def _capacity(r: CapacityResult) -> dict[str, Any]:
    cap = r.capacity
    per_replica = cap.per_replica_rate_per_s if cap else 0.0
    return {
        "per_replica_rate_per_s": per_replica,
        "per_gpu_rate_per_s": per_replica / r.gpus_per_replica,
        "rate_per_s": cap.rate_per_s if cap else 0.0,
        "offline_requests_per_s": cap.offline_requests_per_s if cap else 0.0,
        "slo_bound": cap.slo_bound if cap else False,
        "requests_per_trial": cap.requests_per_trial if cap else None,
        "converged": cap.converged if cap else None,
        "memory_fits": cap is not None,
        "cost_eur": serving_cost_record(r.power),
    }


def _sweep(r: CapacityResult) -> dict[str, Any]:
    runs = r.capacity.sweep if r.capacity else ()
    return {
        "target": plain(r.sizing) if r.sizing else None,
        "sweep": [{"rate_per_s": run.rate_per_s, "requests": run.requests, "requests_per_s": run.requests_per_s,
                   "output_tokens_per_s": run.output_tokens_per_s, "ttft_s": plain(run.ttft_s),
                   "tpot_s": plain(run.tpot_s), "slo_met": bool(run.slo_met)} for run in runs],
        "schema_version": SCHEMA_VERSION,
    }


@dataclass(frozen=True, kw_only=True)
class CapacityResult(Compared):
    """The highest rate a serving deployment sustains within its SLO, and what a target rate needs."""
    workload: ClassVar[str] = "serving"
    layout: ClassVar[Layout] = Layout(
        after={"capacity": _capacity, "instances_per_gpu": lambda r: {"gpus_per_replica": r.gpus_per_replica},
               "sizing": _sweep},
        convert={"api_comparison": lambda r: api_record(r.api_comparison)},
        omit=frozenset({"capacity", "sizing", "alternatives", "power", "calibration"}))
    label: str
    capacity: Capacity | None        # None when the deployment cannot hold the load (``memory_fits``)
    slo: SLOSpec
    replicas: int
    devices_per_replica: int         # GPUs, or MIG instances
    instances_per_gpu: int           # MIG instances of the profile on one GPU (1 without MIG)
    sizing: Sizing | None = None
    power: ServingPower | None = None                # at the capacity rate: its cost (``cost_eur``)
    api_comparison: tuple[ApiComparison, ...] = ()   # at the capacity rate, with break-even rates
    calibration: Calibration | None = None           # error band and site profile (twin.bands), set by twin.api

    @property
    def gpus_per_replica(self) -> float:
        return self.devices_per_replica / self.instances_per_gpu

    def banded(self, record: dict[str, Any]) -> dict[str, Any]:
        """``record`` with the serving band on its rates and costs (docs/calibrate.md, "Error bands"): the
        capacity and cost at capacity, each trial's throughput and latencies, the self-hosted price against
        each API, and the replicas a target rate needs at the band's two capacities."""
        if self.calibration is None:
            return record
        f = self.calibration.band.factor
        out = with_band(record, f, CAPACITY_KEYS + ("target",), {"cost_eur": COST_AMOUNTS})
        if self.sizing is not None and self.capacity is not None:
            out["target_low"], out["target_high"] = (plain(sizing(
                self.capacity.per_replica_rate_per_s * g, self.devices_per_replica, self.instances_per_gpu,
                self.sizing.target_rate_per_s)) for g in (f, 1.0 / f))
        out["sweep"] = [with_band(trial, f, TRIAL_KEYS) for trial in out["sweep"]]
        out["api_comparison"] = [with_band(a, f, ("self_hosted_eur_per_million_output_tokens",))
                                 for a in out["api_comparison"]]
        return out | band_record(self.calibration)


def serving_record(r: ServingResult) -> dict[str, Any]:
    """The JSON record of a serving result (docs/results.md, "Serving records")."""
    return r.record()


def capacity_record(r: CapacityResult) -> dict[str, Any]:
    """The JSON record of ``python -m twin capacity`` (docs/results.md, "Capacity records")."""
    return r.record()
