"""Command line: ``python -m twin run | fit | capacity | sweep | plan | catalog | topology | validate | convert-trace``.

Exit status: 0 success, 2 bad input (one line on stderr naming the key), 1 internal error.
"""

from __future__ import annotations

import argparse
import os
import sys

from twin import __version__, catalog
from twin.errors import ScenarioError, TwinError
from twin.outputs import check_directory, check_file, write_atomic
from twin.units import BITS_PER_BYTE, fmt_si
from twin.ticker import ticking, wanted
from twin.yamlfile import parse_yaml, read_text


def _cmd_run(args: argparse.Namespace) -> int:
    from twin.api import run_file
    from twin.report import markdown_report, summary, write_markdown

    out = report = None
    if args.out is not None:                      # checked before the simulation starts
        out = check_directory(args.out, "--out") / "results.json"
        check_file(str(out), "--out")
    if args.report is not None:
        report = check_file(args.report, "--report")
        if report.suffix.lower() != ".md":
            raise ScenarioError("--report", f"'{args.report}' is not a Markdown file name (write e.g. report.md)")
        check_directory(str(report.parent / f"{report.stem}-figures"), "--report")
    result = run_file(args.scenario)
    text = result.to_json() if args.json else summary(result.to_dict())
    if out is not None:
        try:
            write_atomic(out, result.to_json())
        except OSError as exc:
            raise ScenarioError("--out", f"cannot write '{out}': {exc.strerror}") from None
        if not args.json:
            text += f"\n\nwrote {out}"
    if report is not None:
        folder = f"{report.stem}-figures"
        written = write_markdown(markdown_report(result.to_dict(), source=args.scenario, folder=folder), report)
        if not args.json:
            text += ("\n" if out else "\n\n") + (f"wrote {report} and {len(written) - 1} figures in "
                                                  f"{report.parent / folder}")
    print(text)
    return 0


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
    data = scenario_data(args.scenario)
    progress = Progress(len(study), enabled=wanted(sys.stderr, args.json))
    with executor(args.scheduler, args.workers) as pool:
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
    found = search_plans(scenario_data(args.scenario), args.scenario, args.objective, args.top, args.constraint,
                         study, args.refine)
    if args.json:
        print(found.to_json())
    else:
        rate = found.plans_evaluated / found.seconds if found.seconds > 0 else 0.0
        print(plan_summary(found.to_dict()) + f"\n\nclosed form: {found.plans_evaluated:,} plans in "
              f"{found.seconds:.2f} s ({rate:,.0f} plans/s)")
    return 0


def _cmd_capacity(args: argparse.Namespace) -> int:
    from twin.api import capacity_file
    from twin.report import capacity_summary
    from twin.units import parse_quantity

    rate = None
    if args.rate is not None:
        rate = parse_quantity(args.rate, "rate", "--rate")
        if not 0 < rate < float("inf"):
            raise ScenarioError("--rate", f"'{args.rate}' is not allowed: write a positive rate such as 500/s")
    result = capacity_file(args.scenario, rate)
    print(result.to_json() if args.json else capacity_summary(result.to_dict()))
    return 0


def _catalog_rows(kind: str) -> tuple[list[str], list[list[str]]]:
    from twin.engine.stack import stack_profile
    from twin.hardware.specs import gpu_spec, node_spec
    from twin.units import fmt_bytes
    from twin.workload.model import model_spec

    if kind == "gpus":
        header = ["name", "description", "BF16 TFLOP/s", "FP8 TFLOP/s", "memory", "HBM GB/s", "TDP W", "idle W",
                  "NVLink GB/s", "MIG"]
        rows = []
        for name in catalog.names("gpus"):
            g = gpu_spec(name)
            fp8 = g.peak_flops.get("fp8")
            rows.append([name, g.description, f"{g.peak('bf16') / 1e12:.0f}", f"{fp8 / 1e12:.0f}" if fp8 else "-",
                         fmt_bytes(g.memory_bytes), f"{g.memory_Bps / 1e9:.0f}", f"{g.tdp_w:.0f}", f"{g.idle_w:.0f}",
                         f"{g.nvlink_Bps / 1e9:.0f}" if g.nvlink_Bps else "-", "yes" if g.mig else "no"])
        return header, rows
    if kind == "nodes":
        from twin.power.devices import node_power

        header = ["name", "GPUs", "intra-node", "compute NICs", "storage NICs", "idle kW", "max power kW", "CPU"]
        rows = []
        for name in catalog.names("nodes"):
            n = node_spec(name)
            rows.append([name, f"{n.gpus}x {n.gpu.name}", n.intra,
                         f"{n.compute_nics.count}x {fmt_si(n.compute_nics.line_rate_Bps * BITS_PER_BYTE, 'b/s')}",
                         f"{n.storage_nics.count}x {fmt_si(n.storage_nics.line_rate_Bps * BITS_PER_BYTE, 'b/s')}",
                         f"{node_power(n).idle_w / 1e3:.2f}", f"{n.max_power_w / 1e3:.2f}", n.cpu])
        return header, rows
    if kind == "stacks":
        header = ["name", "attention", "kernels", "autocast", "grad reduce", "overlap grad/param", "TP overlap",
                  "ZeRO-3 gathers", "cross-entropy", "description"]
        rows = []
        for name in catalog.names("stacks"):
            s = stack_profile(name)
            yes = {True: "yes", False: "no"}
            rows.append([name, s.attention, s.kernels, yes[s.autocast], s.grad_reduce,
                         f"{yes[s.overlap_grad_reduce]}/{yes[s.overlap_param_gather]}", yes[s.tp_comm_overlap],
                         s.sharded_gather, s.cross_entropy, catalog.table("stacks")[name]["description"]])
        return header, rows
    header = ["name", "params", "layers", "hidden", "heads", "kv heads", "ffn", "vocab", "activation", "position",
              "experts"]
    rows = []
    for name in catalog.names("models"):
        m = model_spec(name)
        experts = f"{m.experts} (top {m.top_k})" if m.is_moe else "-"
        rows.append([name, f"{m.params / 1e9:.1f}B", str(m.layers), str(m.hidden), str(m.heads), str(m.kv_heads),
                     str(m.ffn_hidden), str(m.vocab), m.activation, m.position, experts])
    return header, rows


def _cmd_catalog(args: argparse.Namespace) -> int:
    from twin.text import table

    header, rows = _catalog_rows(args.kind)
    print(table(rows, header))
    return 0


def _cmd_topology(args: argparse.Namespace) -> int:
    from twin.api import fabric_file
    from twin.network.describe import describe

    print(describe(fabric_file(args.scenario)))
    return 0


def _cmd_fit(args: argparse.Namespace) -> int:
    from twin.api import load_scenario
    from twin.report import fit_table
    from twin.studies.search import fit

    nodes = [n.strip() for n in args.nodes.split(",") if n.strip()] if args.nodes else None
    report = fit(load_scenario(args.scenario), args.by, args.max_gpus, nodes)
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
    text, jobs = convert_helios(args.source)
    try:
        write_atomic(target, text)
    except OSError as exc:
        raise ScenarioError("target", f"cannot write '{target}': {exc.strerror}") from None
    print(f"wrote {target}: {jobs:,} jobs in the twin's trace format (jobs.trace, docs/operations.md)")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m twin",
                                description="A digital twin of GPU clusters for LLM training and serving.")
    p.add_argument("--version", action="version", version=f"twin {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="simulate a scenario file")
    run.add_argument("scenario", help="scenario YAML file (see docs/scenario.md)")
    run.add_argument("--json", action="store_true", help="print the result record as JSON, nothing else")
    run.add_argument("--out", metavar="DIR", help="also write DIR/results.json")
    run.add_argument("--report", metavar="FILE.md",
                     help="also write a Markdown report, its figures as PNG in FILE-figures/ (needs Chromium)")
    run.set_defaults(func=_cmd_run)

    sw = sub.add_parser("sweep", help="run a scenario at every combination of varied keys (docs/studies.md)")
    sw.add_argument("scenario", help="scenario YAML file (see docs/scenario.md)")
    _vary_arguments(sw)
    sw.add_argument("--out", metavar="DIR", help="write DIR/results.parquet, results.csv and study.yaml; "
                    "points already in DIR are not run again")
    sw.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run the points on this Dask cluster")
    sw.add_argument("--workers", type=int, metavar="N", help="local worker processes (default: one per core)")
    sw.add_argument("--closed-form", action="store_true",
                    help="time each step with the analytic schedule instead of the SimPy engine")
    sw.add_argument("--max-points", type=int, metavar="N", help="refuse a study of more than N points")
    sw.add_argument("--json", action="store_true", help="print the summary as JSON, nothing else")
    sw.set_defaults(func=_cmd_sweep)

    pl = sub.add_parser("plan", help="search parallel plans (and cluster options) for a training scenario")
    pl.add_argument("scenario", help="scenario YAML file (see docs/scenario.md)")
    pl.add_argument("--objective", choices=["time", "cost", "carbon", "energy"], default="time",
                    help="what to minimise (default: time to train)")
    pl.add_argument("--top", type=int, default=10, metavar="N", help="list the N best plans (default 10)")
    pl.add_argument("--constraint", action="append", metavar="NAME=LIMIT",
                    help="deadline=30d, power=1.2MW, energy=5GWh, cost=2M EUR or carbon=500t (repeatable)")
    pl.add_argument("--refine", type=int, metavar="N",
                    help="plans played with the SimPy step and failures after the closed-form pass "
                    "(default: the top N, at least 10)")
    _vary_arguments(pl, "also search cluster options: a cluster or site KEY=V1,V2,… (repeatable)")
    pl.add_argument("--json", action="store_true", help="print the search as JSON, nothing else")
    pl.set_defaults(func=_cmd_plan)


    cap = sub.add_parser("capacity", help="the highest arrival rate a serving scenario sustains within its SLO")
    cap.add_argument("scenario", help="serving scenario YAML file (see docs/serving.md)")
    cap.add_argument("--rate", metavar="RATE", help="target arrival rate (500/s, 30000/min): replicas and GPUs it needs")
    cap.add_argument("--json", action="store_true", help="print the capacity record as JSON, nothing else")
    cap.set_defaults(func=_cmd_capacity)

    cat = sub.add_parser("catalog", help="list catalog entries")
    cat.add_argument("kind", choices=["gpus", "nodes", "models", "stacks"])
    cat.set_defaults(func=_cmd_catalog)

    top = sub.add_parser("topology", help="print a scenario's fabric and where its parallel groups land")
    top.add_argument("scenario", help="scenario YAML file (see docs/scenario.md)")
    top.set_defaults(func=_cmd_topology)

    fit = sub.add_parser("fit", help="which node types, GPU counts and fine-tuning methods fit a scenario's job, ranked")
    fit.add_argument("scenario", help="scenario YAML file (see docs/scenario.md)")
    fit.add_argument("--json", action="store_true", help="print the ranking as JSON, nothing else")
    fit.add_argument("--by", choices=["time", "cost"], default="time", help="rank by time to train (default) or cost")
    fit.add_argument("--max-gpus", type=int, metavar="N",
                     help="largest GPU count tried (default: 8, or the scenario's cluster when larger)")
    fit.add_argument("--nodes", metavar="A,B", help="node types to try (default: every catalog node)")
    fit.add_argument("--top", type=int, default=10, metavar="N", help="list the N best rows that fit (default 10; 0: all)")
    fit.set_defaults(func=_cmd_fit)

    val = sub.add_parser("validate", help="compare the twin with published training runs (docs/validation.md)")
    val.add_argument("--markdown", metavar="FILE", help="also write the report as Markdown into FILE")
    val.add_argument("--cases", metavar="YAML", nargs="+", help="case files to run instead of the shipped ones")
    val.set_defaults(func=_cmd_validate)

    conv = sub.add_parser("convert-trace", help="convert a public GPU-cluster trace into the twin's trace format")
    conv.add_argument("format", choices=["helios"], help="helios: SenseTime Helios cluster_log.csv (SC '21)")
    conv.add_argument("source", help="the trace file to read")
    conv.add_argument("target", help="the CSV file to write (for jobs.trace)")
    conv.set_defaults(func=_cmd_convert_trace)
    return p


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
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback for users
        if os.environ.get("TWIN_DEBUG"):
            raise
        print(f"twin: internal error: {type(exc).__name__}: {exc} (set TWIN_DEBUG=1 for a traceback)", file=sys.stderr)
        return 1
