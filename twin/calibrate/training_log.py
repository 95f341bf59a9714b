"""What a training log measured, whichever framework wrote it."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TrainingLog:
    path: str
    tool: str                                      # megatron | torchtitan
    iteration_s: tuple[float, ...] = ()            # per logged interval (Megatron)
    tokens_per_s_per_gpu: tuple[float, ...] = ()   # per logged step (torchtitan's tps)
    parts_s: dict[str, float] = field(default_factory=dict)   # per-part timers, where the log has them

    def step_s(self) -> float | None:
        """Median iteration time, the first logged interval (start-up) left out when there are more."""
        values = self.iteration_s[1:] if len(self.iteration_s) > 1 else self.iteration_s
        return statistics.median(values) if values else None

    def tps_per_gpu(self) -> float | None:
        values = self.tokens_per_s_per_gpu[1:] if len(self.tokens_per_s_per_gpu) > 1 else self.tokens_per_s_per_gpu
        return statistics.median(values) if values else None
