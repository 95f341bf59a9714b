"""The terminal summaries of studies: a sweep (``SweepReport.to_dict()``) and a plan search
(``PlanSearch.to_dict()``)."""

from __future__ import annotations

from typing import Any

from twin.formatting import fmt_co2e_kg, fmt_energy_kwh, fmt_money_eur
from twin.report.format import cell, table
from twin.units import fmt_bytes, fmt_duration

# Columns of a study's tables in words, with their formatter.
OBJECTIVE_COLUMNS = {
    "time_to_train_s": ("time to train", fmt_duration),
    "site_total_cost_eur": ("cost", fmt_money_eur),
    "site_carbon_kg": ("carbon", fmt_co2e_kg),
    "ttft_s.p99": ("p99 time to first token", fmt_duration),
    "site_cost_per_million_output_tokens_eur": ("cost per M output tokens", fmt_money_eur),
    "site_carbon_per_million_output_tokens_kg": ("carbon per M output tokens", fmt_co2e_kg),
    "wait_s.all.p90": ("p90 wait", fmt_duration),
    "site_energy.cluster.energy_cost_eur": ("energy cost", fmt_money_eur),
    "site_energy.cluster.carbon_kg": ("carbon", fmt_co2e_kg),
}
# Rows of a table shown in the terminal at most.
MAX_TABLE_ROWS = 20


def _front(r: dict[str, Any]) -> list[str]:
    """The sweep's Pareto front as a table, at most ``MAX_TABLE_ROWS`` rows."""
    front = r["front"]
    keys = [k for k in front[0] if k not in r["objectives"]]
    named = " against ".join(OBJECTIVE_COLUMNS[o][0] for o in r["objectives"])
    out = ["", f"Pareto front ({named}, all lower is better): {len(front):,} of {r['points'] - r['errors']:,} points"]
    rows = [[cell(row[k]) for k in keys] + [OBJECTIVE_COLUMNS[o][1](row[o]) for o in r["objectives"]]
            for row in front[:MAX_TABLE_ROWS]]
    out.append(table(rows, keys + [OBJECTIVE_COLUMNS[o][0] for o in r["objectives"]]))
    if len(front) > MAX_TABLE_ROWS:
        out.append(f"... {len(front) - MAX_TABLE_ROWS:,} more on the front (see the results table)")
    return out


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
    if not r["front"]:
        out += ["", "No Pareto front: no point has a time, cost and carbon to compare."]
        return "\n".join(out)
    return "\n".join(out + _front(r))


def plan_summary(record: dict[str, Any]) -> str:
    """The terminal summary of a plan search (``PlanSearch.to_dict()``): what was searched and the best plans."""
    r = record
    out = [f"twin plan — {r['scenario']}", ""]
    options = f" on {r['options']:,} cluster options" if r["options"] > 1 else ""
    out.append(f"Searched {r['plans_considered']:,} plans{options}: {r['plans_evaluated']:,} evaluated in closed "
               f"form, {r['plans_pruned']:,} pruned ({r['plans_infeasible']:,} cannot split, "
               f"{r['plans_over_memory']:,} do not fit memory, {r['plans_equivalent']:,} repeat another"
               + (f", {r['plans_bounded']:,} slower than the plans kept even at their floor" if r["plans_bounded"]
                  else "") + ")"
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
            fmt_bytes(p["memory_per_gpu_bytes"]), f"{p['mfu']:.1%}", fmt_energy_kwh(p["energy_facility_kwh"]),
            fmt_co2e_kg(p["carbon_kg"]), fmt_money_eur(p["cost_eur"]) if p["cost_eur"] is not None else "-"]
