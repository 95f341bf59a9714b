"""Human-readable reports of a result record: the terminal summary, the Markdown report with its
figures as PNG, and catalog tables."""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from twin import __version__
from twin.engine.step import PART_LABELS
from twin.figures.compare import Column, compare_figure, side_by_side
from twin.figures.images import RenderError, png_images
from twin.figures.job import job_progress_figure, time_to_train_figure
from twin.figures.overview import country_rows, headline_metrics, infeasibility, memory_figure, plan_rows
from twin.figures.power import country_comparison_figure
from twin.figures.serving import deployment_rows, per_million_figure
from twin.figures.serving import headline_metrics as serving_metrics
from twin.outputs import write_atomic
from twin.units import fmt_bytes, fmt_count, fmt_duration, fmt_si


def table(rows: list[list[str]], header: list[str]) -> str:
    """A plain aligned text table."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def _mass(kg: float) -> str:
    """CO2e as planners read it: '350 kg CO2e', '1,234.5 t CO2e'."""
    return f"{kg:,.1f} kg CO2e" if kg < 1e3 else f"{kg / 1e3:,.1f} t CO2e"


def _eur(amount: float | None) -> str:
    if amount is None:
        return "n/a"
    return f"{amount:,.2f} EUR" if amount < 100 else f"{amount:,.0f} EUR"


METHOD_NAMES = {"full": "full fine-tuning", "lora": "LoRA", "qlora": "QLoRA"}


def _finetune_line(r: dict[str, Any]) -> str | None:
    """The fine-tuning method in words, or None for full training."""
    ft = r.get("finetune") or {}
    if ft.get("method", "full") == "full":
        return None
    lora = ft["lora"]
    paged = "; paged optimizer states" if ft["paged_optimizer"] else ""
    return (f"Fine-tuning   {METHOD_NAMES[ft['method']]}: rank {lora['rank']} on "
            f"{' '.join(lora['targets'])}, {fmt_count(r['trainable_params'])} trainable "
            f"({ft['trainable_fraction']:.2%} of {fmt_count(r['params'])}); frozen base in {ft['weights']} "
            f"({ft['weight_bits']:.3g} bits per weight){paged}")


def summary(record: dict[str, Any]) -> str:
    """The terminal summary of a run's JSON record (``to_dict()`` of a result): every number with its unit."""
    if record.get("workload") == "serving":
        return serving_summary(record)
    if record.get("workload") == "operations":
        return operations_summary(record)
    return training_summary(record)


def training_summary(record: dict[str, Any]) -> str:
    """The terminal summary of a training record (``Result.to_dict()``)."""
    r = record
    out = [f"twin — {r['scenario']}", ""]
    out.append(f"Cluster       {r['gpus_total']:,} GPUs, {r['gpus_used']:,} used; plan {r['plan']['description']}; "
               f"stack {r['stack']['name']}")
    method = _finetune_line(r)
    if method:
        out.append(method)
    bd = r["memory_breakdown_bytes"]
    fit = "fits" if r["memory_fits"] else "DOES NOT FIT"
    out.append(f"Memory/GPU    {fmt_bytes(r['memory_per_gpu_bytes'])} of {fmt_bytes(r['memory_capacity_bytes'])} — {fit} "
               f"(weights {fmt_bytes(bd['weights'])}, grads {fmt_bytes(bd['gradients'])}, "
               f"optimizer {fmt_bytes(bd['optimizer'])}, activations {fmt_bytes(bd['activations'])}, "
               f"runtime {fmt_bytes(bd['runtime'])}); longest sequence that fits: {r['longest_seq_len']:,} tokens")
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
    out.append(f"Energy        IT {fmt_si(r['energy_it_kwh'] * 1e3, 'Wh')}, facility {fmt_si(r['energy_facility_kwh'] * 1e3, 'Wh')} "
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
                     f"{r['carbon_intensity_g_per_kwh'][code]:.0f} g CO2e/kWh", _mass(kg),
                     f"{price:.3f} EUR/kWh" if price is not None else "n/a", _eur(cost)]
                    + ([_eur(total)] if rental is not None else []))
    out.append("")
    header = ["country", "intensity", "carbon", "electricity", "energy cost"]
    out.append(table(rows, header + (["total cost"] if rental is not None else [])))
    for w in r["warnings"]:
        out.append(f"warning: {w}")
    return "\n".join(out)


# Columns of a study's tables in words, with their formatter.
OBJECTIVE_COLUMNS = {
    "time_to_train_s": ("time to train", fmt_duration),
    "site_total_cost_eur": ("cost", lambda v: _euros(v)),
    "site_carbon_kg": ("carbon", lambda v: _tonnes(v)),
    "ttft_s.p99": ("p99 time to first token", fmt_duration),
    "site_cost_per_million_output_tokens_eur": ("cost per M output tokens", lambda v: f"{v:,.3g} EUR"),
    "site_carbon_per_million_output_tokens_kg": ("carbon per M output tokens", lambda v: f"{v:,.3g} kg CO2e"),
    "wait_s.all.p90": ("p90 wait", fmt_duration),
    "site_energy.cluster.energy_cost_eur": ("energy cost", lambda v: _euros(v)),
    "site_energy.cluster.carbon_kg": ("carbon", lambda v: _tonnes(v)),
}
# Rows of a table shown in the terminal at most.
MAX_TABLE_ROWS = 20


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def sweep_summary(record: dict[str, Any]) -> str:
    """The terminal summary of a sweep (``SweepReport.to_dict()``): counts, errors and the Pareto front."""
    r = record
    out = [f"twin sweep — {r['scenario']}", ""]
    done = f"{r['points']:,} points: {r['ran']:,} run now, {r['reused']:,} found in the study directory"
    out.append(done + (f", {r['errors']:,} errors" if r["errors"] else ""))
    if r["dropped"]:
        out.append(f"{r['dropped']:,} rows of an earlier study in the directory are not points of this one: left out")
    for message, count in list(r["error_messages"].items())[:3]:
        out.append(f"  {count:,} × {message}")
    if r["directory"]:
        out.append(f"wrote {r['directory']}/results.parquet, results.csv and study.yaml")
    front = r["front"]
    if not front:
        out += ["", "No Pareto front: no point has a time, cost and carbon to compare."]
        return "\n".join(out)
    keys = [k for k in front[0] if k not in r["objectives"]]
    named = " against ".join(OBJECTIVE_COLUMNS[o][0] for o in r["objectives"])
    out += ["", f"Pareto front ({named}, all lower is better): {len(front):,} of {r['points'] - r['errors']:,} points"]
    rows = [[_cell(row[k]) for k in keys] + [OBJECTIVE_COLUMNS[o][1](row[o]) for o in r["objectives"]]
            for row in front[:MAX_TABLE_ROWS]]
    out.append(table(rows, keys + [OBJECTIVE_COLUMNS[o][0] for o in r["objectives"]]))
    if len(front) > MAX_TABLE_ROWS:
        out.append(f"... {len(front) - MAX_TABLE_ROWS:,} more on the front (see the results table)")
    return "\n".join(out)


def plan_summary(record: dict[str, Any]) -> str:
    """The terminal summary of a plan search (``PlanSearch.to_dict()``): what was searched and the best plans."""
    r = record
    out = [f"twin plan — {r['scenario']}", ""]
    options = f" on {r['options']:,} cluster options" if r["options"] > 1 else ""
    out.append(f"Searched {r['plans_considered']:,} plans{options}: {r['plans_evaluated']:,} evaluated in closed "
               f"form, {r['plans_pruned']:,} pruned ({r['plans_infeasible']:,} cannot split, "
               f"{r['plans_over_memory']:,} do not fit memory, {r['plans_equivalent']:,} repeat another)"
               + (f", {r['plans_rejected']:,} break a constraint" if r["plans_rejected"] else "")
               + ("; exhaustive" if r["exhaustive"] else "; NOT exhaustive (plan budget reached)"))
    if r["constraints"]:
        out.append(f"Constraints   {', '.join(r['constraints'])}")
    out.append(f"Ranked by     {r['objective']}; the top {r['refined']} played with the SimPy step and failures")
    for e in r["option_errors"][:3]:
        out.append(f"  skipped: {e}")
    for note in r["notes"]:
        out.append(f"Note          {note}")
    out.append("")
    if not r["plans"]:
        out.append("No plan fits the GPUs' memory and meets the constraints.")
        return "\n".join(out)
    header = ["#", "option", "plan", "step", "time to train", "memory/GPU", "MFU", "energy", "carbon", "cost"]
    rows = [_plan_cells(str(i), p) for i, p in enumerate(r["plans"], 1)]
    if r["scenario_plan"] is not None:
        rows.append(_plan_cells("scenario", r["scenario_plan"]))
    out.append(table(rows, header))
    return "\n".join(out)


def _plan_cells(rank: str, p: dict[str, Any]) -> list[str]:
    option = ", ".join(f"{k.split('.')[-1]} {v}" for k, v in p["option"].items()) or "-"
    return [rank, option, p["description"], f"{p['step_time_s']:.3f} s", fmt_duration(p["time_to_train_s"]),
            fmt_bytes(p["memory_per_gpu_bytes"]), f"{p['mfu']:.1%}", fmt_si(p["energy_facility_kwh"] * 1e3, "Wh"),
            _tonnes(p["carbon_kg"]), _euros(p["cost_eur"]) if p["cost_eur"] is not None else "-"]


def _euros(amount: float) -> str:
    if abs(amount) >= 1e6:
        return f"{amount / 1e6:,.2f} M EUR"
    return f"{amount:,.0f} EUR" if abs(amount) >= 100 else f"{amount:.3g} EUR"


def _tonnes(kg: float) -> str:
    return f"{kg / 1000.0:,.1f} t CO2e" if abs(kg) >= 1000 else f"{kg:.3g} kg CO2e"


def fit_table(record: dict[str, Any], top: int | None = None) -> str:
    """``python -m twin fit`` as text: the options that fit, ranked, then the closest that do not."""
    options = record["options"]
    fits = [o for o in options if o["fits"]]
    shown = fits[:top] if top else fits
    countries = list(fits[0]["energy_cost_eur"]) if fits else []
    header = ["#", "node", "GPUs", "method", "base", "plan", "memory/GPU (weights+grads+optimizer+activations)",
              "time to train", "energy"] + [f"cost {c}" for c in countries]
    rows = []
    for i, o in enumerate(shown, 1):
        bd = o["memory_breakdown_bytes"]
        paged = o["memory_per_gpu_bytes"] > o["memory_capacity_bytes"]
        memory = (f"{fmt_bytes(o['memory_per_gpu_bytes'])} of {fmt_bytes(o['memory_capacity_bytes'])} "
                  f"({bd['weights'] / 2**30:.1f}+{bd['gradients'] / 2**30:.1f}+{bd['optimizer'] / 2**30:.1f}"
                  f"+{bd['activations'] / 2**30:.1f} GiB{', optimizer paged' if paged else ''})")
        cost = o["total_cost_eur"]
        rows.append([str(i), o["node"], f"{o['gpus']}", METHOD_NAMES[o["method"]], o["weights"], _short_plan(o["plan"]),
                     memory, fmt_duration(o["time_to_train_s"]), fmt_si(o["energy_facility_kwh"] * 1e3, "Wh")]
                    + [_eur(cost.get(c)) for c in countries])
    by = "time to train" if record["by"] == "time" else f"cost at the site ({record['country']})"
    out = [f"twin fit — {record['scenario']}: {len(fits)} of {len(options)} options fit, ranked by {by}", ""]
    out.append(table(rows, header) if rows else "no option fits")
    if top and len(fits) > top:
        out.append(f"... {len(fits) - top} more that fit (--top 0 lists them all)")
    misses = [o for o in options if not o["fits"]]
    if misses:
        closest = ", ".join(f"{o['node']} x{o['gpus']} {METHOD_NAMES[o['method']]} {o['weights']} "
                            f"({fmt_bytes(o['least_memory_per_gpu_bytes'])} of {fmt_bytes(o['memory_capacity_bytes'])})"
                            for o in misses[:3] if o["plans_tried"])
        out.append(f"\n{len(misses)} options do not fit any plan tried" + (f"; closest: {closest}" if closest else ""))
    out += [f"note: {n}" for n in record["notes"]]
    return "\n".join(out)


def _short_plan(description: str) -> str:
    """'TP1 PP1 DP8 (1f1b, micro-batch 1 × 2, ZeRO-0, recompute none)' → 'TP1 PP1 DP8 ZeRO-0 recompute none'."""
    head, _, rest = description.partition(" (")
    extras = [part for part in rest.rstrip(")").split(", ") if part.startswith(("ZeRO", "recompute"))]
    return " ".join([head, *extras])


# ---------------------------------------------------------------------------
# Serving


def _ms(seconds: float | None) -> str:
    """A latency in the unit a reader expects (ms below a second); n/a when there is none."""
    return "n/a" if seconds is None else fmt_duration(seconds)


def _triple(p: dict[str, float] | None) -> str:
    return "n/a" if not p else " / ".join(_ms(p[q]) for q in ("p50", "p90", "p99"))


def _rate(rate_per_s: float | None) -> str:
    return "offline (every request queued at t = 0)" if rate_per_s is None else f"{rate_per_s:,.3g} requests/s"


def _slo(slo: dict[str, float | None]) -> str:
    parts = [f"{name} ≤ {_ms(slo[key])}" for name, key in (("p99 TTFT", "ttft_p99_s"), ("p99 TPOT", "tpot_p99_s"))
             if slo[key] is not None]
    return ", ".join(parts) if parts else "none"


def serving_summary(record: dict[str, Any]) -> str:
    """The terminal summary of a serving record (``ServingResult.to_dict()``)."""
    r = record
    out = [f"twin — {r['scenario']}", ""]
    out += _serving_lines(r)
    alternatives = r.get("alternatives") or []
    if alternatives:
        out += ["", "Compared deployments (the same model and load)", ""]
        out.append(table([_comparison_row(x) for x in [r, *alternatives]],
                         ["deployment", "GPUs", "output tok/s", "p99 TTFT", "p99 TPOT", "SLO",
                          "kWh/M tok", f"EUR/M tok ({r['country']})", f"kg CO2e/M tok ({r['country']})"]))
    for w in [*r["warnings"], *(w for x in alternatives for w in x["warnings"])]:
        out.append(f"warning: {w}")
    return "\n".join(out)


def _serving_lines(r: dict[str, Any]) -> list[str]:
    d, bd = r["deployment"], r["memory_breakdown_bytes"]
    out = [f"Deployment    {r['label']}; {r['gpus_used']:,} of {r['gpus_total']:,} GPUs used"]
    fit = "fits" if r["memory_fits"] else "DOES NOT FIT"
    grace = bd["weights_grace"] + bd["kv_cache_grace"]
    out.append(f"Memory/GPU    {fmt_bytes(r['memory_per_gpu_bytes'])} of {fmt_bytes(r['memory_capacity_bytes'])} — {fit} "
               f"(weights {fmt_bytes(bd['weights'])}, reserve {fmt_bytes(bd['reserve'])}, "
               f"KV cache {fmt_bytes(bd['kv_cache'])}" + (f", Grace memory {fmt_bytes(grace)}" if grace else "") + ")")
    out.append(f"KV cache      {r['kv_cache_capacity_tokens']:,} tokens per replica "
               f"({fmt_bytes(r['kv_bytes_per_token'])} per token per GPU, {d['kv_cache']})")
    out.append(f"Load          {_rate(r['rate_per_s'])}; SLO {_slo(r['slo'])}")
    if r["requests_per_s"] is None:
        return out
    out.append(f"Throughput    {r['requests_per_s']:,.2f} requests/s, {r['output_tokens_per_s']:,.0f} output tokens/s, "
               f"{r['tokens_per_s']:,.0f} tokens/s in and out")
    out.append(f"Latency       P50 / P90 / P99: TTFT {_triple(r['ttft_s'])}; TPOT {_triple(r['tpot_s'])}; "
               f"end to end {_triple(r['e2e_latency_s'])}")
    out.append(f"SLO           {'met' if r['slo_met'] else 'NOT met'}")
    e = r["engine"]
    out.append(f"Engine        {e['iterations']:,} iterations ({e['clock_advances']:,} clock advances); up to "
               f"{e['max_running']:,} sequences in flight; busy {e['busy_fraction']:.0%}; "
               f"{e['preemptions']:,} preemptions")
    p = r["power"]
    out.append(f"Power (IT)    average {fmt_si(r['avg_power_it_w'], 'W')} (GPU {p['gpu_avg_w']:.0f} W"
               + (" per MIG instance" if d["mig"] else "") + ")")
    out.append(f"Per million   {r['energy_per_million_output_tokens_kwh']:.3g} kWh facility "
               f"({r['energy_per_million_output_tokens_it_kwh']:.3g} kWh IT × PUE {r['pue']:.2f}) per million "
               "output tokens" + (f"; GPU rental {p['rental_per_million_output_tokens_eur']:,.3g} EUR"
                                  if p["rental_per_million_output_tokens_eur"] is not None else ""))
    rows = []
    for c in p["countries"]:
        cost = r["cost_per_million_output_tokens_eur"].get(c["code"])
        rows.append([c["code"] + (" (site)" if c["code"] == r["country"] else ""),
                     f"{c['intensity_g_per_kwh']:.0f} g CO2e/kWh",
                     f"{r['carbon_per_million_output_tokens_kg'][c['code']]:.3g} kg CO2e",
                     f"{cost:.3g} EUR" if cost is not None else "n/a"])
    out += ["", table(rows, ["country", "intensity", "carbon per M output tokens", "cost per M output tokens"])]
    return out


def _comparison_row(r: dict[str, Any]) -> list[str]:
    site = r["country"]
    if r["requests_per_s"] is None:
        return [r["label"], f"{r['gpus_used']:,}", "does not fit", "", "", "", "", "", ""]
    cost = r["cost_per_million_output_tokens_eur"].get(site)
    return [r["label"], f"{r['gpus_used']:,}", f"{r['output_tokens_per_s']:,.0f}", _ms(r["ttft_s"]["p99"]),
            _ms(r["tpot_s"]["p99"]), "met" if r["slo_met"] else "NOT met",
            f"{r['energy_per_million_output_tokens_kwh']:.3g}", f"{cost:.3g}" if cost is not None else "n/a",
            f"{r['carbon_per_million_output_tokens_kg'][site]:.3g}"]


def capacity_summary(record: dict[str, Any]) -> str:
    """The terminal summary of ``python -m twin capacity`` (``CapacityResult.to_dict()``)."""
    r = record
    out = [f"twin capacity — {r['scenario']}", "", f"SLO           {_slo(r['slo'])}"]
    rows = [_capacity_row(x) for x in [r, *(r.get("alternatives") or [])]]
    target = r["target"]
    header = ["deployment", "per replica", "per GPU", "deployment (replicas)", "offline"]
    if target:
        header.append(f"for {_rate(target['target_rate_per_s'])}")
    out += ["", table(rows, header)]
    sweep = r["sweep"]
    if sweep:
        out += ["", f"Bisection of {r['label']}", ""]
        out.append(table([[_rate(p["rate_per_s"]), f"{p['output_tokens_per_s']:,.0f}", _ms(p["ttft_s"]["p99"]),
                           _ms(p["tpot_s"]["p99"]), "met" if p["slo_met"] else "not met"] for p in sweep],
                         ["offered", "output tok/s", "p99 TTFT", "p99 TPOT", "SLO"]))
    for x in [r, *(r.get("alternatives") or [])]:
        out += [f"warning: {w}" for w in x["warnings"]]
    return "\n".join(out)


def _capacity_row(r: dict[str, Any]) -> list[str]:
    if not r["memory_fits"]:
        return [r["label"], "does not fit", "", "", ""] + ([""] if r["target"] else [])
    row = [r["label"], _rate(r["per_replica_rate_per_s"]), _rate(r["per_gpu_rate_per_s"]),
           f"{_rate(r['rate_per_s'])} ({r['replicas']:,})", _rate(r["offline_requests_per_s"])]
    t = r["target"]
    if t:
        row.append(f"{t['replicas']:,} replicas, {t['gpus']:,} GPUs"
                   + (f" ({t['devices']:,} instances)" if t["devices"] != t["gpus"] else ""))
    return row


# ---------------------------------------------------------------------------
# Cluster operations


def _duration(seconds: float) -> str:
    """A duration, with no wait written as 0 s."""
    return "0 s" if seconds == 0 else fmt_duration(seconds)


def _spread(p: dict[str, Any], fmt=_duration) -> str:
    """P50 / P90 / P99 of a percentile record; n/a when it counts nothing."""
    if not p or not p.get("count"):
        return "n/a"
    return " / ".join(fmt(p[q]) for q in ("p50", "p90", "p99"))


def _times(value: float) -> str:
    return f"{value:.2f}x"


def operations_summary(record: dict[str, Any]) -> str:
    """The terminal summary of a cluster-operations record (``OperationsResult.to_dict()``)."""
    r = record
    u, w, p, f, e = r["utilisation"], r["wait_s"], r["power"], r["failures"], r["energy"]
    site, units = r["country"], r["scalable_units"]
    out = [f"twin — {r['scenario']}", ""]
    out.append(f"Cluster       {r['nodes']:,} nodes of {r['gpus_per_node']} GPUs ({r['gpus_total']:,} GPUs), "
               f"{r['spare_nodes']} in the spare pool; {r['topology']}, {units} scalable unit{'s' * (units != 1)} of "
               f"{r['nodes_per_su']}, 1:{r['oversubscription']:g}")
    out.append(f"Scheduler     {r['policy']}, {r['placement']} placement; {r['jobs_submitted']:,} jobs over "
               f"{fmt_duration(r['makespan_s'])} (horizon {fmt_duration(r['horizon_s'])})")
    out.append(f"Jobs          {r['jobs_finished']:,} finished, {r['jobs_timed_out']:,} at their time limit, "
               f"{r['jobs_unfinished']:,} unfinished; {r['spanning_jobs']:,} started over more than one scalable unit")
    out.append(f"Utilisation   GPUs held {u['allocated']:.1%}, working {u['busy']:.1%}; "
               f"{u['gpu_hours_allocated']:,.0f} GPU-hours held; fragmented {u['fragmented_gpus']:,.1f} GPUs "
               f"({u['fragmented']:.1%}) on average (free GPUs no waiting job can use)")
    out.append(f"Queue wait    P50/P90/P99 {_spread(w['all'])} (mean {_duration(w['all']['mean'] or 0.0)})"
               + (f"; carbon-aware holds {_spread(w['hold'])}" if w["hold"]["count"] else ""))
    out.append(f"Completion    turnaround P50/P90/P99 {_spread(r['turnaround_s'])}; slowdown "
               f"{_spread(r['slowdown'], _times)}")
    out.append(f"Placement     step time over packed: mean {_times(r['step_slowdown']['mean'] or 1.0)}; jobs over "
               f"several units P50/P90/P99 {_spread(r['step_slowdown_spanning'], _times)}")
    for name, svc in r["services"].items():
        on = f"{svc['devices']:,} MIG {svc['profile']} instances on {svc['gpus']:,} GPUs" if svc["profile"] else \
            f"{svc['gpus']:,} GPUs"
        out.append(f"Serving       {name}: {svc['replicas']:,} replicas on {on}; "
                   f"{svc['requests_per_s']:,.2f} requests/s, "
                   f"p99 TTFT {fmt_duration(svc['ttft_p99_s'])}, SLO {'met' if svc['slo_met'] else 'NOT met'}")
    if f["enabled"]:
        out.append(f"Failures      {f['node_failures']:,} node failures, {f['interruptions']:,} job interruptions; "
                   f"{f['replacements']:,} failed nodes replaced ({f['spare_swaps']:,} from the spare pool); "
                   f"work lost {fmt_duration(f['lost_work_s'])}")
    limit = p["limit_w"]
    out.append(f"Power         facility mean {fmt_si(p['mean_facility_w'], 'W')}, "
               f"peak {fmt_si(p['peak_facility_w'], 'W')}"
               + (f" against a {fmt_si(limit, 'W')} limit: {p['hours_over_limit']:,.1f} h over" if limit else ""))
    cluster, jobs = e["cluster"], e["jobs"]
    share = jobs["energy_it_kwh"] / cluster["energy_it_kwh"] if cluster["energy_it_kwh"] else 0.0
    out.append(f"Energy        IT {cluster['energy_it_kwh'] / 1e3:,.1f} MWh, facility "
               f"{cluster['energy_facility_kwh'] / 1e3:,.1f} MWh (PUE {p['pue']:.2f}); jobs {share:.0%}, idle nodes, "
               "spares and fabric the rest")
    aware = r["carbon_aware"]
    if aware:
        out.append(f"Carbon-aware  {aware['deferred_jobs']:,} deferrable jobs held "
                   f"{fmt_duration(aware['mean_hold_s'])} "
                   f"on average: {aware['saved_kg'][site]:,.0f} kg CO2e saved at the site "
                   f"({aware['saved_kg'][site] / aware['baseline_carbon_kg'][site]:.2%}); mean wait "
                   f"{fmt_duration(aware['mean_wait_s'] or 0.0)} against "
                   f"{fmt_duration(aware['baseline_mean_wait_s'] or 0.0)}")
    rows = []
    for c in r["countries"]:
        code = c["code"]
        cost = cluster["energy_cost_eur"][code]
        rows.append([code + (" (site)" if code == site else ""),
                     f"{c['intensity_g_per_kwh']:.0f} g CO2e/kWh " + ("hourly" if c["hourly"] else "annual"),
                     f"{cluster['carbon_kg'][code] / 1e3:,.1f} t CO2e",
                     f"{cost:,.0f} EUR" if cost is not None else "n/a"])
    out += ["", table(rows, ["country", "intensity", "carbon", "energy cost"])]
    rental = cluster["rental_cost_eur"]
    rows = []
    for name, t in r["tenants"].items():
        jobs_n = sum(1 for j in r["jobs"] if j["tenant"] == name)
        cost = t["energy_cost_eur"][site]
        wait = w["by_tenant"].get(name, {})
        rows.append([name, f"{jobs_n:,}", _spread(wait), f"{t['gpu_hours']:,.0f}",
                     f"{t['energy_facility_kwh'] / 1e3:,.1f} MWh", f"{t['carbon_kg'][site] / 1e3:,.2f} t",
                     f"{cost:,.0f} EUR" if cost is not None else "n/a"]
                    + ([f"{t['rental_cost_eur']:,.0f} EUR"] if rental is not None else []))
    out += ["", table(rows, ["tenant", "jobs", "wait P50/P90/P99", "GPU-hours", "energy (facility)",
                             f"carbon ({site})", f"energy cost ({site})"] + (["rental"] if rental is not None else []))]
    rows = [[size, f"{v['count']:,}", _spread(v)] for size, v in w["by_size"].items()]
    out += ["", table(rows, ["job size", "jobs", "wait P50/P90/P99"])]
    for warning in r["warnings"]:
        out.append(f"warning: {warning}")
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
    if result.get("workload") == "serving":
        out += _serving_overview(result, image)
        return MarkdownReport("\n".join(out).rstrip() + "\n", figures)
    if result.get("workload") == "operations":      # the cluster's jobs: the summary as the terminal prints it
        return MarkdownReport("\n".join([*out, "```", operations_summary(result), "```"]) + "\n", figures)
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


def _serving_overview(r: dict[str, Any], image: Any) -> list[str]:
    """A serving deployment's headline numbers, the deployments compared, and cost and carbon per country."""
    out = [md_table([{"metric": m.label, "value": m.value, "detail": m.help} for m in serving_metrics(r)]), ""]
    out += [f"- warning: {w}" for w in r["warnings"]] + ([""] if r["warnings"] else [])
    out += ["### Deployments", "", md_table(deployment_rows(r)), ""]
    if r["requests_per_s"] is not None:
        out += ["### Per million output tokens", "",
                image("per_million", "Cost and carbon per million output tokens", per_million_figure(r)), ""]
    return out


def write_markdown(report: MarkdownReport, path: str | Path, left_out: list[str] | None = None) -> list[Path]:
    """Write the report and its PNG figures beside it, each file whole or not at all (the figures are all
    drawn before anything is written); returns the files written, the report last. The figures are
    optional: those that cannot be drawn are left out of the text, and why is appended to ``left_out``."""
    path = Path(path)
    try:
        images = png_images(report.figures)
    except RenderError as exc:
        images = {}
        if left_out is not None:
            left_out.append(str(exc))
    text = report.text
    for name in report.figures:
        if name not in images:
            text = re.sub(rf"!\[([^\]]*)\]\({re.escape(name)}\)", r"*Figure left out: \1 (not drawn).*", text)
    if left_out is not None and report.figures and images and len(images) < len(report.figures):
        left_out.append(f"{len(report.figures) - len(images)} of {len(report.figures)} figures could not be drawn")
    written = []
    for name, data in [*images.items(), (path.name, text)]:
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
