"""One-click Markdown report of the Overview and Compare pages, with their figures as PNG: the same
``twin.report.markdown_report`` as ``python -m twin run --report FILE.md``, zipped for download."""

from __future__ import annotations

import streamlit as st

from dashboard import cached, core, whatifs
from dashboard.panel import Context
from twin.figures.images import RenderError
from twin.report import MarkdownReport, markdown_report, report_zip


def report_archive(ctx: Context, grid: list[tuple[str, list[str]]]) -> bytes:
    """The report of the current what-if, its pinned what-ifs and the Compare page's grid, as a zip."""
    assert ctx.result is not None
    try:
        compare = whatifs.compare_columns(ctx, grid, cached.evaluate) if all(values for _, values in grid) else []
    except core.ScenarioError:
        compare = []                      # the Compare page shows why; the report leaves it out
    pinned = whatifs.pinned_columns(ctx, cached.evaluate) if ctx.pins else []
    baseline = cached.evaluate(ctx.simulated(ctx.base_raw))["result"] if ctx.changes and ctx.base_raw else None
    report = markdown_report(ctx.result, source=ctx.source, changes=ctx.changes, baseline=baseline, pinned=pinned,
                             compare=compare)
    try:
        return report_zip(report)
    except RenderError as exc:
        return report_zip(MarkdownReport(report.text + f"\n> Figures left out: {exc}.\n", {}))


def report_button(ctx: Context, page: str) -> None:
    """The download button; the report is written when it is clicked."""
    if ctx.result is None or ctx.knobs is None:
        return
    grid = whatifs.axes(st.session_state, ctx.knobs)
    st.download_button("Download the report (Markdown and figures, .zip)", lambda: report_archive(ctx, grid),
                       file_name=f"twin-report-{ctx.source.rsplit('.', 1)[0]}.zip", mime="application/zip",
                       key=f"export.{page}", on_click="ignore", icon=":material/description:",
                       help="The Overview and Compare pages as a Markdown report with PNG figures, written by the "
                            "same code as `python -m twin run FILE --report FILE.md`")
