"""Job page: progress against wall time (failures, checkpoints), time-to-train spread, power over the run."""

from __future__ import annotations

import streamlit as st

from dashboard.panel import Context
from dashboard.views import figure, needs_result, preview_note
from twin.figures import overview
from twin.figures.building import data_path_figure, data_path_rows, pue_by_hour_figure, storage_use_figure
from twin.figures.job import job_progress_figure, time_to_train_figure
from twin.figures.power import power_timeline_figure
from twin.units import fmt_duration, fmt_si


def render(ctx: Context) -> None:
    if not needs_result(ctx):
        return
    r = ctx.result
    problem = overview.infeasibility(r)
    if problem:
        st.error(f"**{problem.title}**: {problem.detail}. See the Overview page for what would fix it.",
                 icon=":material/block:")
        return
    failures_on = bool(ctx.knobs and ctx.knobs.failures)
    ttt = overview.time_to_train_percentiles(r)
    cols = st.columns(5)
    cols[0].metric("Time to train (P10)", fmt_duration(ttt["p10"]))
    cols[1].metric("Time to train (P50)", fmt_duration(ttt["p50"]))
    cols[2].metric("Time to train (P90)", fmt_duration(ttt["p90"]))
    cols[3].metric("Interruptions (P50)", f"{r.get('interruptions', 0):,.0f}",
                   help="the median over the failure samples; the progress chart below draws one run, the one at "
                        "the median time to train, and counts that run's failures")
    cols[4].metric("Goodput", f"{100 * r.get('goodput', 1.0):.1f} %",
                   help="share of wall-clock time spent on steps that count")
    f = r.get("failures") or {}
    if f:
        cols = st.columns(5)
        cols[0].metric("Spare pool", f"{f.get('spare_nodes', 0):,} nodes",
                       help="spare nodes plus nodes the plan leaves idle, ready to replace a failed one")
        used = f.get("spares_used") or {}
        cols[1].metric("Spares used P50/P90", f"{used.get('p50', 0):.0f} / {used.get('p90', 0):.0f}",
                       help="nodes swapped in from the spare pool over the run (P50 / P90)")
        cols[2].metric("Time between failures", fmt_duration(f.get("mtbf_s", 0.0)),
                       help=f"mean, whole job; profile {f.get('profile', '')}")
        cols[3].metric("Checkpoint every", fmt_duration(f.get("checkpoint_interval_s", 0.0)))
        cols[4].metric("Lost work (P50)", fmt_duration((f.get("lost_work_s") or {}).get("p50", 0.0)),
                       help="steps redone after failures, since the last checkpoint")
        if f.get("source"):
            st.caption(f"Failure rates: {f['source']}")
        preview_note(ctx)
    hint = "not available in this result" if failures_on else \
        "not available: turn on 'Simulate failures' (sidebar, Reliability)"
    st.subheader("Progress of the run")
    figure("Job progress", job_progress_figure, r, available=bool((r.get("timeline") or {}).get("segments")))
    st.subheader("Time to train over failure samples")
    figure("Time-to-train distribution", time_to_train_figure, r, available=bool(r.get("failures")),
           missing=hint)
    st.subheader("Power over time")
    figure("Power timeline", power_timeline_figure, r,
           available=bool((r.get("power") or {}).get("timeline")))
    data_and_building(r)


def data_and_building(r: dict) -> None:
    """The data path and storage use (``training.data``), PUE by hour (``site.cooling``), when the scenario asks."""
    s, b = r.get("storage"), r.get("building")
    if s:
        st.subheader("Data path and storage")
        cols = st.columns(4)
        cols[0].metric("GPUs wait for data", f"{s['feed']['wait_s']:.3g} s/step")
        cols[1].metric("Read demanded", fmt_si(s["demand_Bps"], "B/s"))
        fit = s["use"]["fit"]
        cols[2].metric("Checkpoints that fit", "unbounded" if fit is None else f"{fit:,}",
                       help="beside the dataset on the file system")
        cols[3].metric("Checkpoint", fmt_si(s["checkpoint_bytes"], "B"))
        st.dataframe(data_path_rows(r), hide_index=True)
        figure("Data path", data_path_figure, r)
        figure("Storage use over the run", storage_use_figure, r, available=bool(s["use"]["used_bytes"]),
               missing="no checkpoint interval in this result")
    if b:
        st.subheader("The building")
        cols = st.columns(4)
        cols[0].metric("Yearly PUE", f"{b['pue']:.3f}")
        cols[1].metric("PUE range", f"{b['pue_min']:.3f}-{b['pue_max']:.3f}")
        cols[2].metric("Free-cooling hours", f"{b['free_cooling_hours']:,}")
        cols[3].metric("Chiller or adiabatic hours", f"{b['mechanical_hours']:,}")
        figure("PUE by hour", pue_by_hour_figure, r, available=bool(b.get("hourly_pue")))
        st.caption("Climate and cooling: " + "; ".join(b.get("sources") or []))
