"""Compare page: what-ifs side by side, as bars and a table; JSON and CSV downloads."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard import cached, core
from dashboard.panel import Context
from dashboard.views import needs_result
from twin.figures import overview


def _axis(ctx: Context, slot: str, names: list[str], default: str) -> tuple[str, list[str]]:
    """One dimension to vary and its values (a pick list, or comma-separated text)."""
    left, right = st.columns([1, 2])
    name = left.selectbox("Vary" if slot == "first" else "…and across", names, index=names.index(default),
                          key=f"compare.dimension.{slot}" if slot != "first" else "compare.dimension")
    dim = core.DIMENSIONS[name]
    defaults = core.default_values(name, ctx.knobs)
    key = f"compare.values.{name}" if slot == "first" else f"compare.values.{slot}.{name}"
    if dim.kind == "choice":
        options = core.dimension_options(name)
        values = right.multiselect("Values", options, default=[v for v in defaults if v in options], key=key)
    else:
        values = core.split_values(right.text_input("Values (comma-separated)", ", ".join(defaults), key=key))
    return name, values


def render(ctx: Context) -> None:
    if ctx.raw is None or ctx.knobs is None or ctx.knobs.workload != "training":
        needs_result(ctx)
        return
    st.caption("Each what-if starts from the scenario with the sidebar's knobs applied.")
    names = list(core.DIMENSIONS)
    axes = [_axis(ctx, "first", names, "node type")]
    if st.toggle("Cross with a second dimension", key="compare.cross"):
        rest = [n for n in names if n != axes[0][0]]
        axes.append(_axis(ctx, "second", rest, "country" if "country" in rest else rest[0]))
    if any(name == "spare nodes" for name, _ in axes) and not ctx.knobs.failures:
        st.info("Spare nodes change the answer only when failures are simulated: turn on 'Simulate failures' "
                "(sidebar, Reliability).")
    try:
        variants = core.cross_variants(ctx.raw, axes)
    except core.ScenarioError as exc:
        st.error(str(exc))
        return
    if len(variants) < 2:
        st.info("Choose two or more values to compare.")
    if not variants or not all(values for _, values in axes):
        return

    rows: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []
    with st.spinner(f"Simulating {len(variants)} what-ifs…"):
        for label, raw in variants:
            answer = cached.evaluate(raw)
            rows.append(overview.summary_row(label, answer["result"], answer["error"]))
            items.append({"what-if": label, "scenario": raw, "result": answer["result"], "error": answer["error"]})
    for row in rows:
        if row.get("error"):
            st.error(f"{row['what-if']}: {row['error']}")
    if any(not row.get("error") for row in rows):
        st.plotly_chart(overview.compare_figure(rows), key="fig.compare")
    st.dataframe(rows, hide_index=True)
    a, b = st.columns(2)
    a.download_button("Download results (JSON)", core.results_json(items), file_name="what-ifs.json",
                      mime="application/json")
    b.download_button("Download table (CSV)", overview.rows_to_csv(rows), file_name="what-ifs.csv", mime="text/csv")
