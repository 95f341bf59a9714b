"""A one-line 'still working' note on stderr for a command that runs longer than a couple of seconds.

Shown only where someone watches (stderr is a terminal, the output is not JSON, ``CI`` unset) and only once
the command has run for ``AFTER_S``; redrawn every ``EVERY_S`` on one line, and wiped when the command ends,
so that what the command prints is left as it was. Commands with a count to show (``sweep``) draw their
own bar instead.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

AFTER_S = 2.0      # the bound: a command that runs longer than 2 s shows that it is working
EVERY_S = 0.5      # redraw interval
# The drawing thread's name: it only waits and writes to stderr, so a process may fork beside it
# (twin/cores.py); the child never writes to stderr.
THREAD_NAME = "twin-ticker"


def wanted(stream: TextIO, json_output: bool) -> bool:
    """Whether to draw on ``stream``: a terminal, not JSON output, not in CI."""
    return not json_output and not os.environ.get("CI") and stream.isatty()


def line(label: str, elapsed_s: float) -> str:
    """'twin validate: working… 12 s'."""
    return f"twin {label}: working… {elapsed_s:,.0f} s"


@contextmanager
def ticking(label: str, stream: TextIO, enabled: bool) -> Iterator[None]:
    """Draw ``line(label, elapsed)`` on ``stream`` from ``AFTER_S`` on, until the block ends."""
    if not enabled:
        yield
        return
    stop = threading.Event()
    start = time.perf_counter()
    drawn = [0]

    def draw() -> None:
        if stop.wait(AFTER_S):
            return
        while not stop.is_set():
            text = line(label, time.perf_counter() - start)
            stream.write("\r" + text)
            stream.flush()
            drawn[0] = len(text)
            stop.wait(EVERY_S)

    thread = threading.Thread(target=draw, name=THREAD_NAME, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        if drawn[0]:
            stream.write("\r" + " " * drawn[0] + "\r")
            stream.flush()
