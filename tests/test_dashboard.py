"""The Streamlit dashboard: every page for every shipped scenario, knobs, uploads, compare, speed."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from dashboard import core  # noqa: E402
from twin.figures import overview  # noqa: E402

APP = str(ROOT / "dashboard" / "app.py")
SCENARIOS = core.shipped_scenarios(ROOT / "scenarios")
PAGES = ["scenario", "overview", "cluster", "step", "job", "compare"]
SECONDS = {"ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0, "days": 86400.0}


def app(page: str = "overview", scenario: str = "superpod.yaml") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30)
    at.session_state["page"] = page
    at.session_state["scenario_file"] = scenario
    return at.run()


def knob(at: AppTest, kind: str, label: str):
    """The sidebar widget of one kind whose label starts with ``label``."""
    found = [w for w in getattr(at.sidebar, kind) if w.label.startswith(label)]
    assert len(found) == 1, f"no single {kind} labelled {label!r}"
    return found[0]


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def duration_s(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.,]+) (\w+)", text).groups()
    return float(number.replace(",", "")) * SECONDS[unit]


def tonnes(text: str) -> float:
    return float(re.fullmatch(r"([\d.,]+) t CO2e", text).group(1).replace(",", ""))


def assert_clean(at: AppTest) -> None:
    """No exception, no error box, no figure that failed to draw."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


# ---------------------------------------------------------------------------
# Every page, every shipped scenario


TITLES = {"scenario": "Scenario", "overview": "Overview", "cluster": "Cluster", "step": "Training step", "job": "Job",
          "compare": "Compare", "serving": "Serving", "operations": "Cluster operations"}


def workload_of(name: str) -> str:
    """The workload section a shipped scenario holds."""
    data = yaml.safe_load((ROOT / "scenarios" / name).read_text(encoding="utf-8"))
    return next(w for w in ("training", "serving", "jobs") if w in data)


TRAINING_SCENARIOS = [s for s in SCENARIOS if workload_of(s) == "training"]
SERVING_SCENARIOS = [s for s in SCENARIOS if workload_of(s) == "serving"]
OPERATIONS_SCENARIOS = [s for s in SCENARIOS if workload_of(s) == "jobs"]


@pytest.mark.parametrize("scenario", TRAINING_SCENARIOS)
def test_every_page_renders_for_every_shipped_training_scenario(scenario):
    at = app("overview", scenario)
    for page in PAGES:
        at.sidebar.radio(key="page").set_value(page)
        at.run()
        assert_clean(at)
        assert at.title[0].value == TITLES[page]
        if page == "overview":
            labels = [m.label for m in at.metric]
            assert {"Time to train (P50)", "Time to train (P90)", "MFU", "GPU-hours", "Energy (facility)"} <= set(labels)
            assert all(re.search(r"[^\d\s.,]", m.value) for m in at.metric), "every headline number has its unit"
        if page in {"step", "compare"}:
            assert at.get("plotly_chart"), f"{page} draws a chart"
        if page == "compare":
            assert len(at.dataframe[0].value) >= 2
            assert len(at.get("download_button")) == 2
    at.sidebar.radio(key="page").set_value("serving")
    at.run()
    assert_clean(at)
    assert any("for serving scenarios" in i.value for i in at.info)
    at.sidebar.radio(key="page").set_value("operations")
    at.run()
    assert_clean(at)
    assert any("for many jobs on one cluster" in i.value for i in at.info)


@pytest.mark.parametrize("scenario", OPERATIONS_SCENARIOS)
def test_operations_scenarios_draw_the_cluster_operations_page_and_a_note_elsewhere(scenario):
    at = app("operations", scenario)
    assert_clean(at)
    labels = {m.label for m in at.metric}
    assert {"Jobs finished", "GPUs held", "Queue wait P50", "Fragmented GPUs", "Peak facility power"} <= labels
    assert all(re.search(r"[^\d\s.,]", m.value) for m in at.metric), "every headline number has its unit"
    assert len(at.get("plotly_chart")) == 5, "utilisation, power, Gantt, waits, placement"
    assert len(at.dataframe) == 2, "waits by size, tenants"
    for page in ("overview", "cluster", "step", "job", "compare", "serving"):
        at.sidebar.radio(key="page").set_value(page)
        at.run()
        assert_clean(at)
        assert any("Cluster operations page" in i.value for i in at.info), page
        assert not at.get("plotly_chart")
    at.sidebar.radio(key="page").set_value("scenario")
    at.run()
    assert_clean(at)


def test_the_operations_page_compares_scheduler_policies():
    at = app("operations", OPERATIONS_SCENARIOS[0])
    at.selectbox(key="ops.policy").set_value("fifo")
    at.run()
    assert_clean(at)
    assert any("jobs.scheduler.policy" in c.value for c in at.caption)


@pytest.mark.parametrize("scenario", SERVING_SCENARIOS)
def test_serving_scenarios_draw_the_serving_page_and_a_note_on_training_pages(scenario):
    at = app("serving", scenario)
    assert_clean(at)
    labels = {m.label for m in at.metric}
    assert {"Output tokens/s", "TTFT p99", "TPOT p99", "SLO", "Energy per M tokens"} <= labels
    assert all(re.search(r"[^\d\s.,]", m.value) for m in at.metric), "every headline number has its unit"
    assert len(at.get("plotly_chart")) == 2, "latency against throughput, and countries"
    assert at.dataframe, "GPUs for a target rate"
    for page in ("overview", "cluster", "step", "job", "compare"):
        at.sidebar.radio(key="page").set_value(page)
        at.run()
        assert_clean(at)
        assert at.title[0].value == TITLES[page]
        assert any("for training scenarios" in i.value for i in at.info), page
        assert not at.get("plotly_chart")
    at.sidebar.radio(key="page").set_value("scenario")
    at.run()
    assert_clean(at)


def test_job_page_with_failures_enabled():
    at = app("job")
    knob(at, "toggle", "Simulate failures").set_value(True)
    at.run()
    assert_clean(at)
    p10, p50, p90 = (duration_s(metric(at, f"Time to train ({q})")) for q in ("P10", "P50", "P90"))
    assert p10 <= p50 <= p90


def test_every_figure_is_drawn_when_its_data_exists():
    at = app("overview")
    knob(at, "toggle", "Simulate failures").set_value(True)
    at.run()
    charts = {"overview": 2, "cluster": 2, "step": 2, "job": 3}      # memory + countries; fabric + racks; ...
    for page, count in charts.items():
        at.sidebar.radio(key="page").set_value(page)
        at.run()
        assert_clean(at)
        assert not [i.value for i in at.info if "not available" in i.value], page
        assert len(at.get("plotly_chart")) == count, page


# ---------------------------------------------------------------------------
# Knobs move the headline the right way


def test_more_nodes_train_sooner():
    at = app()
    before = duration_s(metric(at, "Time to train (P50)"))
    knob(at, "number_input", "Nodes").set_value(254)
    at.run()
    assert_clean(at)
    after = duration_s(metric(at, "Time to train (P50)"))
    assert after < 0.7 * before
    delta = next(m.delta for m in at.metric if m.label == "Time to train (P50)")
    assert delta.startswith("-") and delta.endswith(" %")
    assert "cluster.nodes = 254" in at.sidebar.caption[-1].value


def test_germany_emits_more_carbon_than_france():
    at = app()
    knob(at, "text_input", "Country").set_value("FR")
    at.run()
    france = tonnes(metric(at, "Carbon (FR)"))
    knob(at, "text_input", "Country").set_value("DE")
    at.run()
    assert_clean(at)
    germany = tonnes(metric(at, "Carbon (DE)"))
    assert germany > 3 * france


def test_invalid_knob_shows_the_key_beside_the_knobs():
    at = app()
    knob(at, "number_input", "Nodes").set_value(1)          # 8 GPUs for TP8 x PP4
    at.run()
    assert not at.exception
    assert any("cluster" in e.value or "parallelism" in e.value for e in at.sidebar.error)
    assert "does not run" in at.main.error[0].value


def test_knob_change_answers_within_two_seconds():
    at = app()
    nodes = knob(at, "number_input", "Nodes")
    for n in (120, 127):                                    # a new value, then back to a cached one
        nodes.set_value(n)
        start = time.perf_counter()
        at.run()
        assert time.perf_counter() - start < 2.0
        nodes = knob(at, "number_input", "Nodes")
    assert_clean(at)


# ---------------------------------------------------------------------------
# Uploads and in-place edits


@pytest.mark.parametrize("content, expected", [
    (b"cluster: [1, 2\n", "malformed YAML at line"),
    (b"- just\n- a list\n", "must be a YAML mapping"),
    (b"\xff\xfe\x00binary", "not a text file"),
])
def test_invalid_upload_shows_an_error(content, expected):
    at = app()
    at.sidebar.get("file_uploader")[0].set_value(("broken.yaml", content, "application/x-yaml"))
    at.run()
    assert not at.exception
    assert any(expected in e.value for e in at.sidebar.error)
    assert at.main.error, "the page says why there is no result"


def test_upload_with_a_wrong_key_names_it():
    text = (ROOT / "scenarios" / "superpod.yaml").read_text().replace("spare_nodes:", "spare_node:")
    at = app()
    at.sidebar.get("file_uploader")[0].set_value(("typo.yaml", text.encode(), "application/x-yaml"))
    at.run()
    assert not at.exception
    assert any("cluster.spare_node: unknown key (did you mean 'spare_nodes'?)" in e.value for e in at.sidebar.error)


def test_valid_upload_is_simulated():
    raw = yaml.safe_load((ROOT / "scenarios" / "superpod.yaml").read_text())
    raw["name"] = "uploaded what-if"
    at = app()
    at.sidebar.get("file_uploader")[0].set_value(("mine.yaml", yaml.safe_dump(raw).encode(), "application/x-yaml"))
    at.run()
    assert_clean(at)
    assert "uploaded what-if" in at.caption[0].value


def test_yaml_edited_in_place_is_used_and_reverted():
    at = app("scenario")
    text = (ROOT / "scenarios" / "superpod.yaml").read_text()
    at.text_area[0].set_value(text.replace("tokens: 2T", "tokens: 1T"))
    at.run()
    assert_clean(at)
    at.sidebar.radio(key="page").set_value("overview")
    at.run()
    edited = duration_s(metric(at, "Time to train (P50)"))
    assert edited == pytest.approx(duration_s("20.3 days") / 2, rel=0.1)
    at.sidebar.radio(key="page").set_value("scenario")
    at.run()
    at.text_area[0].set_value("training: {tokens: 2T")
    at.run()
    assert not at.exception
    assert "malformed YAML" in at.main.error[0].value
    at.button[0].click()                                    # revert to the file
    at.run()
    assert_clean(at)


# ---------------------------------------------------------------------------
# Compare


def test_compare_countries_table_bars_and_downloads():
    at = app("compare")
    at.selectbox(key="compare.dimension").set_value("country")
    at.run()
    at.text_input(key="compare.values.country").set_value("FR, DE, US")
    at.run()
    assert_clean(at)
    table = at.dataframe[0].value
    assert list(table["what-if"]) == ["country FR", "country DE", "country US"]
    carbon = dict(zip(table["what-if"], table["carbon at site [t CO2e]"]))
    assert carbon["country DE"] > carbon["country FR"]
    downloads = at.get("download_button")
    assert [d.proto.label for d in downloads] == ["Download results (JSON)", "Download table (CSV)"]


def test_compare_a_bad_value_is_an_error_not_a_crash():
    at = app("compare")
    at.selectbox(key="compare.dimension").set_value("nodes")
    at.run()
    at.text_input(key="compare.values.nodes").set_value("64, lots")
    at.run()
    assert not at.exception
    assert "'lots' is not a valid nodes" in at.error[0].value


# ---------------------------------------------------------------------------
# The logic under the pages


def test_knob_changes_write_scenario_values():
    raw = yaml.safe_load((ROOT / "scenarios" / "superpod.yaml").read_text())
    base = core.Knobs(**core.base_scenario(yaml.safe_dump(raw), "superpod")["knobs"])
    assert core.knob_changes(base, base) == {}
    moved = core.Knobs(**{**base.__dict__, "nodes": 64, "gpu_power_cap_w": 500.0, "checkpoint_min": 30.0,
                          "data": 0, "tokens_billion": 1000.0})
    changes = core.knob_changes(base, moved)
    assert changes == {"cluster.nodes": 64, "cluster.gpu_power_cap": "500 W",
                       "training.checkpoint.interval": "30 min", "training.tokens": 1e12}
    applied = core.apply_changes(raw, changes)
    assert applied["cluster"]["gpu_power_cap"] == "500 W" and raw["cluster"].get("gpu_power_cap") is None
    uncapped = core.apply_changes(applied, core.knob_changes(moved, base))
    assert "gpu_power_cap" not in uncapped["cluster"]


def test_compare_rows_and_csv():
    raw = yaml.safe_load((ROOT / "scenarios" / "superpod.yaml").read_text())
    rows = []
    for label, variant in core.variants(raw, "precision", ["bf16", "fp8"]):
        answer = core.evaluate(variant)
        rows.append(overview.summary_row(label, answer["result"], answer["error"]))
    assert rows[1]["time to train P50 [days]"] < rows[0]["time to train P50 [days]"]   # FP8 is faster on H100
    csv_text = overview.rows_to_csv(rows)
    assert csv_text.splitlines()[0].startswith("what-if,site,GPUs used,plan,step time [s]")
    assert len(csv_text.splitlines()) == 3
    fig = overview.compare_figure(rows)
    assert len(fig.data) == len(overview.COMPARE_COLUMNS)
    assert json.loads(core.results_json([{"what-if": "x", "result": None}]))[0]["what-if"] == "x"


def test_memory_figure_marks_capacity():
    result = core.evaluate(yaml.safe_load((ROOT / "scenarios" / "superpod.yaml").read_text()))["result"]
    fig = overview.memory_figure(result)
    assert sum(trace.x[0] for trace in fig.data) == pytest.approx(result["memory_per_gpu_bytes"] / 2**30)
    assert fig.layout.shapes[0].x0 == pytest.approx(80.0)


def test_compare_crosses_two_dimensions():
    at = app("compare")
    at.selectbox(key="compare.dimension").set_value("precision")
    at.run()
    at.toggle(key="compare.cross").set_value(True)
    at.run()
    at.text_input(key="compare.values.second.country").set_value("FR, DE")
    at.run()
    assert_clean(at)
    labels = list(at.dataframe[0].value["what-if"])
    assert labels == ["precision bf16 · country FR", "precision bf16 · country DE",
                      "precision fp8 · country FR", "precision fp8 · country DE"]


def test_scenario_page_offers_the_method_and_weight_knobs():
    at = app("scenario", "dgx-finetune.yaml")
    assert_clean(at)
    method = next(s for s in at.selectbox if s.label == "Fine-tuning method")
    assert method.value == "full"
    method.set_value("qlora")
    at.run()
    assert_clean(at)
    assert "method: qlora" in at.text_area[0].value
    assert next(s for s in at.selectbox if s.label == "Base weights").value == "nf4"
    at.sidebar.radio(key="page").set_value("overview")            # the whole dashboard runs the edit
    at.run()
    assert_clean(at)
    at.sidebar.radio(key="page").set_value("scenario")
    at.run()
    next(s for s in at.selectbox if s.label == "Fine-tuning method").set_value("lora")
    at.run()
    next(s for s in at.selectbox if s.label == "Base weights").set_value("int8")
    at.run()
    assert_clean(at)
    assert "weights: int8" in at.text_area[0].value and "method: lora" in at.text_area[0].value


def test_method_knob_helper_drops_what_the_method_does_not_allow():
    from dashboard import finetuning

    text = "training: {model: llama2-7b, method: lora, weights: nf4, lora: {rank: 8}}\n"
    assert finetuning.current(text, "t") == ("lora", "nf4")
    full = yaml.safe_load(finetuning.with_method(text, "t", "full", "nf4"))["training"]
    assert "method" not in full and "weights" not in full and "lora" not in full
    qlora = yaml.safe_load(finetuning.with_method(text, "t", "qlora", "int8"))["training"]
    assert qlora["method"] == "qlora" and "weights" not in qlora and qlora["lora"] == {"rank": 8}


def test_a_serving_deployment_that_does_not_fit_is_explained_on_the_serving_page():
    raw = {"name": "70B on L4", "cluster": {"node": "l4-8", "nodes": 1},
           "serving": {"model": "llama3-70b", "load": {"rate": "1/s", "input_tokens": {"mean": 1000},
                                                       "output_tokens": {"mean": 200}},
                       "slo": {"ttft_p99": "2 s"}}}
    at = app("serving")
    at.sidebar.get("file_uploader")[0].set_value(("big.yaml", yaml.safe_dump(raw).encode(), "application/x-yaml"))
    at.run()
    assert_clean(at)
    assert any("does not fit" in w.value and "tensor 8 would fit" in w.value for w in at.warning)
    assert any("does not fit" in i.value for i in at.info)
    assert not at.get("plotly_chart")
