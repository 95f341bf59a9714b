"""Operator checks: the GEMM times of the serving twin's operator model against measured kernel times.

``cases/operators/vidur_gemm.yaml`` holds the four GEMMs of a Llama 2 7B and 70B layer (QKV, attention
output, gate/up, down) as Vidur profiled them in float16 with vLLM's model code on H100 SXM and A100 80GB,
per tensor-parallel size and token count (benchmarks/vidur_gemm_rows.py). Each is priced as the serving
twin prices it (``serving.batching``: the same shapes, the same operator model and efficiencies) and
reported by GPU and by size: decode-sized GEMMs (at most ``DECODE_TOKENS`` tokens: the weight's bytes
bound them) and prefill-sized ones (the rest: the tensor cores do). Checks, never fitted on.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from twin.calibration import Efficiency, ServingEfficiency
from twin.catalog import load_yaml
from twin.hardware.specs import gpu_spec
from twin.serving.batching import dense_gemm_shapes, serving_operators
from twin.units import SECONDS_PER_MS
from twin.validation.serving import ServingGroup, error_group
from twin.workload.model import model_spec

CASE_FILE = "vidur_gemm.yaml"
# The GEMMs in each row, in its order.
GEMMS = ("QKV", "attention output", "gate/up", "down")
# Token counts up to this are decode batches: the GEMM reads its whole weight for a few rows.
DECODE_TOKENS = 64


@dataclass(frozen=True)
class GemmOutcome:
    gpu: str
    model: str
    tensor: int
    tokens: int
    gemm: str
    measured_s: float
    predicted_s: float

    @property
    def error(self) -> float:
        return self.predicted_s / self.measured_s - 1.0

    @property
    def group(self) -> str:
        size = "decode-sized" if self.tokens <= DECODE_TOKENS else "prefill-sized"
        return f"{self.gpu} {size}"


def source() -> str:
    return str(_data()["source"])


def _data() -> dict:
    return load_yaml(resources.files("twin.validation").joinpath("cases", "operators", CASE_FILE)
                     .read_text(encoding="utf-8"))


def run_gemms() -> list[GemmOutcome]:
    """Every measured GEMM against the serving twin's price for it (float16, the serving efficiencies)."""
    efficiency, training = ServingEfficiency.calibrated(), Efficiency.calibrated()
    out = []
    for gpu, model, tensor, tokens, *measured_ms in _data()["rows"]:
        ops = serving_operators(gpu_spec(gpu), "fp16", efficiency, training)
        shapes = dense_gemm_shapes(model_spec(model), tokens, int(tensor))
        for gemm, ms, (m, n, k, count) in zip(GEMMS, measured_ms, shapes):
            out.append(GemmOutcome(gpu, model, int(tensor), int(tokens), gemm, float(ms) * SECONDS_PER_MS,
                                   ops.matmul_s(m, n, k, count)))
    return out


def summarize(outcomes: list[GemmOutcome]) -> list[ServingGroup]:
    """One line per GPU and size, in the order met, then every GEMM: check groups, held to the serving rows'
    tolerance."""
    names = list(dict.fromkeys(o.group for o in outcomes))
    members = [(name, [o for o in outcomes if o.group == name]) for name in names] + [("every GEMM", outcomes)]
    return [error_group(name, name, "check", [o.error for o in rows]) for name, rows in members]
