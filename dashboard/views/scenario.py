"""Scenario page: the YAML in use, editable in place, and the scenario with the knobs applied."""

from __future__ import annotations

import streamlit as st

from dashboard import core
from dashboard.panel import EDITS, Context


def _store(source_id: str, key: str) -> None:
    st.session_state.setdefault(EDITS, {})[source_id] = st.session_state[key]


def _revert(source_id: str, key: str) -> None:
    st.session_state.get(EDITS, {}).pop(source_id, None)
    st.session_state.pop(key, None)


def render(ctx: Context) -> None:
    if not ctx.source_id:
        st.info("Choose a shipped scenario or upload one in the sidebar.")
        return
    left, right = st.columns(2, gap="large")
    with left:
        st.subheader(f"Edit {ctx.source}")
        key = f"yaml.{ctx.source_id}"
        st.text_area("Scenario YAML", value=ctx.text, height=560, key=key, on_change=_store,
                     args=(ctx.source_id, key),
                     help="Edits apply to this browser session only; the file on disk is not changed. "
                          "Press Ctrl+Enter (or click outside) to apply.")
        if ctx.base_error:
            st.error(ctx.base_error)
        elif ctx.text != ctx.original:
            st.success("Your edits are valid and in use.")
        if ctx.text != ctx.original:
            st.button("Revert to the file", on_click=_revert, args=(ctx.source_id, key))
        st.caption("Every key is documented in docs/scenario.md; quantities take units (`400 Gb/s`, `25 kW`, `2T`).")
    with right:
        st.subheader("With the knobs applied")
        if ctx.raw is None:
            st.info("Fix the scenario on the left to see it with the knobs applied.")
            return
        if ctx.changes:
            st.dataframe([{"key": k, "value": str(v) if v is not None else "(removed)"} for k, v in ctx.changes.items()],
                         hide_index=True)
        else:
            st.caption("No knob moved: this is the scenario as written.")
        if ctx.error:
            st.error(ctx.error)
        text = core.to_yaml(ctx.raw)
        st.code(text, language="yaml")
        st.download_button("Download this scenario (YAML)", text, file_name=f"what-if-{ctx.source}",
                           mime="application/x-yaml")
