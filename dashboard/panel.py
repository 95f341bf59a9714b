"""The sidebar: page choice, scenario source (shipped file or upload), what-if knobs and pinned what-ifs.

It returns a ``Context``: the scenario in use, the knobs' changes, the pinned
what-ifs, and the simulated result (or the one-line error that stops it), for
the pages to draw. Knobs that moved and pinned what-ifs are written into the
URL's query string (``?nodes=254&country=DE&pin=nodes:200``), so that a view
can be shared; a URL opened in a new session sets them back.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

import streamlit as st

from dashboard import cached, core
from twin.api import catalog_names

PAGES = {
    "scenario": "Scenario",
    "overview": "Overview",
    "cluster": "Cluster",
    "step": "Training step",
    "job": "Job",
    "compare": "Compare",
    "serving": "Serving",
    "operations": "Cluster operations",
    "study": "Study",
    "calibrate": "Calibrate",
}
EDITS = "yaml_edits"          # session key: {source id: edited YAML text}
PINS = "pins"                 # session key: {"source": source id, "items": [knob name → value, ...]}
STARTS = "knob_starts"        # session key: {widget tag: knob values the widgets start from}
URL_SOURCE = "url_source"     # session key: the source whose knobs the URL describes
REFINED = "refined"           # session key: fingerprint of the what-if run with all its failure samples
PIN_PARAM = "pin"
KNOB_NAMES = [f.name for f in fields(core.Knobs) if f.name != "workload"]   # the workload is not a knob
# What the Nodes knob counts, by workload section.
NODES_HELP = {"training": "nodes the job runs on", "serving": "nodes to serve on",
              "jobs": "nodes of the shared cluster"}


@dataclass
class Context:
    page: str
    source: str                          # file name of the scenario in use
    source_id: str                       # "file:NAME" or "upload:NAME:DIGEST"
    original: str                        # the text as loaded
    text: str                            # the text in use (the YAML editor's edits applied)
    base_error: str | None = None        # the YAML itself does not parse or validate
    base: dict[str, Any] = field(default_factory=dict)   # core.base_scenario of the text in use
    base_knobs: core.Knobs | None = None
    knobs: core.Knobs | None = None
    changes: dict[str, Any] = field(default_factory=dict)
    base_raw: dict[str, Any] | None = None   # the scenario as written
    raw: dict[str, Any] | None = None    # the scenario with the knobs applied
    result: dict[str, Any] | None = None
    error: str | None = None             # the scenario with the knobs applied does not run
    refined: bool = False                # every failure sample, not a preview
    pins: list[dict[str, Any]] = field(default_factory=list)   # pinned knob values (knob name → value)

    def simulated(self, raw: dict[str, Any], refined: bool | None = None) -> dict[str, Any]:
        """A raw what-if of this scenario as the dashboard simulates it (countries, preview samples)."""
        return core.displayed(raw, self.base, self.refined if refined is None else refined)

    def pinned_raw(self, pin: dict[str, Any]) -> dict[str, Any]:
        """The raw scenario of a pinned what-if."""
        assert self.base_knobs is not None and self.base_raw is not None
        return core.apply_changes(self.base_raw, core.knob_changes(self.base_knobs, replace(self.base_knobs, **pin)))

    @property
    def preview(self) -> tuple[int, int] | None:
        """(samples run, samples the scenario asks for) while failure statistics are a preview."""
        asked = self.base.get("samples", 1)
        if self.knobs is None or not self.knobs.failures or self.refined or asked <= core.PREVIEW_SAMPLES:
            return None
        return core.PREVIEW_SAMPLES, asked


def fingerprint(raw: dict[str, Any]) -> str:
    return hashlib.sha1(json.dumps(raw, sort_keys=True, default=str).encode()).hexdigest()[:16]


def refine(ctx: Context) -> None:
    """Run the current what-if (and its baseline) with every failure sample the scenario asks for."""
    st.session_state[REFINED] = fingerprint(ctx.raw or {})


# The page a scenario opens on, by its workload; training scenarios open on the Overview.
HOME_PAGES = {"training": "overview", "serving": "serving", "jobs": "operations"}
# The pages that draw one workload only.
WORKLOAD_OF_PAGE = {"overview": "training", "cluster": "training", "step": "training", "job": "training",
                    "compare": "training", "serving": "serving", "operations": "jobs"}


def _open_its_page(directory: str) -> None:
    """A newly chosen scenario opens on its own workload's page when the page shown draws another workload."""
    name = st.session_state.get("scenario_file")
    if not name:
        return
    base = cached.base_scenario(cached.read_scenario(directory, name), name)
    workload = (base.get("knobs") or {}).get("workload")
    page = st.session_state.get("page")
    if workload in HOME_PAGES and WORKLOAD_OF_PAGE.get(page, workload) != workload:
        st.session_state["page"] = HOME_PAGES[workload]


def sidebar() -> Context:
    """Draw the sidebar; evaluate the scenario it selects."""
    sb = st.sidebar
    sb.title("twin")
    sb.caption("Digital twin of GPU supercomputers for LLM training and serving")
    page = sb.radio("Page", list(PAGES), index=list(PAGES).index("overview"), format_func=PAGES.get, key="page",
                    bind="query-params")

    sb.header("Scenario")
    directory = str(core.scenario_dir())
    files = cached.shipped_scenarios(directory)
    default = files.index("superpod.yaml") if "superpod.yaml" in files else 0
    name = sb.selectbox("Shipped scenario", files, index=default, key="scenario_file", bind="query-params",
                        help="YAML files in scenarios/", on_change=_open_its_page, args=(directory,))
    limit_mb = int(st.get_option("server.maxUploadSize"))
    upload = sb.file_uploader("…or upload a scenario (YAML)", type=["yaml", "yml"], key="upload",
                              help=f"at most {limit_mb} MB")
    source_slot = sb.container()

    if upload is not None:
        try:
            original = core.decode_upload(upload.name, upload.getvalue(), limit_mb * 2**20)
        except core.ScenarioError as exc:
            source_slot.error(str(exc))
            return Context(page, upload.name, f"upload:{upload.name}", "", "", base_error=str(exc))
        ctx = Context(page, upload.name, f"upload:{upload.name}:{core.digest(original)}", original, original)
    elif name:
        original = cached.read_scenario(directory, name)
        ctx = Context(page, name, f"file:{name}", original, original)
    else:
        source_slot.info("No scenario in scenarios/: upload one.")
        return Context(page, "", "", "", "", base_error="no scenario chosen")

    ctx.text = st.session_state.get(EDITS, {}).get(ctx.source_id, ctx.original)
    ctx.base = cached.base_scenario(ctx.text, ctx.source)
    if ctx.base["error"]:
        edited = " (as edited on the Scenario page)" if ctx.text != ctx.original else ""
        ctx.base_error = ctx.base["error"]
        source_slot.error(f"{ctx.base['error']}{edited}")
        return ctx
    if ctx.text != ctx.original:
        source_slot.caption("Using your edits of this file (Scenario page).")

    sb.header("What-if knobs")
    error_slot = sb.container()
    ctx.base_knobs = core.Knobs(**ctx.base["knobs"])
    tag = core.digest(ctx.text)
    ctx.knobs = _knobs(_starts(ctx, tag), tag)
    ctx.changes = core.knob_changes(ctx.base_knobs, ctx.knobs)
    ctx.base_raw = ctx.base["raw"]
    ctx.raw = core.apply_changes(ctx.base_raw, ctx.changes)
    ctx.refined = st.session_state.get(REFINED) == fingerprint(ctx.raw)
    answer = cached.evaluate(ctx.simulated(ctx.raw))
    ctx.result, ctx.error = answer["result"], answer["error"]
    if ctx.error:
        error_slot.error(ctx.error)
    elif ctx.changes:
        error_slot.caption("Changed: " + ", ".join(f"{k} = {v}" for k, v in ctx.changes.items()))
    _pins(ctx)
    _write_url(ctx)
    return ctx


# ---------------------------------------------------------------------------
# The URL: knobs that moved and pinned what-ifs


def _starts(ctx: Context, tag: str) -> core.Knobs:
    """The values the knob widgets start from: the URL's on a session's first look at a scenario,
    else the scenario's own. Pinned what-ifs come from the URL likewise."""
    assert ctx.base_knobs is not None
    starts = st.session_state.setdefault(STARTS, {})
    if tag not in starts:
        first_visit = st.session_state.get(URL_SOURCE) is None
        params = st.query_params
        if first_visit:
            url_knobs = {name: params[name] for name in KNOB_NAMES if name in params}
            starts[tag] = asdict(core.knobs_with(ctx.base_knobs, url_knobs))
            pins = [core.read_pin(ctx.base_knobs, text) for text in params.get_all(PIN_PARAM)]
            st.session_state[PINS] = {"source": ctx.source_id, "items": [p for p in pins if p]}
        else:
            starts[tag] = asdict(ctx.base_knobs)
    st.session_state[URL_SOURCE] = ctx.source_id
    if st.session_state.get(PINS, {}).get("source") != ctx.source_id:
        st.session_state[PINS] = {"source": ctx.source_id, "items": []}
    return core.Knobs(**starts[tag])


def _write_url(ctx: Context) -> None:
    """Knobs that differ from the scenario, and pinned what-ifs, into the query string."""
    assert ctx.base_knobs is not None and ctx.knobs is not None
    moved = {name: core.knob_text(v) for name, v in core.moved(ctx.base_knobs, ctx.knobs).items()}
    params = st.query_params
    for name in KNOB_NAMES:
        if name in moved and params.get(name) != moved[name]:
            params[name] = moved[name]
        elif name not in moved and name in params:
            del params[name]
    pins = [core.pin_text(p) for p in ctx.pins]
    if params.get_all(PIN_PARAM) != pins:
        if pins:
            params[PIN_PARAM] = pins
        elif PIN_PARAM in params:
            del params[PIN_PARAM]


# ---------------------------------------------------------------------------
# Pinned what-ifs


def _pin(ctx: Context) -> None:
    assert ctx.base_knobs is not None and ctx.knobs is not None
    st.session_state[PINS]["items"].append(core.moved(ctx.base_knobs, ctx.knobs))


def _unpin(index: int) -> None:
    st.session_state[PINS]["items"].pop(index)


def _pins(ctx: Context) -> None:
    """The pin button and the list of pinned what-ifs (shown side by side on the Compare page)."""
    assert ctx.base_knobs is not None and ctx.knobs is not None
    ctx.pins = st.session_state[PINS]["items"]
    current = core.moved(ctx.base_knobs, ctx.knobs)
    label = core.pin_label(len(ctx.pins))
    sb = st.sidebar
    sb.button(f"Pin these knobs as what-if {label}", on_click=_pin, args=(ctx,), key="pin.add",
              disabled=not current or current in ctx.pins, icon=":material/push_pin:",
              help="Keep this what-if to compare it with the scenario as written (Compare page); "
                   "move a knob first" if not current else "Compare page: the scenario and each pinned what-if")
    for i, pin in enumerate(ctx.pins):
        text, remove = sb.columns([5, 1], vertical_alignment="center")
        text.caption(f"**{core.pin_label(i)}**: {core.describe_pin(pin)}")
        remove.button("✕", key=f"pin.remove.{i}", on_click=_unpin, args=(i,), help=f"unpin {core.pin_label(i)}")


# ---------------------------------------------------------------------------
# Knob widgets


def _choices(options: list[Any], current: Any) -> tuple[list[Any], int]:
    options = list(options)
    if current not in options:
        options.insert(0, current)
    return options, options.index(current)


def _knobs(start: core.Knobs, tag: str) -> core.Knobs:
    """One widget per knob, starting at ``start``; keyed to the scenario text."""
    b = asdict(start)

    def key(name: str) -> str:
        return f"knob.{tag}.{name}"

    def select(label: str, name: str, options: list[Any], **kw: Any) -> Any:
        opts, index = _choices(options, b[name])
        return st.selectbox(label, opts, index=index, key=key(name), **kw)

    def integer(label: str, name: str, minimum: int, **kw: Any) -> int:
        return int(st.number_input(label, min_value=minimum, value=max(minimum, int(b[name])), step=1,
                                   key=key(name), **kw))

    def number(label: str, name: str, minimum: float, step: float, fmt: str, **kw: Any) -> float:
        return float(st.number_input(label, min_value=minimum, value=max(minimum, float(b[name])), step=step,
                                     format=fmt, key=key(name), **kw))

    v: dict[str, Any] = dict(b)           # knobs a page does not show keep their value
    training = start.workload == "training"
    jobs = start.workload == "jobs"
    with st.sidebar.expander("Cluster", expanded=True):
        v["node"] = select("Node type", "node", catalog_names("nodes"), help="from the node catalog")
        v["nodes"] = integer("Nodes", "nodes", 1, help=NODES_HELP[start.workload])
        if training or jobs:
            v["spare_nodes"] = integer("Spare nodes", "spare_nodes", 0, help="hot spares that replace failed nodes")
    if not jobs:
        with st.sidebar.expander("Parallel plan" if training else "Replica"):
            v["tensor"] = select("Tensor parallel (TP)", "tensor", [1, 2, 4, 8, 16, 32])
            v["pipeline"] = integer("Pipeline parallel (PP)", "pipeline", 1)
            if training:
                v["data"] = integer("Data parallel (DP; 0 = auto)", "data", 0)
                v["microbatch"] = integer("Micro-batch [sequences]", "microbatch", 1)
                v["global_batch"] = integer("Global batch [sequences]", "global_batch", 1)
                v["schedule"] = select("Pipeline schedule", "schedule", list(core.SCHEDULES))
                v["recompute"] = select("Activation recomputation", "recompute", list(core.RECOMPUTE))
                v["zero"] = select("ZeRO stage", "zero", [0, 1, 2, 3])
            else:
                v["precision"] = select("Precision", "precision", list(core.SERVING_PRECISIONS),
                                        help="weights and GEMMs; int4 is weight-only")
                v["engine"] = select("Serving engine", "engine", catalog_names("engines"),
                                     help="an engine release: its scheduler's rules, its costs per iteration and "
                                          "the validation rows that band its answers (catalog engines.yaml)")
    if training:
        with st.sidebar.expander("Training"):
            v["precision"] = select("Precision", "precision", list(core.PRECISIONS))
            v["stack"] = select("Software stack", "stack", catalog_names("stacks"),
                                help="the framework the step is priced for: its kernels, overlaps and what its "
                                     "activations and loss hold (catalog stacks.yaml; docs/model.md §7)")
            v["tokens_billion"] = number("Tokens [billion]", "tokens_billion", 0.001, 10.0, "%.1f")
    with st.sidebar.expander("Site and power"):
        v["country"] = st.text_input("Country (ISO code)", value=b["country"], key=key("country"),
                                     help="ISO 3166 alpha-2 (FR) or alpha-3 (FRA)")
        v["pue"] = number("PUE [facility W / IT W]", "pue", 1.0, 0.01, "%.2f")
        v["gpu_power_cap_w"] = number("GPU power cap [W] (0 = none)", "gpu_power_cap_w", 0.0, 25.0, "%.0f")
    if training or jobs:
        with st.sidebar.expander("Reliability"):
            if training:
                v["checkpoint_min"] = number("Checkpoint interval [min] (0 = auto)", "checkpoint_min", 0.0, 5.0,
                                             "%.1f")
            v["failures"] = st.toggle("Simulate failures", value=b["failures"], key=key("failures"))
            v["failure_profile"] = select("Failure profile", "failure_profile", catalog_names("failure_profiles"))
    return core.Knobs(**v)
