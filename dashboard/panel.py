"""The sidebar: page choice, scenario source (shipped file or upload) and what-if knobs.

It returns a ``Context``: the scenario in use, the knobs' changes, and the
simulated result (or the one-line error that stops it), for the pages to draw.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
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
}
EDITS = "yaml_edits"          # session key: {source id: edited YAML text}
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
    knobs: core.Knobs | None = None
    changes: dict[str, Any] = field(default_factory=dict)
    base_raw: dict[str, Any] | None = None   # the scenario as written
    raw: dict[str, Any] | None = None    # the scenario with the knobs applied
    result: dict[str, Any] | None = None
    error: str | None = None             # the scenario with the knobs applied does not run


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
                        help="YAML files in scenarios/")
    upload = sb.file_uploader("…or upload a scenario (YAML)", type=["yaml", "yml"], key="upload")
    source_slot = sb.container()

    if upload is not None:
        data = upload.getvalue()
        try:
            original = core.decode_upload(upload.name, data)
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
    base = cached.base_scenario(ctx.text, ctx.source)
    if base["error"]:
        edited = " (as edited on the Scenario page)" if ctx.text != ctx.original else ""
        ctx.base_error = base["error"]
        source_slot.error(f"{base['error']}{edited}")
        return ctx
    if ctx.text != ctx.original:
        source_slot.caption("Using your edits of this file (Scenario page).")

    sb.header("What-if knobs")
    error_slot = sb.container()
    ctx.knobs = _knobs(core.Knobs(**base["knobs"]), core.digest(ctx.text))
    ctx.changes = core.knob_changes(core.Knobs(**base["knobs"]), ctx.knobs)
    ctx.base_raw = base["raw"]
    ctx.raw = core.apply_changes(base["raw"], ctx.changes)
    answer = cached.evaluate(ctx.raw)
    ctx.result, ctx.error = answer["result"], answer["error"]
    if ctx.error:
        error_slot.error(ctx.error)
    elif ctx.changes:
        error_slot.caption("Changed: " + ", ".join(f"{k} = {v}" for k, v in ctx.changes.items()))
    return ctx


def _choices(options: list[Any], current: Any) -> tuple[list[Any], int]:
    options = list(options)
    if current not in options:
        options.insert(0, current)
    return options, options.index(current)


def _knobs(base: core.Knobs, tag: str) -> core.Knobs:
    """One widget per knob, starting at the scenario's values; keyed to the scenario text."""
    b = asdict(base)

    def key(name: str) -> str:
        return f"knob.{tag}.{name}"

    def select(label: str, name: str, options: list[Any], **kw: Any) -> Any:
        opts, index = _choices(options, b[name])
        return st.selectbox(label, opts, index=index, key=key(name), **kw)

    def integer(label: str, name: str, minimum: int, **kw: Any) -> int:
        return int(st.number_input(label, min_value=minimum, value=int(b[name]), step=1, key=key(name), **kw))

    def number(label: str, name: str, minimum: float, step: float, fmt: str, **kw: Any) -> float:
        return float(st.number_input(label, min_value=minimum, value=float(b[name]), step=step, format=fmt,
                                     key=key(name), **kw))

    v: dict[str, Any] = dict(b)           # knobs a page does not show keep their value
    training = base.workload == "training"
    jobs = base.workload == "jobs"
    with st.sidebar.expander("Cluster", expanded=True):
        v["node"] = select("Node type", "node", catalog_names("nodes"), help="from the node catalog")
        v["nodes"] = integer("Nodes", "nodes", 1, help=NODES_HELP[base.workload])
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
    if training:
        with st.sidebar.expander("Training"):
            v["precision"] = select("Precision", "precision", list(core.PRECISIONS))
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
