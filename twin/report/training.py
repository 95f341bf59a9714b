"""The terminal summary of a training (or fine-tuning) record (``TrainingResult.to_dict()``)."""

from __future__ import annotations

from typing import Any

from twin.formatting import fmt_co2e_kg, fmt_energy_kwh, fmt_money_eur, fmt_number
from twin.report.format import METHOD_NAMES, table
from twin.units import fmt_bytes, fmt_count, fmt_duration, fmt_si


def finetune_line(r: dict[str, Any]) -> str | None:
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


def _step_lines(r: dict[str, Any]) -> list[str]:
    """The cluster and plan, the method, memory per GPU, the step and the throughput."""
    from twin.engine.step import PART_LABELS     # the step model: not loaded for a serving or jobs summary

    out = [f"Cluster       {r['gpus_total']:,} GPUs, {r['gpus_used']:,} used; plan {r['plan']['description']}; "
           f"stack {r['stack']['name']}"]
    method = finetune_line(r)
    if method:
        out.append(method)
    bd = r["memory_breakdown_bytes"]
    fit = "fits" if r["memory_fits"] else "DOES NOT FIT"
    out.append(f"Memory/GPU    {fmt_bytes(r['memory_per_gpu_bytes'])} of {fmt_bytes(r['memory_capacity_bytes'])} "
               f"— {fit} (weights {fmt_bytes(bd['weights'])}, grads {fmt_bytes(bd['gradients'])}, "
               f"optimizer {fmt_bytes(bd['optimizer'])}, activations {fmt_bytes(bd['activations'])}, "
               f"runtime {fmt_bytes(bd['runtime'])}); longest sequence that fits: {r['longest_seq_len']:,} tokens")
    out.append(f"Step          {r['step_time_s']:.3f} s for {r['tokens_per_step']:,} tokens; "
               f"bottleneck: {r['bottleneck']}")
    parts = ", ".join(f"{PART_LABELS.get(k, k)} {v:.3f} s" for k, v in r["step_breakdown_s"].items() if v > 0)
    out.append(f"              {parts}")
    out.append(f"Throughput    {fmt_number(r['tokens_per_s'])} tokens/s ({fmt_number(r['tokens_per_s_per_gpu'])} tokens/s/GPU); "
               f"{r['model_tflops_per_gpu']:.0f} TFLOP/s/GPU model, {r['hardware_tflops_per_gpu']:.0f} TFLOP/s/GPU "
               f"hardware; MFU {r['mfu']:.1%}{_peak(r)}")
    return out


def _peak(r: dict[str, Any]) -> str:
    """What the MFU is a fraction of: the training precision's dense peak per GPU (records written before it say
    nothing)."""
    if "peak_tflops_per_gpu" not in r:
        return ""
    return f" of the {r['precision']} dense peak ({r['peak_tflops_per_gpu']:,.0f} TFLOP/s/GPU)"


def _job_lines(r: dict[str, Any]) -> list[str]:
    """Time to train, and what failures and checkpoints added to it."""
    ideal = r["ideal_time_to_train_s"]
    if r.get("finished", True):
        out = [f"Time to train {fmt_duration(r['time_to_train_s'])} for {fmt_count(r['tokens'])} tokens "
               f"(ideal {fmt_duration(ideal)}; {r['interruptions']:.0f} interruptions, "
               f"goodput {r['goodput']:.1%})"]
    else:
        out = [f"Time to train DID NOT FINISH within {fmt_duration(r['time_to_train_s'])} "
               f"for {fmt_count(r['tokens'])} tokens (ideal {fmt_duration(ideal)})"]
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
    return out


def _power_lines(r: dict[str, Any]) -> list[str]:
    """GPU-hours, IT power, racks, the power cap and energy."""
    p = r["power"]
    out = [f"GPU-hours     {fmt_number(r['gpu_hours'])} used, {fmt_number(p['reserved_gpu_hours'])} reserved (every GPU of the "
           "cluster, spares and idle GPUs included)"]
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
    out.append(f"Energy        IT {fmt_energy_kwh(r['energy_it_kwh'])}, "
               f"facility {fmt_energy_kwh(r['energy_facility_kwh'])} (PUE {r['pue']:.2f}"
               + (", GPU-hours x TDP accounting" if p["accounting"] == "gpu-tdp" else "") + ")")
    return out


# The parts of a cost, as the report names them (docs/power.md, "Cost").
PART_NAMES = {"rental": {"gpu": "GPU rental"},
              "owned": {"gpu": "hardware write-off", "maintenance": "maintenance", "space": "space"}}


def _parts_lines(r: dict[str, Any]) -> list[str]:
    """The site's cost and what it is made of (``cost_eur``)."""
    c = r["cost_eur"]
    names = PART_NAMES[c["pricing"]] | {"electricity": "electricity"}
    parts = " + ".join(f"{names[k]} {fmt_money_eur(c[k])}" for k in c["includes"])
    out = [f"Cost          {fmt_money_eur(c['total'])} at the site = {parts}"]
    p = r["power"]
    rate = p["gpu_hour_price_eur"]["total"]
    # The rate's source, its first clause (the price list's: "median of 5 on-demand list prices of h100-sxm").
    source = r["sources"].get("gpu_hour_price", "").split(" (")[0] or "the site's own costs"
    out.append(f"              GPU time: {fmt_number(p['reserved_gpu_hours'])} GPU-hours reserved at {rate:.2f} "
               f"EUR/GPU-hour ({source}; docs/power.md, \"Cost\")")
    return out


def _ratio_lines(r: dict[str, Any]) -> list[str]:
    """The site's electricity price against the USA's, where both are known and the USA is compared."""
    prices, site = r["electricity_price_eur_per_kwh"], r["country"]
    if site == "US" or prices.get("US") is None or prices.get(site) is None:
        return []
    return [f"Electricity   {site} {prices[site]:.3f} EUR/kWh is {prices[site] / prices['US']:.1f}× the US price "
            f"({prices['US']:.3f} EUR/kWh; sources: docs/power.md, \"Electricity prices\")"]


def _cost_lines(r: dict[str, Any]) -> list[str]:
    """Embodied carbon, GPU rental, and carbon and cost in each country."""
    out = []
    embodied = r["embodied_carbon_kg"]
    if embodied is not None:
        out.append(f"Embodied      {fmt_co2e_kg(embodied)} (hardware, amortised over its lifetime)")
    rental = r["rental_cost_eur"]
    if r.get("cost_eur"):
        out += _parts_lines(r)
    elif rental is not None:
        out.append(f"GPU rental    {fmt_money_eur(rental)}")
    out += _ratio_lines(r)
    rows = []
    for code, kg in r["carbon_kg"].items():
        price = r["electricity_price_eur_per_kwh"].get(code)
        rows.append([code + (" (site)" if code == r["country"] else ""),
                     f"{r['carbon_intensity_g_per_kwh'][code]:.0f} g CO2e/kWh", fmt_co2e_kg(kg),
                     f"{price:.3f} EUR/kWh" if price is not None else "n/a", fmt_money_eur(r["energy_cost_eur"].get(code))]
                    + ([fmt_money_eur(r["total_cost_eur"].get(code))] if rental is not None else []))
    header = ["country", "intensity", "carbon", "electricity", "energy cost"]
    if rental is not None and r.get("cost_eur"):
        names = PART_NAMES[r["cost_eur"]["pricing"]]
        held = " + ".join(names[k] for k in r["cost_eur"]["includes"] if k in names)
        return out + ["", table(rows, header + [f"total ({held} + electricity)"])]
    return out + ["", table(rows, header + (["total cost"] if rental is not None else []))]


def training_summary(record: dict[str, Any]) -> str:
    """The terminal summary of a training record (``TrainingResult.to_dict()``)."""
    out = [f"twin — {record['scenario']}", "", *_step_lines(record), *_job_lines(record), *_power_lines(record),
           *_cost_lines(record)]
    out += [f"warning: {w}" for w in record["warnings"]]
    return "\n".join(out)
