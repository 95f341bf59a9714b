"""The Markdown report ``python -m twin run --report FILE.md`` writes and the dashboard exports, with its
figures as PNG."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from twin import __version__
from twin.figures.compare import Column, compare_figure, side_by_side
from twin.figures.images import RenderError, png_images
from twin.figures.job import job_progress_figure, time_to_train_figure
from twin.figures.overview import country_rows, headline_metrics, infeasibility, memory_figure, plan_rows
from twin.figures.power import country_comparison_figure
from twin.figures.serving import deployment_rows, per_million_figure
from twin.figures.serving import headline_metrics as serving_metrics
from twin.outputs import write_atomic
from twin.report.operations import operations_summary

if TYPE_CHECKING:
    import plotly.graph_objects as go

Image = Callable[[str, str, "go.Figure"], str]


@dataclass(frozen=True)
class MarkdownReport:
    """A report's Markdown text and the figures it links to (``FOLDER/NAME.png`` → figure)."""
    text: str
    figures: dict[str, go.Figure]


def md_table(rows: list[dict[str, Any]]) -> str:
    """Rows of equal keys as a Markdown table."""
    if not rows:
        return ""
    header = list(rows[0])
    cell = lambda v: "" if v is None else str(v).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(r.get(k)) for k in header) + " |" for r in rows]
    return "\n".join(lines)


def _training_overview(result: dict[str, Any], image: Image, baseline: dict[str, Any] | None) -> list[str]:
    """Headline numbers (or why the plan does not run), the plan, memory, countries and the job."""
    out: list[str] = []
    problem = infeasibility(result)
    if problem:
        out += [f"> **{problem.title}**: {problem.detail}.", ">", "> What would fix it:"]
        out += [f"> - {s}" for s in problem.suggestions] + [""]
    else:
        rows = [{"metric": m.label, "value": m.value} | ({"change": m.delta or "same"} if baseline else {})
                | {"detail": m.help} for m in headline_metrics(result, baseline)]
        out += [md_table(rows), ""]
        if baseline:
            out += ["Changes are against the scenario as written.", ""]
    out += [f"- warning: {w}" for w in result.get("warnings", [])] + ([""] if result.get("warnings") else [])
    plan = result.get("plan") or {}
    out += ["### Parallel plan", "", plan.get("description", ""), "", md_table(plan_rows(result)), ""]
    out += ["### Memory per GPU", "", image("memory", "Memory per GPU", memory_figure(result)), ""]
    out += [f"- {advice}" for advice in result.get("memory_advice", [])]
    out += ["", "### Carbon and energy cost by country", "", md_table(country_rows(result)), "",
            image("countries", "The same run in each country", country_comparison_figure(result)), ""]
    if result.get("failures") and not problem:
        out += ["### The job", "", image("progress", "Progress of the median run", job_progress_figure(result)), "",
                image("time_to_train", "Time to train over failure samples", time_to_train_figure(result)), ""]
    return out


def _serving_overview(r: dict[str, Any], image: Image) -> list[str]:
    """A serving deployment's headline numbers, the deployments compared, and cost and carbon per country."""
    out = [md_table([{"metric": m.label, "value": m.value, "detail": m.help} for m in serving_metrics(r)]), ""]
    out += [f"- warning: {w}" for w in r["warnings"]] + ([""] if r["warnings"] else [])
    out += ["### Deployments", "", md_table(deployment_rows(r)), ""]
    if r["requests_per_s"] is not None:
        out += ["### Per million output tokens", "",
                image("per_million", "Cost and carbon per million output tokens", per_million_figure(r)), ""]
    return out


def _what_ifs(image: Image, pinned: list[Column] | None, compare: list[Column] | None) -> list[str]:
    out: list[str] = []
    if pinned:
        out += ["## Pinned what-ifs", "", md_table(side_by_side(pinned, deltas=True, per_country=True)), ""]
    if compare:
        out += ["## Compare", "", md_table(side_by_side(compare)), "",
                image("compare", "What-ifs side by side", compare_figure(compare)), ""]
    return out


def markdown_report(result: dict[str, Any], *, source: str = "", changes: dict[str, Any] | None = None,
                    baseline: dict[str, Any] | None = None, pinned: list[Column] | None = None,
                    compare: list[Column] | None = None, folder: str = "figures") -> MarkdownReport:
    """The Overview (headline numbers or why the plan does not run, plan, memory, countries, the job)
    and, when given, the pinned what-ifs and a comparison; figures are linked as ``folder/NAME.png``."""
    figures: dict[str, go.Figure] = {}

    def image(name: str, title: str, fig: go.Figure) -> str:
        figures[f"{folder}/{name}.png"] = fig
        return f"![{title}]({folder}/{name}.png)"

    out = [f"# {result.get('scenario', 'twin')}", ""]
    what = f"from `{source}`" if source else ""
    if changes:
        what += ("; " if what else "") + "what-if: " + ", ".join(f"`{k}` = {v}" for k, v in changes.items())
    out += [f"twin {__version__} report{' ' + what if what else ''}.", "", "## Overview", ""]
    if result.get("workload") == "serving":
        out += _serving_overview(result, image)
        return MarkdownReport("\n".join(out).rstrip() + "\n", figures)
    if result.get("workload") == "operations":      # the cluster's jobs: the summary as the terminal prints it
        return MarkdownReport("\n".join([*out, "```", operations_summary(result), "```"]) + "\n", figures)
    out += _training_overview(result, image, baseline) + _what_ifs(image, pinned, compare)
    return MarkdownReport("\n".join(out).rstrip() + "\n", figures)


def drawn(report: MarkdownReport) -> tuple[dict[str, bytes], str, list[str]]:
    """The figures that could be drawn as PNG, the text with every other figure's link replaced by a note, and
    why figures were left out (none when all were drawn). The figures are optional; the report never links a
    file it does not hold."""
    problems: list[str] = []
    try:
        images = png_images(report.figures)
    except RenderError as exc:
        images = {}
        problems.append(str(exc))
    text = report.text
    for name in report.figures:
        if name not in images:
            text = re.sub(rf"!\[([^\]]*)\]\({re.escape(name)}\)", r"*Figure left out: \1 (not drawn).*", text)
    if report.figures and images and len(images) < len(report.figures):
        problems.append(f"{len(report.figures) - len(images)} of {len(report.figures)} figures could not be drawn")
    return images, text, problems


def write_markdown(report: MarkdownReport, path: str | Path, left_out: list[str] | None = None) -> list[Path]:
    """Write the report and its PNG figures beside it, each file whole or not at all (the figures are all
    drawn before anything is written); returns the files written, the report last. Why figures were left
    out (``drawn``) is appended to ``left_out``."""
    path = Path(path)
    images, text, problems = drawn(report)
    if left_out is not None:
        left_out.extend(problems)
    written = []
    for name, data in [*images.items(), (path.name, text)]:
        write_atomic(path.parent / name, data)
        written.append(path.parent / name)
    return written


def report_zip(report: MarkdownReport, name: str = "report.md") -> bytes:
    """The report and the PNG figures that could be drawn, as one zip archive (the dashboard's download)."""
    images, text, _ = drawn(report)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, text)
        for file, data in images.items():
            archive.writestr(file, data)
    return buffer.getvalue()
