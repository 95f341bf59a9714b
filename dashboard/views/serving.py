"""Serving page: latency against throughput over a rate sweep with the SLO, GPUs for a target rate,
and cost, energy and carbon per million output tokens by country."""

from __future__ import annotations

import json

import streamlit as st

from dashboard import cached
from dashboard.panel import Context
from dashboard.views import figure, headline, needs_result
from twin.api import gpus_for_rate
from twin.figures import serving
from twin.formatting import fmt_energy_kwh


def _headline(ctx: Context) -> None:
    """The headline numbers, with their changes against the scenario as written when a knob moved."""
    r = ctx.result
    baseline = cached.evaluate(ctx.simulated(ctx.base_raw))["result"] if ctx.changes and ctx.base_raw else None
    headline(serving.headline_metrics(r, baseline))
    st.caption(r["label"] + ("; changes are against the scenario as written (knobs untouched)." if baseline else ""))
    for warning in serving.warnings_in_words(r):
        st.warning(warning)


def _for_target(cap: dict) -> None:
    """Replicas and GPUs a target rate needs, beside each deployment's name, then its capacity."""
    st.subheader("GPUs for a target rate")
    target = st.number_input("Target arrival rate [requests/s]", min_value=0.001,
                             value=float(max(1.0, round(10 * cap["rate_per_s"], 1))), key="serving.target")
    rows = []
    for row, x in zip(serving.capacity_rows(cap), [cap, *(cap.get("alternatives") or [])]):
        size = gpus_for_rate(x, target)
        rows.append({"deployment": row.pop("deployment"), "replicas for the target": size.replicas,
                     "GPUs for the target": size.gpus} | row)
    st.dataframe(rows, hide_index=True)


def render(ctx: Context) -> None:
    if not needs_result(ctx, "serving"):
        return
    r = ctx.result
    _headline(ctx)
    answer = cached.serving_capacity(ctx.raw)
    cap = answer["result"]
    if answer["error"]:
        st.error(answer["error"])
    elif cap is not None:
        st.subheader("Latency against throughput")
        st.caption("Each point is the deployment at one offered rate (the capacity search's trials and a sweep "
                   "from light load to past saturation); green points meet the SLO (dashed lines). Where the "
                   "capacity found over the scenario's requests misses the SLO over a run four times longer, the "
                   "search goes on with longer trials: one curve per trial length.")
        missing = ("the deployment does not fit (see the warning above)" if not cap["memory_fits"] else
                   "no SLO in the scenario (serving.slo): the capacity is the saturated throughput")
        figure("Latency against throughput", serving.latency_throughput_figure, cap, available=bool(cap["sweep"]),
               missing=missing, key="fig.serving.latency")
    if cap is not None and cap["memory_fits"]:
        _for_target(cap)
        st.subheader("Throughput per GPU against speed per user")
        st.caption("Every deployment over the same offered rates: output tokens/s per GPU (what the hardware "
                   "earns) against output tokens/s each user sees (1 / median TPOT); up and to the right is better.")
        figure("Per GPU against per user", serving.per_gpu_per_user_figure, cap, key="fig.serving.per_gpu")
    if r.get("alternatives"):
        st.subheader("Deployments compared (the same model and load)")
        st.dataframe(serving.deployment_rows(r), hide_index=True)
    if r["requests_per_s"] is not None:
        st.subheader("Cost and carbon per million output tokens by country")
        st.caption(f"Facility energy {fmt_energy_kwh(r['energy_per_million_output_tokens_kwh'])} per million "
                   f"output tokens (IT × PUE {r['pue']:.2f}), the same in every country; each country's grid "
                   "intensity and electricity price.")
        figure("Per million tokens", serving.per_million_figure, r, key="fig.serving.countries")
    st.download_button("Download the result (JSON)", json.dumps(r, indent=2), file_name="serving-result.json",
                       mime="application/json")
