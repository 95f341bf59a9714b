"""GPU power samples, whichever tool logged them, and the idle and loaded draw they show."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

# A sample counts as idle at or below this utilisation and as loaded at or above the next
# (nvidia-smi's utilization.gpu: the share of time a kernel ran; DCGM_FI_DEV_GPU_UTIL the same).
IDLE_UTILISATION = 0.05
LOADED_UTILISATION = 0.90


@dataclass(frozen=True)
class PowerSample:
    power_w: float
    utilisation: float          # fraction
    sm_clock_hz: float | None = None


@dataclass(frozen=True)
class PowerLog:
    path: str
    tool: str                   # nvidia-smi | dcgm
    device: str
    gpu: str | None
    samples: tuple[PowerSample, ...]

    def idle_w(self) -> tuple[float, float, int] | None:
        """(median, relative spread, samples) of the idle samples, or None without any."""
        return _stat([s.power_w for s in self.samples if s.utilisation <= IDLE_UTILISATION])

    def loaded_w(self) -> tuple[float, float, int] | None:
        return _stat([s.power_w for s in self.samples if s.utilisation >= LOADED_UTILISATION])

    def mean_w(self) -> float:
        return statistics.fmean(s.power_w for s in self.samples)


def _stat(values: list[float]) -> tuple[float, float, int] | None:
    if not values:
        return None
    mid = statistics.median(values)
    spread = statistics.pstdev(values) / mid if mid > 0 and len(values) > 1 else 0.0
    return mid, spread, len(values)
