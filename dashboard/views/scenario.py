"""Scenario page: the YAML in use, editable in place, and the scenario with the knobs applied."""

from __future__ import annotations

import streamlit as st

from dashboard import core, finetuning
from dashboard.panel import EDITS, Context


def _store(source_id: str, key: str) -> None:
    st.session_state.setdefault(EDITS, {})[source_id] = st.session_state[key]


def _revert(source_id: str, key: str) -> None:
    st.session_state.get(EDITS, {}).pop(source_id, None)
    st.session_state.pop(key, None)


def _set_method(ctx: Context, method_key: str, weights_key: str) -> None:
    """Write the fine-tuning knobs into the scenario text in use (the editor shows it)."""
    method = st.session_state[method_key]
    weights = st.session_state.get(weights_key, finetuning.DEFAULT)
    text = finetuning.with_method(ctx.text, ctx.source, method, weights)
    st.session_state.setdefault(EDITS, {})[ctx.source_id] = text
    st.session_state.pop(f"yaml.{ctx.source_id}", None)


def _finetuning_knobs(ctx: Context) -> None:
    """Method and base storage, read from the scenario and written back into it."""
    method, weights = finetuning.current(ctx.text, ctx.source)
    tag = core.digest(ctx.text)
    method_key, weights_key = f"ft.method.{tag}", f"ft.weights.{tag}"
    left, right = st.columns(2)
    methods = list(finetuning.METHODS)
    left.selectbox("Fine-tuning method", methods, index=methods.index(method) if method in methods else 0,
                   key=method_key, on_change=_set_method, args=(ctx, method_key, weights_key),
                   help="full: every weight trains; lora: adapters on a frozen base; qlora: adapters on an "
                        "nf4 base with paged optimizer states and full recomputation (training.method)")
    choices = list(finetuning.weight_choices(method))
    right.selectbox("Base weights", choices, index=choices.index(weights) if weights in choices else 0,
                    key=weights_key, on_change=_set_method, args=(ctx, method_key, weights_key),
                    help="storage of the base's linear weights (training.weights); narrower formats hold "
                         "less and are dequantised at every use")
    st.caption("Changing these rewrites the YAML above (its comments are not kept).")


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
        if not ctx.base_error and ctx.base_knobs is not None and ctx.base_knobs.workload == "training":
            _finetuning_knobs(ctx)
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
