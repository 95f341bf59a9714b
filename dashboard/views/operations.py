"""Cluster operations page: many jobs on one cluster: utilisation and queue over time, power against the
facility limit, a Gantt of jobs on nodes, wait distributions per tenant, the placement map on scalable units,
and energy, carbon and cost per tenant."""

from __future__ import annotations

import json

import streamlit as st

from dashboard import cached, core
from dashboard.panel import Context
from dashboard.views import figure, headline, needs_result
from twin.figures import operations as ops
from twin.formatting import fmt_co2e_kg
from twin.units import SECONDS_PER_DAY, fmt_duration

POLICIES = {"fifo": "FIFO", "backfill": "EASY backfill", "priority": "priority, fair share, backfill"}
PLACEMENTS = {"topology": "topology-aware", "first-fit": "first fit"}



def _what_if(ctx: Context) -> tuple[dict, str | None]:
    """The scheduler policy and placement as page knobs: the result with them applied."""
    written = ((ctx.raw or {}).get("jobs") or {}).get("scheduler") or {}
    current = {"policy": written.get("policy", "backfill"), "placement": written.get("placement", "topology")}
    left, right = st.columns(2)
    chosen = {
        "policy": left.selectbox("Scheduler policy", list(POLICIES), format_func=POLICIES.get,
                                 index=list(POLICIES).index(current["policy"]), key="ops.policy"),
        "placement": right.selectbox("Placement", list(PLACEMENTS), format_func=PLACEMENTS.get,
                                     index=list(PLACEMENTS).index(current["placement"]), key="ops.placement"),
    }
    changes = {f"jobs.scheduler.{k}": v for k, v in chosen.items() if v != current[k]}
    if not changes:
        return ctx.result, None
    answer = cached.evaluate(core.apply_changes(ctx.raw, changes))
    st.caption("With " + ", ".join(f"`{k}` = {v}" for k, v in changes.items()))
    return answer["result"], answer["error"]


def render(ctx: Context) -> None:
    if not needs_result(ctx, "jobs"):
        return
    r, error = _what_if(ctx)
    if error:
        st.error(f"This what-if does not run: {error}")
        return
    metrics = ops.headline_metrics(r)
    headline(metrics)
    for warning in r["warnings"]:
        st.warning(warning)
    aware = r["carbon_aware"]
    if aware:
        site = r["country"]
        st.info(f"Carbon-aware policy: {aware['deferred_jobs']:,} deferrable jobs held "
                f"{fmt_duration(aware['mean_hold_s'])} on average save "
                + ", ".join(f"{fmt_co2e_kg(kg)} in {code}" for code, kg in aware["saved_kg"].items())
                + f" against the same jobs without it (mean wait {fmt_duration(aware['mean_wait_s'] or 0.0)} "
                f"against {fmt_duration(aware['baseline_mean_wait_s'] or 0.0)}; {site} is the site).")

    st.subheader("Utilisation and queue over time")
    figure("Utilisation", ops.utilisation_figure, r, available=bool(r["timeline"]["start_s"]), key="fig.ops.use")
    st.subheader("Power against the facility limit")
    figure("Power", ops.power_figure, r, available=bool(r["timeline"]["start_s"]), key="fig.ops.power")
    st.subheader("Jobs on nodes")
    figure("Gantt", ops.gantt_figure, r, available=any(j["nodes"] for j in r["jobs"]), missing="no job started",
           key="fig.ops.gantt")
    st.subheader("Queue wait per tenant and job size")
    figure("Waits", ops.wait_figure, r, available=any(j["wait_s"] is not None for j in r["jobs"]),
           missing="no job started", key="fig.ops.wait")
    st.dataframe(ops.size_rows(r), hide_index=True)
    st.subheader("Placement on the scalable units")
    end_day = max(r["makespan_s"], 1.0) / SECONDS_PER_DAY
    day = st.slider("Day", 0.0, float(end_day), float(ops.busiest_time_s(r) / SECONDS_PER_DAY), key="ops.day",
                    help="starts at the busiest hour")
    figure("Placement", ops.placement_figure, r, day * SECONDS_PER_DAY, key="fig.ops.placement")
    st.subheader("Energy, carbon and cost per tenant")
    st.dataframe(ops.tenant_rows(r), hide_index=True)
    st.download_button("Download the result (JSON)", json.dumps(r), file_name="operations-result.json",
                       mime="application/json")
