"""Error bands beyond one run: records of many jobs, capacity records and a study's rows.

Every headline number has ``KEY_low`` and ``KEY_high`` beside it with low ≤ value ≤ high; a band
widens when the band it is propagated from widens; a study's rows carry the band columns and a
Parquet reader (DuckDB) reads them.
"""

from __future__ import annotations

import copy
import math

import pyarrow.parquet as pq
import pytest

from tests.conftest import BASE
from tests.test_operations import TINY
from tests.test_serving_scenario import SERVING
from twin.api import capacity, parse_scenario, run_dict, simulate
from twin.bands import (CAPACITY_KEYS, OPERATIONS_KEYS, SERVICE_KEYS, SERVING_KEYS, TRAINING_KEYS, TRIAL_KEYS, Band,
                        Calibration, band_line)
from twin.studies.space import space
from twin.studies.sweep import sweep

# Rounding allowed between a number and its band's edge (a band of width 0 may differ in the last digit).
REL = 1e-9

# Jobs whose length is their tokens (not a duration): the step time sets when each ends.
TOKENS = {"model": TINY, "tokens": "2B", "seq_len": 1024, "global_batch": 192}
SHARED = {
    "cluster": {"node": "dgx-h100", "nodes": 2, "fabric": {"topology": "single-switch"}},
    "site": {"country": "FR", "pue": 1.2, "compare": ["DE"], "gpu_hour_price": "2 EUR/GPU-h"},
    "jobs": {"templates": {"tiny": TOKENS, "chat": {"model": "llama3-8b", "precision": "fp8", "replicas": 1,
                                                    "load": {"rate": "2/s", "requests": 100,
                                                             "input_tokens": {"mean": 256},
                                                             "output_tokens": {"mean": 64}}}},
             "list": [{"name": f"j{i}", "template": "tiny", "gpus": g, "submit": 600.0 * i}
                      for i, g in enumerate((8, 4, 8, 16, 2, 8))]
             + [{"name": "chat", "template": "chat", "submit": 0.0, "duration": "2 h"}]},
}


def pairs(value, low, high, where: str):
    """(where, low, value, high) for every number of ``value`` that its band holds."""
    if isinstance(value, dict):
        for key, v in value.items():
            if isinstance(low, dict) and key in low:
                yield from pairs(v, low[key], high[key], f"{where}.{key}")
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and low is not None:
        yield where, low, value, high


def assert_banded(record: dict, keys: tuple[str, ...]) -> int:
    """Every key of ``keys`` has its low and high beside it, each number within them; how many numbers."""
    checked = 0
    for key in keys:
        assert f"{key}_low" in record and f"{key}_high" in record, key
        for where, low, value, high in pairs(record[key], record[f"{key}_low"], record[f"{key}_high"], key):
            assert low <= value * (1 + REL) and value <= high * (1 + REL), (where, low, value, high)
            checked += 1
    return checked


def width(record: dict, key: str) -> float:
    return record[f"{key}_high"] - record[f"{key}_low"]


def fixed(monkeypatch, module: str, factor: float) -> None:
    """Every band drawn in ``module`` is ``factor`` (in place of the validation's)."""
    band = Calibration(Band(factor, "validation", f"a band of {factor}", 10))
    monkeypatch.setattr(f"{module}.calibration_of", lambda *args: band)


# -- many jobs on one cluster ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def shared() -> dict:
    return run_dict(copy.deepcopy(SHARED)).to_dict()


def test_an_operations_record_bands_every_headline_number(shared):
    assert assert_banded(shared, OPERATIONS_KEYS) > 100
    assert shared["makespan_s_low"] < shared["makespan_s"] < shared["makespan_s_high"]
    jobs = shared["energy"]["jobs"]
    assert shared["energy_low"]["jobs"]["gpu_hours"] < jobs["gpu_hours"] < shared["energy_high"]["jobs"]["gpu_hours"]
    assert shared["cost_eur_low"]["total"] < shared["cost_eur"]["total"] < shared["cost_eur_high"]["total"]
    band = shared["band"]
    assert set(band["templates"]) == {"tiny", "chat"} and band["basis"] == "validation"
    assert band["factor"] == max(t["factor"] for t in band["templates"].values())
    chat = shared["services"]["chat"]
    assert assert_banded(chat, SERVICE_KEYS) == len(SERVICE_KEYS)
    assert chat["requests_per_s_high"] == pytest.approx(chat["requests_per_s"] * band["templates"]["chat"]["factor"])
    assert "played again" in band_line(shared)


def test_a_band_of_zero_width_leaves_every_number_where_it_is(monkeypatch):
    fixed(monkeypatch, "twin.api.operations_bands", 1.0)
    record = run_dict(copy.deepcopy(SHARED)).to_dict()
    for key in OPERATIONS_KEYS:
        for where, low, value, high in pairs(record[key], record[f"{key}_low"], record[f"{key}_high"], key):
            assert low == value == high, where


def test_an_operations_band_widens_when_its_templates_band_widens(monkeypatch):
    widths = []
    for factor in (1.05, 1.3):
        fixed(monkeypatch, "twin.api.operations_bands", factor)
        record = run_dict(copy.deepcopy(SHARED)).to_dict()
        widths.append((width(record, "makespan_s"),
                       record["energy_high"]["jobs"]["gpu_hours"] - record["energy_low"]["jobs"]["gpu_hours"],
                       record["turnaround_s_high"]["mean"] - record["turnaround_s_low"]["mean"]))
    assert all(wide > narrow > 0 for narrow, wide in zip(*widths))


def test_a_job_of_fixed_duration_holds_the_gpus_as_long_whatever_its_step():
    """A training job of three hours runs three hours at either edge of its band: its GPU-hours do not move."""
    data = copy.deepcopy(SHARED)
    data["jobs"]["list"] = [{"name": "t", "template": "tiny", "gpus": 8, "duration": "3 h"}]
    record = run_dict(data).to_dict()
    hours = record["energy"]["jobs"]["gpu_hours"]
    assert record["energy_low"]["jobs"]["gpu_hours"] == pytest.approx(hours, rel=1e-6)
    assert record["energy_high"]["jobs"]["gpu_hours"] == pytest.approx(hours, rel=1e-6)


def test_an_operations_row_carries_the_band_columns(shared):
    row = run_dict(copy.deepcopy(SHARED)).to_flat()
    assert row["makespan_s_low"] <= row["makespan_s"] <= row["makespan_s_high"]
    assert row["energy_high.cluster.carbon_kg.FR"] >= row["energy.cluster.carbon_kg.FR"]
    assert row["band.method"] == shared["band"]["method"]


# -- capacity ---------------------------------------------------------------------------------------

def test_a_capacity_record_bands_its_rates_costs_trials_and_target():
    record = capacity(parse_scenario(copy.deepcopy(SERVING)), target_rate_per_s=100.0).to_dict()
    assert assert_banded(record, CAPACITY_KEYS) >= len(CAPACITY_KEYS)
    f = record["band"]["factor"]
    assert f > 1 and record["band"]["basis"] == "validation"
    assert record["rate_per_s_high"] == pytest.approx(record["rate_per_s"] * f)
    assert record["cost_eur_high"]["total"] == pytest.approx(record["cost_eur"]["total"] * f)
    assert "pricing" not in record["cost_eur_low"] and "input_share" not in record["cost_eur_low"]
    target = record["target"]
    assert record["target_low"]["replicas"] <= target["replicas"] <= record["target_high"]["replicas"]
    assert record["target_high"]["replicas"] == math.ceil(100.0 / (record["per_replica_rate_per_s"] / f) - 1e-9)
    for trial in record["sweep"]:
        assert_banded(trial, TRIAL_KEYS)
    for api in record["api_comparison"]:
        assert_banded(api, ("self_hosted_eur_per_million_output_tokens",))


def test_a_capacity_band_widens_when_the_serving_band_widens(monkeypatch):
    widths = []
    for factor in (1.1, 1.5):
        fixed(monkeypatch, "twin.api.serving", factor)
        record = capacity(parse_scenario(copy.deepcopy(SERVING)), target_rate_per_s=100.0).to_dict()
        widths.append((width(record, "rate_per_s"),
                       record["target_high"]["gpus"] - record["target_low"]["gpus"]))
    assert widths[1][0] > widths[0][0] > 0 and widths[1][1] > widths[0][1]


# -- a study's rows ---------------------------------------------------------------------------------

def test_sweep_rows_carry_the_band_columns_and_duckdb_reads_them(tmp_path):
    report = sweep(copy.deepcopy(BASE), "test", space(["site.country=FR,SE"]), tmp_path / "study", closed_form=True)
    rows = report.table.to_pylist()
    assert len(rows) == 2
    for row in rows:
        for key in ("time_to_train_s", "site_total_cost_eur", "site_carbon_kg", "mfu", "energy_facility_kwh"):
            assert row[f"{key}_low"] <= row[key] <= row[f"{key}_high"], key
        assert row["band.basis"] == "validation" and row["band.factor"] > 1
    columns = pq.read_schema(tmp_path / "study" / "results.parquet").names
    assert {f"{k}_low" for k in TRAINING_KEYS if "cost" not in k and "carbon" not in k} <= set(columns)
    duckdb = pytest.importorskip("duckdb")
    found = duckdb.sql(f"""
        SELECT time_to_train_s_low, time_to_train_s, time_to_train_s_high, site_total_cost_eur_high
        FROM '{tmp_path / "study" / "results.parquet"}' ORDER BY point""").fetchall()
    assert len(found) == 2 and all(low <= value <= high for low, value, high, _ in found)


def test_a_serving_row_carries_its_latency_bands_per_percentile():
    row = simulate(parse_scenario(copy.deepcopy(SERVING))).to_flat()
    for key in SERVING_KEYS:
        assert any(k.startswith(f"{key}_low") for k in row), key
    assert row["ttft_s_low.p99"] <= row["ttft_s.p99"] <= row["ttft_s_high.p99"]


def test_the_operations_page_shows_the_bands_of_its_headline_numbers(shared):
    from twin.figures.operations import headline_metrics

    helps = {m.label: m.help for m in headline_metrics(shared)}
    for label in ("GPUs held", "Queue wait P90", "Energy (facility)", "Carbon (FR)", "Makespan"):
        assert "error band" in helps[label], label


# -- a plan search's plans and a fit's options ------------------------------------------------------

def test_every_plan_of_a_search_carries_its_option_s_band():
    from twin.bands import PLAN_KEYS
    from twin.studies.search import search_plans

    found = search_plans(copy.deepcopy(BASE), "test", "cost", top=3, refine=1,
                         space=space(["cluster.node=dgx-h100,dgx-a100"])).record()
    rows = found["plans"] + [found["scenario_plan"]]
    assert {r["engine"] for r in rows} == {"simpy", "closed-form"}
    details = set()
    for row in rows:
        assert assert_banded(row, PLAN_KEYS) >= len(PLAN_KEYS) - 1      # every amount, rental included when priced
        assert row["time_to_train_s_high"] == pytest.approx(row["time_to_train_s"] * row["band"]["factor"])
        details.add(row["band"]["detail"])
    assert any("h100" in d for d in details)


def test_every_option_that_fits_carries_its_band():
    from twin.bands import FIT_KEYS
    from twin.studies.fit import fit

    scenario = parse_scenario(copy.deepcopy(BASE) | {"training": BASE["training"] | {"method": "lora"}})
    record = fit(scenario, max_gpus=1, nodes=["h100-pcie-1", "l40s-1"]).record()
    fits = [o for o in record["options"] if o["fits"]]
    assert fits
    for option in fits:
        assert assert_banded(option, FIT_KEYS) > len(FIT_KEYS)
        assert option["band"]["basis"] == "validation"
    assert all("band" not in o for o in record["options"] if not o["fits"])
