"""Calibrate page: drop a site's logs, see the fitted parameters against the catalog's, and the drift of a run."""

from __future__ import annotations

import streamlit as st

from dashboard import calibrate
from dashboard.panel import Context
from dashboard.views import needs_result, table

LOG_TYPES = ["txt", "log", "out", "csv", "json", "prom"]


def render(ctx: Context) -> None:
    st.caption("A twin of your own cluster: nccl-tests output, GEMM timings (benchmarks/operator_rates.py), "
               "nvidia-smi or DCGM power logs and sacct accounting in, a site profile out "
               "(python -m twin calibrate, docs/calibrate.md).")
    files = st.file_uploader("Drop the site's logs", type=LOG_TYPES, accept_multiple_files=True, key="cal.logs")
    profile_path = None
    if files:
        fitted = calibrate.calibrate([(f.name, f.getvalue()) for f in files])
        if fitted["error"]:
            st.error(fitted["error"])
        else:
            profile = fitted["profile"]
            st.subheader("Fitted parameters against the catalog")
            table(calibrate.fit_rows(profile))
            st.caption(f"Error band with this profile: ±{profile['band_fraction']:.1%}. Parameters marked "
                       "'reported' are measured and shown; the twin does not take them as inputs yet.")
            profile_path = fitted["path"]
            with open(profile_path, encoding="utf-8") as handle:
                st.download_button("Download site.yaml", handle.read(), file_name="site.yaml", key="cal.download")
    _drift(ctx, profile_path)


def _drift(ctx: Context, profile_path: str | None) -> None:
    st.subheader("Drift of a run from its twin")
    st.caption("The sidebar's scenario against a real run's Megatron-LM or torchtitan log, vLLM or trtllm-bench "
               "result, or GPU power log (python -m twin compare).")
    log = st.file_uploader("The run's log", type=LOG_TYPES, key="cal.run")
    if log is None or ctx.raw is None:
        if ctx.raw is None:
            needs_result(ctx)
        return
    use_profile = profile_path is not None and st.toggle("Price the run with the fitted profile", value=True,
                                                         key="cal.use_profile")
    found = calibrate.compare(ctx.raw, (log.name, log.getvalue()), profile_path if use_profile else None)
    if found["error"]:
        st.error(found["error"])
        return
    drift = found["drift"]
    table(calibrate.drift_rows(drift))
    st.metric("Largest difference", drift["largest"], border=True)
    if drift["note"]:
        st.caption(drift["note"])
