"""The scenario file: YAML in, a validated, frozen ``Scenario`` out.

This is a user-facing contract (docs/scenario.md documents every key). Unknown
keys are rejected; quantities may carry units and are parsed here, once, into
SI floats; every number is finite and within a documented limit. Every error is
a ``ScenarioError`` whose message starts with the key path
(``training.parallelism.tensor: ...``) and fits on one line.

Only ``twin.api`` (and what sits above it) reads a ``Scenario``: it turns the
sections into the frozen specs the layers below take.
"""

import copy
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError, field_validator, model_validator

from twin import catalog
from twin.calibration import Efficiency
from twin.errors import ScenarioError, did_you_mean
from twin.scenario.cluster import Cluster, Fabric, Storage
from twin.scenario.failures import Failures
from twin.scenario.fields import Strict, name_text, number, shown
from twin.scenario.jobs import Jobs, check_jobs
from twin.scenario.load import decode, parse_yaml, read_text
from twin.scenario.profile import resolve_profile_path, with_profile
from twin.scenario.serving import Serving
from twin.scenario.site import Embodied, Site
from twin.scenario.training import Checkpoint, InlineModel, Lora, Parallelism, StackOptions, Training

__all__ = ["Scenario", "Cluster", "Fabric", "Storage", "Site", "Embodied", "Training", "InlineModel", "Lora",
           "Parallelism", "StackOptions", "Checkpoint", "Failures", "Serving", "Jobs", "parse_scenario",
           "load_scenario", "parse_yaml", "read_text", "decode", "with_overrides", "check_key", "WORKLOADS",
           "resolve_profile_path", "with_profile"]

# The workload sections a scenario may hold; it holds exactly one.
WORKLOADS = ("training", "serving", "jobs")

EfficiencyValue = number(gt="0", le="1", why="a fraction of a peak or line rate")


ScenarioName = name_text(200)


class Scenario(Strict):
    name: ScenarioName = "unnamed scenario"
    cluster: Cluster
    site: Site = Site()
    training: Training | None = None
    serving: Serving | None = None
    jobs: Jobs | None = None
    failures: Failures = Failures()
    efficiency: dict[str, EfficiencyValue] = {}     # overrides of calibrated efficiencies (calibration.yaml)

    @field_validator("efficiency", mode="before")
    @classmethod
    def _known_efficiencies(cls, value: Any) -> Any:
        if isinstance(value, dict):
            known = Efficiency.names()
            for key in value:
                if key not in known:
                    raise ValueError(f"unknown efficiency {shown(key)}{did_you_mean(str(key), known)}; "
                                     f"allowed: {', '.join(known)}")
        return value

    @model_validator(mode="after")
    def _one_workload(self) -> "Scenario":
        present = [w for w in WORKLOADS if getattr(self, w) is not None]
        if len(present) != 1:
            raise ValueError(f"a scenario describes one workload: write one of {', '.join(WORKLOADS)}"
                             + (f" (found {', '.join(present)})" if present else ""))
        return self

    @property
    def workload(self) -> str:
        """Which workload section the scenario holds."""
        return next(w for w in WORKLOADS if getattr(self, w) is not None)


# ---------------------------------------------------------------------------
# Error messages

# Branch names pydantic puts in an error's location; they are not keys a user wrote.
_UNION_TAGS = {"str", "int", "float", "bool", "catalog-model", "inline-model", "catalog-stack", "stack-options",
               "training-template", "serving-template"}


def _model_class_at(loc: tuple) -> type[BaseModel] | None:
    """The pydantic model class that owns the key at ``loc`` (for 'allowed keys' hints)."""
    cls: type[BaseModel] = Scenario
    for part in loc[:-1]:
        if isinstance(part, int) or part not in cls.model_fields:
            return None
        annotation = cls.model_fields[part].annotation
        candidates = _flatten(annotation)
        nested = [c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)]
        if not nested:
            return None
        cls = nested[0]
    return cls


def _flatten(annotation: Any) -> list[Any]:
    args = typing.get_args(annotation)
    if not args:
        return [annotation]
    out = []
    for a in args:
        out.extend(_flatten(a))
    return out


def _path(loc: tuple) -> str:
    parts = [p for p in loc if not (isinstance(p, str) and (p in _UNION_TAGS or p.startswith(("literal[", "function-", "constrained-"))
                                                           or "[" in p))]
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _format_error(exc: ValidationError) -> ScenarioError:
    """The most telling pydantic error as one line: key path, value, what is allowed."""
    errors = exc.errors()
    # A value that fails every branch of a union yields one error per branch; the one we wrote
    # ourselves (value_error) says most.
    err = next((e for e in errors if e["type"] == "value_error"), errors[0])
    path = _path(err["loc"])
    kind = err["type"]
    if kind == "extra_forbidden":
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p in _UNION_TAGS))
        owner = _model_class_at(loc)
        allowed = list(owner.model_fields) if owner else []
        hint = did_you_mean(str(loc[-1]), allowed) if allowed else ""
        return ScenarioError(path, f"unknown key{hint}" + (f"; allowed: {', '.join(allowed)}" if allowed else ""))
    if kind == "missing":
        return ScenarioError(path, "is required")
    message = err["msg"].removeprefix("Value error, ")
    if kind in {"value_error", "assertion_error"}:
        return ScenarioError(path, message)
    if kind == "model_type" or kind == "dict_type":
        return ScenarioError(path, f"{shown(err.get('input'))} is not allowed: write a mapping of keys")
    return ScenarioError(path, f"{shown(err.get('input'))} is not allowed: {message}")


# ---------------------------------------------------------------------------
# Loading


def parse_scenario(data: Any, source: str = "scenario") -> Scenario:
    """Validate a mapping (already parsed from YAML) into a Scenario."""
    if not isinstance(data, dict):
        raise ScenarioError("", f"{source}: the scenario must be a YAML mapping of keys "
                                f"(name, cluster, site, {', '.join(WORKLOADS)}, failures)")
    data = with_profile(data)                     # site.profile: the site's fitted values under the scenario's
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise _format_error(exc) from None
    except RecursionError:
        raise ScenarioError("", f"{source}: nested too deeply") from None
    _check_catalog_names(scenario)
    _check_meaning(scenario)
    return scenario


def load_scenario(path: str | Path, profile: str | None = None) -> Scenario:
    """Read and validate a scenario file; a relative ``jobs.trace`` (or ``site.profile``) is read beside it;
    ``profile`` (a command's ``--profile``) replaces the file's ``site.profile``."""
    data = resolve_profile_path(parse_yaml(read_text(path), str(path)), Path(path).parent, profile)
    scenario = parse_scenario(data, str(path))
    jobs = scenario.jobs
    if jobs is not None and jobs.trace is not None and not Path(jobs.trace).is_absolute():
        trace = str(Path(path).parent / jobs.trace)
        scenario = scenario.model_copy(update={"jobs": jobs.model_copy(update={"trace": trace})})
    return scenario


def _check_catalog_names(scenario: Scenario) -> None:
    """Catalog names resolve, with a 'did you mean' when they do not."""
    catalog.entry("nodes", scenario.cluster.node, "cluster.node")
    if scenario.jobs is not None:
        for where, section in _job_sections(scenario.jobs):
            if isinstance(section.model, str):
                catalog.entry("models", section.model, f"{where}.model")
    else:
        workload = getattr(scenario, scenario.workload)
        if isinstance(workload.model, str):
            catalog.entry("models", workload.model, f"{scenario.workload}.model")
    if scenario.serving is not None:
        for i, alternative in enumerate(scenario.serving.compare):
            if alternative.node is not None:
                catalog.entry("nodes", alternative.node, f"serving.compare[{i}].node")
    if scenario.training is not None:
        stack = scenario.training.stack
        if isinstance(stack, str):
            catalog.entry("stacks", stack, "training.stack")
        else:
            catalog.entry("stacks", stack.name, "training.stack.name")
    if scenario.failures.enabled:
        catalog.entry("failure_profiles", scenario.failures.profile, "failures.profile")


def _check_meaning(scenario: Scenario) -> None:
    """Rules that tie several keys together."""
    c = scenario.cluster
    if c.spare_nodes >= c.nodes:
        raise ScenarioError("cluster.spare_nodes", f"{c.spare_nodes} is not allowed: spares are held back from the "
                            f"{c.nodes} nodes of the cluster, so at most {c.nodes - 1}")
    if c.fabric.topology == "single-switch" and c.fabric.oversubscription != 1:
        raise ScenarioError("cluster.fabric.oversubscription", f"{c.fabric.oversubscription:g} is not allowed with "
                            "topology single-switch: every node sits on the one switch (1:1)")
    workload = getattr(scenario, scenario.workload)
    if scenario.jobs is None and isinstance(workload.model, InlineModel):
        _check_inline_model(workload.model, f"{scenario.workload}.model")
    if scenario.training is not None:
        _check_training(scenario.training)
    if scenario.serving is not None and scenario.failures.enabled:
        raise ScenarioError("failures.enabled", "true is not allowed with serving: failures are simulated for "
                            "training jobs; a serving scenario answers the steady state of its replicas")
    if scenario.jobs is not None:
        check_jobs(scenario.jobs)
        for where, section in _job_sections(scenario.jobs):
            if isinstance(section.model, InlineModel):
                _check_inline_model(section.model, f"{where}.model")
            if isinstance(section, Training):
                _check_training(section, where)


def _job_sections(jobs: Jobs) -> list[tuple[str, Training | Serving]]:
    """Every training or serving section of a jobs: scenario, with its key path."""
    sections = [(f"jobs.templates.{name}", t) for name, t in jobs.templates.items()]
    for i, job in enumerate(jobs.list):
        if job.training is not None:
            sections.append((f"jobs.list[{i}].training", job.training))
        if job.serving is not None:
            sections.append((f"jobs.list[{i}].serving", job.serving))
    return sections


def _check_inline_model(m: InlineModel, where: str) -> None:
    if m.hidden % m.heads:
        raise ScenarioError(f"{where}.heads", f"{m.heads} does not divide hidden {m.hidden} "
                            "(each head is hidden / heads wide)")
    kv = m.kv_heads or m.heads
    if kv > m.heads or m.heads % kv:
        raise ScenarioError(f"{where}.kv_heads", f"{kv} does not divide heads {m.heads} "
                            "(each KV head serves a whole group of query heads)")
    if m.top_k > 1 and m.experts == 1:
        raise ScenarioError(f"{where}.top_k", f"{m.top_k} needs experts > 1 (a dense model routes to no experts)")
    if m.top_k > m.experts:
        raise ScenarioError(f"{where}.top_k", f"{m.top_k} is more than the {m.experts} experts")


def _check_training(tr: Training, section: str = "training") -> None:
    p = tr.parallelism
    if p.virtual_stages > 1 and p.schedule != "interleaved":
        raise ScenarioError(f"{section}.parallelism.virtual_stages", f"{p.virtual_stages} needs schedule: interleaved "
                            f"(schedule is {p.schedule}, which runs one model chunk per stage)")
    _check_finetuning(tr, section)


def _check_finetuning(tr: Training, section: str = "training") -> None:
    if tr.lora is not None and tr.method == "full":
        raise ScenarioError(f"{section}.lora", "adapters need method lora or qlora (method is full: every weight "
                            "trains)")
    if tr.method == "qlora" and tr.weights not in (None, "nf4"):
        raise ScenarioError(f"{section}.weights", f"{tr.weights} is not allowed with method qlora, which stores the "
                            "base in nf4; use method lora for another storage")
    if tr.method == "full" and tr.weights in ("int8", "nf4"):
        raise ScenarioError(f"{section}.weights", f"{tr.weights} stores a frozen base; allowed with method full: bf16, "
                            "or fp8 with precision fp8 (or use method lora or qlora)")
    if tr.method == "full" and tr.weights == "fp8" and tr.precision != "fp8":
        raise ScenarioError(f"{section}.weights", f"fp8 weights are trained with precision fp8 (precision is "
                            f"{tr.precision})")
    if tr.fp8_recipe is not None and tr.precision != "fp8":
        raise ScenarioError(f"{section}.fp8_recipe", f"{tr.fp8_recipe} scales fp8 tensors, but precision is "
                            f"{tr.precision}; set precision: fp8")


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


def check_key(dotted: str, field: str) -> None:
    """``dotted`` names a key a scenario may hold (``cluster.nodes``, ``efficiency.matmul``); else a one-line
    ``ScenarioError`` on ``field`` naming the unknown part, with a suggestion and the keys allowed there."""
    cls: type[BaseModel] | None = Scenario
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        where = ".".join(parts[:i]) or "the top level"
        if cls is None:                               # below a mapping of free keys (efficiency, custom_rates)
            return
        known = list(cls.model_fields)
        if part not in known:
            raise ScenarioError(field, f"'{dotted}' is not a scenario key: no '{part}' at {where}"
                                f"{did_you_mean(part, known)}; allowed: {', '.join(known)}")
        kinds = _options(cls.model_fields[part].annotation)
        nested = [c for c in kinds if isinstance(c, type) and issubclass(c, BaseModel)]
        if nested:
            cls = nested[0]
        elif any(typing.get_origin(k) is dict for k in kinds):
            cls = None
        elif i < len(parts) - 1:
            raise ScenarioError(field, f"'{dotted}' is not a scenario key: '{'.'.join(parts[:i + 1])}' holds a "
                                "value, not keys")


def _options(annotation: Any) -> list[Any]:
    """The types a field may hold: a union's members, with ``Annotated`` metadata stripped."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _options(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [t for a in typing.get_args(annotation) for t in _options(a)]
    return [annotation]
