"""Serving cases: published serving benchmarks against the serving twin.

``cases/serving/*.yaml`` hold rows of one source each, with the source's engine settings:

- ``trtllm_0.13.yaml``: the TensorRT-LLM 0.13 offline throughput table. Each row: model, GPU,
  precision, tensor parallelism, fixed input/output lengths, the published output tokens/s and the
  row's role (calibration rows are the ones ``benchmarks/calibrate_serving.py`` fits; check rows are
  never fitted). A row runs offline: ``REQUESTS`` requests queued at t = 0.
- files with ``lengths`` (request lengths drawn from a distribution, as a dataset gives them): each
  row names its load (``offline``, or a Poisson rate per second), its request count and its metric
  (``output_tokens_per_s``, or ``tpot_p50_ms``, the median time per output token). They are checks.

Every row runs on one replica of one node of the GPU's reference server. ``python -m twin
validate`` reports them by group (``group_of``): the calibration rows, and the check rows by what
they hold out (a model, lengths, a tensor-parallel size, the GH200 column, another engine), each
check group against the tolerance ``CHECK_TOLERANCE``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources

import numpy as np

from twin.calibration import Efficiency, ServingEfficiency
from twin.catalog import load_yaml
from twin.cores import one_core
from twin.hardware.specs import ClusterSpec, FabricSpec, StorageSpec, node_spec
from twin.serving.deployment import Replica, ServingSpec, replica, simulate
from twin.serving.profiles import engine_profile
from twin.serving.specs import EngineSpec, LengthSpec, LoadSpec, SLOSpec
from twin.units import SECONDS_PER_MS
from twin.workload.model import model_spec

# The server each GPU of the cases runs in (the source's systems: DGX H100, DGX H200, DGX A100,
# an 8-GPU L40S server, a node of four GH200 superchips).
REFERENCE_NODE = {"h100-sxm": "dgx-h100", "h200": "dgx-h200", "a100-80gb": "dgx-a100-80gb",
                  "l40s": "l40s-8", "gh200-120gb": "gh200-4"}
# The case files, in the order the report lists their rows.
CASE_FILES = ("trtllm_0.13.yaml", "vllm_0.6_sharegpt.yaml")
# Requests per case: enough for the steady state of the longest rows (the source uses 1,000 to 30,000).
REQUESTS = 1000
# Mean absolute error a check group is held to where the twin describes the deployment as the source ran it.
CHECK_TOLERANCE = 0.25
# What each group holds out, in the order the report lists them.
GROUPS = {
    "trtllm-calibration": "calibration rows: Llama 3.1 8B TP 1 and 70B TP 4/8 on H200, H100, A100, L40S",
    "trtllm-mistral-7b": "held-out model: Mistral 7B, TP 1",
    "trtllm-llama2-70b": "held-out model: LLaMA v2 70B, TP 4/8",
    "trtllm-lengths": "held-out lengths: Llama 3.1 8B at 128/4096 and 20000/2000",
    "trtllm-70b-tp2": "held-out parallelism: Llama 3.1 70B, TP 2",
    "trtllm-70b-tp1": "Llama 3.1 70B on one GPU (70 GB of FP8 weights)",
    "trtllm-gh200-small": "GH200 column: 8B and 7B models, TP 1",
    "trtllm-gh200-70b": "GH200 column: 70B models, TP 1",
    "trtllm-gh200-tp4": "GH200 column: 70B models at TP 4, the four superchips of a node",
    "trtllm-gh200-tp2": "GH200 column: 70B at TP 2 (below the column's own TP 1 at four of seven lengths)",
    "vllm-0.6-sharegpt": "held-out engine: vLLM 0.6.0 with multi-step scheduling on ShareGPT, as the SGLang team ran "
                         "it (offline throughput, median time per output token at 4 and 8 requests/s)",
}
# What a row measures: the published figure and the twin's are in its unit.
SERVING_METRICS = {"output_tokens_per_s": "output tokens/s", "tpot_p50_ms": "median TPOT, ms"}


# Kinds of row (``ServingCase.kind``): a row is prompt-heavy or decode-heavy when one length is at
# least this many times the other; batch-1 rows run one request at a time.
KIND_RATIO = 4
KINDS = ("prompt-heavy", "decode-heavy", "balanced", "batch-1")


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
    engine: str                          # the engine profile the source ran (catalog engines.yaml)
    source: str                          # the case file's name for its rows (their ids begin with it)
    held_out: str | None                 # the report group of every row of the file, where it names one
    max_batch: int | None = None         # the source's batch limit where the row sets one
    metric: str = "output_tokens_per_s"  # what ``published`` measures (``SERVING_METRICS``)
    rate_per_s: float | None = None      # Poisson arrivals; None: offline (every request at t = 0)
    requests: int = 0                    # requests the source sent; 0: ``REQUESTS``
    lengths: tuple[LengthSpec, LengthSpec] | None = None   # (input, output) drawn as a dataset gives them;
                                                           # None: fixed at input_tokens and output_tokens

    @property
    def kind(self) -> str:
        """prompt-heavy, decode-heavy, balanced or batch-1 (``KINDS``)."""
        if self.max_batch == 1:
            return "batch-1"
        if self.input_tokens >= KIND_RATIO * self.output_tokens:
            return "prompt-heavy"
        if self.output_tokens >= KIND_RATIO * self.input_tokens:
            return "decode-heavy"
        return "balanced"

    @property
    def id(self) -> str:
        head = f"{self.source}-{self.model}-{self.gpu}-{self.precision}-tp{self.tensor}"
        if self.lengths is None:
            return f"{head}-{self.input_tokens}-{self.output_tokens}"
        load = "offline" if self.rate_per_s is None else f"{self.rate_per_s:g}-per-s"
        return f"{head}-{load}-{self.metric}"

    @property
    def group(self) -> str:
        """The report group of a row (``GROUPS``), from what it holds out."""
        if self.held_out is not None:
            return self.held_out
        if self.role == "calibration":
            return "trtllm-calibration"
        if self.gpu == "gh200-120gb":
            if self.tensor > 1:
                return f"trtllm-gh200-tp{self.tensor}"
            return "trtllm-gh200-70b" if "70b" in self.model else "trtllm-gh200-small"
        if self.model == "mistral-7b":
            return "trtllm-mistral-7b"
        if self.model == "llama2-70b":
            return "trtllm-llama2-70b"
        if self.model == "llama3-70b":
            return f"trtllm-70b-tp{self.tensor}"
        return "trtllm-lengths"


@dataclass(frozen=True)
class ServingOutcome:
    case: ServingCase
    predicted: float            # output tokens/s, or NaN where the model does not fit
    error: float                # predicted / published - 1


@dataclass(frozen=True)
class ServingGroup:
    name: str
    description: str
    role: str
    rows: int
    mae: float                  # mean |error|
    median: float               # median error (signed)
    low: float                  # most negative error
    high: float                 # most positive error
    within_25: float            # share of rows within ±25%
    failed: int                 # rows the twin cannot hold (NaN)

    @property
    def tolerance(self) -> float | None:
        return CHECK_TOLERANCE if self.role == "check" else None


def summarize(outcomes: list[ServingOutcome]) -> list[ServingGroup]:
    """One line per group (``GROUPS`` order), then one per role."""
    by_group = [(name, GROUPS[name], [o for o in outcomes if o.case.group == name]) for name in GROUPS]
    by_role = [(f"all {role} rows", f"every {role} row", [o for o in outcomes if o.case.role == role])
               for role in ("calibration", "check")]
    return [_group(name, description, members) for name, description, members in by_group + by_role if members]


def by_engine_and_kind(outcomes: list[ServingOutcome]) -> list[ServingGroup]:
    """One line per (engine, role), then per (engine, role, kind of row), for the rows present."""
    out = []
    engines = list(dict.fromkeys(o.case.engine for o in outcomes))
    for engine in engines:
        for role in ("calibration", "check"):
            mine = [o for o in outcomes if o.case.engine == engine and o.case.role == role]
            if mine:
                out.append(_group(f"{engine} {role}", f"{engine}, every {role} row", mine))
            for kind in KINDS:
                members = [o for o in mine if o.case.kind == kind]
                if members:
                    out.append(_group(f"{engine} {role} {kind}", f"{engine}, {kind} {role} rows", members))
    return out


def _group(name: str, description: str, members: list[ServingOutcome]) -> ServingGroup:
    return error_group(name, description, members[0].case.role, [o.error for o in members])


def error_group(name: str, description: str, role: str, errors: list[float]) -> ServingGroup:
    """A group of rows by their errors (predicted / measured - 1; NaN where the twin cannot hold the row)."""
    held = np.array([e for e in errors if math.isfinite(e)])
    return ServingGroup(name, description, role, len(errors), float(np.mean(np.abs(held))), float(np.median(held)),
                        float(held.min()), float(held.max()), float(np.mean(np.abs(held) <= 0.25)),
                        len(errors) - len(held))


def load_cases(name: str = CASE_FILES[0]) -> tuple[EngineSpec, list[ServingCase]]:
    """The engine settings and the rows of one case file (``CASE_FILES``)."""
    data = _case_data(name)
    settings = dict(data["engine"])
    engine = replace(engine_profile(settings.pop("profile")), **settings)
    common = {"engine": engine.profile, "source": data["id_prefix"], "held_out": data.get("group")}
    if "lengths" not in data:
        return engine, [ServingCase(model, gpu, precision, int(tensor), *(int(x) for x in lengths.split("/")),
                                    float(published), role, **common)
                        for model, gpu, precision, tensor, lengths, published, role in data["rows"]]
    lengths = tuple(LengthSpec(float(d["mean"]), d["distribution"], int(d["max"]), float(d.get("sigma", 1.0)))
                    for d in (data["lengths"]["input_tokens"], data["lengths"]["output_tokens"]))
    cases = []
    for model, gpu, precision, tensor, load, requests, metric, published, role in data["rows"]:
        if metric not in SERVING_METRICS:
            raise ValueError(f"{name}: metric {metric!r}; allowed: {', '.join(SERVING_METRICS)}")
        cases.append(ServingCase(model, gpu, precision, int(tensor), round(lengths[0].mean), round(lengths[1].mean),
                                 float(published), role, metric=metric,
                                 rate_per_s=None if load == "offline" else float(load), requests=int(requests),
                                 lengths=lengths, **common))
    return engine, cases


def sources() -> list[str]:
    """Each case file's source, as it names it, and where its rows are."""
    return [f"{_case_data(name)['source']} (rows in twin/validation/cases/serving/{name})" for name in CASE_FILES]


@lru_cache(maxsize=None)
def _case_data(name: str) -> dict:
    """One case file, read once per process (treat it as read-only)."""
    return load_yaml(resources.files("twin.validation").joinpath("cases", "serving", name).read_text(encoding="utf-8"))


def case_replica(case: ServingCase, engine: EngineSpec, efficiency: ServingEfficiency | None = None,
                 requests: int = REQUESTS) -> tuple[ServingSpec, Replica]:
    """The deployment of a row (its load: offline ``requests`` requests unless the row sets its own) and its
    replica on the GPU's reference server."""
    node = node_spec(REFERENCE_NODE[case.gpu])
    nodes = max(1, math.ceil(case.tensor / node.gpus))
    cluster = ClusterSpec(node, nodes, 0, 1, None, None,
                          FabricSpec("rail-optimized-fat-tree", node.compute_nics.line_rate_Bps, 32, 1.0),
                          StorageSpec(1e10, 1e10, None))
    kv = "fp8" if case.precision == "fp8" else case.precision
    lengths = case.lengths or (LengthSpec(case.input_tokens), LengthSpec(case.output_tokens))
    load = LoadSpec(case.rate_per_s, case.requests or requests, *lengths)
    spec = ServingSpec(model_spec(case.model), case.precision, kv, case.tensor, 1, 1, None, engine, load, SLOSpec())
    return spec, replica(spec, cluster, efficiency or ServingEfficiency.calibrated(), Efficiency.calibrated())


def run_case(case: ServingCase, engine: EngineSpec, efficiency: ServingEfficiency | None = None,
             requests: int = REQUESTS) -> ServingOutcome:
    spec, rep = case_replica(case, engine, efficiency, requests)
    if rep.memory.kv_blocks * engine.block_tokens < case.input_tokens + case.output_tokens:
        return ServingOutcome(case, math.nan, math.nan)
    result = simulate(spec, rep)
    predicted = (result.output_tokens_per_s if case.metric == "output_tokens_per_s"
                 else result.tpot_s.p50 / SECONDS_PER_MS)
    return ServingOutcome(case, predicted, predicted / case.published - 1.0)


def run_cases(role: str | None = None, efficiency: ServingEfficiency | None = None,
              requests: int = REQUESTS, workers: int = 1) -> list[ServingOutcome]:
    """Every row of every case file (of ``role``), in ``workers`` processes when more than one (rows are
    independent)."""
    chosen = [(case, engine) for name in CASE_FILES for engine, cases in [load_cases(name)] for case in cases
              if role is None or case.role == role]
    rows, engines = [case for case, _ in chosen], [engine for _, engine in chosen]
    n = len(chosen)
    if workers <= 1:
        return list(map(run_case, rows, engines, [efficiency] * n, [requests] * n))
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers, initializer=one_core) as pool:    # a process per core
        return list(pool.map(run_case, rows, engines, [efficiency] * n, [requests] * n, chunksize=8))
