"""``twin compare SCENARIO LOG``: the twin's prediction for a real run against what the run measured,
part by part, with the largest difference named (the drift report, docs/calibrate.md).

A Megatron-LM log is compared on its iteration time and, when it holds timers, on four parts:

| part          | the twin's step parts         | Megatron-LM timers                                       |
|---------------|-------------------------------|----------------------------------------------------------|
| compute       | compute, tp_comm              | forward-compute + backward-compute                       |
| communication | dp_comm, dp_latency, pp_comm  | all-grads-sync, params-all-gather, *-grads-all-reduce, pipeline sends and receives |
| overheads     | overheads, optimizer          | optimizer                                                |
| bubble        | bubble                        | the rest of the iteration                                |

A torchtitan log is compared on tokens/s per GPU; a serving benchmark on throughput, TTFT and TPOT;
a GPU power log on the mean GPU power while busy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from twin.calibrate.power import PowerLog
from twin.calibrate.serving import ServingMeasurement
from twin.calibrate.training_log import TrainingLog
from twin.errors import ScenarioError

# The twin's step parts and Megatron-LM's timers of each compared part.
PARTS = {
    "compute": (("compute", "tp_comm"), ("forward-compute", "backward-compute")),
    "communication": (("dp_comm", "dp_latency", "pp_comm"),
                      ("all-grads-sync", "params-all-gather", "embedding-grads-all-reduce",
                       "layernorm-grads-all-reduce", "forward-recv", "forward-send", "backward-recv",
                       "backward-send", "forward-send-backward-recv", "backward-send-forward-recv")),
    "overheads": (("overheads", "optimizer"), ("optimizer",)),
}
REMAINDER = "bubble"
# Differences below these are the logs' rounding, not drift: Megatron-LM prints the iteration time to
# 0.1 ms and its timers to 0.01 ms (twice the coarser); other figures are compared to 0.5%.
TIMER_NOISE_S = 2e-4
NOISE_SHARE = 0.005


@dataclass(frozen=True)
class Part:
    name: str
    unit: str
    predicted: float
    measured: float

    @property
    def difference(self) -> float:
        """measured - predicted."""
        return self.measured - self.predicted

    @property
    def relative(self) -> float:
        """measured / predicted - 1 (of the whole when the part is a share of it)."""
        return self.measured / self.predicted - 1.0 if self.predicted else float("inf")


@dataclass(frozen=True)
class Drift:
    scenario: str
    log: str
    total: Part                     # the headline figure
    parts: tuple[Part, ...]         # its parts, where the log measures them
    note: str = ""

    @property
    def largest(self) -> str:
        """The part that differs most (in the headline's unit), the total when no part is measured, or
        "none" when every difference is within the logs' rounding."""
        if not self.parts:
            return self.total.name if abs(self.total.relative) > NOISE_SHARE else "none"
        part = max(self.parts, key=lambda p: abs(p.difference))
        noise = TIMER_NOISE_S if part.unit == "s" else NOISE_SHARE
        return part.name if abs(part.difference) > noise else "none"


def training_drift(record: dict[str, Any], log: TrainingLog, scenario: str) -> Drift:
    if log.tool == "torchtitan":
        predicted = record["tokens_per_s_per_gpu"]
        return Drift(scenario, log.path, Part("tokens/s per GPU", "tokens/s", predicted, log.tps_per_gpu()), (),
                     "torchtitan logs tokens/s per GPU, not the parts of a step")
    predicted = record["step_breakdown_s"]
    step = log.step_s()
    total = Part("iteration time", "s", record["step_time_s"], step)
    if not log.parts_s:
        return Drift(scenario, log.path, total, (), "the log holds no timers (--timing-log-level 1 adds them)")
    parts, covered_p, covered_m = [], 0.0, 0.0
    for name, (ours, theirs) in PARTS.items():
        p = sum(predicted.get(k, 0.0) for k in ours)
        m = sum(log.parts_s.get(k, 0.0) for k in theirs)
        parts.append(Part(name, "s", p, m))
        covered_p, covered_m = covered_p + p, covered_m + m
    parts.append(Part(REMAINDER, "s", max(record["step_time_s"] - covered_p, 0.0), max(step - covered_m, 0.0)))
    return Drift(scenario, log.path, total, tuple(parts))


def serving_drift(record: dict[str, Any], run: ServingMeasurement, scenario: str) -> Drift:
    if record.get("output_tokens_per_s") is None:
        raise ScenarioError(scenario, "the deployment does not hold the load, so the twin predicts no throughput")
    parts = []
    for name, key, quantile, ours in (("TTFT p50", "ttft_s", "median", "p50"), ("TTFT p99", "ttft_s", "p99", "p99"),
                                      ("TPOT p50", "tpot_s", "median", "p50"), ("TPOT p99", "tpot_s", "p99", "p99")):
        measured = getattr(run, key)[quantile]
        if measured is not None and record[key]:
            parts.append(Part(name, "s", record[key][ours], measured))
    total = Part("output tokens/s", "tokens/s", record["output_tokens_per_s"], run.output_tokens_per_s)
    # Serving parts have different scales: the largest is the largest relative difference.
    parts = tuple(Part(p.name, "relative", 1.0, 1.0 + p.relative) for p in parts)
    return Drift(scenario, run.path, total, parts, "latency parts compared relative to the twin's")


def power_drift(record: dict[str, Any], log: PowerLog, scenario: str) -> Drift:
    power = record.get("power") or {}
    predicted = power.get("gpu_avg_w")
    if predicted is None:
        raise ScenarioError(scenario, "the scenario's record has no GPU power to compare with")
    busy = [s.power_w for s in log.samples if s.utilisation > 0.05] or [s.power_w for s in log.samples]
    return Drift(scenario, log.path, Part("GPU power while busy", "W", predicted, sum(busy) / len(busy)), ())
