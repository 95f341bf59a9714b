"""Human-readable reports of a result record, and catalog tables."""

from __future__ import annotations

from typing import Any

from twin.engine.step import PART_LABELS  # noqa: F401 - the step parts in words, for the dashboard too
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
    """The terminal summary of a run's JSON record (``Result.to_dict()``): every number with its unit."""
    r = record
    out = [f"twin — {r['scenario']}", ""]
    out.append(f"Cluster       {r['gpus_total']:,} GPUs, {r['gpus_used']:,} used; plan {r['plan']['description']}")
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
