"""Command line: ``python -m twin run | fit | capacity | sweep | plan | catalog | topology | validate | convert-trace
| calibrate | compare``.

Exit status: 0 success, 2 bad input (one line on stderr naming the key), 1 internal error.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import typing
from collections.abc import Callable
from pathlib import Path

from twin import __version__
from twin.errors import ScenarioError, TwinError
from twin.outputs import check_directory, check_file, write_atomic
from twin.ticker import ticking, wanted
from twin.yamlfile import parse_yaml, read_text


def _cmd_run(args: argparse.Namespace) -> int:
    from twin.api import run_file
    from twin.bands import band_line
    from twin.report import summary

    out = report = None
    if args.out is not None:                      # checked before the simulation starts
        out = check_directory(args.out, "--out") / "results.json"
        check_file(str(out), "--out")
    if args.report is not None:
        report = check_file(args.report, "--report")
        if report.suffix.lower() != ".md":
            raise ScenarioError("--report", f"'{args.report}' is not a Markdown file name (write e.g. report.md)")
        check_directory(str(report.parent / f"{report.stem}-figures"), "--report")
    result = run_file(args.scenario, args.profile)
    record = result.to_dict() if args.json or out is not None or report is not None else result.described()
    band = band_line(record)
    text = result.to_json() if args.json else summary(record) + (f"\n\n{band}" if band else "")
    if out is not None:
        try:
            write_atomic(out, result.to_json())
        except OSError as exc:
            raise ScenarioError("--out", f"cannot write '{out}': {exc.strerror}") from None
        if not args.json:
            text += f"\n\nwrote {out}"
    if report is not None:
        text += _write_report(args, record, report, out is not None, band)
    print(text)
    return 0


def _write_report(args: argparse.Namespace, record: dict, report: Path, after_out: bool, band: str) -> str:
    """Write the Markdown report (its figures when a browser draws them), with the record's error ``band``;
    the line the summary gains. Figures left out are said on stderr in one line: the report and the result
    are kept."""
    from dataclasses import replace

    from twin.report import markdown_report, write_markdown

    folder = f"{report.stem}-figures"
    left_out: list[str] = []
    markdown = markdown_report(record, source=args.scenario, folder=folder)
    if band:
        markdown = replace(markdown, text=f"{markdown.text.rstrip()}\n\n*{band[0].upper()}{band[1:]}.*\n")
    try:
        written = write_markdown(markdown, report, left_out)
    except OSError as exc:
        raise ScenarioError("--report", f"cannot write '{report}': {exc.strerror}") from None
    if left_out:
        print(f"twin: note: --report: written without {'some ' if len(written) > 1 else ''}figures: "
              f"{'; '.join(left_out)}", file=sys.stderr)
    if args.json:
        return ""
    figures = f"and {len(written) - 1} figures in {report.parent / folder}" if len(written) > 1 else "(without figures)"
    return ("\n" if after_out else "\n\n") + f"wrote {report} {figures}"


def _space(args: argparse.Namespace):
    from twin.studies.space import space

    return space(args.vary or [], "zip" if args.zip else "grid")


def _cmd_sweep(args: argparse.Namespace) -> int:
    from twin.api import scenario_data
    from twin.report import sweep_summary
    from twin.studies.executor import executor
    from twin.studies.progress import Progress, wanted
    from twin.studies.sweep import sweep

    if not args.vary:
        raise ScenarioError("--vary", "a sweep needs at least one --vary KEY=V1,V2,… (e.g. cluster.nodes=64,128)")
    study = _space(args)
    if args.max_points is not None and len(study) > args.max_points:
        raise ScenarioError("--max-points", f"the study holds {len(study):,} points, more than {args.max_points:,}")
    directory = check_directory(args.out, "--out") if args.out is not None else None
    data = scenario_data(args.scenario, args.profile)
    progress = Progress(len(study), enabled=wanted(sys.stderr, args.json))
    with executor(args.scheduler, args.workers, args.oversubscribe) as pool:
        report = sweep(data, args.scenario, study, directory, pool, args.closed_form, progress)
    if args.json:
        print(report.to_json())
    else:
        print(sweep_summary(report.to_dict())
              + f"\n\n{report.ran:,} points in {report.seconds:.1f} s on {report.where} "
              f"({report.points_per_s:,.1f} points/s)")
    return 0


def _cmd_plan(args: argparse.Namespace) -> int:
    from twin.api import scenario_data
    from twin.report import plan_summary
    from twin.studies.search import search_plans

    study = _space(args) if args.vary else None
    found = search_plans(scenario_data(args.scenario, args.profile), args.scenario, args.objective, args.top,
                         args.constraint, study, args.refine)
    if args.json:
        print(found.to_json())
    else:
        rate = found.plans_evaluated / found.seconds if found.seconds > 0 else 0.0
        print(plan_summary(found.to_dict()) + f"\n\nclosed form: {found.plans_evaluated:,} plans in "
              f"{found.seconds:.2f} s ({rate:,.0f} plans/s)")
    return 0


def _cmd_capacity(args: argparse.Namespace) -> int:
    from twin.api import capacity_file
    from twin.bands import band_line
    from twin.report import capacity_summary
    from twin.scenario.serving import MAX_RATE_PER_S
    from twin.units import parse_quantity

    rate = None
    if args.rate is not None:
        rate = parse_quantity(args.rate, "rate", "--rate")
        if not 0 < rate <= MAX_RATE_PER_S:
            raise ScenarioError("--rate", f"'{args.rate}' is not allowed: above 0/s and at most "
                                f"{MAX_RATE_PER_S:,.0f}/s (as serving.load.rate)")
    result = capacity_file(args.scenario, rate, args.profile)
    record = result.to_dict()
    band = band_line(record)
    print(result.to_json() if args.json else capacity_summary(record) + (f"\n\n{band}" if band else ""))
    return 0


def _cmd_catalog(args: argparse.Namespace) -> int:
    from twin.report.catalog import catalog_rows
    from twin.text import table

    header, rows = catalog_rows(args.kind)
    print(table(rows, header))
    return 0


def _cmd_topology(args: argparse.Namespace) -> int:
    from twin.api import fabric_file
    from twin.network.describe import describe

    print(describe(fabric_file(args.scenario, args.profile)))
    return 0


def _cmd_fit(args: argparse.Namespace) -> int:
    from twin.api import load_scenario
    from twin.report import fit_table
    from twin.studies.fit import fit

    nodes = None
    if args.nodes is not None:
        nodes = [n.strip() for n in args.nodes.split(",") if n.strip()]
        if not nodes:
            raise ScenarioError("--nodes", f"'{args.nodes}' names no node type; write e.g. dgx-h100,dgx-a100-80gb "
                                "(python -m twin catalog nodes)")
    top = None if args.json else args.top or None        # the rows the table shows: only they are answered first
    report = fit(load_scenario(args.scenario, args.profile), args.by, args.max_gpus, nodes, top)
    print(report.to_json() if args.json else fit_table(report.to_dict(), args.top))
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from twin.validation.report import write_report

    if args.markdown is not None:
        check_file(args.markdown, "--markdown")
    print(write_report(args.markdown, args.cases))
    return 0


def _cmd_convert_trace(args: argparse.Namespace) -> int:
    from twin.operations.traces import convert_helios

    target = check_file(args.target, "target")
    if target.exists() and Path(args.source).exists() and os.path.samefile(target, args.source):
        raise ScenarioError("target", f"'{args.target}' is the source file; write the converted trace elsewhere")
    text, jobs = convert_helios(args.source)
    try:
        write_atomic(target, text)
    except OSError as exc:
        raise ScenarioError("target", f"cannot write '{target}': {exc.strerror}") from None
    print(f"wrote {target}: {jobs:,} jobs in the twin's trace format (jobs.trace, docs/operations.md)")
    return 0


# Largest count a counting flag takes (--top, --refine, --max-points, --max-gpus): far above any useful
# answer, and it keeps a slip (an extra digit, a negative sign) from being read as a slice or a huge loop.
MAX_FLAG_COUNT = 10_000_000
# Plans played with the SimPy step after the closed-form pass (each is a whole simulation, about a second).
MAX_REFINE = 1000
# GPUs fit tries at most: every GPU of the largest cluster cluster.nodes allows (32,768 nodes of 8).
MAX_FIT_GPUS = 262_144
# Digits a whole-number flag may have (Python refuses to read more than 4,300; no count here needs 9).
MAX_FLAG_DIGITS = 30


class _Parser(argparse.ArgumentParser):
    """argparse with the twin's one-line errors: ``twin: error: FLAG: message``, exit 2."""

    def error(self, message: str) -> typing.NoReturn:
        text = re.sub(r"^argument ([^:]+): ", lambda m: m.group(1).split("/")[-1] + ": ", message)
        line = str(ScenarioError("", text))
        self.exit(2, f"twin: error: {line} (see {self.prog} -h)\n")


def _count(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` to ``high``."""
    def parse(text: str) -> int:
        digits = text.strip().lstrip("+-")
        if not digits.isdigit() or len(digits) > MAX_FLAG_DIGITS:
            raise argparse.ArgumentTypeError(f"'{text[:40]}' is not a whole number; allowed: {low:,} to {high:,}")
        value = int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value:,} is not allowed: {low:,} to {high:,}")
        return value
    return parse


def _scenario_argument(p: argparse.ArgumentParser, what: str = "scenario YAML file") -> None:
    p.add_argument("scenario", help=f"{what} (see docs/scenario.md)")


def _json_argument(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON, nothing else")


def _run_parser(sub) -> None:
    run = sub.add_parser("run", help="simulate a scenario file")
    _scenario_argument(run)
    _json_argument(run, "the result record")
    run.add_argument("--out", metavar="DIR", help="also write DIR/results.json")
    run.add_argument("--report", metavar="FILE.md",
                     help="also write a Markdown report, its figures as PNG in FILE-figures/ when Chromium runs")
    _profile_argument(run)
    run.set_defaults(func=_cmd_run)


def _sweep_parser(sub) -> None:
    sw = sub.add_parser("sweep", help="run a scenario at every combination of varied keys (docs/studies.md)")
    _scenario_argument(sw)
    _vary_arguments(sw)
    sw.add_argument("--out", metavar="DIR", help="write DIR/results.parquet, results.csv and study.yaml; "
                    "points already in DIR are not run again")
    sw.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run the points on this Dask cluster")
    sw.add_argument("--workers", type=_count(1, MAX_FLAG_COUNT), metavar="N",
                    help="local worker processes (default: one per core; at most the cores without --oversubscribe)")
    sw.add_argument("--oversubscribe", action="store_true", help="allow --workers above the number of cores")
    sw.add_argument("--closed-form", action="store_true",
                    help="time each step with the analytic schedule instead of the SimPy engine")
    sw.add_argument("--max-points", type=_count(1, MAX_FLAG_COUNT), metavar="N",
                    help="refuse a study of more than N points")
    _json_argument(sw, "the summary")
    _profile_argument(sw)
    sw.set_defaults(func=_cmd_sweep)


def _plan_parser(sub) -> None:
    pl = sub.add_parser("plan", help="search parallel plans (and cluster options) for a training scenario")
    _scenario_argument(pl)
    pl.add_argument("--objective", choices=["time", "cost", "carbon", "energy"], default="time",
                    help="what to minimise (default: time to train)")
    pl.add_argument("--top", type=_count(1, MAX_FLAG_COUNT), default=10, metavar="N",
                    help="list the N best plans (default 10)")
    pl.add_argument("--constraint", action="append", metavar="NAME=LIMIT",
                    help="deadline=30d, power=1.2MW, energy=5GWh, cost=2M EUR or carbon=500t (repeatable)")
    pl.add_argument("--refine", type=_count(0, MAX_REFINE), metavar="N",
                    help="plans played with the SimPy step and failures after the closed-form pass "
                    "(default: the top N, at least 10)")
    _vary_arguments(pl, "also search cluster options: a cluster or site KEY=V1,V2,… (repeatable)")
    _json_argument(pl, "the search")
    _profile_argument(pl)
    pl.set_defaults(func=_cmd_plan)


def _small_parsers(sub) -> None:
    cap = sub.add_parser("capacity", help="the highest arrival rate a serving scenario sustains within its SLO")
    _scenario_argument(cap, "serving scenario YAML file")
    cap.add_argument("--rate", metavar="RATE", help="target arrival rate (500/s, 30000/min): replicas and GPUs it needs")
    _json_argument(cap, "the capacity record")
    _profile_argument(cap)
    cap.set_defaults(func=_cmd_capacity)

    cat = sub.add_parser("catalog", help="list catalog entries")
    cat.add_argument("kind", choices=["gpus", "nodes", "models", "stacks", "engines"])
    cat.set_defaults(func=_cmd_catalog)

    top = sub.add_parser("topology", help="print a scenario's fabric and where its parallel groups land")
    _scenario_argument(top)
    _profile_argument(top)
    top.set_defaults(func=_cmd_topology)


def _fit_parser(sub) -> None:
    fit = sub.add_parser("fit", help="which node types, GPU counts and fine-tuning methods fit a scenario's job, ranked")
    _scenario_argument(fit)
    _json_argument(fit, "the ranking")
    fit.add_argument("--by", choices=["time", "cost"], default="time", help="rank by time to train (default) or cost")
    fit.add_argument("--max-gpus", type=_count(1, MAX_FIT_GPUS), metavar="N",
                     help="largest GPU count tried (default: 8, or the scenario's cluster when larger)")
    fit.add_argument("--nodes", metavar="A,B", help="node types to try (default: every catalog node)")
    fit.add_argument("--top", type=_count(0, MAX_FLAG_COUNT), default=10, metavar="N",
                     help="list the N best rows that fit (default 10; 0: all)")
    _profile_argument(fit)
    fit.set_defaults(func=_cmd_fit)


def _file_parsers(sub) -> None:
    val = sub.add_parser("validate",
                         help="compare the twin with published training and serving runs and measured GEMM kernels "
                              "(docs/validation.md)")
    val.add_argument("--markdown", metavar="FILE", help="also write the report as Markdown into FILE")
    val.add_argument("--cases", metavar="YAML", nargs="+", help="case files to run instead of the shipped ones")
    val.set_defaults(func=_cmd_validate)

    conv = sub.add_parser("convert-trace", help="convert a public GPU-cluster trace into the twin's trace format")
    conv.add_argument("format", choices=["helios"], help="helios: SenseTime Helios cluster_log.csv (SC '21)")
    conv.add_argument("source", help="the trace file to read (a regular file)")
    conv.add_argument("target", help="the CSV file to write (for jobs.trace); not the source")
    conv.set_defaults(func=_cmd_convert_trace)


def parser() -> argparse.ArgumentParser:
    """The command line: one sub-command per question; every error is one line and exit 2."""
    p = _Parser(prog="python -m twin", description="A digital twin of GPU clusters for LLM training and serving.")
    p.add_argument("--version", action="version", version=f"twin {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for build in (_run_parser, _sweep_parser, _plan_parser, _small_parsers, _fit_parser, _file_parsers,
                  _calibration_commands):
        build(sub)
    return p


# -- calibration to a real site: twin calibrate, twin compare (docs/calibrate.md) ----------------------------

def _cmd_calibrate(args: argparse.Namespace) -> int:
    from twin.calibrate.command import as_json, calibrate, calibrate_text, profile_record

    profile = calibrate(args.folder, args.out, args.name)
    print(as_json(profile_record(profile, args.out)) if args.json else calibrate_text(profile, args.out))
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from twin.calibrate.command import as_json, compare, drift_record, drift_text

    drift = compare(args.scenario, args.log, args.profile)
    print(as_json(drift_record(drift)) if args.json else drift_text(drift))
    return 0


def _profile_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", metavar="SITE.yaml",
                   help="price with this site profile (python -m twin calibrate; replaces the scenario's site.profile)")


def _calibration_commands(sub) -> None:
    cal = sub.add_parser("calibrate", help="fit a site profile on a folder of the site's own logs")
    cal.add_argument("folder", help="folder of nccl-tests, operator timing, GPU power and sacct logs")
    cal.add_argument("--out", required=True, metavar="SITE.yaml", help="the site profile to write")
    cal.add_argument("--name", help="the profile's name (default: the folder's)")
    cal.add_argument("--json", action="store_true", help="print the fits as JSON, nothing else")
    cal.set_defaults(func=_cmd_calibrate)
    cmp_ = sub.add_parser("compare", help="a real run's log against the twin's prediction, part by part")
    cmp_.add_argument("scenario", help="scenario YAML file of the run")
    cmp_.add_argument("log", help="training log (Megatron-LM, torchtitan), serving benchmark or GPU power log")
    _profile_argument(cmp_)
    cmp_.add_argument("--json", action="store_true", help="print the drift as JSON, nothing else")
    cmp_.set_defaults(func=_cmd_compare)


def _vary_arguments(p: argparse.ArgumentParser, help_text: str = "") -> None:
    p.add_argument("--vary", action="append", metavar="KEY=V1,V2,…",
                   help=help_text or "a dotted scenario key and its values; ranges A..B:STEP (repeatable)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--grid", action="store_true", help="every combination of the values (default)")
    mode.add_argument("--zip", action="store_true", help="the i-th values of every key together")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if isinstance(getattr(args, "scenario", None), str):   # an unreadable file is refused before the
            parse_yaml(read_text(args.scenario), args.scenario)  # simulator is imported (docs/speed.md)
        quiet = args.command == "sweep" or not wanted(sys.stderr, bool(getattr(args, "json", False)))
        with ticking(args.command, sys.stderr, not quiet):
            return args.func(args)
    except ScenarioError as exc:
        print(f"twin: error: {exc}", file=sys.stderr)
        return 2
    except TwinError as exc:           # a valid question the twin could not finish answering (no renderer)
        print(f"twin: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except ModuleNotFoundError as exc:   # the twin run from a checkout without its dependencies installed
        if os.environ.get("TWIN_DEBUG"):
            raise
        print(f"twin: error: the package '{exc.name}' is not installed: install the twin with its dependencies "
              "(pip install -e . in a virtual environment; README, Set-up)", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback for users
        if os.environ.get("TWIN_DEBUG"):
            raise
        print(f"twin: internal error: {type(exc).__name__}: {exc} (set TWIN_DEBUG=1 for a traceback)", file=sys.stderr)
        return 1
