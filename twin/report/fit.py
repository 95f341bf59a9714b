"""``python -m twin fit`` as text (``FitReport.to_dict()``): the options that fit, ranked, then the closest
that do not."""

from __future__ import annotations

from typing import Any

from twin.report.format import METHOD_NAMES, eur, table
from twin.units import fmt_bytes, fmt_duration, fmt_si

GIB_BYTES = 2**30  # a gibibyte (IEC 80000-13), the unit of the memory column


def short_plan(description: str) -> str:
    """'TP1 PP1 DP8 (1f1b, micro-batch 1 × 2, ZeRO-0, recompute none)' → 'TP1 PP1 DP8 ZeRO-0 recompute none'."""
    head, _, rest = description.partition(" (")
    extras = [part for part in rest.rstrip(")").split(", ") if part.startswith(("ZeRO", "recompute"))]
    return " ".join([head, *extras])


def _row(i: int, o: dict[str, Any], countries: list[str]) -> list[str]:
    bd = o["memory_breakdown_bytes"]
    paged = o["memory_per_gpu_bytes"] > o["memory_capacity_bytes"]
    memory = (f"{fmt_bytes(o['memory_per_gpu_bytes'])} of {fmt_bytes(o['memory_capacity_bytes'])} "
              f"({bd['weights'] / GIB_BYTES:.1f}+{bd['gradients'] / GIB_BYTES:.1f}+{bd['optimizer'] / GIB_BYTES:.1f}"
              f"+{bd['activations'] / GIB_BYTES:.1f} GiB{', optimizer paged' if paged else ''})")
    cost = o["total_cost_eur"]
    return ([str(i), o["node"], f"{o['gpus']}", METHOD_NAMES[o["method"]], o["weights"], short_plan(o["plan"]),
             memory, fmt_duration(o["time_to_train_s"]), fmt_si(o["energy_facility_kwh"] * 1e3, "Wh")]
            + [eur(cost.get(c)) for c in countries])


def fit_table(record: dict[str, Any], top: int | None = None) -> str:
    """``python -m twin fit`` as text: the options that fit, ranked, then the closest that do not."""
    options = record["options"]
    fits = [o for o in options if o["fits"]]
    shown = fits[:top] if top else fits
    countries = list(fits[0]["energy_cost_eur"]) if fits else []
    header = ["#", "node", "GPUs", "method", "base", "plan", "memory/GPU (weights+grads+optimizer+activations)",
              "time to train", "energy"] + [f"cost {c}" for c in countries]
    rows = [_row(i, o, countries) for i, o in enumerate(shown, 1)]
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
