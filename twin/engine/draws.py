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


def decoded(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each word (an array of any shape) read both ways: its ``random()``, and its standard exponential when
    the ziggurat's first try is accepted (else -1)."""
    to_unit, to_ri, to_layer, layer_mask = _SHIFTS
    uniform = (words >> to_unit) * TO_UNIT
    ri = words >> to_ri
    layer = (ri & layer_mask).astype(np.intp)
    ri >>= to_layer
    fast = ri * _WE[layer]
    fast[ri >= _KE[layer]] = -1.0
    return uniform, fast


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
        uniform, fast = decoded(words)
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
        x = unlikely(word, self.random())
        return x if x is not None else self._standard_exponential()


def unlikely(word: int, uniform: float) -> float | None:
    """numpy's ``standard_exponential_unlikely`` for a ``word`` the ziggurat's first try rejected, given the next
    word's ``random()``: the base layer's tail, or a test under the layer's curve; None: a fresh try with the
    word after."""
    ri = word >> 3
    layer = ri & 0xFF
    ri >>= 8
    x = ri * WE[layer]
    if layer == 0:
        return EXP_R - math.log1p(-uniform)
    if (FE[layer - 1] - FE[layer]) * uniform + FE[layer] < math.exp(-x):
        return x
    return None


ROW_WORDS = 512     # words a sample's row holds: a common cycle reads two or three
WINDOW = 8          # words a sample played by the event loop takes from its row at a time


class Rows:
    """The draws of many samples side by side, a row each: the words not yet read from each sample's own
    generator, decoded both ways (``decoded``), up to the row's end. Row ``r``'s next word is ``at[r]`` (a
    row not yet filled reads as read to its end)."""

    def __init__(self, rngs: list[np.random.Generator]):
        self.rngs = rngs
        m = len(rngs)
        self.words = np.empty((m, ROW_WORDS), dtype=np.uint64)
        self.uniform = np.empty((m, ROW_WORDS))
        self.fast = np.empty((m, ROW_WORDS))
        self.at = np.full(m, ROW_WORDS, dtype=np.intp)
        self.mark = np.full(m, ROW_WORDS, dtype=np.intp)    # the first word a row keeps: it may be read again

    def top_up(self, rows: np.ndarray) -> None:
        """``rows`` (indices) filled to the end: the words from the mark moved to the front, the generator's
        next after them."""
        words, at, mark = self.words, self.at, self.mark
        for r in rows.tolist():
            kept = ROW_WORDS - mark[r]
            if kept > ROW_WORDS - WINDOW:
                raise RuntimeError(f"row {r}: {kept} words kept past its mark, more than a row holds")
            words[r, :kept] = words[r, mark[r]:]
            words[r, kept:] = self.rngs[r].bit_generator.random_raw(ROW_WORDS - kept)
        at[rows] -= mark[rows]
        mark[rows] = 0
        self.uniform[rows], self.fast[rows] = decoded(words[rows])

    def exponential_at(self, r: int, p: int) -> tuple[float, int] | None:
        """The standard exponential a draw starting at word ``p`` of row ``r`` gives, its rare paths read word
        by word as ``Draws`` reads them, and the word after it; None where it would read past the row."""
        words, uniform, fast = self.words[r], self.uniform[r], self.fast[r]
        while p < ROW_WORDS:
            x = float(fast[p])
            if x >= 0.0:
                return x, p + 1
            if p + 1 >= ROW_WORDS:
                return None
            x = unlikely(int(words[p]), float(uniform[p + 1]))
            if x is not None:
                return x, p + 2
            p += 2                                      # a fresh try with the word after
        return None

    def handed_over(self, r: int) -> Draws:
        """Row ``r``'s sample's draws from here on, as a ``Draws`` of its own (the row is left behind)."""
        draws = Draws(self.rngs[r])
        a = int(self.at[r])
        draws.words = self.words[r, a:].copy()
        draws.uniform, draws.fast = self.uniform[r, a:].tolist(), self.fast[r, a:].tolist()
        draws.n, draws.block = ROW_WORDS - a, MAX_BLOCK
        self.at[r] = ROW_WORDS
        return draws


class RowDraws(Draws):
    """``Draws`` of row ``r`` of ``rows``, a window of words at a time: a sample played by the event loop for a
    while between steps that read its row as an array. ``give_back`` returns the words it did not read.
    ``rewind``: the row keeps its words from its mark (a step may put the sample back there); else only
    those not yet read."""

    def __init__(self, rows: Rows, r: int):
        super().__init__(rows.rngs[r])
        self.rows, self.r = rows, r
        self.rewind = True

    def _fill(self) -> None:
        rows, r = self.rows, self.r
        if not self.rewind:
            rows.mark[r] = rows.at[r]
        if ROW_WORDS - rows.at[r] < WINDOW:
            rows.top_up(np.array([r]))
        a = int(rows.at[r])
        b = a + WINDOW
        self.words = rows.words[r, a:b].copy()
        self.uniform, self.fast = rows.uniform[r, a:b].tolist(), rows.fast[r, a:b].tolist()
        rows.at[r] = b
        self.i, self.n = 0, WINDOW

    def give_back(self) -> None:
        self.rows.at[self.r] -= self.n - self.i
        self.i = self.n = 0
