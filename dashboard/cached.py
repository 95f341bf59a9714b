"""``st.cache_data`` wrappers around the dashboard's pure functions.

Each is a function of its arguments only (a scenario's text or raw mapping), so
a knob moved back to a value seen before answers from the cache.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from dashboard import core


@st.cache_data(show_spinner=False, ttl=60)
def shipped_scenarios(directory: str) -> list[str]:
    return core.shipped_scenarios(Path(directory))


@st.cache_data(show_spinner=False, ttl=60)
def read_scenario(directory: str, name: str) -> str:
    return (Path(directory) / name).read_text(encoding="utf-8")


@st.cache_data(show_spinner=False, max_entries=64)
def base_scenario(text: str, source: str) -> dict[str, Any]:
    return core.base_scenario(text, source)


@st.cache_data(show_spinner="Simulating…", max_entries=256)
def evaluate(raw: dict[str, Any]) -> dict[str, Any]:
    return core.evaluate(raw)


@st.cache_data(show_spinner="Searching the highest rate within the SLO…", max_entries=64)
def serving_capacity(raw: dict[str, Any]) -> dict[str, Any]:
    return core.serving_capacity(raw)
