"""The twin against published training runs (twin/validation/cases, docs/validation.md).

The per-group MAPE bounds below are the accuracy the twin has reached, with a
small margin: a change that loses accuracy fails here. The role bounds: throughput
MAPE ≤ 5% on calibration cases (the project's target) and, on check cases, the
runs no efficiency was fitted on, the bound the twin holds: 7.7% with `matmul`
refitted after the slowest-of-N wait and NCCL's collective latencies, and
DeepSpeed's pipeline sends split over the tensor ranks (6.6% before, on a fit
that predated the wait). The project's check target, 6% since the scale work
(7% before it), is not met; docs/validation.md says where the error sits.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
import yaml

from twin import catalog
from twin.calibration import Efficiency, achievable_matmul_fraction
from twin.hardware.specs import gpu_spec
from twin.cli import main
from twin.errors import ScenarioError
from twin.validation import load_cases, run_cases, summarize
from twin.validation.cases import parse_case_file
from twin.validation.report import BEGIN_MARK, END_MARK, splice

# Its module fixtures are set up once: all its tests run on one worker (pytest-xdist).
pytestmark = pytest.mark.xdist_group("validation")

# Mean absolute percentage error allowed per group (fraction), measured + margin.
GROUP_MAPE_BOUNDS = {
    "narayanan-2021": 0.07,
    "korthikanti-2022": 0.05,
    "llama-65b": 0.04,
    "nccl": 0.04,
    "bloom-2022": 0.09,
    "llama3-405b": 0.08,
    "mt-nlg-2022": 0.31,
    "mpt-llm-foundry": 0.07,
    "mpt-llm-foundry-long": 0.07,
    "nemo-h100-fp8": 0.07,
    "torchtitan-a100": 0.04,
    "power": 0.03,
    "torchtune-finetune": 0.11,
    "litgpt-lora": 0.17,
}
CALIBRATION_THROUGHPUT_TARGET = 0.05
CHECK_THROUGHPUT_BOUND = 0.08       # the project's target is 6%: not met (docs/validation.md)


@pytest.fixture(scope="module")
def cases():
    return load_cases()


@pytest.fixture(scope="module")
def outcomes(cases):
    return run_cases(cases, workers=os.cpu_count() or 1)


@pytest.fixture(scope="module")
def summary(outcomes):
    return summarize(outcomes)


def test_every_case_names_source_role_and_a_positive_figure(cases):
    assert len(cases) >= 40
    for case in cases:
        assert case.source and case.role in ("calibration", "check") and case.published > 0
    assert {c.role for c in cases} == {"calibration", "check"}


def test_fitted_efficiencies_name_only_calibration_cases(cases):
    """The line between calibration and check: no check case was used to fit anything."""
    roles = {c.id: c.role for c in cases}
    table = catalog.table("calibration")
    for name in Efficiency.names():
        for case_id in table[name].get("fitted_on", []):
            if case_id in roles:
                assert roles[case_id] == "calibration", f"{name} fitted on check case {case_id}"


def test_every_case_runs(summary):
    assert summary.failed == []


def test_calibration_throughput_meets_target(summary):
    assert summary.throughput_cases["calibration"] >= 19
    assert summary.throughput_mape["calibration"] <= CALIBRATION_THROUGHPUT_TARGET


def test_check_throughput_stays_within_its_bound(summary):
    assert summary.throughput_cases["check"] >= 37
    assert summary.throughput_mape["check"] <= CHECK_THROUGHPUT_BOUND


@pytest.mark.parametrize("group", sorted(GROUP_MAPE_BOUNDS))
def test_group_mape_within_bound(summary, group):
    stats = {g.name: g for g in summary.groups}
    assert group in stats, f"group {group} has no evaluated case"
    assert stats[group].mape <= GROUP_MAPE_BOUNDS[group], (
        f"{group}: MAPE {stats[group].mape:.1%} > {GROUP_MAPE_BOUNDS[group]:.0%} (worst {stats[group].worst})")


def test_no_calibration_case_beyond_15_percent(outcomes):
    worst = max((o for o in outcomes if o.case.role == "calibration" and o.error is not None),
                key=lambda o: abs(o.error))
    assert abs(worst.error) <= 0.15, worst.case.id


def test_weak_scaling_trend_follows_narayanan(outcomes):
    """Independent of the level: TFLOP/s rise from 1.7B to 1T parameters as in Table 1 (137 → 163)."""
    by_id = {o.case.id: o.predicted for o in outcomes}
    assert by_id["narayanan-2021-1008b"] > by_id["narayanan-2021-1.7b"] * 1.08


def test_more_data_parallel_replicas_lower_mt_nlg_throughput(outcomes):
    """MT-NLG 530B: 280 → 420 nodes at a fixed batch lowers TFLOP/s/GPU (126 → 113 published)."""
    by_id = {o.case.id: o.predicted for o in outcomes}
    assert by_id["mt-nlg-530b-280-nodes"] > by_id["mt-nlg-530b-350-nodes"] > by_id["mt-nlg-530b-420-nodes"]


def test_nccl_busbw_follows_the_nccl_tests_convention(outcomes):
    """An 8-GPU NVSwitch all-reduce reaches the NVLink rate times its efficiency (busbw, not algbw)."""
    by_id = {o.case.id: o for o in outcomes}
    a100 = by_id["nccl-dgx-a100-intra"].predicted
    nvlink = Efficiency.calibrated().nvlink
    assert a100 == pytest.approx(300 * nvlink, rel=0.03)       # 600 GB/s bidirectional = 300 per direction
    assert by_id["nccl-hdr-one-nic"].predicted < 25.0          # never above the 200 Gb/s line rate


def test_achievable_matmul_is_measured_per_gpu_and_precision():
    assert achievable_matmul_fraction("a100-80gb", "bf16") == pytest.approx(0.869)
    assert achievable_matmul_fraction("h100-sxm", "fp16") == pytest.approx(0.803)
    assert achievable_matmul_fraction("h100-sxm", "fp8") == pytest.approx(0.709)
    assert 0.5 < achievable_matmul_fraction("l4", "bf16") < 1.0     # unmeasured: the documented default


def test_every_gh200_takes_the_one_measured_gh200_ceiling():
    """The GH200 measured (the 900 W superchip with 141 GiB of HBM3e) stands for the 96 GB one and for the 120 GB
    one of four-superchip nodes, which reports the same 900 W cap; unmeasured GPUs take the default."""
    for precision in ("bf16", "fp8"):
        measured = achievable_matmul_fraction("gh200", precision)
        assert achievable_matmul_fraction("gh200-144gb", precision) == measured
        assert achievable_matmul_fraction("gh200-120gb", precision) == measured
    assert achievable_matmul_fraction("gh200", "fp8") == pytest.approx(0.776)


def test_summary_mape_is_the_mean_absolute_error(outcomes, summary):
    for group in summary.groups:
        errors = [abs(o.error) for o in outcomes if o.case.group == group.name and o.error is not None]
        assert group.mape == pytest.approx(sum(errors) / len(errors))
        assert group.mape <= abs(group.worst_error) + 1e-12
    assert not math.isnan(summary.overall_mape)


def test_malformed_case_file_names_the_key():
    good = {"group": "g", "source": "s", "cases": [{"id": "a", "role": "check", "metric": "mfu", "published": 40}]}
    assert len(parse_case_file(good, "f.yaml")) == 1
    bad_role = {"group": "g", "source": "s", "cases": [{"id": "a", "role": "fit", "metric": "mfu", "published": 1}]}
    with pytest.raises(ScenarioError, match=r"cases\[0\]\.role"):
        parse_case_file(bad_role, "f.yaml")
    bad_metric = {"group": "g", "source": "s",
                  "cases": [{"id": "a", "role": "check", "metric": "speed", "published": 1}]}
    with pytest.raises(ScenarioError, match="metric"):
        parse_case_file(bad_metric, "f.yaml")
    no_collective = {"group": "g", "source": "s",
                     "cases": [{"id": "a", "role": "check", "metric": "busbw_GBps", "published": 1}]}
    with pytest.raises(ScenarioError, match="collective"):
        parse_case_file(no_collective, "f.yaml")


def test_a_stated_tolerance_is_checked_and_reported(outcomes, summary):
    tolerant = [o for o in outcomes if o.case.tolerance is not None and o.error is not None]
    assert tolerant, "the fine-tuning cases state their tolerance"
    assert set(summary.beyond_tolerance) == {o.case.id for o in tolerant if abs(o.error) > o.case.tolerance}
    every = {"group": "g", "source": "s", "tolerance": 0.1,
             "cases": [{"id": "a", "role": "check", "metric": "mfu", "published": 40},
                       {"id": "b", "role": "check", "metric": "mfu", "published": 40, "tolerance": 0.2}]}
    assert [c.tolerance for c in parse_case_file(every, "f.yaml")] == [0.1, 0.2]
    bad = {"group": "g", "source": "s",
           "cases": [{"id": "a", "role": "check", "metric": "mfu", "published": 40, "tolerance": 15}]}
    with pytest.raises(ScenarioError, match=r"cases\[0\]\.tolerance: 15 is not a fraction"):
        parse_case_file(bad, "f.yaml")


def test_shipped_report_has_one_generated_section():
    doc = (Path(__file__).resolve().parents[1] / "docs" / "validation.md").read_text(encoding="utf-8")
    assert doc.count(BEGIN_MARK) == 1 and doc.count(END_MARK) == 1
    assert doc.index(BEGIN_MARK) < doc.index("## Results") < doc.index(END_MARK)


def test_splice_keeps_the_hand_written_text():
    doc = f"# Validation\n\nintro\n\n{BEGIN_MARK}\nold\n{END_MARK}\n\n## Why\n\nexplained\n"
    out = splice(doc, "new table")
    assert "intro" in out and "explained" in out and "new table" in out and "old" not in out
    assert splice("", "x").startswith("# Validation")


def test_cli_validate_writes_markdown(tmp_path, capsys):
    case_file = tmp_path / "cases.yaml"
    case_file.write_text(yaml.safe_dump({
        "group": "nccl-mini", "source": "test",
        "defaults": {"scenario": {"training": {"model": "llama2-7b", "tokens": "1B", "seq_len": 2048,
                                               "global_batch": 64}}},
        "cases": [{"id": "a100-intra", "role": "check", "metric": "busbw_GBps", "published": 230,
                   "scenario": {"cluster": {"node": "dgx-a100-80gb", "nodes": 1}},
                   "collective": {"op": "all_reduce", "ranks": 8, "ranks_per_node": 8, "size": "1 GiB"}}],
    }))
    report = tmp_path / "validation.md"
    assert main(["validate", "--cases", str(case_file), "--markdown", str(report)]) == 0
    out = capsys.readouterr().out
    assert "a100-intra" in out and "MAPE" in out
    assert BEGIN_MARK in report.read_text()
    assert main(["validate", "--cases", str(tmp_path / "missing.yaml")]) == 2


def test_large_gemm_runs_at_the_measured_ceiling_times_the_calibrated_efficiency():
    """A large BF16 GEMM: H100/A100 time ratio = ratio of measured achievable matmul rates (794.5/271.2)."""
    from twin.operators.roofline import OperatorModel
    from twin.hardware.specs import gpu_spec

    eff = Efficiency.calibrated()
    a100 = OperatorModel(gpu_spec("a100-80gb"), "bf16", eff).matmul_s(8192, 8192, 8192)
    h100 = OperatorModel(gpu_spec("h100-sxm"), "bf16", eff).matmul_s(8192, 8192, 8192)
    assert a100 / h100 == pytest.approx(794.5 / 271.2, rel=0.01)
    assert 2 * 8192**3 / a100 == pytest.approx(312e12 * 0.869 * eff.matmul, rel=1e-6)
    fp8 = OperatorModel(gpu_spec("h100-sxm"), "fp8", eff).matmul_s(8192, 8192, 8192)
    assert 1.0 < h100 / fp8 < 2.0      # FP8 is faster, but not 2x: lower ceiling and the input casts


# -- serving: TensorRT-LLM 0.13.0 offline throughput; vLLM 0.6.0 on ShareGPT --------------------

# Mean absolute error allowed per serving group (fraction), measured + margin (docs/validation.md).
SERVING_GROUP_BOUNDS = {
    "trtllm-calibration": 0.13, "trtllm-mistral-7b": 0.09, "trtllm-llama2-70b": 0.11, "trtllm-lengths": 0.09,
    "trtllm-70b-tp2": 0.16, "trtllm-70b-tp1": 0.23, "trtllm-gh200-small": 0.14, "trtllm-gh200-70b": 0.50,
    "trtllm-gh200-tp4": 0.12, "trtllm-gh200-tp2": 3.10, "vllm-0.6-sharegpt": 0.11,
    # Every row of each role (docs/serving.md, "Calibration and validation": 9.5% and 25.1% measured).
    "all calibration rows": 0.11, "all check rows": 0.27,
}


# Mean absolute error allowed per operator group (fraction), measured + margin (docs/validation.md, "Operators").
GEMM_GROUP_BOUNDS = {"a100-80gb decode-sized": 0.16, "a100-80gb prefill-sized": 0.15, "h100-sxm decode-sized": 0.21,
                     "h100-sxm prefill-sized": 0.25, "every GEMM": 0.19}


def test_operator_checks_hold_their_bounds_and_price_as_the_serving_twin_does():
    """Vidur's measured float16 GEMMs against the serving twin's operator model: every group within its bound,
    and each GEMM priced exactly as a serving iteration prices it (same shapes, same operator model)."""
    from twin.calibration import ServingEfficiency
    from twin.serving.batching import dense_gemm_shapes, serving_operators
    from twin.validation.operators import run_gemms, summarize as summarize_gemms
    from twin.workload.model import model_spec

    outcomes = run_gemms()
    assert len(outcomes) == 384 and {o.gpu for o in outcomes} == {"h100-sxm", "a100-80gb"}
    for g in summarize_gemms(outcomes):
        assert g.mae <= GEMM_GROUP_BOUNDS[g.name], (g.name, g.mae)
    one = next(o for o in outcomes if o.model == "llama2-70b" and o.tensor == 8 and o.tokens == 4096 and o.gemm == "down")
    ops = serving_operators(gpu_spec(one.gpu), "fp16",
                            ServingEfficiency.calibrated(), Efficiency.calibrated())
    m, n, k, count = dense_gemm_shapes(model_spec("llama2-70b"), 4096, 8)[3]
    assert (m, n, k) == (4096, 8192, 28672 / 8)
    assert one.predicted_s == pytest.approx(ops.matmul_s(m, n, k, count))


@pytest.fixture(scope="module")
def serving_outcomes():
    from twin.validation.serving import run_cases as run_serving

    return run_serving(workers=os.cpu_count() or 1)


def test_every_serving_row_runs_and_holds_its_requests(serving_outcomes):
    assert len(serving_outcomes) == 253
    assert all(math.isfinite(o.predicted) and o.predicted > 0 for o in serving_outcomes)


@pytest.mark.parametrize("group", sorted(SERVING_GROUP_BOUNDS))
def test_serving_group_error_within_bound(serving_outcomes, group):
    from twin.validation.serving import summarize as summarize_serving

    stats = {g.name: g for g in summarize_serving(serving_outcomes)}
    assert stats[group].mae <= SERVING_GROUP_BOUNDS[group], f"{group}: {stats[group].mae:.1%}"


def test_every_serving_row_names_its_engine_and_kind(serving_outcomes):
    from twin.serving.profiles import profile_names
    from twin.validation.serving import KINDS, by_engine_and_kind

    assert all(o.case.engine in profile_names() and o.case.kind in KINDS for o in serving_outcomes)
    lines = {g.name: g for g in by_engine_and_kind(serving_outcomes)}
    calibration = lines["tensorrt-llm-0.13 calibration"]
    kinds = [lines[n] for n in lines if n.startswith("tensorrt-llm-0.13 calibration ")]
    assert sum(g.rows for g in kinds) == calibration.rows == 105
    assert calibration.mae == pytest.approx(sum(g.mae * g.rows for g in kinds) / calibration.rows)


def test_the_vllm_rows_are_the_sources_runs_as_a_scenario_writes_them(serving_outcomes):
    """The six vLLM 0.6.0 rows (SGLang's benchmark of it): each names its load and metric, and the offline 8B row
    is what `twin run` answers for the scenario that writes the same deployment, engine flags and requests."""
    from twin.api import run_text

    rows = {o.case.id: o for o in serving_outcomes if o.case.engine == "vllm-0.6"}
    assert len(rows) == 6 and {o.case.group for o in rows.values()} == {"vllm-0.6-sharegpt"}
    assert sorted(o.case.rate_per_s or 0 for o in rows.values()) == [0, 0, 4, 4, 8, 8]
    assert {o.case.metric for o in rows.values()} == {"output_tokens_per_s", "tpot_p50_ms"}
    offline = rows["vllm-0.6.0-sharegpt-llama3-8b-a100-80gb-bf16-tp1-offline-output_tokens_per_s"]
    result = run_text("""
cluster: {node: dgx-a100-80gb, nodes: 1}
serving:
  model: llama3-8b
  precision: bf16
  kv_cache: bf16
  replicas: 1
  engine: {profile: vllm-0.6, max_tokens_in_flight: 4096, chunked_prefill: false, scheduler_steps: 10}
  load:
    rate: offline
    requests: 5000
    input_tokens: {mean: 224, distribution: lognormal, max: 1024}
    output_tokens: {mean: 194.3, distribution: lognormal, max: 2044}
""")
    assert result.run.output_tokens_per_s == pytest.approx(offline.predicted, rel=1e-12)
    assert result.calibration.band.detail == "3 validation cases (engine vllm on a100-80gb at TP 1)"


def test_serving_efficiencies_are_fitted_on_calibration_rows_only(serving_outcomes):
    """The serving fit reads role: calibration rows alone; every held-out group is check rows only."""
    table = catalog.table("calibration")["serving"]
    assert all(row["fitted_on"] == ["trtllm-0.13 calibration rows"] for row in table.values())
    for o in serving_outcomes:
        assert (o.case.role == "calibration") == (o.case.group == "trtllm-calibration")


def test_the_report_sets_each_serving_role_against_its_target(serving_outcomes):
    """`twin validate` prints the mean absolute error of all calibration rows against 8% and of all check rows
    against 12%, with the verdict the numbers give."""
    from twin.validation.report import SERVING_TARGETS, serving_target_lines
    from twin.validation.serving import summarize as summarize_serving

    groups = {g.name: g for g in summarize_serving(serving_outcomes)}
    lines = serving_target_lines(list(groups.values()))
    assert SERVING_TARGETS == {"calibration": 0.08, "check": 0.12}
    assert len(lines) == 2
    for line, role in zip(lines, ("calibration", "check")):
        met = groups[f"all {role} rows"].mae <= SERVING_TARGETS[role]
        assert line.startswith(f"serving MAPE, {role} rows ({groups[f'all {role} rows'].rows}): ")
        assert line.endswith(f"(target ≤ {100 * SERVING_TARGETS[role]:.0f}%: {'met' if met else 'NOT met'})")


def test_the_error_bands_are_the_validations_errors_now(outcomes, serving_outcomes):
    """Every answer's band is drawn from catalog ``error_bands.yaml`` (``twin/bands.py``): its rows are the errors the
    validation gives now, so a change that moves them writes the file anew (``python benchmarks/error_bands.py``)."""
    bands = catalog.table("error_bands")
    training = {o.case.id: round(o.error, 5) for o in outcomes if o.case.throughput and o.error is not None}
    serving = {o.case.id: round(o.error, 5) for o in serving_outcomes if not math.isnan(o.error)}
    assert {r["id"]: r["error"] for r in bands["training"]} == training
    assert {r["id"]: r["error"] for r in bands["serving"]} == serving
