"""Serving scenarios end to end: the serving: section, its one-line errors, the API's answers, the CLI."""

from __future__ import annotations

import copy
import json
import math

import pytest
import yaml

from tests.conftest import twin
from twin.api import capacity, gpus_for_rate, parse_scenario, simulate
from twin.errors import ScenarioError
from twin.units import JOULES_PER_KWH

SERVING = {
    "name": "8B on one H100",
    "cluster": {"node": "dgx-h100", "nodes": 1},
    "site": {"country": "FR", "pue": 1.25, "compare": ["DE"]},
    "serving": {
        "model": "llama3-8b", "precision": "fp8", "parallelism": {"tensor": 1}, "replicas": 1,
        "load": {"rate": "10/s", "requests": 300, "input_tokens": {"mean": 512},
                 "output_tokens": {"mean": 128, "distribution": "exponential", "max": 512}},
        "slo": {"ttft_p99": "1 s", "tpot_p99": "50 ms"},
    },
}


def scenario(**changes):
    """SERVING with dotted keys replaced ('serving.mig': '1g.10gb'); a None value removes the key."""
    data = copy.deepcopy(SERVING)
    for dotted, value in changes.items():
        node = data
        *parents, last = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    return data


def answer(**changes):
    return simulate(parse_scenario(scenario(**changes)))


# -- the section and its errors ----------------------------------------------------------------

@pytest.mark.parametrize("changes, key, needle", [
    ({"serving.model": "llama3-8bb"}, "serving.model", "did you mean 'llama3-8b'"),
    ({"serving.precision": "fp4"}, "serving.precision", "fp4"),
    ({"serving.load.rate": "10/x"}, "serving.load.rate", "unknown unit"),
    ({"serving.load.rate": "0/s"}, "serving.load.rate", "above 0/s"),
    ({"serving.slo.ttft_p99": "2 h"}, "serving.slo.ttft_p99", "up to 1 h"),
    ({"serving.load.input_tokens": {"mean": 512, "max": 100}}, "serving.load.input_tokens", "below mean"),
    ({"serving.load.input_tokens": {"mean": 512, "sigma": 0.5}}, "serving.load.input_tokens", "lognormal"),
    ({"serving.load.prefix_tokens": 600}, "serving.load", "prefix_tokens"),
    ({"serving.engine.schedulr": "no_evict"}, "serving.engine.schedulr", "did you mean 'scheduler'"),
    ({"serving.compare": [{"node": "dgx-h10"}]}, "serving.compare[0].node", "did you mean 'dgx-h100'"),
    ({"training": {"model": "llama3-8b", "tokens": "1B", "seq_len": 4096, "global_batch": 8}}, "",
     "one workload"),
    ({"failures": {"enabled": True}}, "failures.enabled", "serving"),
])
def test_bad_sections_name_their_key(changes, key, needle):
    with pytest.raises(ScenarioError) as err:
        parse_scenario(scenario(**changes))
    assert str(err.value).startswith(key) and needle in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("changes, key, needle", [
    ({"cluster.node": "dgx-a100-80gb"}, "serving.precision", "lacks"),                       # no FP8 on A100
    ({"serving.precision": "bf16", "serving.kv_cache": "fp8", "cluster.node": "dgx-a100-80gb"},
     "serving.kv_cache", "FP8"),
    ({"serving.mig": "1g.10gbb"}, "serving.mig", "did you mean '1g.10gb'"),                  # profile of the H100
    ({"serving.mig": "1g.10gb", "cluster.node": "l4-8"}, "serving.mig", "no MIG"),
    ({"serving.parallelism": {"tensor": 3}}, "serving.parallelism.tensor", "does not divide"),
    ({"serving.parallelism": {"tensor": 2}, "serving.mig": "1g.10gb"}, "serving.parallelism", "MIG"),
    ({"serving.replicas": 9}, "serving.replicas", "the cluster has 8"),
    ({"serving.engine": {"offload": "grace"}}, "serving.engine.offload", "Grace"),
    ({"serving.compare": [{"node": "l4-8", "mig": "1g.10gb"}]}, "serving.compare[0].mig", "no MIG"),
    ({"cluster.node": "gh200-144gb-1", "serving.engine": {"offload": "grace"},
      "serving.compare": [{"node": "dgx-h100"}]}, "serving.compare[0].offload", "offload: none"),
])
def test_rules_across_keys_and_hardware_name_their_key(changes, key, needle):
    with pytest.raises(ScenarioError) as err:
        answer(**changes)
    assert str(err.value).startswith(key + ":") and needle in str(err.value), str(err.value)


# -- the answer ---------------------------------------------------------------------------------

def test_the_record_holds_the_documented_keys_and_is_deterministic():
    a, b = answer().to_json(), answer().to_json()
    assert a == b
    r = json.loads(a)
    assert r["workload"] == "serving"
    for key in ("requests_per_s", "output_tokens_per_s", "tokens_per_s", "kv_cache_capacity_tokens",
                "memory_per_gpu_bytes", "memory_fits", "gpus_used", "avg_power_it_w", "slo_met",
                "energy_per_million_output_tokens_kwh"):
        assert r[key] is not None, key
    for key in ("ttft_s", "tpot_s", "e2e_latency_s"):
        p = r[key]
        assert 0 < p["p50"] <= p["p90"] <= p["p99"], key
    for key in ("cost_per_million_output_tokens_eur", "carbon_per_million_output_tokens_kg"):
        assert set(r[key]) == {"FR", "DE"}
    assert r["tokens_per_s"] > r["output_tokens_per_s"]
    assert r["gpus_used"] == 1 and r["gpus_total"] == 8


def test_per_million_figures_follow_power_and_throughput():
    """energy = IT power × 10⁶ / output tokens/s × PUE; carbon = energy × intensity; cost = energy × price
    (GPUs free, to see the electricity alone)."""
    r = answer(**{"site.electricity_price": "0.20 EUR/kWh", "site.carbon_intensity": "100 g/kWh",
                  "site.gpu_hour_price": "0 EUR/GPU-h"}).to_dict()
    it_kwh = r["avg_power_it_w"] * 1e6 / r["output_tokens_per_s"] / JOULES_PER_KWH
    assert r["energy_per_million_output_tokens_it_kwh"] == pytest.approx(it_kwh)
    assert r["energy_per_million_output_tokens_kwh"] == pytest.approx(it_kwh * 1.25)
    facility = r["energy_per_million_output_tokens_kwh"]
    assert r["carbon_per_million_output_tokens_kg"]["FR"] == pytest.approx(facility * 0.1)
    assert r["cost_per_million_output_tokens_eur"]["FR"] == pytest.approx(facility * 0.20)


def test_gpu_rental_adds_gpu_hours_per_million_tokens():
    r = answer(**{"site.gpu_hour_price": "3 EUR/GPU-h", "site.electricity_price": "0 EUR/kWh"}).to_dict()
    hours = 1e6 / r["output_tokens_per_s"] / 3600 * r["gpus_used"]
    assert r["cost_per_million_output_tokens_eur"]["FR"] == pytest.approx(3 * hours)


def test_a_power_cap_slows_prefill_by_the_capped_clock_and_leaves_decode_to_the_memory():
    """Under ``cluster.gpu_power_cap`` the clock falls to ((cap - idle) / (TDP - idle))^(1/3) (docs/power.md): a
    lone 4,000-token prompt, compute-bound, takes about 1/clock longer; the memory-bound decode hardly moves."""
    lone = {"serving.load": {"rate": "0.5/s", "requests": 100, "input_tokens": {"mean": 4000},
                             "output_tokens": {"mean": 64}}, "serving.slo": None}
    free = answer(**lone).to_dict()
    capped = answer(**lone, **{"cluster.gpu_power_cap": "400 W"}).to_dict()
    clock = ((400 - 70) / (700 - 70)) ** (1 / 3)
    assert 1.1 < capped["ttft_s"]["p50"] / free["ttft_s"]["p50"] <= 1 / clock
    assert capped["tpot_s"]["p50"] == pytest.approx(free["tpot_s"]["p50"], rel=0.05)
    assert capped["power"]["gpu_avg_w"] < free["power"]["gpu_avg_w"]


def test_seven_mig_replicas_occupy_one_gpu_and_draw_less_than_it():
    r = answer(**{"serving.mig": "1g.10gb", "serving.precision": "int4", "serving.replicas": 7}).to_dict()
    assert r["memory_fits"] and r["gpus_used"] == 1 and r["deployment"]["instances_used"] == 7
    assert r["memory_capacity_bytes"] == pytest.approx(80 * 2**30 / 8)
    assert r["power"]["gpu_avg_w"] * 7 <= 700


def test_a_model_that_does_not_fit_is_explained_not_a_crash():
    r = answer(**{"cluster.node": "l4-8", "serving.model": "llama3-70b"}).to_dict()
    assert r["memory_fits"] is False and r["requests_per_s"] is None and r["slo_met"] is False
    warning = next(w for w in r["warnings"] if "does not fit" in w)
    assert "over" in warning and "tensor 8 would fit" in warning


def test_a_batch_limit_whose_sampler_buffers_fill_the_gpu_is_named_with_its_fix():
    """TensorRT-LLM 0.13 allocates its sampler's buffers for every batch slot: 16,384 slots of Llama 3 8B
    (vocabulary 128,256, 8 B each) are 15.7 GiB, which with the weights leave no room on a 24 GiB L4."""
    r = answer(**{"cluster.node": "l4-8", "serving.precision": "fp8", "serving.kv_cache": "fp8",
                  "serving.engine": {"max_batch": 16384}}).to_dict()
    assert r["memory_fits"] is False
    warning = next(w for w in r["warnings"] if "does not fit" in w)
    assert "the sampler's buffers for 16,384 batch slots: 15.7 GiB" in warning
    assert "max_batch 256 would fit" in warning


def test_a_request_longer_than_the_kv_cache_is_explained():
    r = answer(**{"serving.load.input_tokens": {"mean": 100_000}, "serving.mig": "1g.10gb",
                  "serving.precision": "int4"}).to_dict()
    assert r["memory_fits"] is False
    assert any("longer" in w or "less than the longest request" in w for w in r["warnings"])


def test_compared_deployments_inherit_what_they_do_not_write():
    r = answer(**{"serving.compare": [{"parallelism": {"tensor": 2}}, {"node": "l4-8", "replicas": 8}]})
    tp2, l4 = r.alternatives
    assert (tp2.tensor, tp2.precision, tp2.node) == (2, "fp8", "dgx-h100")
    assert (l4.node, l4.gpus_used, l4.replicas, l4.tensor) == ("l4-8", 8, 8, 1)
    no_mig = answer(**{"serving.mig": "1g.20gb", "serving.compare": [{"mig": None}]}).alternatives[0]
    assert no_mig.mig is None and no_mig.memory.hbm_bytes == pytest.approx(80 * 2**30)


def test_a_rate_above_the_saturated_throughput_is_not_sustained_however_the_run_went():
    """Above the throughput it completes when saturated, a deployment's queue grows without bound: its p99 TTFT
    grows with the length of the run, which is what ``sustained`` false says; below it, it does not grow."""
    r = answer().to_dict()
    saturated = r["saturated_requests_per_s"]
    assert r["sustained"] is True and saturated > 10.0
    assert r["saturated_requests_per_s"] == pytest.approx(
        capacity(parse_scenario(scenario())).to_dict()["offline_requests_per_s"])

    def p99_ttft(rate, requests):
        return answer(**{"serving.load.rate": f"{rate}/s", "serving.load.requests": requests}).to_dict()

    over = p99_ttft(1.25 * saturated, 300)
    assert over["sustained"] is False
    assert any("not sustained" in w and "python -m twin capacity" in w for w in over["warnings"])
    assert p99_ttft(1.25 * saturated, 1200)["ttft_s"]["p99"] > 2 * over["ttft_s"]["p99"]
    under = p99_ttft(0.5 * saturated, 300)
    assert under["sustained"] is True and not any("sustained" in w for w in under["warnings"])
    assert p99_ttft(0.5 * saturated, 1200)["ttft_s"]["p99"] < 2 * under["ttft_s"]["p99"]
    offline = answer(**{"serving.load.rate": "offline"}).to_dict()
    assert offline["sustained"] is None and offline["saturated_requests_per_s"] is None


def test_capacity_is_within_the_slo_and_sizes_a_target():
    sc = parse_scenario(scenario())
    cap = capacity(sc, target_rate_per_s=100.0).to_dict()
    assert 0 < cap["per_replica_rate_per_s"]
    assert all(p["slo_met"] for p in cap["sweep"] if p["rate_per_s"] <= cap["rate_per_s"])
    replicas = math.ceil(100.0 / cap["per_replica_rate_per_s"])
    assert cap["target"]["replicas"] == replicas and cap["target"]["gpus"] == replicas
    assert gpus_for_rate(cap, 100.0).gpus == replicas
    mig = capacity(parse_scenario(scenario(**{"serving.mig": "1g.20gb"})), 100.0).to_dict()
    assert mig["target"]["gpus"] == math.ceil(mig["target"]["devices"] / 4)
    assert mig["per_gpu_rate_per_s"] == pytest.approx(4 * mig["per_replica_rate_per_s"])


def test_capacity_lengthens_its_trials_until_a_longer_run_confirms_it(monkeypatch):
    """Over the scenario's 1,000 requests a trial, a rate meets the SLO that a run of 16,000 misses: the search
    goes on with longer trials, and its answer meets the SLO over that many requests, where the rate found over
    1,000 does not. Stopped at 1,000 requests a trial, the search says it has not converged."""
    sc = parse_scenario(scenario(**{"serving.load.requests": 1000}))
    cap = capacity(sc).to_dict()
    n = cap["requests_per_trial"]
    assert cap["converged"] and n >= 4 * 1000 and math.log(n / 1000, 4).is_integer()
    assert {p["requests"] for p in cap["sweep"]} >= {1000, n}

    def over(rate, requests):
        return answer(**{"serving.load.rate": f"{rate}/s", "serving.load.requests": requests}).to_dict()["slo_met"]

    assert over(cap["rate_per_s"], n)
    monkeypatch.setattr("twin.serving.capacity.MAX_TRIAL_REQUESTS", 1000)
    short = capacity(sc).to_dict()
    assert not short["converged"] and short["requests_per_trial"] == 1000
    assert any("not converged" in w for w in short["warnings"])
    assert short["rate_per_s"] > cap["rate_per_s"] and not over(short["rate_per_s"], n)


# -- the command line ---------------------------------------------------------------------------


def test_run_prints_a_serving_summary_and_json(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario(**{"serving.compare": [{"name": "two ranks", "parallelism":
                                                                    {"tensor": 2}}]})), encoding="utf-8")
    out = twin("run", str(path))
    assert out.returncode == 0, out.stderr
    for needle in ("TTFT", "TPOT", "requests/s", "output tokens/s", "Wh", "CO2e", "EUR", "two ranks", "SLO"):
        assert needle in out.stdout
    assert "not sustained" not in out.stdout
    record = json.loads(twin("run", str(path), "--json").stdout)
    assert record["workload"] == "serving" and record["alternatives"][0]["label"] == "two ranks"


def test_capacity_command(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario()), encoding="utf-8")
    out = twin("capacity", str(path), "--rate", "3000/min", "--json")
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert record["target"]["target_rate_per_s"] == pytest.approx(50.0)
    text = twin("capacity", str(path), "--rate", "50/s")
    assert text.returncode == 0 and "for 50 requests/s" in text.stdout and "GPUs" in text.stdout
    bad = twin("capacity", str(path), "--rate", "fast")
    assert bad.returncode == 2 and bad.stderr.startswith("twin: error: --rate:") and bad.stderr.count("\n") == 1
    training = twin("capacity", "scenarios/superpod.yaml")
    assert training.returncode == 2 and "serving" in training.stderr


@pytest.mark.parametrize("name", ["serve-llama70b-h100.yaml", "serve-8b-l4-vs-mig.yaml", "serve-gh200.yaml"])
def test_shipped_serving_scenarios_run(name):
    out = twin("run", f"scenarios/{name}", "--json")
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert record["memory_fits"] and record["alternatives"]
