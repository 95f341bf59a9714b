"""Shared fixtures: small scenarios built as dicts."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"

BASE = {
    "name": "test",
    "cluster": {"node": "dgx-h100", "nodes": 2},
    "site": {"country": "FR", "pue": 1.2, "compare": ["DE"]},
    "training": {"model": "llama2-7b", "tokens": "10B", "seq_len": 4096, "global_batch": 64,
                 "parallelism": {"tensor": 1, "pipeline": 1}},
}


@pytest.fixture
def base_scenario() -> dict:
    return copy.deepcopy(BASE)


def with_(data: dict, **changes) -> dict:
    """A deep copy of ``data`` with keys replaced, written ``section__key=value``."""
    out = copy.deepcopy(data)
    for dotted, value in changes.items():
        node = out
        *parents, last = dotted.split("__")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return out
