"""The named efficiency parameters of the step-time model, read from catalog/data/calibration.yaml."""

from __future__ import annotations

from dataclasses import dataclass, fields

from twin import catalog
from twin.errors import ScenarioError


@dataclass(frozen=True)
class Efficiency:
    matmul: float       # fraction of dense tensor peak sustained by large GEMMs
    memory: float       # fraction of HBM bandwidth sustained by memory-bound kernels
    attention: float    # fraction of dense tensor peak sustained by fused attention
    nvlink: float       # fraction of NVLink line rate reached as NCCL bus bandwidth
    network: float      # fraction of NIC line rate reached as NCCL bus bandwidth

    @classmethod
    def calibrated(cls, overrides: dict[str, float] | None = None) -> "Efficiency":
        """Calibrated defaults, with a scenario's overrides applied."""
        values = {name: float(row["value"]) for name, row in catalog.table("calibration").items()}
        for key, value in (overrides or {}).items():
            if key not in values:
                raise ScenarioError(f"efficiency.{key}", f"unknown efficiency; allowed: {', '.join(values)}")
            if not 0 < value <= 1:
                raise ScenarioError(f"efficiency.{key}", f"{value} is not a fraction in (0, 1]")
            values[key] = float(value)
        return cls(**{f.name: values[f.name] for f in fields(cls)})
