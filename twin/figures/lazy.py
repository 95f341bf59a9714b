"""plotly's subplot grid, imported when a figure is first drawn.

Importing ``plotly.subplots`` builds plotly's figure classes (about 0.1 s of CPU), which a
command that prints text never needs; the figure modules import this name instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import plotly.graph_objects as go


def make_subplots(*args: Any, **kwargs: Any) -> go.Figure:
    """``plotly.subplots.make_subplots``, imported on first use."""
    from plotly.subplots import make_subplots as grid

    return grid(*args, **kwargs)
