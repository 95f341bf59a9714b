"""The colours of every figure: one colour per step part, job phase or memory part,
the same on every chart that shows it.

Okabe and Ito's colour-blind safe palette (Okabe & Ito 2008, "Color Universal
Design").
"""

from __future__ import annotations

# The parts of a training step (``Result.step_breakdown_s`` keys). The Gantt chart draws
# forward and backward passes as GPU compute: forward in the part's colour, backward in
# a lighter shade of it, used for nothing else.
PART_COLOURS = {
    "compute": "#0072B2",
    "tp_comm": "#CC79A7",
    "pp_comm": "#E69F00",
    "dp_comm": "#009E73",
    "dp_latency": "#00664A",     # a darker shade of dp_comm: the latency share of the same traffic
    "bubble": "#BBBBBB",
    "overheads": "#F0E442",
    "optimizer": "#D55E00",
    "data": "#666666",
}
BACKWARD_COLOUR = "#56B4E9"
# The spans of ``Result.step_timeline`` → the step part each belongs to.
SPAN_PARTS = {"forward": "compute", "backward": "compute", "send": "pp_comm", "dp_comm": "dp_comm",
              "overheads": "overheads", "optimizer": "optimizer"}


def span_colour(kind: str) -> str:
    """The colour of one kind of Gantt span: its step part's colour (backward: the lighter shade)."""
    return BACKWARD_COLOUR if kind == "backward" else PART_COLOURS[SPAN_PARTS[kind]]


# Phases of the job (``Result.timeline`` segments, ``power.timeline``).
PHASE_COLOURS = {"train": "#0072B2", "checkpoint": "#E69F00", "restart": "#D55E00", "repair_wait": "#CC79A7"}
FAILURE_COLOUR = "#000000"

# Parts of the memory per GPU (``Result.memory_breakdown_bytes``).
MEMORY_COLOURS = {"weights": "#0072B2", "gradients": "#56B4E9", "optimizer": "#E69F00",
                  "activations": "#009E73", "runtime": "#999999"}

# Values against a limit: within (blue), near (orange), over (vermilion).
WITHIN, NEAR, OVER = "#0072B2", "#E69F00", "#D55E00"
LIMIT_LINE = "#D55E00"
NEUTRAL = "#555555"

# Series told apart by order only (compare groups, pinned variants).
SERIES = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#999999"]

# A horizontal legend under the plot, anchored to the figure's bottom edge (not the plot's), so that it never
# overlaps a title or an axis title; the figure leaves it room with a bottom margin of about 100 px.
LEGEND_BELOW = {"orientation": "h", "yref": "container", "y": 0.0, "yanchor": "bottom", "x": 0.0}
