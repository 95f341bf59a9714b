"""``python -m twin fit`` as text (``FitReport.to_dict()``): the options that fit, ranked, then the closest
that do not.

Rows that read the same but for the fine-tuning method (LoRA and QLoRA on the same NF4 base) or the base
precision (fp8 and int8 weights take the same bytes), and take exactly the same time to train, are merged into
one row naming both; the ten best rows are shown unless asked otherwise. Rows of different times never merge,
so ``fit`` leaves untimed the options slower than the rows shown (``twin/studies/fit.py``, ``_ranked_first``).
The memory column's parts (weights, gradients, optimizer, activations and the runtime's reserve) add up to its
total.
"""

from __future__ import annotations

import bisect
from typing import Any

from twin.formatting import fmt_energy_kwh, fmt_money_eur
from twin.report.format import METHOD_NAMES, table
from twin.units import fmt_bytes, fmt_duration

GIB_BYTES = 2**30  # a gibibyte (IEC 80000-13), the unit of the memory column
DEFAULT_TOP = 10   # rows shown by default: the ten best options that fit
MEMORY_PARTS = ("weights", "gradients", "optimizer", "activations", "runtime")
METHOD_COLUMN, BASE_COLUMN = 3, 4   # the columns a merged row may join


def short_plan(description: str) -> str:
    """'TP1 PP1 DP8 (1f1b, micro-batch 1 × 2, ZeRO-0, recompute none)' → 'TP1 PP1 DP8 ZeRO-0 recompute none'."""
    head, _, rest = description.partition(" (")
    extras = [part for part in rest.rstrip(")").split(", ") if part.startswith(("ZeRO", "recompute"))]
    return " ".join([head, *extras])


def memory_cell(o: dict[str, Any]) -> str:
    """'83.6 GiB of 180 GiB (35.9+0.2+0.8+44.7+2.0 GiB)': the parts, rounded alike, add up to the total shown."""
    bd = o["memory_breakdown_bytes"]
    parts = [round(bd.get(k, 0.0) / GIB_BYTES, 1) for k in MEMORY_PARTS]
    paged = o["memory_per_gpu_bytes"] > o["memory_capacity_bytes"]
    return (f"{sum(parts):.1f} GiB of {fmt_bytes(o['memory_capacity_bytes'])} "
            f"({'+'.join(f'{p:.1f}' for p in parts)} GiB{', optimizer paged' if paged else ''})")


# Marks a cost that holds the electricity alone: the GPUs have no price (``UNPRICED_NOTE``).
UNPRICED_MARK = " *"
UNPRICED_NOTE = "* electricity only: no GPU price for that node type (see the note below)"


def _row(o: dict[str, Any], countries: list[str]) -> list[str]:
    """One option's cells, without its rank."""
    cost = o["total_cost_eur"]
    mark = UNPRICED_MARK if o["cost_parts_eur"] is None else ""
    return ([o["node"], f"{o['gpus']}", METHOD_NAMES[o["method"]], o["weights"], short_plan(o["plan"]),
             memory_cell(o), fmt_duration(o["time_to_train_s"]), fmt_energy_kwh(o["energy_facility_kwh"])]
            + [fmt_money_eur(cost.get(c)) + (mark if c in cost else "") for c in countries])


def merged_rows(rows: list[list[str]]) -> tuple[list[list[str]], list[int]]:
    """Rows equal in every cell but the method (or every cell but the base) as one row naming both, in rank order,
    and how many rows each merged row holds.

    A row joins the first row kept before it that it equals, or equals but for the method or but for the base
    (naming both there); otherwise it is kept. Kept rows are looked up by their cells without the method and
    without the base, so each row is compared with those alone, not with every row kept."""
    merged: list[list[str]] = []
    sizes: list[int] = []
    apart = (METHOD_COLUMN - 1, BASE_COLUMN - 1)          # the cells a merge may join, in a row without its rank
    index: tuple[dict[tuple, list[int]], ...] = ({}, {})   # per joinable cell: the row without it → kept rows
    for row in rows:
        found = [index[k].get(_without(row, apart[k]), []) for k in (0, 1)]
        first = min((at[0] for at in found if at), default=None)
        if first is None:
            for k in (0, 1):
                index[k].setdefault(_without(row, apart[k]), []).append(len(merged))
            merged.append(list(row))
            sizes.append(1)
            continue
        sizes[first] += 1
        kept = merged[first]
        differ = [i for i, (a, b) in enumerate(zip(kept, row)) if a != b]
        if differ:                                    # one cell apart, the method or the base: name both
            cell = differ[0]
            other = 1 - apart.index(cell)             # the key that holds the joined cell changes with it
            at = index[other][_without(kept, apart[other])]
            at.remove(first)
            if not at:
                del index[other][_without(kept, apart[other])]
            kept[cell] = kept[cell] + " / " + row[cell]
            bisect.insort(index[other].setdefault(_without(kept, apart[other]), []), first)
    return merged, sizes


def _without(row: list[str], cell: int) -> tuple[str, ...]:
    return (*row[:cell], *row[cell + 1:])


def fit_table(record: dict[str, Any], top: int | None = DEFAULT_TOP) -> str:
    """``python -m twin fit`` as text: the best ``top`` rows that fit (0 or None: all), then the closest misses."""
    options = record["options"]
    fits = [o for o in options if o["fits"]]
    countries = list(fits[0]["energy_cost_eur"]) if fits else []
    header = ["#", "node", "GPUs", "method", "base", "plan", "memory/GPU (weights+grads+optimizer+activations+runtime)",
              "time to train", "energy"] + [f"cost {c}" for c in countries]
    rows, sizes = merged_rows([_row(o, countries) + [repr(o["time_to_train_s"])] for o in fits])
    rows = [row[:-1] for row in rows]
    shown = rows[:top] if top else rows
    unranked = record.get("options_unranked", 0)
    by = "time to train" if record["by"] == "time" else f"cost at the site ({record['country']})"
    out = [f"twin fit — {record['scenario']}: {len(fits) + unranked} of {len(options) + unranked} options fit, "
           f"ranked by {by}" + (f"; {len(rows)} distinct rows" if len(rows) < len(fits) and not unranked else ""), ""]
    out.append(table([[str(i), *r] for i, r in enumerate(shown, 1)], header) if shown else "no option fits")
    if unranked:
        out.append(f"... {len(fits) + unranked - sum(sizes[:top])} more options that fit, none faster than these "
                   "(--top 0 times and lists them all)")
    elif top and len(rows) > top:
        out.append(f"... {len(rows) - top} more rows that fit (--top 0 lists them all)")
    if countries:
        out.append("cost: the GPUs' time as the site pays for it (site.pricing; docs/power.md, \"Cost\"), plus the "
                   "energy at each country's electricity price")
        if any(UNPRICED_MARK in cell for row in shown for cell in row):
            out.append(UNPRICED_NOTE)
    misses = [o for o in options if not o["fits"]]
    if misses:
        closest = ", ".join(f"{o['node']} x{o['gpus']} {METHOD_NAMES[o['method']]} {o['weights']} "
                            f"({fmt_bytes(o['least_memory_per_gpu_bytes'])} of {fmt_bytes(o['memory_capacity_bytes'])})"
                            for o in misses[:3] if o["plans_tried"])
        out.append(f"\n{len(misses)} options do not fit any plan tried" + (f"; closest: {closest}" if closest else ""))
    out += [f"note: {n}" for n in record["notes"]]
    return "\n".join(out)
