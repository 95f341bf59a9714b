"""What a serving benchmark measured, whichever tool wrote it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServingMeasurement:
    path: str
    tool: str                          # vllm | trtllm-bench
    model: str
    requests: int
    duration_s: float
    requests_per_s: float
    output_tokens_per_s: float
    ttft_s: dict[str, float | None]    # mean, median, p99 (None where the tool did not say)
    tpot_s: dict[str, float | None]
    request_rate_per_s: float | None = None   # offered rate (None or inf: every request at once)
