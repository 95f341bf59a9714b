"""Serving cases: published offline throughputs against the serving twin.

``cases/serving/*.yaml`` hold rows of one source each: model, GPU, precision, tensor
parallelism, input/output lengths, the published output tokens/s and the row's role
(calibration rows are the ones ``benchmarks/calibrate_serving.py`` fits; check rows are
never fitted). A row runs offline: every request queued at t = 0 on one replica of
one node of the GPU's reference server, with the source's engine settings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import resources

import yaml

from twin.calibration import Efficiency, ServingEfficiency
from twin.hardware.specs import ClusterSpec, FabricSpec, StorageSpec, node_spec
from twin.serving.deployment import ServingSpec, replica, simulate
from twin.serving.specs import EngineSpec, LengthSpec, LoadSpec, SLOSpec
from twin.workload.model import model_spec

# The server each GPU of the cases runs in (the source's systems: DGX H100, DGX H200, DGX A100,
# an 8-GPU L40S server, a GH200 superchip node).
REFERENCE_NODE = {"h100-sxm": "dgx-h100", "h200": "dgx-h200", "a100-80gb": "dgx-a100-80gb",
                  "l40s": "l40s-server", "gh200": "gh200-node"}
# Requests per case: enough for the steady state of the longest rows (the source uses 1,000 to 30,000).
REQUESTS = 1000


@dataclass(frozen=True)
class ServingCase:
    model: str
    gpu: str
    precision: str
    tensor: int
    input_tokens: int
    output_tokens: int
    published: float
    role: str

    @property
    def id(self) -> str:
        return (f"trtllm-0.13-{self.model}-{self.gpu}-{self.precision}-tp{self.tensor}-"
                f"{self.input_tokens}-{self.output_tokens}")


@dataclass(frozen=True)
class ServingOutcome:
    case: ServingCase
    predicted: float            # output tokens/s, or NaN where the model does not fit
    error: float                # predicted / published - 1


def load_cases(name: str = "trtllm_0.13.yaml") -> tuple[EngineSpec, list[ServingCase]]:
    text = resources.files("twin.validation").joinpath("cases", "serving", name).read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    engine = EngineSpec(**data["engine"])
    cases = []
    for model, gpu, precision, tensor, lengths, published, role in data["rows"]:
        isl, osl = (int(x) for x in lengths.split("/"))
        cases.append(ServingCase(model, gpu, precision, int(tensor), isl, osl, float(published), role))
    return engine, cases


def run_case(case: ServingCase, engine: EngineSpec, efficiency: ServingEfficiency | None = None,
             requests: int = REQUESTS) -> ServingOutcome:
    node = node_spec(REFERENCE_NODE[case.gpu])
    nodes = max(1, math.ceil(case.tensor / node.gpus))
    cluster = ClusterSpec(node, nodes, 0, 1, None, None,
                          FabricSpec("rail-optimized-fat-tree", node.compute_nics.line_rate_Bps, 32, 1.0),
                          StorageSpec(1e10, 1e10, None))
    kv = "fp8" if case.precision == "fp8" else case.precision
    load = LoadSpec(None, requests, LengthSpec(case.input_tokens), LengthSpec(case.output_tokens))
    spec = ServingSpec(model_spec(case.model), case.precision, kv, case.tensor, 1, 1, None, engine, load, SLOSpec())
    rep = replica(spec, cluster, efficiency or ServingEfficiency.calibrated(), Efficiency.calibrated())
    if rep.memory.kv_blocks * engine.block_tokens < case.input_tokens + case.output_tokens:
        return ServingOutcome(case, math.nan, math.nan)
    predicted = simulate(spec, rep).output_tokens_per_s
    return ServingOutcome(case, predicted, predicted / case.published - 1.0)


def run_cases(role: str | None = None, efficiency: ServingEfficiency | None = None,
              requests: int = REQUESTS) -> list[ServingOutcome]:
    engine, cases = load_cases()
    return [run_case(c, engine, efficiency, requests) for c in cases if role is None or c.role == role]
