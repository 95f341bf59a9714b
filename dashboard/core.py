"""The dashboard's logic, free of Streamlit: scenario sources, knobs, what-ifs.

The pages describe UI only; everything they compute comes from here (wrapped in
``st.cache_data`` by ``dashboard.cached``) or from ``twin.api``,
``twin.scenario``, ``twin.report`` and ``twin.figures``.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from twin.api import Scenario, capacity, catalog_names, parse_scenario, simulate, with_overrides
from twin.api import parse_yaml as scenario_yaml
from twin.errors import ScenarioError, TwinError
from twin.units import SECONDS_PER_MINUTE

PRECISIONS = ("bf16", "fp16", "fp8", "tf32", "fp32")
SCHEDULES = ("gpipe", "1f1b", "interleaved")
RECOMPUTE = ("none", "selective", "full")


def scenario_dir() -> Path:
    """The shipped scenarios: ``scenarios/`` at the repository root."""
    return Path(__file__).resolve().parent.parent / "scenarios"


def shipped_scenarios(directory: Path) -> list[str]:
    """File names of the YAML scenarios in ``directory``, sorted."""
    return sorted(p.name for p in directory.glob("*.y*ml") if p.is_file())


def digest(text: str) -> str:
    """A short fingerprint of a scenario's text (keys widgets to the scenario they edit)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:10]


def decode_upload(name: str, data: bytes) -> str:
    """An uploaded file's text; a file that is not UTF-8 text is a ScenarioError."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioError("", f"{name}: not a text file (a scenario is UTF-8 YAML)") from None


def parse_yaml(text: str, source: str) -> dict[str, Any]:
    """YAML text → the raw scenario mapping (a syntax error names its line)."""
    data = scenario_yaml(text, source)
    if not isinstance(data, dict):
        raise ScenarioError("", f"{source}: the scenario must be a YAML mapping of keys "
                                "(name, cluster, site, training, failures)")
    return data


# ---------------------------------------------------------------------------
# Knobs: the main what-if dials, read from a scenario and written back as overrides


@dataclass(frozen=True)
class Knobs:
    node: str
    nodes: int
    spare_nodes: int
    tensor: int
    pipeline: int
    data: int                   # 0 = auto
    microbatch: int
    global_batch: int
    schedule: str
    recompute: str
    zero: int
    precision: str
    tokens_billion: float
    country: str
    pue: float
    gpu_power_cap_w: float      # 0 = no cap
    checkpoint_min: float       # 0 = auto (Young/Daly)
    failures: bool
    failure_profile: str
    workload: str = "training"  # the scenario's workload section; not a knob (serving shows fewer knobs)


# knob → (dotted scenario key, value written into the scenario; None deletes the key)
_KNOB_KEYS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "node": ("cluster.node", str),
    "nodes": ("cluster.nodes", int),
    "spare_nodes": ("cluster.spare_nodes", int),
    "tensor": ("training.parallelism.tensor", int),
    "pipeline": ("training.parallelism.pipeline", int),
    "data": ("training.parallelism.data", lambda v: int(v) if v else "auto"),
    "microbatch": ("training.parallelism.microbatch", int),
    "global_batch": ("training.global_batch", int),
    "schedule": ("training.parallelism.schedule", str),
    "recompute": ("training.parallelism.recompute", str),
    "zero": ("training.parallelism.zero", int),
    "precision": ("training.precision", str),
    "tokens_billion": ("training.tokens", lambda v: float(v) * 1e9),
    "country": ("site.country", lambda v: str(v).strip()),
    "pue": ("site.pue", float),
    "gpu_power_cap_w": ("cluster.gpu_power_cap", lambda v: f"{float(v):g} W" if v else None),
    "checkpoint_min": ("training.checkpoint.interval", lambda v: f"{float(v):g} min" if v else "auto"),
    "failures": ("failures.enabled", bool),
    "failure_profile": ("failures.profile", str),
}


# Knobs a serving scenario has (the rest stay at their value and are not shown).
SERVING_KNOBS = ("node", "nodes", "tensor", "pipeline", "precision", "country", "pue", "gpu_power_cap_w")
SERVING_PRECISIONS = ("bf16", "fp16", "fp8", "int8", "int4")


def knobs_from(scenario: Scenario) -> Knobs:
    """The knob values a scenario implies."""
    if scenario.serving is not None:
        return _serving_knobs(scenario)
    if scenario.jobs is not None:
        return _jobs_knobs(scenario)
    c, t, p = scenario.cluster, scenario.training, scenario.training.parallelism
    interval = t.checkpoint.interval
    return Knobs(
        node=c.node, nodes=c.nodes, spare_nodes=c.spare_nodes,
        tensor=p.tensor, pipeline=p.pipeline, data=0 if p.data == "auto" else p.data,
        microbatch=p.microbatch, global_batch=t.global_batch, schedule=p.schedule, recompute=p.recompute,
        zero=p.zero, precision=t.precision, tokens_billion=t.tokens / 1e9,
        country=scenario.site.country, pue=scenario.site.pue,
        gpu_power_cap_w=c.gpu_power_cap or 0.0,
        checkpoint_min=0.0 if interval == "auto" else interval / SECONDS_PER_MINUTE,
        failures=scenario.failures.enabled, failure_profile=scenario.failures.profile,
    )


def _serving_knobs(scenario: Scenario) -> Knobs:
    """A serving scenario's knobs: cluster, parallelism, precision and site; training's at neutral values."""
    c, sv = scenario.cluster, scenario.serving
    return Knobs(
        node=c.node, nodes=c.nodes, spare_nodes=c.spare_nodes, tensor=sv.parallelism.tensor,
        pipeline=sv.parallelism.pipeline, data=0, microbatch=1, global_batch=1, schedule="1f1b",
        recompute="selective", zero=1, precision=sv.precision, tokens_billion=1.0, country=scenario.site.country,
        pue=scenario.site.pue, gpu_power_cap_w=c.gpu_power_cap or 0.0, checkpoint_min=0.0, failures=False,
        failure_profile=scenario.failures.profile, workload="serving",
    )


def _jobs_knobs(scenario: Scenario) -> Knobs:
    """A cluster-operations scenario's knobs: the cluster, the site and failures; training's at neutral values
    (each job's plan is its template's)."""
    c = scenario.cluster
    return Knobs(
        node=c.node, nodes=c.nodes, spare_nodes=c.spare_nodes, tensor=1, pipeline=1, data=0, microbatch=1,
        global_batch=1, schedule="1f1b", recompute="selective", zero=1, precision="bf16", tokens_billion=1.0,
        country=scenario.site.country, pue=scenario.site.pue, gpu_power_cap_w=c.gpu_power_cap or 0.0,
        checkpoint_min=0.0, failures=scenario.failures.enabled, failure_profile=scenario.failures.profile,
        workload="jobs",
    )


def knob_changes(base: Knobs, chosen: Knobs) -> dict[str, Any]:
    """Dotted scenario keys whose knob moved, with the value to write (None: remove the key)."""
    changes = {}
    for f in fields(Knobs):
        before, after = getattr(base, f.name), getattr(chosen, f.name)
        if f.name != "workload" and before != after:
            key, convert = _KNOB_KEYS[f.name]
            if key.startswith("training.") and base.workload != "training":
                key = base.workload + key.removeprefix("training")
            changes[key] = convert(after)
    return changes


def apply_changes(raw: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """A new raw scenario with ``changes`` applied; a None value removes the key."""
    result = with_overrides(raw, {k: v for k, v in changes.items() if v is not None})
    for dotted in (k for k, v in changes.items() if v is None):
        node = result
        *parents, last = dotted.split(".")
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(last, None)
    return result


def base_scenario(text: str, source: str) -> dict[str, Any]:
    """A scenario's text → {"raw", "knobs", "error"}: what the knobs start from, or the one-line error."""
    try:
        raw = parse_yaml(text, source)
        scenario = parse_scenario(copy.deepcopy(raw), source)
    except ScenarioError as exc:
        return {"raw": None, "knobs": None, "error": str(exc)}
    return {"raw": raw, "knobs": asdict(knobs_from(scenario)), "error": None}


def evaluate(raw: dict[str, Any]) -> dict[str, Any]:
    """Simulate a raw scenario → {"result": Result dict or None, "error": one line or None}."""
    try:
        result = simulate(parse_scenario(copy.deepcopy(raw)))
    except TwinError as exc:
        return {"result": None, "error": str(exc)}
    return {"result": result.to_dict(), "error": None}


# Trial rates the Serving page adds to the capacity search, as fractions of the offline throughput,
# so that its latency-throughput curve spans light load to saturation.
SWEEP_FRACTIONS = (0.25, 0.5, 0.75, 0.9, 1.0, 1.2)


def serving_capacity(raw: dict[str, Any]) -> dict[str, Any]:
    """A serving scenario's capacity record with a rate sweep → {"result": dict or None, "error": one line}."""
    try:
        result = capacity(parse_scenario(copy.deepcopy(raw)), grid=SWEEP_FRACTIONS)
    except TwinError as exc:
        return {"result": None, "error": str(exc)}
    return {"result": result.to_dict(), "error": None}


def to_yaml(raw: dict[str, Any]) -> str:
    return yaml.safe_dump(raw, sort_keys=False, allow_unicode=True, width=100)


# ---------------------------------------------------------------------------
# Compare: one dimension, several values, one what-if each

@dataclass(frozen=True)
class Dimension:
    key: str                     # dotted scenario key
    label: str
    kind: str                    # "choice" (pick from options) or "text" (comma-separated values)
    parse: Callable[[str], Any]


def _bool(text: str) -> bool:
    value = str(text).strip().lower()
    if value in {"true", "on", "yes", "1"}:
        return True
    if value in {"false", "off", "no", "0"}:
        return False
    raise ValueError(f"'{text}' is not on/off")


DIMENSIONS: dict[str, Dimension] = {
    "node type": Dimension("cluster.node", "node", "choice", str),
    "country": Dimension("site.country", "country", "text", lambda s: s.strip().upper()),
    "precision": Dimension("training.precision", "precision", "choice", str),
    "spare nodes": Dimension("cluster.spare_nodes", "spares", "text", lambda s: int(s)),
    "nodes": Dimension("cluster.nodes", "nodes", "text", lambda s: int(s)),
    "failures": Dimension("failures.enabled", "failures", "choice", _bool),
    "PUE": Dimension("site.pue", "PUE", "text", lambda s: float(s)),
}


def dimension_options(name: str) -> list[str]:
    """The values offered for a "choice" dimension."""
    if name == "node type":
        return catalog_names("nodes")
    if name == "precision":
        return list(PRECISIONS)
    if name == "failures":
        return ["off", "on"]
    return []


def default_values(name: str, knobs: Knobs) -> list[str]:
    """A sensible first what-if along a dimension, from the current knobs."""
    if name == "node type":
        other = "dgx-a100-80gb" if "h100" in knobs.node else "dgx-h100"
        return [knobs.node, other] if other != knobs.node else [knobs.node]
    if name == "country":
        return list(dict.fromkeys([knobs.country.upper(), "FR", "DE", "US"]))
    if name == "precision":
        return list(dict.fromkeys([knobs.precision, "fp8" if knobs.precision != "fp8" else "bf16"]))
    if name == "spare nodes":
        return list(dict.fromkeys(["0", str(knobs.spare_nodes or 4)]))
    if name == "nodes":
        return list(dict.fromkeys([str(max(1, knobs.nodes // 2)), str(knobs.nodes), str(knobs.nodes * 2)]))
    if name == "failures":
        return ["off", "on"]
    if name == "PUE":
        return list(dict.fromkeys([f"{knobs.pue:g}", "1.1", "1.58"]))
    return []


def split_values(text: str) -> list[str]:
    return [v.strip() for v in str(text).split(",") if v.strip()]


def variants(raw: dict[str, Any], name: str, values: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """(label, raw scenario) for each value along a dimension; a value that does not parse is a ScenarioError."""
    dim = DIMENSIONS[name]
    out = []
    for text in values:
        try:
            value = dim.parse(text)
        except ValueError:
            raise ScenarioError(dim.key, f"'{text}' is not a valid {name}") from None
        out.append((f"{dim.label} {text}", with_overrides(raw, {dim.key: value})))
    return out


def cross_variants(raw: dict[str, Any], axes: list[tuple[str, list[str]]]) -> list[tuple[str, dict[str, Any]]]:
    """Every combination of values along several dimensions: (label "a · b", raw scenario)."""
    out: list[tuple[str, dict[str, Any]]] = [("", raw)]
    for name, values in axes:
        out = [(f"{label} · {sub}" if label else sub, variant)
               for label, base in out for sub, variant in variants(base, name, values)]
    return out


def results_json(items: list[dict[str, Any]]) -> str:
    """What-ifs (label, scenario, result or error) as one JSON document."""
    return json.dumps(items, indent=2)
