"""The Streamlit dashboard's logic and widgets (AppTest, no browser): knobs, uploads, pins and the URL,
compare, infeasible plans. Drawing in a real browser is tests/test_browser_pages.py and tests/test_browser_what_ifs.py."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from dashboard import core  # noqa: E402
from twin.figures import compare, overview  # noqa: E402

APP = str(ROOT / "dashboard" / "app.py")
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
    number, unit = re.fullmatch(r"([\d.,]+) (kt|t|kg|g) CO2e", text).groups()
    return float(number.replace(",", "")) * {"kt": 1e3, "t": 1.0, "kg": 1e-3, "g": 1e-6}[unit]


def assert_clean(at: AppTest) -> None:
    """No exception, no error box, no figure that failed to draw."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


# ---------------------------------------------------------------------------
# Pages (every page of every shipped scenario is drawn in a real browser: tests/test_browser_pages.py)


TITLES = {"scenario": "Scenario", "overview": "Overview", "cluster": "Cluster", "step": "Training step", "job": "Job",
          "compare": "Compare", "serving": "Serving", "operations": "Cluster operations"}


def workload_of(name: str) -> str:
    """The workload section a shipped scenario holds."""
    data = yaml.safe_load((ROOT / "scenarios" / name).read_text(encoding="utf-8"))
    return next(w for w in ("training", "serving", "jobs") if w in data)


SERVING_SCENARIOS = [s for s in core.shipped_scenarios(ROOT / "scenarios") if workload_of(s) == "serving"]
OPERATIONS_SCENARIOS = [s for s in core.shipped_scenarios(ROOT / "scenarios") if workload_of(s) == "jobs"]


def test_a_training_scenario_sends_the_reader_from_the_serving_page_to_its_own():
    at = app("serving")
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
    assert len(at.get("plotly_chart")) == 3, "latency against throughput, per GPU against per user, and countries"
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


def test_germany_emits_more_carbon_than_france_and_france_stays_in_view():
    at = app()
    knob(at, "text_input", "Country").set_value("FR")
    at.run()
    france = tonnes(metric(at, "Carbon (FR)"))
    knob(at, "text_input", "Country").set_value("DE")
    at.run()
    assert_clean(at)
    germany = tonnes(metric(at, "Carbon (DE)"))
    assert germany > 3 * france
    countries = list(at.dataframe[-1].value["country"])         # the country table under the chart
    assert countries[0] == "DE (site)" and "FR" in countries and {"US", "SE", "PL"} <= set(countries)
    knob(at, "text_input", "Country").set_value("US")            # the scenario's own site stays in view
    at.run()
    assert "FR" in list(at.dataframe[-1].value["country"])


def test_a_plan_that_does_not_fit_shows_an_error_in_place_of_the_headline():
    at = app()
    at.sidebar.selectbox(key=next(k for k in at.session_state if str(k).endswith(".tensor"))).set_value(1)
    knob(at, "number_input", "Pipeline parallel").set_value(1)
    at.run()
    assert not at.exception
    assert not at.metric, "no headline numbers for a plan that does not run"
    assert "does not fit in GPU memory" in at.main.error[0].value
    assert "over" in at.main.error[0].value and at.markdown, "how much over, and what would fix it"


def test_invalid_knob_shows_the_key_beside_the_knobs():
    at = app()
    knob(at, "number_input", "Nodes").set_value(1)          # 8 GPUs for TP8 x PP4
    at.run()
    assert not at.exception
    assert any("cluster" in e.value or "parallelism" in e.value for e in at.sidebar.error)
    assert "does not run" in at.main.error[0].value


# ---------------------------------------------------------------------------
# Uploads and in-place edits


@pytest.mark.parametrize("content, expected", [
    (b"cluster: [1, 2\n", "malformed YAML at line"),
    (b"- just\n- a list\n", "must be a YAML mapping"),
    (b"\xff\xfe\x00binary", "UTF-16 text; save it as UTF-8"),
    (b"[" * 1200 + b"]" * 1200, "nested more than"),
    (b"#" * (2**20 + 1), "upload limit"),
], ids=["syntax", "list", "binary", "nested", "too-large"])
def test_invalid_upload_shows_an_error(content, expected):
    at = app()
    at.sidebar.get("file_uploader")[0].set_value(("broken.yaml", content, "application/x-yaml"))
    at.run()
    assert not at.exception
    assert any(expected in e.value and "\n" not in e.value for e in at.sidebar.error)
    assert at.main.error, "the page says why there is no result"


def test_a_job_that_does_not_finish_shows_an_error_in_place_of_the_headline():
    raw = yaml.safe_load((ROOT / "scenarios" / "superpod.yaml").read_text())
    raw["failures"]["horizon"] = "2 d"                             # the run takes about 23 days
    at = app()
    at.sidebar.get("file_uploader")[0].set_value(("short.yaml", yaml.safe_dump(raw).encode(), "application/x-yaml"))
    at.run()
    assert not at.exception and not at.metric
    assert at.main.error[0].value.startswith("**The job does not finish**")
    assert "horizon" in at.main.error[0].value


def test_anything_that_raises_while_simulating_is_one_line():
    answer = core.evaluate({"name": (n for n in range(3))})          # a value no YAML file holds
    assert answer["result"] is None
    assert answer["error"].startswith("internal error: TypeError: ") and "\n" not in answer["error"]


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


def table(at: AppTest, index: int = -1) -> dict[str, dict[str, str]]:
    """A metrics-as-rows table: {metric: {column: cell}}."""
    frame = at.dataframe[index].value
    return {row["metric"]: {k: v for k, v in row.items() if k != "metric"} for row in frame.to_dict("records")}


def test_compare_countries_table_bars_and_downloads():
    at = app("compare")
    at.selectbox(key="compare.dimension").set_value("country")
    at.run()
    at.text_input(key="compare.values.country").set_value("FR, DE, US")
    at.run()
    assert_clean(at)
    rows = table(at)
    assert list(rows["site"]) == ["FR", "DE", "US"] and set(rows["site"].values()) == {"FR", "DE", "US"}
    carbon = {column: tonnes(cell) for column, cell in rows["carbon at site"].items()}
    assert carbon["DE"] > carbon["FR"]
    labels = [d.proto.label for d in at.get("download_button")]
    assert labels[:2] == ["Download results (JSON)", "Download table (CSV)"] and "report" in labels[2]


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
    columns = []
    for dims, variant in core.variants(raw, "precision", ["bf16", "fp8"]):
        answer = core.evaluate(variant)
        columns.append(compare.Column(core.variant_name(dims), answer["result"], answer["error"], dims))
    rows = [compare.summary_row(c) for c in columns]
    assert rows[1]["time to train P50 [days]"] < rows[0]["time to train P50 [days]"]   # FP8 is faster on H100
    csv_text = compare.rows_to_csv(rows)
    assert csv_text.splitlines()[0].startswith("what-if,precision,site,GPUs used,plan,step time [s]")
    assert len(csv_text.splitlines()) == 3
    fig = compare.compare_figure(columns)
    assert len(fig.data) == len(compare.BARS) and list(fig.data[0].x) == ["bf16", "fp8"]
    assert json.loads(core.results_json([{"what-if": "x", "result": None}]))[0]["what-if"] == "x"


def test_memory_figure_marks_capacity():
    result = core.evaluate(yaml.safe_load((ROOT / "scenarios" / "superpod.yaml").read_text()))["result"]
    fig = overview.memory_figure(result)
    assert sum(trace.x[0] for trace in fig.data) == pytest.approx(result["memory_per_gpu_bytes"] / 2**30)
    assert fig.layout.shapes[0].x0 == pytest.approx(80.0)


def test_compare_crosses_two_dimensions_into_grouped_bars():
    at = app("compare")
    at.selectbox(key="compare.dimension").set_value("precision")
    at.run()
    at.toggle(key="compare.cross").set_value(True)
    at.run()
    at.text_input(key="compare.values.second.country").set_value("FR, DE")
    at.run()
    assert_clean(at)
    assert list(table(at)["site"]) == ["bf16 · FR", "bf16 · DE", "fp8 · FR", "fp8 · DE"]
    fig = at.get("plotly_chart")[0]
    assert '"barmode":"group"' in fig.proto.spec.replace(" ", "")


def test_compare_offers_power_cap_tokens_and_global_batch():
    raw = yaml.safe_load((ROOT / "scenarios" / "superpod.yaml").read_text())
    grid = [("power cap", ["none", "550"]), ("tokens", ["1T"]), ("global batch", ["496"])]
    variants = core.cross_variants(raw, grid)
    assert [core.variant_name(d) for d, _ in variants] == ["none · 1T · 496", "550 · 1T · 496"]
    uncapped, capped = (v for _, v in variants)
    assert "gpu_power_cap" not in uncapped["cluster"] and capped["cluster"]["gpu_power_cap"] == "550 W"
    assert capped["training"]["tokens"] == "1T" and capped["training"]["global_batch"] == 496
    uncapped_result, capped_result = (core.evaluate(v)["result"] for _, v in variants)
    assert capped_result["step_time_s"] > uncapped_result["step_time_s"]      # a 550 W cap slows the H100


# ---------------------------------------------------------------------------
# Pinned what-ifs and the URL


def test_pinned_what_ifs_show_against_the_scenario_as_written():
    at = app("compare")
    knob(at, "number_input", "Nodes").set_value(64)
    at.run()
    at.button(key="pin.add").click()
    at.run()
    knob(at, "text_input", "Country").set_value("DE")
    at.run()
    at.button(key="pin.add").click()
    at.run()
    assert_clean(at)
    assert at.query_params["pin"] == ["nodes:64", "nodes:64,country:DE"]
    rows = table(at, 0)
    assert list(rows["what-if"].values()) == ["the scenario's own values", "nodes = 64", "nodes = 64, country = DE"]
    assert rows["time to train (P50)"]["A"].endswith("%)") and "+" in rows["time to train (P50)"]["A"]
    assert {"carbon in FR", "carbon in DE", "energy cost in FR"} <= set(rows)
    at.button(key="pin.remove.0").click()
    at.run()
    assert at.query_params["pin"] in ("nodes:64,country:DE", ["nodes:64,country:DE"])


def test_a_shared_url_sets_the_knobs_and_pins():
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params.update({"scenario_file": "superpod.yaml", "nodes": "64", "country": "DE", "tensor": "oops",
                            "pin": ["pue:1.4", "junk"]})
    at.run()
    assert_clean(at)
    assert knob(at, "number_input", "Nodes").value == 64 and knob(at, "text_input", "Country").value == "DE"
    captions = [c.value for c in at.sidebar.caption]
    assert "Changed: cluster.nodes = 64, site.country = DE" in captions
    assert "**A**: pue = 1.4" in captions                        # the pin that reads; the junk one is left out
    assert "tensor" not in at.query_params                       # a value that does not read is dropped


def test_knobs_and_pins_read_back_from_their_url_text():
    text = (ROOT / "scenarios" / "superpod.yaml").read_text()
    base = core.Knobs(**core.base_scenario(text, "superpod")["knobs"])
    chosen = core.knobs_with(base, {"nodes": "64", "failures": "false", "pue": "1.35", "country": "DE",
                                    "zero": "x", "unknown": "1", "workload": "serving"})
    assert core.moved(base, chosen) == {"nodes": 64, "country": "DE", "pue": 1.35, "failures": False}
    pin = core.moved(base, chosen)
    assert core.read_pin(base, core.pin_text(pin)) == pin
    assert [core.pin_label(i) for i in (0, 1, 25, 26)] == ["A", "B", "Z", "AA"]


def test_countries_compared_keep_the_site_the_list_and_france_with_germany():
    assert core.compared_countries("FR", ["DE", "US"], "DE") == ["US", "FR"]
    assert core.compared_countries("US", [], "US") == []
    assert core.compared_countries("US", ["SE"], "fr") == ["SE", "US", "DE"]


def test_the_dashboard_previews_failures_with_fewer_samples_until_refined():
    text = (ROOT / "scenarios" / "llama3-405b-16k.yaml").read_text()
    base = core.base_scenario(text, "llama3")
    assert base["samples"] == 100 > core.PREVIEW_SAMPLES
    assert core.displayed(base["raw"], base, refine=False)["failures"]["samples"] == core.PREVIEW_SAMPLES
    assert core.displayed(base["raw"], base, refine=True)["failures"]["samples"] == 100


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


def test_the_stack_knob_prices_the_step_for_another_framework():
    """The Training knobs offer every catalog stack; PyTorch FSDP's eager kernels in place of NeMo's fused
    ones write training.stack and lengthen the run."""
    at = app()
    stack = knob(at, "selectbox", "Software stack")
    assert stack.value == "nemo-2024" and {"litgpt-2023", "hf-transformers"} <= set(stack.options)
    before = duration_s(metric(at, "Time to train (P50)"))
    stack.set_value("pytorch-fsdp")
    at.run()
    assert_clean(at)
    assert "training.stack = pytorch-fsdp" in at.sidebar.caption[-1].value
    assert duration_s(metric(at, "Time to train (P50)")) > before


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


def test_the_serving_engine_knob_runs_another_release_and_its_own_band():
    """The Replica knobs offer every engine profile; vLLM 0.6 in place of TensorRT-LLM 0.13 writes
    serving.engine.profile, changes the answer and bands it by vLLM's own validation rows."""
    at = app("serving", "serve-llama70b-h100.yaml")
    engine = knob(at, "selectbox", "Serving engine")
    assert engine.value == "tensorrt-llm-0.13" and "vllm-0.6" in engine.options
    before = metric(at, "Output tokens/s")
    assert "validation cases (engine trtllm on h100-sxm at TP 8)" in next(m.help for m in at.metric
                                                                  if m.label == "Output tokens/s")
    engine.set_value("vllm-0.6")
    at.run()
    assert_clean(at)
    assert "serving.engine.profile = vllm-0.6" in at.sidebar.caption[-1].value
    assert metric(at, "Output tokens/s") != before
    helps = {m.label: m.help for m in at.metric}
    assert "(3 validation cases (engine vllm on h100-sxm)" in helps["Output tokens/s"]
    assert "validation cases" not in helps["GPUs used"]


def test_job_page_draws_the_data_path_storage_use_and_pue_by_hour():
    at = app("job", "superpod-dc5.yaml")
    assert_clean(at)
    subheaders = [h.value for h in at.subheader]
    assert "Data path and storage" in subheaders and "The building" in subheaders
    assert metric(at, "Checkpoints that fit") == "1,760"
    assert metric(at, "Yearly PUE").startswith("1.1")


def test_a_serving_or_jobs_scenario_opens_on_its_own_page_and_training_back_on_the_overview():
    at = app("overview", "superpod.yaml")
    at.sidebar.selectbox(key="scenario_file").set_value(SERVING_SCENARIOS[0])
    at.run()
    assert_clean(at)
    assert at.title[0].value == "Serving"
    at.sidebar.selectbox(key="scenario_file").set_value(OPERATIONS_SCENARIOS[0])
    at.run()
    assert at.title[0].value == "Cluster operations"
    at.sidebar.selectbox(key="scenario_file").set_value("superpod.yaml")
    at.run()
    assert at.title[0].value == "Overview"


def test_fine_tuning_selectors_show_for_training_scenarios_only():
    assert any(s.label == "Fine-tuning method" for s in app("scenario", "superpod.yaml").selectbox)
    assert not any(s.label == "Fine-tuning method" for s in app("scenario", SERVING_SCENARIOS[0]).selectbox)
