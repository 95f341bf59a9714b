"""A numpy ``Generator``'s scalar draws, the same numbers at a fraction of the cost: the Monte Carlo's draws.

The failure Monte Carlo (``job_loop.py``) draws two or three numbers per failure, one at a time, in an
order the sample's path decides: a uniform (the failed component), an exponential (the next interval), an
exponential (a repair). A scalar call into numpy costs about 0.6-1 µs, a third of the loop's time per failure.

``Draws`` reads the generator's bit stream in blocks (``BitGenerator.random_raw``: the 64-bit words its
draws consume, in order) and decodes each word, with numpy's own arithmetic over the whole block, both ways
the sample may read it; each draw then takes the next word as the kind it asks for:

- ``random()``: numpy's ``next_double``, ``(word >> 11) · 2⁻⁵³`` (``numpy/random/_common.pxd``);
- ``exponential(scale)``: ``scale`` times numpy's ``random_standard_exponential``, the ziggurat of
  ``numpy/random/src/distributions/distributions.c`` with its tables (``ziggurat.py``): one word 98.9% of
  the time (its layer ``idx`` and 53-bit integer ``ri`` accepted), the rare rest read word by word as numpy
  does.

So a sample gets the very numbers ``rng.random()`` and ``rng.exponential(scale)`` would give, in the same
order (``tests/test_draws.py`` compares them draw for draw); the generator's own state runs ahead by what
the last block did not use, so a ``Draws`` owns its generator.
"""

from __future__ import annotations

import math

import numpy as np

from twin.engine.ziggurat import EXP_R, FE, KE, WE

TO_UNIT = 1.0 / 9007199254740992.0      # 2⁻⁵³: a 53-bit integer to a double in [0, 1)
FIRST_BLOCK = 64                         # words of the first block: a short sample reads a few dozen
MAX_BLOCK = 4096                         # blocks double up to this (a long sample reads thousands)
_KE = np.array(KE, dtype=np.uint64)
_WE = np.array(WE)
_SHIFTS = np.uint64(11), np.uint64(3), np.uint64(8), np.uint64(0xFF)


class Draws:
    """``random()`` and ``exponential(scale)`` of ``rng``, decoded from its words a block at a time."""

    def __init__(self, rng: np.random.Generator):
        self.bits = rng.bit_generator
        self.block = FIRST_BLOCK
        self.words = np.empty(0, dtype=np.uint64)     # read again on the rare path only
        self.uniform: list[float] = []
        self.fast: list[float] = []      # the word's exponential when its first try is accepted, else -1
        self.i = self.n = 0

    def _fill(self) -> None:
        words = self.bits.random_raw(self.block)
        to_unit, to_ri, to_layer, layer_mask = _SHIFTS
        uniform = (words >> to_unit) * TO_UNIT
        ri = words >> to_ri
        layer = (ri & layer_mask).astype(np.intp)
        ri >>= to_layer
        fast = ri * _WE[layer]
        fast[ri >= _KE[layer]] = -1.0
        self.words, self.uniform, self.fast = words, uniform.tolist(), fast.tolist()
        self.i, self.n = 0, self.block
        self.block = min(2 * self.block, MAX_BLOCK)

    def random(self) -> float:
        """``rng.random()``."""
        i = self.i
        if i >= self.n:
            self._fill()
            i = 0
        self.i = i + 1
        return self.uniform[i]

    def exponential(self, scale: float) -> float:
        """``rng.exponential(scale)``: numpy's ``scale * random_standard_exponential``."""
        return scale * self._standard_exponential()

    def _standard_exponential(self) -> float:
        i = self.i
        if i >= self.n:
            self._fill()
            i = 0
        self.i = i + 1
        x = self.fast[i]
        return x if x >= 0.0 else self._unlikely(int(self.words[i]))

    def _unlikely(self, word: int) -> float:
        """numpy's ``standard_exponential_unlikely``: the base layer's tail, or a test under the layer's
        curve, or a fresh try."""
        ri = word >> 3
        layer = ri & 0xFF
        ri >>= 8
        x = ri * WE[layer]
        if layer == 0:
            return EXP_R - math.log1p(-self.random())
        if (FE[layer - 1] - FE[layer]) * self.random() + FE[layer] < math.exp(-x):
            return x
        return self._standard_exponential()
