"""A one-line progress bar on stderr: points done, rate and time left.

Shown only where someone watches: stderr is a terminal, the output is not JSON, and
the ``CI`` environment variable is unset. Redrawn at most ``REDRAW_S`` apart.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

from twin.units import fmt_duration

REDRAW_S = 0.2
BAR_CHARS = 24


def wanted(stream: TextIO, json_output: bool) -> bool:
    """Whether to draw a bar on ``stream``."""
    return not json_output and not os.environ.get("CI") and stream.isatty()


class Progress:
    def __init__(self, total: int, stream: TextIO = sys.stderr, enabled: bool = True, label: str = "points"):
        self.total, self.stream, self.enabled, self.label = total, stream, enabled, label
        self.done = 0
        self._start = time.perf_counter()
        self._drawn = 0.0

    def advance(self, count: int) -> None:
        self.done += count
        now = time.perf_counter()
        if self.enabled and (now - self._drawn >= REDRAW_S or self.done >= self.total):
            self._drawn = now
            self.stream.write("\r" + self.line(now - self._start))
            self.stream.flush()

    def line(self, elapsed_s: float) -> str:
        """``[#####-----]  1,234/10,000 points  412/s  ETA 21 s``"""
        share = self.done / self.total if self.total else 1.0
        filled = int(round(share * BAR_CHARS))
        rate = self.done / elapsed_s if elapsed_s > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else float("inf")
        eta = fmt_duration(left) if left != float("inf") else "?"
        return (f"[{'#' * filled}{'-' * (BAR_CHARS - filled)}] {self.done:,}/{self.total:,} {self.label}"
                f"  {rate:,.0f}/s  ETA {eta}  ")

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
