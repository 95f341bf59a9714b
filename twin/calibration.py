"""The named efficiency parameters of the step-time model, read from catalog/data/calibration.yaml.

The named fractions (``Efficiency``) and two measured tables: the maximum
achievable matmul throughput of each GPU as a fraction of its datasheet peak
(``achievable_matmul_fraction``), and the speed of older fused-attention kernels
(``flash2_peak_fraction``, ``flash1_speed_vs_flash2``, ``triton_speed_vs_flash2``).
``benchmarks/calibrate.py`` refits the fractions on the calibration cases of
``twin/validation/cases``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from twin import catalog
from twin.errors import ScenarioError

# Precisions whose tensor-core rate equals bf16's, for the achievable-matmul table.
_SAME_AS_BF16 = {"bf16", "fp16", "tf32", "fp32"}


@dataclass(frozen=True)
class Efficiency:
    matmul: float       # fraction of the achievable matmul throughput that a step's GEMMs sustain
    memory: float       # fraction of HBM bandwidth sustained by memory-bound kernels
    attention: float    # fraction of the achievable matmul throughput that fused attention sustains
    nvlink: float       # fraction of NVLink line rate reached as NCCL bus bandwidth
    network: float      # fraction of NIC line rate reached as NCCL bus bandwidth
    nvls: float         # fraction of NVLink line rate that NVLink SHARP all-reduce reaches (algorithm bandwidth)
    pcie: float         # fraction of PCIe line rate reached as NCCL bus bandwidth between GPUs without NVLink
    overlap_compute: float  # fraction of its speed that compute keeps while a data-parallel collective runs beside it

    @property
    def overlap_slowdown(self) -> float:
        """σ: extra seconds of compute per second it shares the GPU with a collective (1 / overlap_compute - 1)."""
        return 1.0 / self.overlap_compute - 1.0

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def calibrated(cls, overrides: dict[str, float] | None = None) -> "Efficiency":
        """Calibrated defaults, with a scenario's overrides applied."""
        rows = catalog.table("calibration")
        values = {name: float(rows[name]["value"]) for name in cls.names()}
        for key, value in (overrides or {}).items():
            if key not in values:
                raise ScenarioError(f"efficiency.{key}", f"unknown efficiency; allowed: {', '.join(values)}")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
                raise ScenarioError(f"efficiency.{key}", f"{value!r} is not a fraction in (0, 1]")
            values[key] = float(value)
        return cls(**values)


@dataclass(frozen=True)
class ServingEfficiency:
    """The serving engine's calibrated fractions (catalog calibration.yaml ``serving``)."""
    matmul: float               # of the achievable matmul throughput, inference GEMMs
    memory: float               # of HBM bandwidth, decode's weight and KV streaming
    iteration_overhead_s: float  # runtime time per engine iteration outside the GPU's kernels

    @classmethod
    def calibrated(cls, overrides: dict[str, float] | None = None) -> "ServingEfficiency":
        rows = catalog.table("calibration")["serving"]
        values = {f.name: float(rows[f.name]["value"]) for f in fields(cls)}
        values.update(overrides or {})
        return cls(**values)

    def operator_efficiency(self, training: Efficiency) -> Efficiency:
        """The operator model's efficiency with the serving fractions in place of the training ones."""
        return replace(training, matmul=self.matmul, memory=self.memory)


def achievable_matmul_fraction(gpu: str, precision: str) -> float:
    """Measured maximum achievable matmul FLOP/s of ``gpu`` ÷ its dense peak at ``precision``."""
    table = catalog.table("calibration")["achievable_matmul"]
    row = table.get("bf16" if precision in _SAME_AS_BF16 else precision, {})
    return float(row.get(gpu, table["default"]))


def flash2_peak_fraction(gpu: str) -> float | None:
    """Fraction of ``gpu``'s dense peak that FlashAttention-2 reaches where it is not the native kernel, else None."""
    value = catalog.table("calibration")["flash2_peak_fraction"].get(gpu)
    return None if value is None else float(value)


def flash1_speed_vs_flash2() -> float:
    """Speed of FlashAttention-1 (CUDA) ÷ FlashAttention-2's on the same GPU."""
    return float(catalog.table("calibration")["flash1_speed_vs_flash2"]["value"])


def triton_speed_vs_flash2() -> tuple[float, float]:
    """(forward, backward) speed of FlashAttention in Triton ÷ FlashAttention-2's on the same GPU."""
    row = catalog.table("calibration")["triton_speed_vs_flash2"]
    return float(row["forward"]), float(row["backward"])
