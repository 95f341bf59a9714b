"""One cost model in every command: run, plan, fit, sweep and capacity give the same parts for the same plan.

The parts are checked by hand too: an owned H100 PCIe at a written purchase price, written off over the catalog's
six years with its maintenance and space, and the facility energy at the site's electricity price.
"""

from __future__ import annotations

import csv
import json

import pytest
import yaml

from tests.conftest import twin
from tests.test_serving_scenario import SERVING
from twin.api import capacity, parse_scenario, simulate
from twin.errors import ScenarioError
from twin.power.api_prices import compare_apis
from twin.power.pricing import HOURS_PER_YEAR
from twin.scenario import with_overrides
from twin.units import parse_money, parse_price_per_kw_month

USD_EUR = 0.9248                       # catalog currencies.yaml, ECB 2023 average
PARTS = ("gpu", "maintenance", "space", "electricity", "total")

# One H100 PCIe, owned: every part of the cost is there. One GPU and no pipeline, so the closed-form step of
# fit and the SimPy step of run are the same plan at the same time.
TRAINING = {
    "name": "cost agreement",
    "cluster": {"node": "h100-pcie-1", "nodes": 1},
    "site": {"country": "FR", "pue": 1.3, "pricing": "owned", "hardware_price": "30000 USD"},
    "training": {"model": "llama3-8b", "method": "lora", "tokens": "20M", "seq_len": 2048, "global_batch": 16,
                 "precision": "bf16",
                 "parallelism": {"tensor": 1, "pipeline": 1, "data": 1, "microbatch": 1, "recompute": "none",
                                 "zero": 0}},
}
PLAN = "TP1 PP1 DP1 (1f1b, micro-batch 1 × 16, ZeRO-0, recompute none)"


def _cents(parts: dict) -> dict:
    return {k: round(parts[k], 2) for k in PARTS} | {"includes": list(parts["includes"]),
                                                      "pricing": parts["pricing"]}


def _json(*argv: str) -> dict:
    out = twin(*argv, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def scenario_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cost") / "owned.yaml"
    path.write_text(yaml.safe_dump(TRAINING, allow_unicode=True), encoding="utf-8")
    return path


def test_run_plan_fit_and_sweep_agree_to_the_cent(scenario_file, tmp_path):
    run = _json("run", str(scenario_file))
    expected = _cents(run["cost_eur"])
    assert expected["includes"] == ["gpu", "maintenance", "space", "electricity"] and expected["pricing"] == "owned"

    plan = _json("plan", str(scenario_file), "--objective", "cost")
    assert _cents(plan["scenario_plan"]["cost_parts_eur"]) == expected
    same = [p for p in plan["plans"] if p["description"] == PLAN]
    assert same and _cents(same[0]["cost_parts_eur"]) == expected

    fit = _json("fit", str(scenario_file), "--by", "cost", "--nodes", "h100-pcie-1", "--max-gpus", "1")
    row = next(o for o in fit["options"] if o["method"] == "lora" and o["weights"] == "bf16")
    assert row["plan"] == PLAN and _cents(row["cost_parts_eur"]) == expected

    out = twin("sweep", str(scenario_file), "--vary", "site.country=FR", "--out", str(tmp_path / "sweep"))
    assert out.returncode == 0, out.stderr
    with open(tmp_path / "sweep" / "results.csv", encoding="utf-8") as f:
        point = next(csv.DictReader(f))
    assert {k: round(float(point[f"cost_eur.{k}"]), 2) for k in PARTS} == {k: expected[k] for k in PARTS}
    assert float(point["site_total_cost_eur"]) == pytest.approx(run["cost_eur"]["total"], abs=0.005)


def test_the_parts_by_hand(scenario_file):
    r = simulate(parse_scenario(TRAINING, "test")).to_dict()
    hours = r["power"]["reserved_gpu_hours"]
    node_eur = 30_000 * USD_EUR
    kw = 0.536                                     # h100-pcie-1 max power (catalog nodes.yaml)
    per_hour = {"gpu": node_eur / (6 * HOURS_PER_YEAR),
                "maintenance": node_eur * 0.10 / HOURS_PER_YEAR,
                "space": 184.06 * USD_EUR * kw / (HOURS_PER_YEAR / 12)}
    parts = r["cost_eur"]
    for key, eur in per_hour.items():
        assert parts[key] == pytest.approx(hours * eur, rel=1e-9), key
    electricity = r["energy_facility_kwh"] * r["electricity_price_eur_per_kwh"]["FR"]
    assert parts["electricity"] == pytest.approx(electricity, rel=1e-12)
    assert parts["total"] == pytest.approx(sum(parts[k] for k in PARTS[:4]), rel=1e-12)
    assert r["total_cost_eur"]["FR"] == pytest.approx(parts["total"], rel=1e-12)
    assert r["rental_cost_eur"] == pytest.approx(parts["gpu"] + parts["maintenance"] + parts["space"], rel=1e-12)


def test_a_run_without_a_price_rents_at_the_list_median():
    rented = dict(TRAINING, site={"country": "FR", "pue": 1.3})
    r = simulate(parse_scenario(rented, "test")).to_dict()
    listed = simulate(parse_scenario(with_overrides(rented, {"site.gpu_hour_price": "list"}), "t")).to_dict()
    assert r["cost_eur"]["pricing"] == "rental" and r["cost_eur"]["includes"] == ["gpu", "electricity"]
    assert r["cost_eur"] == listed["cost_eur"]
    # the list has one on-demand H100 PCIe row: Lambda, 2.86 USD/h
    assert r["cost_eur"]["gpu"] == pytest.approx(r["power"]["reserved_gpu_hours"] * 2.86 * USD_EUR, rel=1e-12)


def test_a_gpu_without_a_list_price_is_said_and_counts_electricity_only():
    data = dict(TRAINING, cluster={"node": "dgx-h200", "nodes": 1}, site={"country": "FR"})
    r = simulate(parse_scenario(data, "test"))
    assert r.power.hour_price is None and r.to_dict()["cost_eur"] is None
    assert any("no on-demand price for h200" in w for w in r.warnings)


def test_capacity_and_run_agree_at_the_capacity_rate():
    cap = capacity(parse_scenario(SERVING, "t")).to_dict()
    data = with_overrides(SERVING, {"serving.load.rate": f"{cap['rate_per_s']!r}/s"})
    run = simulate(parse_scenario(data, "t")).to_dict()
    assert _cents(run["cost_eur"]) == _cents(cap["cost_eur"])
    assert run["cost_eur"]["per_million_input_tokens"] == pytest.approx(cap["cost_eur"]["per_million_input_tokens"])


def test_input_and_output_tokens_share_the_whole_cost():
    parts = simulate(parse_scenario(SERVING, "t")).to_dict()["cost_eur"]
    assert 0 < parts["input_share"] < 1
    whole = parts["per_million_input_tokens"] * parts["input_per_output_token"] + parts["per_million_output_tokens"]
    assert whole == pytest.approx(parts["total"], rel=1e-12)


def test_the_break_even_rate_by_hand():
    """Together's 8B at 0.18 USD per million tokens either way; 3 input tokens per output token."""
    api = 4 * 0.18 * USD_EUR
    cheap, dear = compare_apis("llama3-8b", 3.0, api / 2, capacity_rate_per_s=10.0)[0], \
        compare_apis("llama3-8b", 3.0, api * 2, capacity_rate_per_s=10.0)[0]
    assert cheap.api_eur_per_million_output == pytest.approx(api)
    assert cheap.cheaper == "self-hosted" and cheap.break_even_rate_per_s == pytest.approx(5.0)
    assert dear.cheaper == "api" and dear.break_even_rate_per_s is None
    assert compare_apis("no-such-model", 3.0, 1.0) == []


def test_pricing_keys_are_checked_at_the_boundary(tmp_path):
    with pytest.raises(ScenarioError, match="gpu_hour_price is a rental price"):
        parse_scenario(with_overrides(TRAINING, {"site.gpu_hour_price": "2 USD/GPU-h"}), "t")
    rented = with_overrides(TRAINING, {"site.pricing": "rental"})
    with pytest.raises(ScenarioError, match="hardware_price apply to owned hardware"):
        parse_scenario(rented, "t")
    with pytest.raises(ScenarioError, match="site.space_price"):
        parse_scenario(with_overrides(TRAINING, {"site.space_price": "184 USD"}), "t")
    with pytest.raises(ScenarioError, match="site.pricing"):
        parse_scenario(with_overrides(TRAINING, {"site.pricing": "leased"}), "t")
    path = tmp_path / "owned-l4.yaml"               # the catalog has no purchase price for an l4-8 node
    path.write_text(yaml.safe_dump(with_overrides(SERVING, {"cluster.node": "l4-8", "site.pricing": "owned"})))
    out = twin("run", str(path))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "site.hardware_price" in out.stderr


def test_money_and_space_prices_parse_once():
    assert parse_money("270000 USD", "f") == (270_000.0, "USD")
    assert parse_money("250k EUR", "f") == (250_000.0, "EUR")
    assert parse_price_per_kw_month("184.06 USD/kW-month", "f") == (184.06, "USD")
    for bad in ("270000", "nan USD", "-5 USD"):
        with pytest.raises(ScenarioError, match="^f: "):
            parse_money(bad, "f")


def test_the_report_states_the_electricity_ratio_to_the_usa_and_the_parts():
    """The seed says electricity is five times dearer in France than in the USA; the data say 1.9×:
    Eurostat 2024-S2 band ID 0.1446 EUR/kWh against EIA 2023 industrial 8.06 US cents (0.9248 EUR/USD)."""
    out = twin("run", "scenarios/dgx-finetune.yaml")
    assert out.returncode == 0, out.stderr
    assert f"is {0.1446 / (0.0806 * USD_EUR):.1f}× the US price" in out.stdout and "1.9×" in out.stdout
    assert "= GPU rental" in out.stdout and "+ electricity" in out.stdout


def test_fit_on_owned_hardware_searches_the_nodes_with_a_purchase_price():
    from twin.studies.fit import fit

    owned = with_overrides(TRAINING, {"site.hardware_price": None, "cluster.node": "dgx-h100"})
    report = fit(parse_scenario(owned, "t"), "cost", max_gpus=1, nodes=["dgx-h100", "l4-8"])
    assert {r.option.node for r in report.rows} == {"dgx-h100"}
    assert "only nodes with a catalog purchase price" in report.notes[0]
    with pytest.raises(ScenarioError, match="^site.hardware_price: owned hardware needs a purchase price"):
        fit(parse_scenario(owned, "t"), "cost", max_gpus=1, nodes=["l4-8"])


def test_written_ownership_terms_replace_the_catalogs():
    """A 100,000 EUR node over 4 years, no maintenance, 100 EUR per kW-month: by hand."""
    terms = {"site.hardware_price": "100k EUR", "site.hardware_life": 4, "site.maintenance": 0,
             "site.space_price": "100 EUR/kW-month"}
    r = simulate(parse_scenario(with_overrides(TRAINING, terms), "t")).to_dict()
    price = r["power"]["gpu_hour_price_eur"]
    assert price["gpu"] == pytest.approx(100_000 / (4 * HOURS_PER_YEAR), rel=1e-12)
    assert price["maintenance"] == 0
    assert price["space"] == pytest.approx(100 * 0.536 / (HOURS_PER_YEAR / 12), rel=1e-12)
