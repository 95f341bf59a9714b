"""Human-readable reports of a result record: the terminal summary, the Markdown report with its figures as
PNG, and catalog tables.

One module per workload reads its record (``training``, ``serving``, ``capacity``, ``operations``), one per
study (``studies``: sweeps and plan searches; ``fit``), ``markdown`` writes the report file and ``format``
holds the tables and amounts they share. ``summary`` picks a run's summary by its ``workload``.
"""

from typing import Any

from twin.report.capacity import capacity_summary
from twin.report.fit import fit_table
from twin.report.format import METHOD_NAMES, table
from twin.report.operations import operations_summary
from twin.report.serving import serving_summary
from twin.report.studies import MAX_TABLE_ROWS, OBJECTIVE_COLUMNS, plan_summary, sweep_summary
from twin.report.training import training_summary

# The Markdown report draws figures (plotly, the figure modules): loaded when first asked for, so that a run's
# terminal summary does not import them (PEP 562 module __getattr__).
_MARKDOWN = ("MarkdownReport", "markdown_report", "md_table", "report_zip", "write_markdown")


def __getattr__(name: str) -> Any:
    if name in _MARKDOWN:
        from twin.report import markdown

        return getattr(markdown, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# A run's terminal summary, by the ``workload`` of its record (training when it names none).
SUMMARIES = {"serving": serving_summary, "operations": operations_summary}


def summary(record: dict[str, Any]) -> str:
    """The terminal summary of a run's JSON record (``to_dict()`` of a result): every number with its unit."""
    return SUMMARIES.get(record.get("workload"), training_summary)(record)


__all__ = [
    "MAX_TABLE_ROWS", "METHOD_NAMES", "OBJECTIVE_COLUMNS", "SUMMARIES", "MarkdownReport", "capacity_summary",
    "fit_table", "markdown_report", "md_table", "operations_summary", "plan_summary", "report_zip",
    "serving_summary", "summary", "sweep_summary", "table", "training_summary", "write_markdown",
]
