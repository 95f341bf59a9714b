"""Compare page: pinned what-ifs against the scenario as written, then a grid of what-ifs along one or
two dimensions, as a table (metrics as rows) and grouped bars; JSON, CSV and report downloads."""

from __future__ import annotations

import streamlit as st

from dashboard import cached, core, export, whatifs
from dashboard.panel import Context
from dashboard.views import needs_result, table
from twin.figures.compare import compare_figure, rows_to_csv, side_by_side, summary_row


def _axis(ctx: Context, slot: str, first: str | None = None) -> None:
    """The widgets of one dimension to vary and its values (a pick list, or comma-separated text)."""
    assert ctx.knobs is not None
    name, values = whatifs.axis(st.session_state, ctx.knobs, slot, first)
    names = whatifs.dimension_names(slot, first)
    left, right = st.columns([1, 2])
    left.selectbox("Vary" if slot == "first" else "…and across", names, index=names.index(name),
                   key=whatifs.dimension_key(slot))
    name = st.session_state[whatifs.dimension_key(slot)]
    key = whatifs.values_key(slot, name)
    defaults = core.default_values(name, ctx.knobs)
    if core.DIMENSIONS[name].kind == "choice":
        options = core.dimension_options(name)
        right.multiselect("Values", options, default=[v for v in defaults if v in options], key=key)
    else:
        right.text_input("Values (comma-separated)", ", ".join(defaults), key=key)


def _pinned(ctx: Context) -> None:
    st.subheader("Pinned what-ifs")
    if not ctx.pins:
        st.caption("Move knobs in the sidebar and press **Pin these knobs** to keep a what-if here, beside the "
                   "scenario as written. Pinned what-ifs are part of the page's address: share it to share them.")
        return
    columns = whatifs.pinned_columns(ctx, cached.evaluate)
    st.caption("Each column against the scenario as written (first column); carbon and cost in every country.")
    table(side_by_side(columns, deltas=True, per_country=True))


def render(ctx: Context) -> None:
    if ctx.raw is None or ctx.knobs is None or ctx.knobs.workload != "training":
        needs_result(ctx)
        return
    _pinned(ctx)
    st.subheader("Vary one or two dimensions")
    st.caption("Each what-if starts from the scenario with the sidebar's knobs applied.")
    _axis(ctx, "first")
    if st.toggle("Cross with a second dimension", key=whatifs.CROSS_KEY):
        _axis(ctx, "second", st.session_state[whatifs.dimension_key("first")])
    grid = whatifs.axes(st.session_state, ctx.knobs)
    if any(name == "spare nodes" for name, _ in grid) and not ctx.knobs.failures:
        st.info("Spare nodes change the answer only when failures are simulated: turn on 'Simulate failures' "
                "(sidebar, Reliability).")
    if not all(values for _, values in grid):
        st.info("Choose one or more values for each dimension.")
        return
    try:
        with st.spinner("Simulating the what-ifs…"):
            columns = whatifs.compare_columns(ctx, grid, cached.evaluate)
    except core.ScenarioError as exc:
        st.error(str(exc))
        return
    for c in columns:
        if c.error:
            st.error(f"{c.name}: {c.error}")
    if any(c.result is not None for c in columns):
        st.plotly_chart(compare_figure(columns), key="fig.compare")
    table(side_by_side(columns))
    a, b, c = st.columns(3)
    items = [{"what-if": col.name, "dimensions": col.dims, "result": col.result, "error": col.error}
             for col in columns]
    a.download_button("Download results (JSON)", core.results_json(items), file_name="what-ifs.json",
                      mime="application/json", on_click="ignore")
    b.download_button("Download table (CSV)", rows_to_csv([summary_row(col) for col in columns]),
                      file_name="what-ifs.csv", mime="text/csv", on_click="ignore")
    with c:
        export.report_button(ctx, "compare")
