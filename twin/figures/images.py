"""Figures as PNG files, for reports: plotly draws them through Kaleido, which drives an installed
Chromium or Chrome (Debian: ``apt-get install chromium``); nothing is downloaded.

``TWIN_CHROMIUM`` names the browser to drive (default: the one Kaleido finds on the ``PATH``). The
figures are optional: the figures a batch left undrawn (it failed, or a file is missing or empty after
it) are drawn once more, a figure still missing is left out (never read from a missing file), and without a
working browser ``RenderError`` says why in one line, so that a report can be written without its images.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio

from twin.errors import TwinError

WIDTH_PX = 1100
HEIGHT_PX = 450           # for a figure that does not set its own height
# Tries at drawing a batch of figures: the first, and up to three more for the figures still undrawn. A
# browser may fail at starting, and on a busy machine one figure of a batch can time out or come back empty
# while the others are drawn (Kaleido reports such a figure's error without raising); a try costs nothing
# once every figure is drawn.
ATTEMPTS = 4
# Names of exceptions that mean no browser could be started or found: no second try.
NO_BROWSER = ("ChromeNotFoundError", "BrowserFailedError", "BrowserNotFoundError")


class RenderError(TwinError):
    """Figures could not be drawn as images (no browser for Kaleido to drive)."""


def browser_path() -> str | None:
    """The browser ``TWIN_CHROMIUM`` names (None: let Kaleido find one); refused when it is no program."""
    path = os.environ.get("TWIN_CHROMIUM")
    if not path:
        return None
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise RenderError(f"TWIN_CHROMIUM names '{path}', which is not a program; point it at Chromium or Chrome "
                          "(Debian: apt-get install chromium)")
    return path


def png_images(figures: dict[str, go.Figure]) -> dict[str, bytes]:
    """Each figure as PNG bytes, drawn in one browser session per try; keyed as given. The figures a try left
    undrawn (a batch that failed, or a file missing or empty after it) are drawn once more; a figure that
    could not be drawn is left out of the answer; ``RenderError`` when none could be drawn at all."""
    if not figures:
        return {}
    path = browser_path()
    if path:
        os.environ["BROWSER_PATH"] = path         # read by Kaleido's browser finder (choreographer)
    problem, drawn = "", {}
    for _ in range(ATTEMPTS):
        pending = {name: fig for name, fig in figures.items() if name not in drawn}
        if not pending:
            break
        with tempfile.TemporaryDirectory(prefix="twin-figures-") as tmp:
            paths = [Path(tmp) / f"{i}.png" for i in range(len(pending))]
            try:
                pio.write_images(list(pending.values()), paths, width=WIDTH_PX,
                                 height=[f.layout.height or HEIGHT_PX for f in pending.values()])
            except Exception as exc:  # noqa: BLE001 - Kaleido's errors vary by version; each means no image
                problem = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"[:300]
                if type(exc).__name__ in NO_BROWSER:
                    break
                continue
            drawn |= {name: p.read_bytes() for name, p in zip(pending, paths) if p.is_file() and p.stat().st_size}
            problem = problem or "the browser wrote no image"
    if drawn:
        return {name: drawn[name] for name in figures if name in drawn}
    raise RenderError(f"figures could not be drawn as PNG ({problem}); they need Chromium or Chrome installed "
                      "(Debian: apt-get install chromium, or TWIN_CHROMIUM=/path/to/chromium)")
