"""GPU instances in the node catalog: names, interconnect, host and power."""

import pytest

from twin import catalog
from twin.errors import ScenarioError
from twin.hardware.specs import node_spec
from twin.power.devices import node_power

INSTANCES = ["l4-1", "l4-8", "l40s-1", "l40s-8", "h100-pcie-1", "h100-pcie-2", "gh200-1"]


@pytest.mark.parametrize("old, new", [("l4-server", "l4-8"), ("l40s-server", "l40s-8"), ("gh200-node", "gh200-1")])
def test_renamed_nodes_name_their_new_name(old, new):
    with pytest.raises(ScenarioError) as err:
        catalog.entry("nodes", old, "cluster.node")
    assert str(err.value).startswith("cluster.node:") and f"did you mean '{new}'" in str(err.value)


@pytest.mark.parametrize("name, gpus", [("l4-1", 1), ("l4-8", 8), ("l40s-1", 1), ("l40s-8", 8),
                                        ("h100-pcie-1", 1), ("h100-pcie-2", 2), ("gh200-1", 1)])
def test_instances_have_their_gpu_count_and_no_nvlink_switch(name, gpus):
    node = node_spec(name)
    assert node.gpus == gpus
    assert node.nvswitches == 0
    assert node.intra in ("pcie", "c2c")          # no NVLink between GPUs: TP crosses PCIe


@pytest.mark.parametrize("name", INSTANCES)
def test_instance_power_is_gpus_plus_host_share_plus_ten_percent(name):
    # max_power = 1.1 x (GPUs' TDP + the host components of power.yaml), each component sourced
    node = node_spec(name)
    power = node_power(node)
    components = sum(w for k, w in power.host.components_w.items() if k != "fans, conversion and board")
    assert node.max_power_w == pytest.approx(1.1 * (node.gpus * node.gpu.tdp_w + components), rel=0.01)
    assert power.peak_w == pytest.approx(node.max_power_w)
    assert 0 < power.idle_w < 0.35 * node.max_power_w
    rows = catalog.table("power")["hosts"][name]["components"]
    assert all(row.get("source") for row in rows.values())


def test_l4_instance_by_hand():
    # 72 W GPU + 8 threads x 180/48 W + 48 GB x 10/64 W + 2.5 Gb/s x 25/400 W, plus 10%
    expected = 1.1 * (72 + 8 * 180 / 48 + 48 * 10 / 64 + 2.5 * 25 / 400)
    assert node_spec("l4-1").max_power_w == pytest.approx(expected, abs=1.0)
