"""Plain text for the terminal: aligned tables.

A base module (no imports of the twin), so that a command that only lists the catalog
prints without loading the engines, the fabric or the figures.
"""

from __future__ import annotations


def table(rows: list[list[str]], header: list[str]) -> str:
    """A plain aligned text table."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])
