"""Human-readable reports of a result record: the terminal summary, the Markdown report with its
figures as PNG, and catalog tables."""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from twin import __version__
from twin.engine.step import PART_LABELS
from twin.figures.compare import Column, compare_figure, side_by_side
from twin.figures.images import png_images
from twin.figures.job import job_progress_figure, time_to_train_figure
from twin.figures.overview import country_rows, headline_metrics, infeasibility, memory_figure, plan_rows
from twin.figures.power import country_comparison_figure
from twin.outputs import write_atomic
from twin.units import fmt_bytes, fmt_count, fmt_duration, fmt_si


def table(rows: list[list[str]], header: list[str]) -> str:
    """A plain aligned text table."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def summary(record: dict[str, Any]) -> str:
    """The terminal summary of a run's JSON record (``Result.to_dict()``): every number with its unit."""
    r = record
    out = [f"twin — {r['scenario']}", ""]
    out.append(f"Cluster       {r['gpus_total']:,} GPUs, {r['gpus_used']:,} used; plan {r['plan']['description']}")
    bd = r["memory_breakdown_bytes"]
    fit = "fits" if r["memory_fits"] else "DOES NOT FIT"
    out.append(f"Memory/GPU    {fmt_bytes(r['memory_per_gpu_bytes'])} of {fmt_bytes(r['memory_capacity_bytes'])} — {fit} "
               f"(weights {fmt_bytes(bd['weights'])}, grads {fmt_bytes(bd['gradients'])}, "
               f"optimizer {fmt_bytes(bd['optimizer'])}, activations {fmt_bytes(bd['activations'])}, "
               f"runtime {fmt_bytes(bd['runtime'])})")
    out.append(f"Step          {r['step_time_s']:.3f} s for {r['tokens_per_step']:,} tokens; bottleneck: {r['bottleneck']}")
    parts = ", ".join(f"{PART_LABELS.get(k, k)} {v:.3f} s" for k, v in r["step_breakdown_s"].items() if v > 0)
    out.append(f"              {parts}")
    out.append(f"Throughput    {r['tokens_per_s']:,.0f} tokens/s ({r['tokens_per_s_per_gpu']:,.0f} tokens/s/GPU); "
               f"{r['model_tflops_per_gpu']:.0f} TFLOP/s/GPU model, {r['hardware_tflops_per_gpu']:.0f} TFLOP/s/GPU "
               f"hardware; MFU {r['mfu']:.1%}")
    ideal = r["ideal_time_to_train_s"]
    if r.get("finished", True):
        out.append(f"Time to train {fmt_duration(r['time_to_train_s'])} for {fmt_count(r['tokens'])} tokens "
                   f"(ideal {fmt_duration(ideal)}; {r['interruptions']:.0f} interruptions, "
                   f"goodput {r['goodput']:.1%})")
    else:
        out.append(f"Time to train DID NOT FINISH within {fmt_duration(r['time_to_train_s'])} "
                   f"for {fmt_count(r['tokens'])} tokens (ideal {fmt_duration(ideal)})")
    f = r["failures"]
    if f:
        ttt = f["time_to_train_s"]
        over = [fmt_duration(ttt[q] - ideal) for q in ("p10", "p50", "p90")]
        out.append(f"Failures      {f['samples']} samples ({f['profile']}): time over the ideal "
                   f"(failures, restarts, checkpoints) P10/P50/P90 {' / '.join(over)}; "
                   f"mean time between failures {fmt_duration(f['mtbf_s'])}")
        swaps = f["spares_used"]
        out.append(f"Checkpoints   every {fmt_duration(f['checkpoint_interval_s'])} "
                   f"({fmt_si(f['checkpoint_bytes'], 'B')}, write {fmt_duration(f['checkpoint_write_s'])}); "
                   f"node swaps P50/P90 {swaps['p50']:.0f}/{swaps['p90']:.0f} from a pool of {f['spare_nodes']} "
                   f"spare or idle nodes (repaired nodes rejoin it); "
                   f"work lost P50 {fmt_duration(f['lost_work_s']['p50'])} in all")
    p = r["power"]
    out.append(f"GPU-hours     {r['gpu_hours']:,.0f} used, {p['reserved_gpu_hours']:,.0f} reserved (every GPU of the "
               "cluster, spares and idle GPUs included)")
    infra = p["infrastructure"]
    infra_w = infra["switches_w"] + infra["storage_w"]
    out.append(f"Power (IT)    average {fmt_si(r['avg_power_it_w'], 'W')}, peak {fmt_si(r['peak_power_it_w'], 'W')}; "
               f"GPU {p['gpu_avg_w']:.0f} W average, busy node {fmt_si(p['node_avg_w'], 'W')}; "
               f"switches and storage {fmt_si(infra_w, 'W')}")
    limit = p["rack_limit_w"]
    out.append(f"Racks         {p['racks']} racks of {p['nodes_per_rack']} nodes: "
               f"busiest {fmt_si(p['rack_avg_w'], 'W')} average, {fmt_si(p['rack_peak_w'], 'W')} peak"
               + (f" (limit {fmt_si(limit, 'W')}, {p['racks_over_limit']} over)" if limit else ""))
    if p["power_cap_w"]:
        out.append(f"Power cap     {p['power_cap_w']:.0f} W per GPU: compute clock "
                   f"{p['power_cap_clock_factor']:.1%} of uncapped")
    out.append(f"Energy        IT {r['energy_it_kwh'] / 1e3:,.1f} MWh, facility {r['energy_facility_kwh'] / 1e3:,.1f} MWh "
               f"(PUE {r['pue']:.2f}" + (", GPU-hours x TDP accounting" if p["accounting"] == "gpu-tdp" else "")
               + ")")
    embodied = r["embodied_carbon_kg"]
    if embodied is not None:
        amount = f"{embodied / 1e3:,.1f} t" if embodied >= 1e3 else f"{embodied:,.0f} kg"
        out.append(f"Embodied      {amount} CO2e (hardware, amortised over its lifetime)")
    rental = r["rental_cost_eur"]
    if rental is not None:
        out.append(f"GPU rental    {rental:,.0f} EUR")
    rows = []
    for code, kg in r["carbon_kg"].items():
        price = r["electricity_price_eur_per_kwh"].get(code)
        cost = r["energy_cost_eur"].get(code)
        total = r["total_cost_eur"].get(code)
        rows.append([code + (" (site)" if code == r["country"] else ""),
                     f"{r['carbon_intensity_g_per_kwh'][code]:.0f} g CO2e/kWh", f"{kg / 1e3:,.1f} t CO2e",
                     f"{price:.3f} EUR/kWh" if price is not None else "n/a",
                     f"{cost:,.0f} EUR" if cost is not None else "n/a"]
                    + ([f"{total:,.0f} EUR" if total is not None else "n/a"] if rental is not None else []))
    out.append("")
    header = ["country", "intensity", "carbon", "electricity", "energy cost"]
    out.append(table(rows, header + (["total cost"] if rental is not None else [])))
    for w in r["warnings"]:
        out.append(f"warning: {w}")
    return "\n".join(out)


# ---------------------------------------------------------------------------
# Markdown: the report ``python -m twin run --report FILE.md`` writes and the dashboard exports


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
    if pinned:
        out += ["## Pinned what-ifs", "", md_table(side_by_side(pinned, deltas=True, per_country=True)), ""]
    if compare:
        out += ["## Compare", "", md_table(side_by_side(compare)), "",
                image("compare", "What-ifs side by side", compare_figure(compare)), ""]
    return MarkdownReport("\n".join(out).rstrip() + "\n", figures)


def write_markdown(report: MarkdownReport, path: str | Path) -> list[Path]:
    """Write the report and its PNG figures beside it, each file whole or not at all (the figures are all
    drawn before anything is written); returns the files written, the report last."""
    path = Path(path)
    written = []
    for name, data in [*png_images(report.figures).items(), (path.name, report.text)]:
        write_atomic(path.parent / name, data)
        written.append(path.parent / name)
    return written


def report_zip(report: MarkdownReport, name: str = "report.md") -> bytes:
    """The report and its PNG figures as one zip archive (the dashboard's download)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, report.text)
        for file, data in png_images(report.figures).items():
            archive.writestr(file, data)
    return buffer.getvalue()
