"""Percentiles of samples, value for value as numpy's default computes them, without its detour.

``np.percentile`` (``method="linear"``, Hyndman & Fan's type 7: the value at the virtual index
``(n - 1) · q`` of the sorted samples, interpolated between its neighbours) reaches ``np.unique``, which
imports ``numpy.ma`` on first use: about 30 ms of the start of every command that reports a percentile
(the failure Monte Carlo's, the queue's waits, the serving latencies). ``percentiles`` takes the same
steps (numpy 2.x ``_quantile``: the virtual index, its floor and the next index, the last value for an
index at or past the end, and ``_lerp``'s interpolation from whichever end is nearer), so the answers are
the same floats (``tests/test_quantiles.py`` holds it to ``np.percentile`` on random samples).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def percentiles(values: Iterable[float], qs: Iterable[float]) -> np.ndarray:
    """The ``qs`` percentiles (0 to 100) of ``values`` (at least one), as ``np.percentile(values, qs)``;
    NaN where a value is NaN."""
    ordered = np.sort(np.asarray(values, dtype=float).ravel())
    if ordered.size == 0:
        raise ValueError("percentiles of no values")
    q = np.asarray(list(qs), dtype=float) / 100
    if ((q < 0) | (q > 1)).any():
        raise ValueError("percentiles must be in the range [0, 100]")
    virtual = (ordered.size - 1) * q
    previous = np.floor(virtual)
    following = previous + 1
    last = virtual >= ordered.size - 1                 # at or past the last value: the last value
    previous[last] = -1
    following[last] = -1
    previous, following = previous.astype(np.intp), following.astype(np.intp)
    weight = virtual - previous
    low, high = ordered[previous], ordered[following]
    step = high - low
    out = low + step * weight
    near_high = weight >= 0.5                          # from the nearer end, as numpy's _lerp
    out[near_high] = (high - step * (1 - weight))[near_high]
    if np.isnan(ordered[-1]):                          # a NaN sorts last and spoils every percentile
        out[:] = np.nan
    return out


def percentile(values: Iterable[float], q: float) -> float:
    """The ``q`` percentile (0 to 100) of ``values``, as ``float(np.percentile(values, q))``."""
    return float(percentiles(values, [q])[0])
