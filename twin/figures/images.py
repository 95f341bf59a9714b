"""Figures as PNG files, for reports: plotly draws them through Kaleido, which drives an installed
Chromium or Chrome (Debian: ``apt-get install chromium``); nothing is downloaded.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio

from twin.errors import TwinError

WIDTH_PX = 1100
HEIGHT_PX = 450           # for a figure that does not set its own height


class RenderError(TwinError):
    """Figures could not be drawn as images (no browser for Kaleido to drive)."""


def png_images(figures: dict[str, go.Figure]) -> dict[str, bytes]:
    """Each figure as PNG bytes, all drawn in one browser session; keyed as given."""
    if not figures:
        return {}
    with tempfile.TemporaryDirectory(prefix="twin-figures-") as tmp:
        paths = [Path(tmp) / f"{i}.png" for i in range(len(figures))]
        try:
            pio.write_images(list(figures.values()), paths, width=WIDTH_PX,
                             height=[f.layout.height or HEIGHT_PX for f in figures.values()])
        except Exception as exc:  # noqa: BLE001 - Kaleido's errors vary by version; each means no image
            raise RenderError(f"figures could not be drawn as PNG ({type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}); "
                              "they need Chromium or Chrome installed (Debian: apt-get install chromium)") from None
        return {name: path.read_bytes() for name, path in zip(figures, paths)}
