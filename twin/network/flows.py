"""Links shared max-min fairly between concurrent transfers.

A *coflow* is a set of flows that advance together: the hops of one ring
collective move in lockstep (each step waits for the slowest hop), so a
collective is one coflow whose load on link ``l`` is the bytes it moves across
``l`` per byte of progress. Coflow ``c`` progresses at rate ``rho_c`` (bytes of
progress per second); link ``l`` carries ``sum_c rho_c · load_{c,l}`` and may not
exceed its capacity. Rates are the weighted max-min fair allocation, found by
progressive filling (Bertsekas & Gallager, *Data Networks*, 1992, §6.5.2): raise
every unfrozen rate together until a link saturates, freeze the coflows that
cross it, repeat. A point-to-point transfer is a coflow of one flow.

Properties the tests check: a coflow alone gets ``min_l cap_l / load_l``;
adding a competing coflow never raises anyone's rate on a symmetric fabric;
scaling every capacity by k scales every rate by k.
"""

from __future__ import annotations

import numpy as np

# A link counts as saturated once its spare capacity is below this fraction.
SATURATION_TOLERANCE = 1e-9


def max_min_rates(coflow: np.ndarray, link: np.ndarray, load: np.ndarray, capacity: np.ndarray,
                  coflows: int) -> np.ndarray:
    """Max-min fair progress rates of ``coflows`` coflows.

    ``coflow[i]``, ``link[i]``, ``load[i]``: coflow ``coflow[i]`` puts ``load[i]`` bytes
    on link ``link[i]`` per byte of progress (COO triples; repeated pairs add up).
    ``capacity``: bytes/s of each link. A coflow that touches no link gets ``inf``.
    """
    rate = np.zeros(coflows)
    if len(coflow) == 0:
        return np.full(coflows, np.inf)
    frozen = np.zeros(coflows, dtype=bool)
    touched = np.zeros(coflows, dtype=bool)
    touched[coflow] = True
    rate[~touched] = np.inf
    frozen |= ~touched
    on_path = np.zeros(len(capacity), dtype=bool)                          # only the links crossed take part,
    on_path[link] = True                                                    # numbered in their order
    crossed = np.flatnonzero(on_path)
    dense = np.zeros(len(capacity), dtype=np.int64)
    dense[crossed] = np.arange(len(crossed))
    link = dense[link]
    capacity = capacity[crossed].astype(float)
    spare = capacity.copy()
    while not frozen.all():
        active = ~frozen[coflow]
        if active.all():                  # the first round, often the only one: every flow counts, as it is
            demand = np.bincount(link, weights=load, minlength=len(capacity))
        else:
            demand = np.bincount(link[active], weights=load[active], minlength=len(capacity))
        used = demand > 0
        if not used.any():
            rate[~frozen] = np.inf
            break
        headroom = np.where(used, spare / np.where(used, demand, 1.0), np.inf)
        step = float(headroom.min())
        rate[~frozen] += step
        spare -= step * demand
        saturated = used & (spare <= SATURATION_TOLERANCE * np.maximum(capacity, 1.0))
        frozen[coflow[active & saturated[link]]] = True
    return rate
