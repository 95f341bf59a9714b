"""Percentiles as numpy computes them, float for float (twin/quantiles.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.quantiles import percentile, percentiles

SAMPLES = st.lists(st.one_of(st.floats(min_value=-1e12, max_value=1e12), st.just(float("nan"))),
                   min_size=1, max_size=300)
QS = st.lists(st.floats(min_value=0, max_value=100), min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(SAMPLES, QS)
def test_percentiles_are_numpys_to_the_bit(values, qs):
    mine = percentiles(values, qs)
    theirs = np.percentile(np.array(values, dtype=float), qs)
    assert mine.tobytes() == np.asarray(theirs, dtype=float).tobytes()


@settings(max_examples=100, deadline=None)
@given(SAMPLES, st.floats(min_value=0, max_value=100))
def test_one_percentile_is_numpys_scalar(values, q):
    assert np.float64(percentile(values, q)).tobytes() == np.float64(np.percentile(values, q)).tobytes()


def test_by_hand():
    assert percentiles([4.0, 1.0, 3.0, 2.0], [0, 50, 100]).tolist() == [1.0, 2.5, 4.0]
    assert percentile([10.0, 20.0], 10) == pytest.approx(11.0)
    with pytest.raises(ValueError):
        percentiles([], [50])
    with pytest.raises(ValueError):
        percentiles([1.0], [101])
