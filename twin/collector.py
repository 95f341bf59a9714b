"""Python's cyclic garbage collector paused around work that builds many objects that live on.

The collector runs whenever allocations outnumber deallocations by a threshold, and walks the
objects of the generations it collects. A fit, or the fabric of a 16,384-GPU cluster, allocates
millions of small objects that all stay alive until the work ends (a graph's vertices and links,
memoised collectives, plans and their costs): the collector walks them again and again and finds
little to free, about a sixth of a fit on the SuperPOD and a third on the 405B scenario
(docs/speed.md). Paused for such work and restored after it; what the work left is then moved to
the oldest generation at once (``gc.freeze`` then ``gc.unfreeze``), so that the young collections
after it do not walk it all again: the collector frees at its next full run any cycle the work
left; reference counting frees everything else as it goes, paused or not.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """The cyclic collector off for the block, then on again if it was on before, what the block built
    in the oldest generation."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if enabled:
            gc.enable()
