"""The scenario contract: defaults, strictness, and one-line errors naming the key."""

import copy

import pytest

from twin.errors import InfeasibleError, ScenarioError
from twin.scenario import load_scenario, parse_scenario, with_overrides
from tests.conftest import BASE, SCENARIOS


def test_every_shipped_scenario_loads():
    files = sorted(SCENARIOS.glob("*.yaml"))
    assert len(files) >= 4
    for path in files:
        assert load_scenario(path).cluster.nodes > 0


def test_minimal_scenario_gets_documented_defaults():
    sc = parse_scenario({
        "cluster": {"node": "dgx-h100", "nodes": 1},
        "training": {"model": "llama2-7b", "tokens": "1B", "seq_len": 2048, "global_batch": 8},
    })
    assert sc.site.pue == 1.58 and sc.site.country == "US"
    assert sc.training.precision == "bf16"
    assert sc.training.parallelism.data == "auto" and sc.training.parallelism.zero == 1
    assert sc.failures.enabled is False
    assert sc.training.tokens == 1e9


def test_failures_disabled_is_accepted():
    data = copy.deepcopy(BASE)
    data["failures"] = {"enabled": False}
    assert parse_scenario(data).failures.enabled is False


def test_units_are_parsed_once_to_si():
    data = copy.deepcopy(BASE)
    data["cluster"]["fabric"] = {"link": "400 Gb/s"}
    data["cluster"]["storage"] = {"read": "40 GB/s", "write": "30 GB/s"}
    data["cluster"]["rack_power_limit"] = "25 kW"
    sc = parse_scenario(data)
    assert sc.cluster.fabric.link == pytest.approx(50e9)
    assert sc.cluster.storage.write == pytest.approx(30e9)
    assert sc.cluster.rack_power_limit == pytest.approx(25e3)


def _error(data) -> str:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(data)
    return str(err.value)


def test_unknown_key_is_named_with_a_suggestion():
    data = copy.deepcopy(BASE)
    data["cluster"]["spare_node"] = 3
    message = _error(data)
    assert message.startswith("cluster.spare_node: unknown key")
    assert "did you mean 'spare_nodes'" in message


def test_unknown_node_suggests_the_closest():
    data = copy.deepcopy(BASE)
    data["cluster"]["node"] = "dgx-h10"
    message = _error(data)
    assert message.startswith("cluster.node: unknown node 'dgx-h10'")
    assert "did you mean 'dgx-h100'" in message


def test_unknown_model_suggests_the_closest():
    data = copy.deepcopy(BASE)
    data["training"]["model"] = "llama2-70"
    assert "did you mean 'llama2-70b'" in _error(data)


def test_negative_nodes_rejected():
    data = copy.deepcopy(BASE)
    data["cluster"]["nodes"] = -3
    message = _error(data)
    assert message.startswith("cluster.nodes: -3 is not allowed")


def test_wrong_unit_rejected():
    data = copy.deepcopy(BASE)
    data["cluster"]["fabric"] = {"link": "400 kg"}
    message = _error(data)
    assert message.startswith("cluster.fabric.link: ") and "unknown unit 'kg'" in message


def test_pue_below_one_rejected():
    data = copy.deepcopy(BASE)
    data["site"]["pue"] = 0.9
    assert _error(data).startswith("site.pue: 0.9 is not allowed")


def test_bad_enum_lists_what_is_allowed():
    data = copy.deepcopy(BASE)
    data["training"]["precision"] = "bf17"
    message = _error(data)
    assert message.startswith("training.precision: 'bf17'") and "'fp8'" in message


def test_missing_required_key():
    data = copy.deepcopy(BASE)
    del data["training"]["tokens"]
    assert _error(data) == "training.tokens: is required"


def test_tensor_not_dividing_heads_is_infeasible_with_alternatives():
    from twin.api import run_dict

    data = copy.deepcopy(BASE)
    data["training"]["parallelism"]["tensor"] = 6
    with pytest.raises(InfeasibleError) as err:
        run_dict(data)
    assert str(err.value).startswith("training.parallelism.tensor: 6 does not divide the model's 32 attention heads")
    assert "allowed: 1, 2, 4, 8" in str(err.value)


def test_with_overrides_changes_only_the_named_key():
    data = with_overrides(BASE, {"cluster.nodes": 4, "site.country": "DE"})
    assert data["cluster"]["nodes"] == 4 and data["site"]["country"] == "DE"
    assert BASE["cluster"]["nodes"] == 2
    assert parse_scenario(data).cluster.nodes == 4
