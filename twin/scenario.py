"""The scenario file: YAML in, a validated, frozen ``Scenario`` out.

This is a user-facing contract (docs/scenario.md documents every key). Unknown
keys are rejected; quantities may carry units and are parsed here, once, into
SI floats. Every error is a ``ScenarioError`` whose message starts with the key
path (``training.parallelism.tensor: ...``).
"""

from __future__ import annotations

import copy
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from twin import catalog
from twin.errors import ScenarioError, did_you_mean
from twin.units import parse_price_per_gpu_hour, parse_price_per_kwh, parse_quantity


def _quantity(dimension: str):
    """A BeforeValidator that parses a number-with-unit into SI units."""

    def parse(value: Any) -> float:
        try:
            return parse_quantity(value, dimension, "")
        except ScenarioError as exc:
            raise ValueError(str(exc)) from None

    return BeforeValidator(parse)


def _price(parser):
    def parse(value: Any) -> tuple[float, str]:
        try:
            return parser(value, "")
        except ScenarioError as exc:
            raise ValueError(str(exc)) from None

    return BeforeValidator(parse)


Bandwidth = Annotated[float, _quantity("bandwidth"), Field(gt=0)]
Bytes = Annotated[float, _quantity("bytes"), Field(gt=0)]
Power = Annotated[float, _quantity("power"), Field(gt=0)]
Duration = Annotated[float, _quantity("time"), Field(gt=0)]
Count = Annotated[float, _quantity("count"), Field(gt=0)]
CarbonIntensity = Annotated[float, _quantity("carbon_intensity"), Field(ge=0)]
PricePerKwh = Annotated[tuple[float, str], _price(parse_price_per_kwh)]
PricePerGpuHour = Annotated[tuple[float, str], _price(parse_price_per_gpu_hour)]
PositiveInt = Annotated[int, Field(gt=0, strict=True)]
NonNegativeInt = Annotated[int, Field(ge=0, strict=True)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Fabric(_Strict):
    topology: Literal["rail-optimized-fat-tree", "fat-tree", "single-switch"] = "rail-optimized-fat-tree"
    link: Bandwidth | None = None          # default: the node's compute NIC line rate
    nodes_per_su: PositiveInt = 32         # DGX SuperPOD scalable unit
    oversubscription: Annotated[float, Field(ge=1)] = 1.0


class Storage(_Strict):
    read: Bandwidth
    write: Bandwidth
    capacity: Bytes | None = None


class Cluster(_Strict):
    node: str
    nodes: PositiveInt
    spare_nodes: NonNegativeInt = 0
    allow_shrink: bool = False             # after a failure with no spare, go on with fewer replicas
    nodes_per_rack: PositiveInt = 2
    rack_power_limit: Power | None = None
    gpu_power_cap: Power | None = None
    fabric: Fabric = Fabric()
    storage: Storage | None = None         # default: the nodes' storage NICs, all at line rate


class Embodied(_Strict):
    enabled: bool = False
    method: Literal["bloom", "llmcarbon"] = "bloom"        # per-device figures (docs/power.md)
    gpu_kg: Annotated[float, Field(ge=0)] | None = None    # kg CO2e per GPU, overrides the method
    server_kg: Annotated[float, Field(ge=0)] | None = None  # kg CO2e per server (node without GPUs)
    lifetime_years: Annotated[float, Field(gt=0)] | None = None    # default 6 (BLOOM)
    utilization: Annotated[float, Field(gt=0, le=1)] | None = None  # default 0.85 (BLOOM)


class Site(_Strict):
    country: str = "US"
    pue: Annotated[float, Field(ge=1.0)] = 1.58
    compare: list[str] = []
    carbon_intensity: CarbonIntensity | None = None        # g CO2e / kWh, overrides the dataset
    electricity_price: PricePerKwh | None = None           # (amount per kWh, currency)
    gpu_hour_price: PricePerGpuHour | None = None          # optional rental price
    accounting: Literal["full", "gpu-tdp"] = "full"        # gpu-tdp: GPU-hours x TDP (LLaMA, BLOOM papers)
    embodied: Embodied = Embodied()

    @field_validator("pue", mode="before")
    @classmethod
    def _pue_is_number(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{value!r} is not a number (PUE is facility power / IT power, >= 1)")
        return value


class InlineModel(_Strict):
    layers: PositiveInt
    hidden: PositiveInt
    heads: PositiveInt
    kv_heads: PositiveInt | None = None
    ffn_hidden: PositiveInt | None = None
    vocab: PositiveInt
    activation: Literal["gelu", "swiglu"] = "swiglu"
    norm: Literal["layernorm", "rmsnorm"] = "rmsnorm"
    tied_embeddings: bool = False
    experts: PositiveInt = 1
    top_k: PositiveInt = 1
    name: str = "custom"


class Parallelism(_Strict):
    tensor: PositiveInt = 1
    pipeline: PositiveInt = 1
    data: PositiveInt | Literal["auto"] = "auto"
    expert: PositiveInt = 1
    microbatch: PositiveInt = 1
    virtual_stages: PositiveInt = 1
    schedule: Literal["gpipe", "1f1b", "interleaved"] = "1f1b"
    sequence_parallel: bool = True
    recompute: Literal["none", "selective", "full"] = "selective"
    zero: Annotated[int, Field(ge=0, le=3, strict=True)] = 1
    overlap_grad_reduce: bool = True
    # Rank order, fastest-varying first: Megatron-LM's default keeps a tensor group inside a node.
    order: Literal["tp-dp-pp", "tp-pp-dp", "dp-tp-pp", "dp-pp-tp", "pp-tp-dp", "pp-dp-tp"] = "tp-dp-pp"


class Checkpoint(_Strict):
    interval: Duration | Literal["auto"] = "auto"
    asynchronous: bool = False


class Training(_Strict):
    model: str | InlineModel
    tokens: Count
    seq_len: PositiveInt
    global_batch: PositiveInt
    precision: Literal["bf16", "fp16", "fp8", "tf32", "fp32"] = "bf16"
    attention: Literal["flash", "flash2", "flash1", "standard"] = "flash"
    kernels: Literal["fused", "eager"] = "fused"
    autocast: bool = False
    parallelism: Parallelism = Parallelism()
    checkpoint: Checkpoint = Checkpoint()


class Failures(_Strict):
    enabled: bool = False
    profile: str = "llama3-h100"
    seed: NonNegativeInt = 0
    samples: PositiveInt = 1
    rate_scale: Annotated[float, Field(ge=0)] = 1.0
    custom_rates: dict[str, Annotated[float, Field(ge=0)]] = {}   # component → failures per device-hour
    detection_time: Duration = 600.0       # PyTorch's default NCCL collective timeout, 10 min
    restart_time: Duration = 300.0         # relaunch and communicator set-up (assumption, docs/engine.md)
    repair_time: Duration = 172800.0       # mean time to repair a node, 48 h (assumption, docs/engine.md)


class Scenario(_Strict):
    name: str = "unnamed scenario"
    cluster: Cluster
    site: Site = Site()
    training: Training
    failures: Failures = Failures()
    efficiency: dict[str, float] = {}      # overrides of calibrated efficiencies (catalog calibration.yaml)


# ---------------------------------------------------------------------------
# Loading and error messages


def _model_class_at(loc: tuple) -> type[BaseModel] | None:
    """The pydantic model class that owns the key at ``loc`` (for 'allowed keys' hints)."""
    cls: type[BaseModel] = Scenario
    for part in loc[:-1]:
        if isinstance(part, int) or part not in cls.model_fields:
            return None
        annotation = cls.model_fields[part].annotation
        candidates = typing.get_args(annotation) or (annotation,)
        nested = [c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)]
        if not nested:
            return None
        cls = nested[0]
    return cls


def _format_error(exc: ValidationError) -> ScenarioError:
    """The first pydantic error as one line: key path, value, what is allowed."""
    err = exc.errors()[0]
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and ("[" in p or p in {"str", "int", "float", "literal['auto']"})))
    path = ".".join(str(p) for p in loc)
    kind = err["type"]
    if kind == "extra_forbidden":
        owner = _model_class_at(loc)
        allowed = list(owner.model_fields) if owner else []
        hint = did_you_mean(str(loc[-1]), allowed) if allowed else ""
        return ScenarioError(path, f"unknown key{hint}; allowed: {', '.join(allowed)}")
    if kind == "missing":
        return ScenarioError(path, "is required")
    message = err["msg"].removeprefix("Value error, ")
    value = err.get("input")
    if kind in {"value_error", "assertion_error"}:
        return ScenarioError(path, message)
    return ScenarioError(path, f"{value!r} is not allowed: {message}")


def parse_scenario(data: Any, source: str = "scenario") -> Scenario:
    """Validate a mapping (already parsed from YAML) into a Scenario."""
    if not isinstance(data, dict):
        raise ScenarioError("", f"{source}: the scenario must be a YAML mapping of keys (name, cluster, site, training, failures)")
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise _format_error(exc) from None
    _check_catalog_names(scenario)
    return scenario


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError("", f"cannot read scenario file '{path}': {exc.strerror}") from None
    return parse_scenario(parse_yaml(text, str(path)), str(path))


def parse_yaml(text: str, source: str) -> Any:
    """YAML text → plain data; a syntax error names the line and column."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ScenarioError("", f"{source}: malformed YAML{where}: {problem}") from None


def _check_catalog_names(scenario: Scenario) -> None:
    """Catalog names resolve, with a 'did you mean' when they do not."""
    catalog.entry("nodes", scenario.cluster.node, "cluster.node")
    if isinstance(scenario.training.model, str):
        catalog.entry("models", scenario.training.model, "training.model")
    if scenario.failures.enabled:
        catalog.entry("failure_profiles", scenario.failures.profile, "failures.profile")


def with_overrides(data: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of raw scenario data with dotted keys replaced ({'cluster.nodes': 64})."""
    result = copy.deepcopy(data)
    for dotted, value in changes.items():
        node = result
        parts = dotted.split(".")
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[parts[-1]] = value
    return result
