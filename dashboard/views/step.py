"""Training step page: a Gantt chart of one step and where the step's time goes (one colour per part)."""

from __future__ import annotations

import streamlit as st

from dashboard.panel import Context
from dashboard.views import figure, needs_result, table
from twin.figures.step import step_breakdown_figure, step_gantt_figure, step_parts_rows
from twin.formatting import fmt_duration_s, fmt_number


def render(ctx: Context) -> None:
    if not needs_result(ctx):
        return
    r = ctx.result
    st.caption(f"One step: {fmt_duration_s(r['step_time_s'])} for {fmt_number(r['tokens_per_step'])} tokens; "
               f"bottleneck: {r['bottleneck']}.")
    st.subheader("One step, stage by stage")
    figure("Step Gantt chart", step_gantt_figure, r, available=bool(r.get("step_timeline")))
    st.subheader("Step-time breakdown")
    figure("Step-time breakdown", step_breakdown_figure, r)
    table(step_parts_rows(r))
