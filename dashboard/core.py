"""The dashboard's logic, free of Streamlit: scenario sources, knobs, what-ifs, the URL.

The pages describe UI only; everything they compute comes from here (wrapped in
``st.cache_data`` by ``dashboard.cached``) or from ``twin.api``,
``twin.report`` and ``twin.figures``.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import yaml

from twin.api import (PRECISIONS, SCHEDULES, SERVING_PRECISIONS, Scenario, capacity, catalog_names, decode, parse_scenario,
                      simulate, with_overrides)
from twin.api import RECOMPUTES as RECOMPUTE
from twin.api import parse_yaml as scenario_yaml
from twin.errors import ScenarioError, TwinError
from twin.units import SECONDS_PER_MINUTE


def scenario_dir() -> Path:
    """The shipped scenarios: ``scenarios/`` at the repository root."""
    return Path(__file__).resolve().parent.parent / "scenarios"


def shipped_scenarios(directory: Path) -> list[str]:
    """File names of the YAML scenarios in ``directory``, sorted."""
    return sorted(p.name for p in directory.glob("*.y*ml") if p.is_file())


def digest(text: str) -> str:
    """A short fingerprint of a scenario's text (keys widgets to the scenario they edit)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:10]


def decode_upload(name: str, data: bytes, limit_bytes: int) -> str:
    """An uploaded file's text, with a scenario file's guarantees (UTF-8 text, no binary, bounded size);
    a file over the dashboard's ``limit_bytes`` or not a scenario's text is a ScenarioError."""
    if len(data) > limit_bytes:
        raise ScenarioError("", f"{name}: {len(data):,} bytes, more than the {limit_bytes:,}-byte upload limit "
                                "(a scenario is a few kB of YAML)")
    return decode(data, name)


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
    engine: str = ""            # the serving engine profile (catalog engines.yaml); "" where nothing is served
    stack: str = ""             # the training stack profile (catalog stacks.yaml); "" where nothing trains


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
    "engine": ("serving.engine.profile", str),
    "stack": ("training.stack", str),     # a profile by name: a mapping's own overrides give way to the profile's
}


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
        stack=t.stack_name,
    )


def _serving_knobs(scenario: Scenario) -> Knobs:
    """A serving scenario's knobs: cluster, parallelism, precision and site; training's at neutral values."""
    c, sv = scenario.cluster, scenario.serving
    return Knobs(
        node=c.node, nodes=c.nodes, spare_nodes=c.spare_nodes, tensor=sv.parallelism.tensor,
        pipeline=sv.parallelism.pipeline, data=0, microbatch=1, global_batch=1, schedule="1f1b",
        recompute="selective", zero=1, precision=sv.precision, tokens_billion=1.0, country=scenario.site.country,
        pue=scenario.site.pue, gpu_power_cap_w=c.gpu_power_cap or 0.0, checkpoint_min=0.0, failures=False,
        failure_profile=scenario.failures.profile, workload="serving", engine=sv.engine.profile,
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


def moved(base: Knobs, chosen: Knobs) -> dict[str, Any]:
    """The knobs that differ from the scenario's values: knob name → chosen value."""
    return {f.name: getattr(chosen, f.name) for f in fields(Knobs) if getattr(base, f.name) != getattr(chosen, f.name)}


def _knob_value(base: Knobs, name: str, text: str) -> Any:
    """A knob's value read back from text, as the type the scenario gave it; ValueError when it does not read."""
    kind = type(getattr(base, name))
    if kind is bool:
        return _bool(text)
    return kind(text)


def knobs_with(base: Knobs, values: dict[str, str]) -> Knobs:
    """The scenario's knobs with some set from text (a URL's query string); unknown names and values
    that do not read are left out."""
    known = {f.name for f in fields(Knobs)} - {"workload"}       # the workload is the scenario's, not a knob
    chosen = {}
    for name, text in values.items():
        if name in known:
            try:
                chosen[name] = _knob_value(base, name, text)
            except ValueError:
                continue
    return replace(base, **chosen)


def knob_text(value: Any) -> str:
    """A knob value as it is written in the URL: 'true', '254', '1.5', 'DE'."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def pin_text(pin: dict[str, Any]) -> str:
    """A pinned what-if as one URL value: 'nodes:254,country:DE'."""
    return ",".join(f"{name}:{knob_text(value)}" for name, value in pin.items())


def read_pin(base: Knobs, text: str) -> dict[str, Any]:
    """A pinned what-if from its URL value (``pin_text``); parts that do not read are left out."""
    pairs = dict(part.split(":", 1) for part in str(text).split(",") if ":" in part)
    return moved(base, knobs_with(base, pairs))


def pin_label(index: int) -> str:
    """A, B, ... Z, then AA, AB, ..."""
    label = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        label = chr(ord("A") + rest) + label
    return label


def describe_pin(pin: dict[str, Any]) -> str:
    """A pinned what-if in words: 'nodes = 254, country = DE'."""
    return ", ".join(f"{name.replace('_', ' ')} = {knob_text(value)}" for name, value in pin.items())


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


def one_line(exc: BaseException) -> str:
    """An exception as the one line a user reads: the twin's own message, or what failed inside."""
    text = " ".join(str(exc).split())
    if isinstance(exc, TwinError):
        return text
    return f"internal error: {type(exc).__name__}: {text[:300]}"


def base_scenario(text: str, source: str) -> dict[str, Any]:
    """A scenario's text → {"raw", "knobs", "compare", "samples", "error"}: what the knobs start from
    (and the site's comparison list, the failure samples asked for), or the one-line error."""
    try:
        raw = parse_yaml(text, source)
        scenario = parse_scenario(copy.deepcopy(raw), source)
        knobs = asdict(knobs_from(scenario))
    except Exception as exc:  # noqa: BLE001 - whatever a file holds, the user reads one line, never a traceback
        return {"raw": None, "knobs": None, "compare": [], "samples": 1, "error": one_line(exc)}
    return {"raw": raw, "knobs": knobs, "compare": list(scenario.site.compare), "samples": scenario.failures.samples,
            "error": None}


def evaluate(raw: dict[str, Any]) -> dict[str, Any]:
    """Simulate a raw scenario → {"result": Result dict or None, "error": one line or None}."""
    try:
        result = simulate(parse_scenario(copy.deepcopy(raw)))
        return {"result": result.to_dict(), "error": None}
    except Exception as exc:  # noqa: BLE001 - the page shows one line, never a traceback
        return {"result": None, "error": one_line(exc)}


# ---------------------------------------------------------------------------
# What the dashboard simulates: the what-if, with its countries and (while exploring) fewer failure samples

# Failure samples while knobs move; "Refine" runs the scenario's own count. 20 samples put the
# median within a few hours of the 100-sample one on the 16,384-GPU scenario (docs/dashboard.md).
PREVIEW_SAMPLES = 20
PAIRED_COUNTRIES = ("FR", "DE")


def compared_countries(written_site: str, written_compare: list[str], site: str) -> list[str]:
    """The countries a what-if is compared with: the scenario's list and its own site (when a knob moved
    the site elsewhere), and FR and DE both when either is the site."""
    codes = [*written_compare, written_site]
    if site.strip().upper() in PAIRED_COUNTRIES:
        codes += PAIRED_COUNTRIES
    site_code = site.strip().upper()
    return [c for c in dict.fromkeys(str(c).strip().upper() for c in codes) if c != site_code]


def displayed(raw: dict[str, Any], base: dict[str, Any], refine: bool) -> dict[str, Any]:
    """The raw what-if as the dashboard simulates it: its countries completed (``compared_countries``)
    and, unless refined, at most PREVIEW_SAMPLES failure samples."""
    knobs = base["knobs"]
    site = str((raw.get("site") or {}).get("country", knobs["country"]))
    changes: dict[str, Any] = {"site.compare": compared_countries(knobs["country"], base["compare"], site)}
    if not refine and base["samples"] > PREVIEW_SAMPLES:
        changes["failures.samples"] = PREVIEW_SAMPLES
    return with_overrides(raw, changes)


# Trial rates the Serving page adds to the capacity search, as fractions of the offline throughput,
# so that its latency-throughput curve spans light load to saturation.
SWEEP_FRACTIONS = (0.25, 0.5, 0.75, 0.9, 1.0, 1.2)


def serving_capacity(raw: dict[str, Any]) -> dict[str, Any]:
    """A serving scenario's capacity record with a rate sweep → {"result": dict or None, "error": one line}."""
    try:
        result = capacity(parse_scenario(copy.deepcopy(raw)), grid=SWEEP_FRACTIONS)
        return {"result": result.to_dict(), "error": None}
    except Exception as exc:  # noqa: BLE001 - the page shows one line, never a traceback
        return {"result": None, "error": one_line(exc)}


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


def _power_cap(text: str) -> str | None:
    """'550' or '550 W' → '550 W'; 'none', 'off' or '0' → no cap (the key removed)."""
    value = str(text).strip()
    if value.lower() in {"none", "off", "0", "no"}:
        return None
    try:
        return f"{float(value):g} W"
    except ValueError:
        return value


DIMENSIONS: dict[str, Dimension] = {
    "node type": Dimension("cluster.node", "node", "choice", str),
    "nodes": Dimension("cluster.nodes", "nodes", "text", lambda s: int(s)),
    "spare nodes": Dimension("cluster.spare_nodes", "spares", "text", lambda s: int(s)),
    "precision": Dimension("training.precision", "precision", "choice", str),
    "tokens": Dimension("training.tokens", "tokens", "text", lambda s: s.strip()),
    "global batch": Dimension("training.global_batch", "global batch", "text", lambda s: int(s)),
    "power cap": Dimension("cluster.gpu_power_cap", "power cap", "text", _power_cap),
    "country": Dimension("site.country", "country", "text", lambda s: s.strip().upper()),
    "PUE": Dimension("site.pue", "PUE", "text", lambda s: float(s)),
    "failures": Dimension("failures.enabled", "failures", "choice", _bool),
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
    if name == "tokens":
        return list(dict.fromkeys([f"{knobs.tokens_billion / 2:g}B", f"{knobs.tokens_billion:g}B"]))
    if name == "global batch":
        return list(dict.fromkeys([str(max(1, knobs.global_batch // 2)), str(knobs.global_batch)]))
    if name == "power cap":
        return ["none", "550 W", "450 W"]
    if name == "failures":
        return ["off", "on"]
    if name == "PUE":
        return list(dict.fromkeys([f"{knobs.pue:g}", "1.1", "1.58"]))
    return []


def split_values(text: str) -> list[str]:
    """Comma-separated values, each once, in order."""
    return list(dict.fromkeys(v.strip() for v in str(text).split(",") if v.strip()))


def variants(raw: dict[str, Any], name: str, values: list[str]) -> list[tuple[dict[str, str], dict[str, Any]]]:
    """({dimension: value}, raw scenario) for each value along a dimension; a value that does not
    parse is a ScenarioError."""
    dim = DIMENSIONS[name]
    out = []
    for text in values:
        try:
            value = dim.parse(text)
        except ValueError:
            raise ScenarioError(dim.key, f"'{text}' is not a valid {name}") from None
        out.append(({name: text}, apply_changes(raw, {dim.key: value})))
    return out


def cross_variants(raw: dict[str, Any],
                   axes: list[tuple[str, list[str]]]) -> list[tuple[dict[str, str], dict[str, Any]]]:
    """Every combination of values along several dimensions: ({dimension: value, ...}, raw scenario)."""
    out: list[tuple[dict[str, str], dict[str, Any]]] = [({}, raw)]
    for name, values in axes:
        out = [(dims | sub, variant) for dims, base in out for sub, variant in variants(base, name, values)]
    return out


def variant_name(dims: dict[str, str]) -> str:
    """A what-if's column name: its dimension values, 'bf16 · FR'."""
    return " · ".join(dims.values())


def results_json(items: list[dict[str, Any]]) -> str:
    """What-ifs (label, scenario, result or error) as one JSON document."""
    return json.dumps(items, indent=2)
