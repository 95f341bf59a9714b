"""What a validation case is compared on: one number from a TrainingResult or a collective.

Each metric names its unit and the display scale. ``throughput`` marks the
training-speed figures that the accuracy targets apply to (docs/validation.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from twin.results import TrainingResult
from twin.units import SECONDS_PER_DAY


@dataclass(frozen=True)
class Metric:
    kind: str                                   # run (a scenario's TrainingResult) | collective (a bus bandwidth)
    unit: str                                   # the unit of ``published`` in case files
    throughput: bool
    extract: Callable[[TrainingResult], float] | None = None
    description: str = ""


def _interruptions_per_day(r: TrainingResult) -> float:
    days = r.time_to_train_s / SECONDS_PER_DAY
    return r.interruptions / days if days > 0 else 0.0


METRICS: dict[str, Metric] = {
    "hardware_tflops_per_gpu": Metric("run", "TFLOP/s", True, lambda r: r.hardware_tflops_per_gpu,
                                      "achieved TFLOP/s per GPU counting recomputation"),
    "model_tflops_per_gpu": Metric("run", "TFLOP/s", True, lambda r: r.model_tflops_per_gpu,
                                   "achieved model TFLOP/s per GPU (no recomputation)"),
    "mfu": Metric("run", "%", True, lambda r: 100.0 * r.mfu, "model FLOPs utilisation"),
    "tokens_per_s_per_gpu": Metric("run", "tokens/s", True, lambda r: r.tokens_per_s_per_gpu,
                                   "training tokens per second per GPU"),
    "step_time_s": Metric("run", "s", True, lambda r: r.step_time_s, "time of one training iteration"),
    "time_to_train_days": Metric("run", "days", True, lambda r: r.time_to_train_s / SECONDS_PER_DAY,
                                 "wall-clock time to train on the scenario's tokens"),
    "peak_power_it_mw": Metric("run", "MW", False, lambda r: r.power.peak_power_it_w / 1e6, "IT power at full load"),
    "avg_power_it_mw": Metric("run", "MW", False, lambda r: r.power.avg_power_it_w / 1e6, "average IT power"),
    "interruptions_per_day": Metric("run", "1/day", False, _interruptions_per_day,
                                    "unexpected job interruptions per day of training"),
    "busbw_GBps": Metric("collective", "GB/s", False, None, "NCCL bus bandwidth (nccl-tests convention)"),
    # What PyTorch's allocator reports (torch.cuda.max_memory_allocated): tensors only, without the
    # runtime reserve for the CUDA context, NCCL buffers and fragmentation.
    "memory_allocated_gib": Metric("run", "GiB", False, lambda r: _allocated_bytes(r) / 2**30,
                                   "peak memory of the fullest GPU's tensors, in GiB"),
    "memory_allocated_gb": Metric("run", "GB", False, lambda r: _allocated_bytes(r) / 1e9,
                                  "peak memory of the fullest GPU's tensors, in GB (10^9 B)"),
}


def _allocated_bytes(r: TrainingResult) -> float:
    return r.memory.total_bytes - r.memory.runtime_bytes
