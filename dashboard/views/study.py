"""Study page: a sweep of the scenario run live, or a results directory loaded; sweep curves, the
Pareto front and the best points. The page's choices live in the URL, so a study can be shared."""

from __future__ import annotations

import streamlit as st

from dashboard import cached, studies
from dashboard.panel import Context
from dashboard.views import figure, needs_result
from twin.figures import study as figs

RUN, LOAD = "Run a small sweep of this scenario", "Load a results directory"
COUNTRIES = "site.country=FR,DE,US,SE,PL"


def _default_varies(raw: dict) -> tuple[str, str]:
    """Half the cluster and the whole of it, across five countries: time against cost and carbon."""
    cluster = raw.get("cluster") if isinstance(raw.get("cluster"), dict) else {}
    nodes = cluster.get("nodes")
    if isinstance(nodes, int) and nodes > 1:
        spares = cluster.get("spare_nodes", 0) if isinstance(cluster.get("spare_nodes"), int) else 0
        return f"cluster.nodes={max(spares + 1, nodes // 2)},{nodes}", COUNTRIES
    return COUNTRIES, "site.pue=1.1,1.3,1.5"


def render(ctx: Context) -> None:
    st.caption("A study answers one question across many options: each point is the scenario with the varied "
               "keys replaced (python -m twin sweep, docs/studies.md).")
    source = st.radio("Study", [RUN, LOAD], horizontal=True, key="study.source", bind="query-params")
    directory = _run(ctx) if source == RUN else _load()
    if not directory:
        return
    data = cached.load_study(directory)
    if data["error"]:
        st.error(data["error"])
        return
    _draw(data, directory)


def _run(ctx: Context) -> str | None:
    if ctx.raw is None:
        needs_result(ctx)
        return None
    left, right = st.columns(2)
    defaults = _default_varies(ctx.raw)
    first = left.text_input("Vary (KEY=V1,V2,…; ranges A..B:STEP)", defaults[0], key="study.vary1",
                            bind="query-params")
    second = right.text_input("…and (optional)", defaults[1], key="study.vary2", bind="query-params")
    closed = st.toggle("Closed-form step (faster; the job and its failures are still simulated)", value=True,
                       key="study.closed_form", bind="query-params")
    varies = [v.strip() for v in (first, second) if v.strip()]
    if not varies:
        st.info("Write a key to vary, e.g. site.country=FR,DE,US.")
        return None
    directory = studies.live_directory(ctx.raw, varies, closed)
    run = st.button("Run the sweep", key="study.run", type="primary")
    st.caption(f"The scenario with the sidebar's knobs, at most {studies.MAX_LIVE_POINTS} points, on this machine; "
               "a sweep run before with the same inputs is shown without running again.")
    if run:
        answer = cached.run_study(ctx.raw, tuple(varies), closed)
        if answer["error"]:
            st.error(answer["error"])
            return None
    elif not studies.has_results(directory):
        st.info("Press *Run the sweep* to run these points.")
        return None
    return str(directory)


def _load() -> str | None:
    found = studies.find_studies()
    typed = st.text_input("Results directory (written by python -m twin sweep … --out DIR)",
                          found[0] if found else "", key="study.dir", bind="query-params")
    if found:
        st.caption("Studies found under runs/ and the live sweeps: " + ", ".join(f"`{f}`" for f in found[:8]))
    return typed.strip() or None


def _draw(data: dict, directory: str) -> None:
    rows, keys, objectives = data["rows"], data["keys"], data["objectives"]
    study = data["study"]
    errors = sum(1 for r in rows if r.get("error"))
    st.markdown(f"**{study.get('scenario_name', '')}** — {len(rows):,} points over "
                f"{', '.join(f'`{k}`' for k in keys) or 'no key'}; {errors:,} errors; `{directory}`")
    messages = sorted({r["error"] for r in rows if r.get("error")})
    for message in messages[:3]:
        st.warning(message)
    metrics = figs.metrics(rows, keys)
    if not metrics or not keys:
        st.info("No point ran: nothing to draw.")
        return

    st.subheader("Sweep curves")
    a, b, c = st.columns(3)
    first = figs.default_metric(rows, metrics, keys[0], keys[1] if len(keys) > 1 else None)
    metric = a.selectbox("Metric", metrics, index=metrics.index(first), format_func=figs.label, key="study.metric",
                         bind="query-params")
    x = b.selectbox("Against", keys, key="study.x", bind="query-params")
    lines = ["(one line)"] + [k for k in keys if k != x]
    line = c.selectbox("One line per", lines, index=1 if len(lines) > 1 else 0, key="study.line", bind="query-params")
    figure("Sweep curves", figs.sweep_figure, rows, metric, x, None if line == lines[0] else line,
           key="fig.study.curves")

    st.subheader("Pareto front")
    shown = [o for o in objectives if o in metrics]
    figure("Pareto front", figs.pareto_figure, rows, keys, shown, available=len(shown) >= 2,
           missing="the study has fewer than two objectives with values (set site.gpu_hour_price for costs)",
           key="fig.study.pareto")
    st.caption("Hover a point for its keys and values; every objective is lower-is-better.")

    st.subheader("Best points")
    st.dataframe(figs.best_rows(rows, metric, keys, shown or metrics[:3]), hide_index=True)
