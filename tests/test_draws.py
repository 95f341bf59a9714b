"""The Monte Carlo's draws (twin/engine/draws.py) are numpy's, draw for draw, in any order of kinds."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.engine.draws import Draws


def _both(seed: int, kinds: list[float]) -> tuple[list[float], list[float]]:
    """The draws of ``kinds`` (0: a uniform, else an exponential of that scale) by numpy and by ``Draws``."""
    rng, ours = np.random.default_rng(seed), Draws(np.random.default_rng(seed))
    theirs = [rng.random() if k == 0 else rng.exponential(k) for k in kinds]
    mine = [ours.random() if k == 0 else ours.exponential(k) for k in kinds]
    return theirs, mine


def test_a_long_mixed_stream_is_numpys_to_the_last_bit_rare_layers_included(monkeypatch):
    """A quarter of a million draws over many blocks: uniforms, and exponentials whose first word the ziggurat
    rejects (about 1.1%), the base layer's tail among them, which read further words as numpy does."""
    rare_layers: list[int] = []
    unlikely = Draws._unlikely

    def counted(self, word):
        rare_layers.append((word >> 3) & 0xFF)
        return unlikely(self, word)

    monkeypatch.setattr(Draws, "_unlikely", counted)
    pattern = np.random.default_rng(7).choice([0.0, 1.0, 3.7e5], size=250_000).tolist()
    theirs, mine = _both(2024, pattern)
    assert mine == theirs
    assert len(rare_layers) > 1000 and rare_layers.count(0) > 20


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1),
       kinds=st.lists(st.sampled_from([0.0, 1.0, 2.5e-3, 86400.0]), min_size=1, max_size=300))
def test_any_order_of_kinds_gives_numpys_numbers(seed, kinds):
    theirs, mine = _both(seed, kinds)
    assert mine == theirs
