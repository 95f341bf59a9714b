"""The result record: what a run of the twin answers, and its JSON form.

The top-level keys are a user-facing contract (docs/results.md); values are SI
(seconds, bytes, watts) except where the key names another unit (kWh, kg, EUR,
TFLOP/s).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

SCHEMA_VERSION = 1


@dataclass
class Result:
    scenario: str
    gpus_total: int
    gpus_used: int
    step_time_s: float
    tokens_per_s: float
    model_tflops_per_gpu: float
    hardware_tflops_per_gpu: float
    mfu: float
    memory_per_gpu_bytes: float
    memory_capacity_bytes: float
    memory_fits: bool
    ideal_time_to_train_s: float
    time_to_train_s: float
    gpu_hours: float
    interruptions: float
    goodput: float
    energy_it_kwh: float
    energy_facility_kwh: float
    avg_power_it_w: float
    peak_power_it_w: float
    carbon_kg: dict[str, float]
    energy_cost_eur: dict[str, float | None]
    # -- beyond the contract's minimum ------------------------------------------------
    schema_version: int = SCHEMA_VERSION
    country: str = ""
    tokens: float = 0.0
    tokens_per_step: int = 0
    tokens_per_s_per_gpu: float = 0.0
    hfu: float = 0.0
    plan: dict[str, Any] = field(default_factory=dict)
    step_breakdown_s: dict[str, float] = field(default_factory=dict)
    bottleneck: str = ""
    memory_breakdown_bytes: dict[str, float] = field(default_factory=dict)
    memory_advice: list[str] = field(default_factory=list)
    carbon_intensity_g_per_kwh: dict[str, float] = field(default_factory=dict)
    electricity_price_eur_per_kwh: dict[str, float | None] = field(default_factory=dict)
    pue: float = 1.0
    power: dict[str, Any] = field(default_factory=dict)
    embodied_carbon_kg: float | None = None            # amortised hardware emissions (site.embodied)
    total_cost_eur: dict[str, float | None] = field(default_factory=dict)   # energy + GPU rental, per country
    rental_cost_eur: float | None = None               # reserved GPU-hours x site.gpu_hour_price
    failures: dict[str, Any] = field(default_factory=dict)
    timeline: dict[str, Any] = field(default_factory=dict)
    fabric: dict[str, Any] = field(default_factory=dict)
    step_timeline: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return _finite(asdict(self))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)


def _finite(value: Any) -> Any:
    """JSON has no inf/nan: they become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
