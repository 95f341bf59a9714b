"""``twin fit`` as text: ten best rows by default, identical rows merged, memory parts that add up."""

from __future__ import annotations

import re

from twin.report.fit import fit_table, memory_cell, merged_rows

GIB = 2**30


def _option(method: str, weights: str, hours: float, weights_gib: float = 35.85) -> dict:
    """A fitting option with round numbers: its total is the sum of its parts."""
    parts = {"weights": weights_gib * GIB, "gradients": 0.19 * GIB, "optimizer": 0.77 * GIB,
             "activations": 44.74 * GIB, "runtime": 2.0 * GIB}
    total = sum(parts.values())
    return {"node": "dgx-b200", "gpus": 8, "method": method, "weights": weights, "fits": True, "plans_tried": 3,
            "plan": "TP1 PP1 DP8 (1f1b, micro-batch 1 × 2, ZeRO-2, recompute none)",
            "memory_per_gpu_bytes": total, "memory_capacity_bytes": 180 * GIB,
            "memory_breakdown_bytes": {**parts, "total": total}, "time_to_train_s": hours * 3600.0,
            "energy_facility_kwh": 1.7713, "energy_cost_eur": {"FR": 0.2561}, "total_cost_eur": {"FR": 0.2561},
            "cost_parts_eur": None}


def _record(options: list[dict]) -> dict:
    return {"scenario": "s", "by": "time", "country": "FR", "options": options, "notes": []}


def test_memory_parts_add_up_to_the_total_shown():
    """Weights, gradients, optimizer, activations and the runtime's reserve: their sum is the total printed."""
    text = memory_cell(_option("lora", "nf4", 1.0))
    total, parts = re.match(r"([\d.]+) GiB of .* \(([\d.+]+) GiB\)", text).groups()
    assert len(parts.split("+")) == 5
    assert abs(sum(float(p) for p in parts.split("+")) - float(total)) < 1e-9
    assert parts == "35.9+0.2+0.8+44.7+2.0" and total == "83.6"    # by hand: the rounded parts, summed


def test_identical_rows_merge_on_method_or_base_only():
    """LoRA and QLoRA on one NF4 base read the same: one row 'LoRA / QLoRA'; fp8 and int8 likewise."""
    rows = [["n", "8", "LoRA", "nf4", "p", "m", "1 h"], ["n", "8", "QLoRA", "nf4", "p", "m", "1 h"],
            ["n", "8", "LoRA", "fp8", "p", "m2", "2 h"], ["n", "8", "LoRA", "int8", "p", "m2", "2 h"],
            ["n", "8", "QLoRA", "int8", "p", "m3", "2 h"]]
    merged, sizes = merged_rows(rows)
    assert [r[2:4] for r in merged] == [["LoRA / QLoRA", "nf4"], ["LoRA", "fp8 / int8"], ["QLoRA", "int8"]]
    assert sizes == [2, 2, 1]


def test_ten_best_by_default_and_all_with_top_zero():
    """Twelve distinct options: ten shown and a line counting the rest; --top 0 shows all twelve."""
    options = [_option("lora", "bf16", float(h + 1), weights_gib=10.0 + h) for h in range(12)]
    text = fit_table(_record(options))
    ranks = [line.split()[0] for line in text.splitlines() if re.match(r"^\d+\s+dgx", line)]
    assert ranks == [str(i) for i in range(1, 11)]
    assert "2 more rows that fit" in text
    assert len([line for line in fit_table(_record(options), 0).splitlines() if re.match(r"^\d+\s+dgx", line)]) == 12


def test_money_and_energy_through_the_one_formatter():
    """Cost in EUR without SI prefix, energy in the unit that gives 1–999."""
    text = fit_table(_record([_option("lora", "nf4", 1.0), _option("qlora", "nf4", 1.0)]))
    assert "0.2561 EUR" in text and "1.771 kWh" in text and "LoRA / QLoRA" in text
    assert "2 of 2 options fit" in text.splitlines()[0] and "1 distinct rows" in text.splitlines()[0]


def test_a_cost_without_a_gpu_price_is_marked_electricity_only():
    """A node type the price list has no on-demand price for costs its electricity alone: its cost cells say so
    (a mark and a footnote), so that it does not read as hundreds of times cheaper than a rented one."""
    priced = _option("lora", "bf16", 2.0) | {"node": "dgx-h100", "total_cost_eur": {"FR": 16.19},
                                             "cost_parts_eur": {"gpu": 15.77, "electricity": 0.41, "total": 16.19}}
    text = fit_table(_record([_option("lora", "nf4", 1.0), priced]))
    unpriced_row = next(line for line in text.splitlines() if line.startswith("1 "))
    priced_row = next(line for line in text.splitlines() if line.startswith("2 "))
    assert unpriced_row.rstrip().endswith("0.2561 EUR *") and priced_row.rstrip().endswith("16.19 EUR")
    assert "* electricity only: no GPU price for that node type (see the note below)" in text.splitlines()
    assert "*" not in fit_table(_record([priced]))


def test_rows_of_different_times_never_merge_even_when_they_read_the_same():
    """1.00 h and 1.01 h both print '60 min', but only rows of exactly one time merge (``fit`` relies on it to
    leave slower options untimed); options it left are counted after the rows shown, merged ones included."""
    text = fit_table(_record([_option("lora", "nf4", 1.0), _option("qlora", "nf4", 1.01)]))
    assert "LoRA / QLoRA" not in text and "1 distinct rows" not in text
    options = [_option("lora", "nf4", 1.0), _option("qlora", "nf4", 1.0), _option("lora", "bf16", 2.0, 20.0)]
    text = fit_table(_record(options) | {"options_unranked": 5}, 1)
    head = text.splitlines()[0]
    assert "8 of 8 options fit" in head and "distinct rows" not in head
    assert "... 6 more options that fit, none faster than these (--top 0 times and lists them all)" in text
