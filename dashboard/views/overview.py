"""Overview page: headline numbers with units (or why the plan does not run), the parallel plan,
memory per GPU, countries."""

from __future__ import annotations

import json

import streamlit as st

from dashboard import cached, export
from dashboard.panel import Context
from dashboard.views import figure, headline, needs_result, preview_note, table
from twin.figures import overview
from twin.figures.power import country_comparison_figure
from twin.formatting import fmt_energy_kwh



def infeasible(problem: overview.Infeasible) -> None:
    """The error state drawn in place of the headline numbers."""
    st.error(f"**{problem.title}**: {problem.detail}. The numbers below it would be meaningless, so none "
             "are shown.", icon=":material/block:")
    st.markdown("**What would fix it**\n" + "\n".join(f"- {s}" for s in problem.suggestions))


def render(ctx: Context) -> None:
    if not needs_result(ctx):
        return
    r = ctx.result
    problem = overview.infeasibility(r)
    if problem:
        infeasible(problem)
    else:
        baseline = cached.evaluate(ctx.simulated(ctx.base_raw))["result"] if ctx.changes and ctx.base_raw else None
        metrics = overview.headline_metrics(r, baseline)
        headline(metrics)
        if baseline:
            st.caption("Changes are against the scenario as written (knobs untouched).")
        preview_note(ctx)
    for warning in r.get("warnings", []):
        if not (problem and warning.startswith(("does not fit", "did not finish"))):   # said above
            st.warning(warning)

    left, right = st.columns([2, 3], gap="large")
    with left:
        st.subheader("Parallel plan")
        st.caption((r.get("plan") or {}).get("description", ""))
        rows = overview.plan_rows(r)
        table(rows)
    with right:
        st.subheader("Memory per GPU")
        st.plotly_chart(overview.memory_figure(r), key="fig.memory")
        for advice in r.get("memory_advice", []):
            st.caption(advice)
    if problem:
        export.report_button(ctx, "overview")
        return
    st.subheader("Carbon and energy cost by country")
    st.caption(f"Facility energy {fmt_energy_kwh(r['energy_facility_kwh'])} (IT {fmt_energy_kwh(r['energy_it_kwh'])} "
               f"× PUE {r['pue']:.2f}) at each country's grid intensity and electricity price: the site, the "
               "scenario's `site.compare` list, and France and Germany side by side when either is the site.")
    figure("Country comparison", country_comparison_figure, r,
           available=bool((r.get("power") or {}).get("countries")), key="fig.countries")
    table(overview.country_rows(r))
    left, right = st.columns(2)
    with left:
        export.report_button(ctx, "overview")
    right.download_button("Download the result (JSON)", json.dumps(r, indent=2), file_name="result.json",
                          mime="application/json", on_click="ignore")
