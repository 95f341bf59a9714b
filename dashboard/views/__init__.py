"""One module per dashboard page; each has ``render(ctx)`` and describes UI only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from dashboard import panel
from dashboard.panel import PAGES, Context
from twin.figures.overview import Metric

HEADLINE_PER_ROW = 4        # headline numbers per row: each box wide enough for its value at a laptop's width

# Each workload section in words, and where its results are drawn.
WORKLOAD_NAMES = {"training": "training", "serving": "serving", "jobs": "many jobs on one cluster (jobs:)"}
WORKLOAD_PAGES = {"training": "the Overview page and the training pages", "serving": "the Serving page",
                  "jobs": "the Cluster operations page"}


def render(ctx: Context) -> None:
    """Draw the page the sidebar selected."""
    from dashboard.views import calibrate, cluster, compare, job, operations, overview, scenario, serving, step, study

    pages: dict[str, Callable[[Context], None]] = {
        "scenario": scenario.render, "overview": overview.render, "cluster": cluster.render,
        "step": step.render, "job": job.render, "compare": compare.render, "serving": serving.render,
        "operations": operations.render, "study": study.render, "calibrate": calibrate.render,
    }
    st.title(PAGES[ctx.page])
    if ctx.result:
        what_if = "; what-if: " + ", ".join(f"`{k}` = {v}" for k, v in ctx.changes.items()) if ctx.changes else ""
        st.caption(f"**{ctx.result['scenario']}** — {ctx.source}{what_if}")
    pages[ctx.page](ctx)


def needs_result(ctx: Context, workload: str = "training") -> bool:
    """True when there is a result of ``workload`` to draw; otherwise say why not (one line, never a traceback)."""
    if ctx.knobs is not None and ctx.knobs.workload != workload:
        other = WORKLOAD_PAGES[ctx.knobs.workload]
        st.info(f"This page is for {WORKLOAD_NAMES[workload]} scenarios; {ctx.source} describes "
                f"{WORKLOAD_NAMES[ctx.knobs.workload]}: see {other}.")
        return False
    if ctx.result is not None:
        return True
    if ctx.base_error:
        st.error(f"The scenario is not valid: {ctx.base_error}")
        st.info("Fix it on the Scenario page, or choose another file in the sidebar.")
    elif ctx.error:
        st.error(f"This what-if does not run: {ctx.error}")
        st.info("Move the knob named above back, or change another one.")
    return False


def preview_note(ctx: Context) -> None:
    """While failure statistics come from fewer samples than the scenario asks for: say so, offer to refine."""
    preview = ctx.preview
    if preview is None:
        return
    run, asked = preview
    text, button = st.columns([4, 1], vertical_alignment="center")
    text.info(f"Failure statistics from {run} of the scenario's {asked} samples while you explore; "
              f"**Refine** runs all {asked} (slower).", icon=":material/speed:")
    button.button(f"Refine: {asked} samples", on_click=panel.refine, args=(ctx,), key=f"refine.{ctx.page}")


def headline(metrics: list[Metric]) -> None:
    """Headline numbers in bordered boxes, HEADLINE_PER_ROW to a row, each with its change when it has one."""
    for start in range(0, len(metrics), HEADLINE_PER_ROW):
        for col, m in zip(st.columns(HEADLINE_PER_ROW), metrics[start:start + HEADLINE_PER_ROW]):
            col.metric(m.label, m.value, delta=m.delta, delta_color="inverse" if m.lower_is_better else "normal",
                       help=m.help or None, border=True)


def table(rows: list[dict[str, Any]]) -> None:
    """A table tall enough to show every row (no inner scrolling)."""
    st.dataframe(rows, hide_index=True, height=35 * (len(rows) + 1) + 3)


def figure(what: str, fn: Callable[..., Any], *args: Any, available: bool = True,
           missing: str = "not available in this result", key: str | None = None) -> bool:
    """Draw the figure ``fn(*args)`` builds; a note instead when its data is missing."""
    if not available:
        st.info(f"{what}: {missing}.")
        return False
    try:
        fig = fn(*args)
    except Exception as exc:  # a figure must never take the page down with it
        st.error(f"{what} could not be drawn: {type(exc).__name__}: {exc}")
        return False
    st.plotly_chart(fig, key=key or f"fig.{fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}")
    return True
