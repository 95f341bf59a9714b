"""Figures and the Markdown report, against hand-computed cases: the rack floor, binned power, the job's
progress, the time-to-train axis, step colours, headline formatting, infeasible plans, what-ifs side by side."""

from __future__ import annotations

import math

import numpy as np
import pytest

from twin.figures import compare, job, overview, power, step
from twin.figures.colours import PART_COLOURS, SPAN_PARTS, span_colour
from twin.report import markdown_report
from twin.units import SECONDS_PER_DAY


def racks(groups: list[tuple[int, int, float]], limit_w: float | None = 25e3) -> dict:
    """A result whose power record holds rack groups (count, busy nodes, peak W)."""
    return {"power": {"rack_groups": [{"racks": n, "busy_nodes": b, "idle_nodes": 2 - b, "avg_w": 0.7 * peak,
                                       "peak_w": peak} for n, b, peak in groups],
                      "rack_limit_w": limit_w, "nodes_per_rack": 2,
                      "racks": sum(n for n, _, _ in groups),
                      "racks_over_limit": sum(n for n, _, p in groups if limit_w and p > limit_w)}}


# ---------------------------------------------------------------------------
# Racks


def test_rack_floor_shows_every_rack_against_its_limit_below_one_hundred_racks():
    result = racks([(62, 2, 20.4e3), (3, 0, 3.9e3), (1, 0, 1.95e3)])
    assert power.rack_floor(result["power"]) == (1, 13, 6)          # 66 racks, rows of ceil(sqrt(2.5 · 66))
    z = power.rack_power_figure(result).data[0].z
    cells = [v for row in z for v in row if not math.isnan(v)]
    assert len(cells) == 66
    assert cells[0] == pytest.approx(81.6) and cells[-1] == pytest.approx(7.8)   # % of the 25 kW limit


def test_above_one_hundred_racks_neighbours_share_a_cell_showing_the_hottest():
    result = racks([(1024, 2, 20.4e3), (16, 0, 3.9e3)], limit_w=20e3)
    per_cell, per_row, rows = power.rack_floor(result["power"])
    assert per_cell == 11 and per_row * rows >= 95 > per_row * (rows - 1)   # 1,040 racks → 95 cells
    fig = power.rack_power_figure(result)
    cells = [v for row in fig.data[0].z for v in row if not math.isnan(v)]
    assert len(cells) == 95
    assert cells[93] == pytest.approx(102.0)         # racks 1024–1034 hold one busy rack: its peak shows
    assert cells[94] == pytest.approx(100 * 3.9 / 20)
    assert "1,024 over the 20.0 kW limit" in fig.layout.title.text


def test_hottest_racks_come_first_with_their_rack_numbers():
    rows = power.hottest_racks(racks([(3, 0, 3.9e3), (62, 2, 20.4e3)]))
    assert [r["racks"] for r in rows] == ["4–65", "1–3"]
    assert rows[0]["peak / limit [%]"] == 82


# ---------------------------------------------------------------------------
# Power over time


def test_a_long_power_timeline_is_averaged_in_bins_that_keep_the_energy():
    # 400 one-hour segments alternating 10 MW and 2 MW: each 2-hour bin averages 6 MW
    timeline = [{"start_s": 3600.0 * i, "end_s": 3600.0 * (i + 1), "it_w": 10e6 if i % 2 == 0 else 2e6,
                 "phase": "train"} for i in range(400)]
    edges, watts = power._binned(timeline, 200)
    assert np.allclose(watts, 6e6)
    assert np.sum(watts * np.diff(edges)) == pytest.approx(sum(3600 * s["it_w"] for s in timeline))
    fig = power.power_timeline_figure({"power": {"timeline": timeline, "train_w": 10e6}, "peak_power_it_w": 12e6})
    assert "averaged over 2.0 h bins" in fig.layout.title.text
    assert len(fig.data[0].x) == 201


# ---------------------------------------------------------------------------
# The job


def progress_result(asynchronous: bool = False) -> dict:
    """1 token/s; checkpoints every 30 s of training (1 s stall); a failure after 100 s; 110 tokens in all."""
    segments = [{"start_s": 0.0, "end_s": 100.0, "phase": "train", "checkpoints": 3, "checkpoint_s": 3.0},
                {"start_s": 100.0, "end_s": 110.0, "phase": "restart"},
                {"start_s": 110.0, "end_s": 130.0, "phase": "train"}]
    return {"tokens_per_s": 1.0, "tokens": 110.0, "ideal_time_to_train_s": 110.0,
            "timeline": {"segments": segments, "events": [{"t_s": 100.0, "kind": "failure", "component": "gpu"}]},
            "failures": {"checkpoint_interval_s": 30.0, "checkpoint_write_s": 5.0,
                         "checkpoint_asynchronous": asynchronous}}


def test_progress_rolls_back_to_the_last_durable_checkpoint_at_a_failure():
    p = job.progress(progress_result())
    # 97 s trained in the first block (3 s of stalls), 3 whole intervals durable: back to 90 tokens
    assert p.times_s == [0.0, 0.0, 100.0, 100.0, 110.0, 130.0]
    assert p.tokens == [0.0, 0.0, 97.0, 90.0, 90.0, 110.0]
    assert p.failures_s == [100.0]
    assert list(p.checkpoints_s) == [30.0, 61.0, 92.0]               # after k intervals and k - 1 stalls


def test_an_asynchronous_checkpoint_counts_once_its_write_has_finished():
    p = job.progress(progress_result(asynchronous=True))
    assert p.tokens[3] == 90.0                                       # (97 - 5) // 30 = 3 intervals
    result = progress_result(asynchronous=True)
    result["timeline"]["segments"][0] |= {"end_s": 95.0}             # 92 s trained: the third write unfinished
    result["timeline"]["segments"][1]["start_s"] = 95.0
    assert job.progress(result).tokens[3] == 60.0


def test_progress_ticks_turn_into_counts_per_bin_above_two_hundred_events():
    few = job.job_progress_figure(progress_result())
    assert [t.type for t in few.data] == ["scatter", "scatter", "scatter", "scatter"]     # line, line, ticks
    result = progress_result()
    result["timeline"]["events"] = [{"t_s": 130.0 * t / 300, "kind": "failure", "component": "gpu"} for t in range(300)]
    many = job.job_progress_figure(result)
    bars = [t for t in many.data if t.type == "bar"]
    assert len(bars) == 1 and sum(bars[0].y) == 300 and "300 in all" in bars[0].name


def test_time_to_train_axis_is_fitted_to_the_spread():
    days = [100.0, 100.2, 100.4, 100.5, 100.9]
    result = {"time_to_train_s": 100.4 * SECONDS_PER_DAY, "ideal_time_to_train_s": 95 * SECONDS_PER_DAY,
              "failures": {"samples_values": {"time_to_train_s": [d * SECONDS_PER_DAY for d in days]},
                           "time_to_train_s": {q: v * SECONDS_PER_DAY for q, v in
                                               (("p10", 100.08), ("p50", 100.4), ("p90", 100.74))}}}
    fig = job.time_to_train_figure(result)
    low, high = fig.layout.xaxis.range
    assert 99.9 < low < 100.0 and 100.9 < high < 101.0
    assert sum(fig.data[0].y) == 5
    assert [t.name for t in fig.data[1:]] == ["P10 100.1 days", "P50 100.4 days", "P90 100.7 days"]   # 4 digits
    assert "without failures 95 days (off the axis)" in fig.layout.title.text


# ---------------------------------------------------------------------------
# One step


def test_each_step_part_has_one_colour_on_both_charts():
    spans = [{"stage": s, "kind": k, "microbatch": 0, "chunk": 0, "start_s": 0.0, "end_s": 1.0}
             for s in range(16) for k in SPAN_PARTS]
    result = {"step_timeline": spans, "step_time_s": 6.0,
              "step_breakdown_s": {"compute": 3.0, "tp_comm": 1.0, "pp_comm": 0.5, "bubble": 1.0, "dp_comm": 0.5,
                                   "optimizer": 0.0}}
    gantt = step.step_gantt_figure(result)
    breakdown = step.step_breakdown_figure(result)
    by_part = {t.name.split(" (")[0]: t.marker.color for t in breakdown.data}
    assert by_part["GPU compute"] == span_colour("forward") == PART_COLOURS["compute"]
    assert by_part["pipeline send/recv"] == span_colour("send")
    assert len(set(PART_COLOURS.values())) == len(PART_COLOURS)
    assert len(breakdown.data) == 5 and breakdown.layout.legend.traceorder == "normal"   # zero parts left out
    assert gantt.layout.uniformtext.mode == "hide" and gantt.layout.height > 16 * step.ROW_PX


@pytest.mark.parametrize("per_row, labelled", [(step.MAX_LABELLED_BARS_PER_ROW, True),
                                               (step.MAX_LABELLED_BARS_PER_ROW + 1, False)])
def test_the_gantt_labels_its_bars_only_where_a_label_can_fit(per_row, labelled):
    """Past MAX_LABELLED_BARS_PER_ROW bars in a row no micro-batch number fits its bar: the chart leaves them out
    (and says to hover) instead of having the browser measure thousands of labels it would hide."""
    spans = [{"stage": s, "kind": "forward", "microbatch": j, "chunk": 0, "start_s": j * 0.1, "end_s": j * 0.1 + 0.09}
             for s in range(4) for j in range(per_row)]
    gantt = step.step_gantt_figure({"step_timeline": spans})
    assert (gantt.data[0].text is not None) == labelled
    assert ("numbers are micro-batches" in gantt.layout.title.text) == labelled
    assert all(row[0] >= 0 for row in gantt.data[0].customdata)          # the hover names the micro-batch


# ---------------------------------------------------------------------------
# Headline numbers and plans that do not run


def headline(**extra) -> dict:
    base = {"country": "US", "gpus_used": 16384, "gpu_hours": 42.4e6, "carbon_kg": {"US": 17.1e6},
            "energy_cost_eur": {"US": 3.45e6}, "energy_facility_kwh": 46.3e6, "tokens_per_s": 1.76e6,
            "time_to_train_s": 9.3e6, "memory_fits": True, "memory_per_gpu_bytes": 30e9,
            "memory_capacity_bytes": 80e9, "peak_power_it_w": 22.8e6, "goodput": 0.95}
    return base | extra


def test_headline_numbers_are_abbreviated_with_the_full_value_in_their_help():
    """Money with separators and no SI prefix, carbon in g, kg or t, energy in the unit that gives 1-999."""
    metrics = {m.label: m for m in overview.headline_metrics(headline())}
    assert metrics["GPU-hours"].value == "42.4 M GPU·h" and "42,400,000 GPU·h" in metrics["GPU-hours"].help
    assert metrics["Carbon (US)"].value == "17,100 t CO2e"
    assert metrics["Energy cost (US)"].value == "3,450,000 EUR"
    assert metrics["Energy (facility)"].value == "46.3 GWh"
    assert metrics["Peak power (IT)"].value == "22.8 MW"
    small = {m.label: m for m in overview.headline_metrics(headline(carbon_kg={"US": 3.11}))}
    assert small["Carbon (US)"].value == "3.11 kg CO2e" and overview.co2e(0.0178) == "17.8 g CO2e"
    assert all(len(m.value) <= 13 for m in metrics.values())


def test_a_plan_that_does_not_fit_says_by_how_much_and_what_would_fit():
    problem = overview.infeasibility(headline(memory_fits=False, memory_per_gpu_bytes=90 * 2**30,
                                              memory_capacity_bytes=80 * 2**30,
                                              memory_advice=["ZeRO stage 3 would fit (61.0 GiB)"]))
    assert problem.title == "The plan does not fit in GPU memory"
    assert "10.0 GiB over" in problem.detail and problem.suggestions == ("ZeRO stage 3 would fit (61.0 GiB)",)
    never = overview.infeasibility(headline(finished=False, warnings=[
        "did not finish: of 20 samples, 20 reached the 5.0 years horizon (failures.horizon); "
        "the times are lower bounds"]))
    assert never.title == "The job does not finish" and never.detail.startswith("of 20 samples, 20 reached")
    assert any("failures.horizon" in s for s in never.suggestions)
    assert overview.infeasibility(headline()) is None


# ---------------------------------------------------------------------------
# What-ifs side by side


def test_side_by_side_puts_metrics_in_rows_and_deltas_against_the_first_column():
    columns = [compare.Column("as written", headline(), note="the scenario's own values"),
               compare.Column("A", headline(gpu_hours=21.2e6, carbon_kg={"US": 8.55e6, "FR": 1e6}), note="x"),
               compare.Column("B", None, "cluster.nodes: too few", note="y")]
    rows = {r["metric"]: r for r in compare.side_by_side(columns, deltas=True, per_country=True)}
    assert rows["GPU-hours"]["as written"] == "42.4 M GPU·h"
    assert rows["GPU-hours"]["A"] == "21.2 M GPU·h (-50.0 %)"
    assert rows["carbon in FR"]["as written"] == "n/a" and rows["carbon in FR"]["A"].startswith("1,000 t CO2e")
    assert rows["status"]["B"] == "error: cluster.nodes: too few" and rows["GPU-hours"]["B"] == "n/a"


def test_crossed_dimensions_draw_grouped_bars_at_the_first_dimension():
    columns = [compare.Column(f"{p} · {c}", headline(), dims={"precision": p, "country": c})
               for p in ("bf16", "fp8") for c in ("FR", "DE")]
    fig = compare.compare_figure(columns)
    assert fig.layout.barmode == "group"
    assert len(fig.data) == 2 * len(compare.BARS)                    # one trace per country per chart
    assert list(fig.data[0].x) == ["bf16", "fp8"] and fig.data[0].name == "country FR"
    assert fig.layout.xaxis.title.text == "precision"


def test_the_markdown_report_states_an_infeasible_plan_instead_of_its_numbers():
    result = headline(memory_fits=False, memory_per_gpu_bytes=90 * 2**30, memory_capacity_bytes=80 * 2**30,
                      scenario="too big", plan={"description": "TP1"}, memory_breakdown_bytes={"weights": 90 * 2**30},
                      warnings=[], memory_advice=[])
    report = markdown_report(result, source="big.yaml")
    assert "> **The plan does not fit in GPU memory**" in report.text
    assert "| metric | value |" not in report.text
    assert set(report.figures) == {"figures/memory.png", "figures/countries.png"}


def test_data_and_building_figures_draw_their_records():
    from twin.api import run_file
    from twin.figures.building import data_path_figure, data_path_rows, pue_by_hour_figure, storage_use_figure

    r = run_file("scenarios/jeroboam-video.yaml").to_dict()
    rows = {row["part"]: row["time"] for row in data_path_rows(r)}
    assert rows["read from ddn-jeroboam"] == "960 ms"
    assert data_path_figure(r).data[0].x[0] == 0.96
    use = storage_use_figure(r).data[0]
    assert len(use.y) == r["storage"]["checkpoints_written"] and use.x[0] == pytest.approx(1.0)   # hourly checkpoints
    dc5 = run_file("scenarios/superpod-dc5.yaml").to_dict()
    heat = pue_by_hour_figure(dc5).data[0]
    assert len(heat.z) == 24 and len(heat.z[0]) == 365
    assert sum(map(sum, heat.z)) / 8760 == pytest.approx(dc5["building"]["pue"], abs=1e-4)


def test_the_study_page_opens_on_a_metric_whose_lines_differ():
    """Time to train is the same in every country; carbon is not: the default curve is carbon, one line each."""
    from twin.figures import study
    rows = [{"point": i, "cluster.nodes": n, "site.country": c, "time_to_train_s": 100.0 / n,
             "site_carbon_kg": n * {"FR": 1.0, "DE": 7.0}[c]} for i, (n, c) in
            enumerate([(1, "FR"), (1, "DE"), (2, "FR"), (2, "DE")])]
    choices = study.metrics(rows, ["cluster.nodes", "site.country"])
    assert choices[0] == "time_to_train_s"
    assert study.default_metric(rows, choices, "cluster.nodes", "site.country") == "site_carbon_kg"
    assert study.default_metric(rows, choices, "cluster.nodes", None) == "time_to_train_s"


def test_study_energy_and_carbon_take_the_unit_their_values_read_best_in():
    """A study of small jobs reads Wh and g, one of large jobs MWh and t: the one formatter's rule on its axes."""
    from twin.figures.study import label, scaled

    small = [{"energy_facility_kwh": 0.4, "site_carbon_kg": 0.151}, {"energy_facility_kwh": 0.9, "site_carbon_kg": 0.3}]
    assert label("energy_facility_kwh", small) == "facility energy [Wh]"
    assert scaled("energy_facility_kwh", 0.4, small) == pytest.approx(400.0)
    assert label("site_carbon_kg", small) == "carbon at the site [g CO2e]"
    large = [{"energy_facility_kwh": 730_700.0, "site_carbon_kg": 40_950.0}]
    assert label("energy_facility_kwh", large) == "facility energy [MWh]"
    assert scaled("site_carbon_kg", 40_950.0, large) == pytest.approx(40.95)
