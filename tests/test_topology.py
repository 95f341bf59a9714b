"""The fabric graph: structure against the DGX SuperPOD RA, bisection against max-flow, placement."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from twin.api import catalog_names
from twin.hardware import topology as T
from twin.hardware.specs import node_spec
from twin.workload.placement import place
from twin.workload.plan import ParallelPlan

H100 = node_spec("dgx-h100")
NDR_Bps = 400e9 / 8

# DGX SuperPOD H100 reference architecture, compute fabric table:
# SUs: (nodes, GPUs, leaves, spines, node+UFM cables, spine-leaf cables)
RA_TABLE = {1: (31, 248, 8, 4, 252, 256), 2: (63, 504, 16, 8, 508, 512),
            3: (95, 760, 24, 16, 764, 768), 4: (127, 1016, 32, 16, 1020, 1024)}


@pytest.mark.parametrize("sus", [1, 2, 3, 4])
def test_superpod_counts_match_the_reference_architecture(sus):
    nodes, gpus, leaves, spines, node_cables, spine_cables = RA_TABLE[sus]
    g = T.rail_optimized_fat_tree(H100, nodes)
    c = T.counts(g)
    assert c["gpu"] == gpus
    assert c["nic"] == gpus                       # one NDR NIC per GPU (one rail each)
    assert c["leaf"] == leaves
    assert c["spine"] == spines
    assert c.get("core", 0) == 0                  # no core tier up to 4 SU
    assert c["cables_nic"] + c["cables_mgmt"] == node_cables
    assert c["cables_leaf-spine"] == spine_cables
    # Every leaf is a 64-port switch: 32 down (31 nodes + UFM or 32 nodes), 32 up.
    for v, kind in g.nodes(data="kind"):
        if kind in ("leaf", "spine"):
            ports = sum(g[v][w]["cables"] for w in g[v])
            assert ports <= T.SWITCH_RADIX


def test_rail_optimised_leaf_holds_one_rail_of_one_su():
    g = T.rail_optimized_fat_tree(H100, 63)
    for n in (0, 31, 32, 62):
        for rail in range(8):
            (leaf,) = [w for w in g[("nic", n, rail)] if g.nodes[w]["kind"] == "leaf"]
            assert g.nodes[leaf]["rail"] == rail
            assert g.nodes[leaf]["su"] == n // 32


def test_dgx_h100_node_links():
    g = T.dgx_node(H100)
    assert sum(1 for _, k in g.nodes(data="kind") if k == "gpu") == 8
    nvlinks = [d for _, _, d in g.edges(data=True) if d["tier"] == "nvlink"]
    assert len(nvlinks) == 8
    assert all(d["capacity_Bps"] == pytest.approx(450e9) for d in nvlinks)    # 900 GB/s bidirectional
    # each GPU paired with its own NIC over PCIe
    for local in range(8):
        assert g.has_edge(("gpu", 0, local), ("nic", 0, local))


def test_pcie_server_has_no_nvlink_and_shares_nics():
    l40s = node_spec("l40s-8")
    g = T.dgx_node(l40s)
    tiers = {d["tier"] for _, _, d in g.edges(data=True)}
    assert "nvlink" not in tiers
    # every GPU pair talks over PCIe (tensor parallelism crosses PCIe on an 8x L40S box)
    path = nx.shortest_path(g, ("gpu", 0, 0), ("gpu", 0, 7))
    assert all(g[u][v]["tier"] == "pcie" for u, v in zip(path, path[1:]))
    # the instance's one NIC sits behind the same PCIe switch as its eight GPUs
    assert nx.shortest_path(g, ("gpu", 0, 3), ("nic", 0, 0))[1][0] == "pcie"


def test_four_superchip_node_joins_every_pair_of_gpus_directly():
    """JUPITER's booster node: 18 NVLink4 links per GH200, six to each of the three others, 150 GB/s per
    direction a pair; no NVSwitch; each superchip on its own NIC."""
    node = node_spec("gh200-4")
    g = T.dgx_node(node)
    assert not [v for v, k in g.nodes(data="kind") if k == "nvswitch"]
    nvlinks = [(u, v, d) for u, v, d in g.edges(data=True) if d["tier"] == "nvlink"]
    assert len(nvlinks) == 6                       # 4 choose 2
    assert all(d["capacity_Bps"] == pytest.approx(150e9) for _, _, d in nvlinks)
    assert all(u[0] == v[0] == "gpu" for u, v, _ in nvlinks)
    for local in range(4):
        assert g.has_edge(("gpu", 0, local), ("nic", 0, local))


def _max_flow_between_halves(g: nx.Graph, nodes: int) -> float:
    """Max flow from the NICs of the first half of nodes to those of the second (switch fabric only)."""
    d = nx.DiGraph()
    for u, v, data in g.edges(data=True):
        if data["tier"] in ("nic", "leaf-spine", "spine-core"):
            d.add_edge(u, v, capacity=data["capacity_Bps"])
            d.add_edge(v, u, capacity=data["capacity_Bps"])
    for n in range(nodes):
        for w in g.nodes:
            if w[0] == "nic" and w[1] == n:
                if n < nodes // 2:
                    d.add_edge("S", w, capacity=float("inf"))
                else:
                    d.add_edge(w, "T", capacity=float("inf"))
    return nx.maximum_flow_value(d, "S", "T")


def test_full_bisection_fat_tree_bisection_is_half_the_injection():
    g = T.fat_tree(H100, 16, nodes_per_pod=8)
    assert T.bisection_Bps(g) == pytest.approx(T.injection_Bps(g) / 2)
    assert T.injection_Bps(g) == pytest.approx(16 * 8 * NDR_Bps)
    # independent check: a max-flow between the two halves of the nodes
    assert _max_flow_between_halves(g, 16) == pytest.approx(T.bisection_Bps(g))


def test_superpod_bisection_is_half_the_injection():
    g = T.rail_optimized_fat_tree(H100, 127)
    assert T.bisection_Bps(g) == pytest.approx(T.injection_Bps(g) / 2)


@pytest.mark.parametrize("k", [2, 4, 7])
def test_oversubscription_divides_cross_tier_bandwidth(k):
    full = T.fat_tree(H100, 64, nodes_per_pod=8)
    over = T.fat_tree(H100, 64, nodes_per_pod=8, oversubscription=k)
    assert T.tier_capacity_Bps(over, "spine-core") == pytest.approx(T.tier_capacity_Bps(full, "spine-core") / k)
    assert T.tier_capacity_Bps(over, "leaf-spine") == pytest.approx(T.tier_capacity_Bps(full, "leaf-spine"))
    assert T.bisection_Bps(over) == pytest.approx(T.bisection_Bps(full) / k)
    assert _max_flow_between_halves(over, 64) == pytest.approx(T.bisection_Bps(over))
    rail_full = T.rail_optimized_fat_tree(H100, 63)
    rail_over = T.rail_optimized_fat_tree(H100, 63, oversubscription=k)
    assert T.tier_capacity_Bps(rail_over, "leaf-spine") == pytest.approx(
        T.tier_capacity_Bps(rail_full, "leaf-spine") / k)


def test_large_clos_has_three_tiers():
    g = T.fat_tree(H100, 2048)                    # 16,384 GPUs
    c = T.counts(g)
    assert c["gpu"] == 16384
    assert c["core"] > 0 and c["spine"] > 0
    assert c["cables_nic"] == c["cables_leaf-spine"] == c["cables_spine-core"] == 16384   # non-blocking
    assert T.bisection_Bps(g) == pytest.approx(T.injection_Bps(g) / 2)


@pytest.mark.parametrize("nodes", [1, 64])
def test_leaves_with_more_spines_than_up_ports_cable_a_stripe(nodes):
    """A DGX GH200 has 256 rails, so an SU has 256 leaves of 32 up-ports, more than the spines a leaf could
    reach one cable each (128 in two tiers, 256 a pod in three): each leaf cables 32 distinct spines, every
    spine takes as many leaves, and the cables counted are the leaves' up-ports, not a fraction of a cable to
    every spine counted as whole ones."""
    g = T.rail_optimized_fat_tree(node_spec("dgx-gh200"), nodes)
    c = T.counts(g)
    up_ports = 32                                 # 32 nodes an SU down, as many up (no oversubscription)
    assert c["cables_leaf-spine"] == c["leaf"] * up_ports
    spines = {v for v, kind in g.nodes(data="kind") if kind == "spine"}
    for v, kind in g.nodes(data="kind"):
        if kind == "leaf":
            up = [g[v][w] for w in g[v] if w in spines]
            assert len(up) == up_ports and all(link["cables"] == 1 for link in up)
            assert sum(link["capacity_Bps"] for link in up) == pytest.approx(up_ports * NDR_Bps)
    down = {sum(1 for w in g[s] if w[0] == "leaf") for s in spines}
    assert len(down) == 1 and down.pop() * len(spines) == c["cables_leaf-spine"]
    for v, kind in g.nodes(data="kind"):
        if kind in ("leaf", "spine"):
            assert sum(g[v][w]["cables"] for w in g[v]) <= T.SWITCH_RADIX


def test_single_switch_and_storage_fabric():
    g = T.single_switch(H100, 4, storage_write_Bps=100e9)
    c = T.counts(g)
    assert c["leaf"] == 1 and c.get("spine", 0) == 0
    assert c["sleaf"] == 1 and c["storage"] == 1
    assert c["cables_storage"] == 4 * H100.storage_nics.count
    assert g[("sleaf", 0)][("storage",)]["capacity_Bps"] == pytest.approx(100e9)


def test_degrade_removes_links_and_switches_from_a_copy():
    g = T.rail_optimized_fat_tree(H100, 31)
    h = T.degrade(g, links=[(("nic", 0, 0), ("leaf", 0))], switches=[("spine", 0)])
    assert T.counts(h)["spine"] == 3 and T.counts(g)["spine"] == 4
    assert not h.has_edge(("nic", 0, 0), ("leaf", 0)) and g.has_edge(("nic", 0, 0), ("leaf", 0))
    assert T.tier_capacity_Bps(h, "leaf-spine") == pytest.approx(0.75 * T.tier_capacity_Bps(g, "leaf-spine"))


@pytest.mark.parametrize("build", [lambda n: T.rail_optimized_fat_tree(n, 40, storage_write_Bps=100e9),
                                   lambda n: T.fat_tree(n, 70, nodes_per_pod=32), lambda n: T.single_switch(n, 3)])
def test_node_types_of_one_shape_build_one_graph(build):
    """The fabric cache shares one graph between node types of one shape (``node_shape``): theirs are the same."""
    by_shape: dict[tuple, list[str]] = {}
    for name in catalog_names("nodes"):
        by_shape.setdefault(T.node_shape(node_spec(name)), []).append(name)
    alike = [names for names in by_shape.values() if len(names) > 1]
    assert ["dgx-h100", "dgx-h200"] in alike
    for names in alike:
        first, *others = [build(node_spec(name)) for name in names]
        for g in others:
            assert g.graph == first.graph
            assert list(g.nodes(data=True)) == list(first.nodes(data=True))
            assert list(g.edges(data=True)) == list(first.edges(data=True))


@pytest.mark.parametrize("name", ["dgx-h100", "l40s-8", "gh200-1", "h100-pcie-2"])
def test_servers_copied_at_once_build_the_graph_networkx_would(name):
    """``add_nodes`` copies one server into the graph's adjacency: the same vertices, attributes, links and
    order of every neighbour as adding each server through networkx's methods (``add_node``), link data
    shared by both ends and copied per link, and a server added twice refused."""
    node = node_spec(name)
    fast, slow = T.graph(), T.graph()
    T.add_nodes(fast, node, range(3, 9), per_su=4)
    for index in range(3, 9):
        T.add_node(slow, node, index, index // 4)
    assert list(fast.nodes(data=True)) == list(slow.nodes(data=True))
    assert [(u, list(around.items())) for u, around in fast.adjacency()] == \
        [(u, list(around.items())) for u, around in slow.adjacency()]
    u, v = next(iter(fast.edges()))
    assert fast[u][v] is fast[v][u]
    fast[u][v]["capacity_Bps"] = 0.0
    assert all(data["capacity_Bps"] > 0 for a, b, data in fast.edges(data=True) if (a, b) != (u, v))
    with pytest.raises(ValueError, match="linked already|in the graph already"):
        T.add_nodes(fast, node, range(8, 9), per_su=4)


# ---------------------------------------------------------------------------
# Placement


def _plan(t, p, d, ep=1) -> ParallelPlan:
    return ParallelPlan(tensor=t, pipeline=p, data=d, expert=ep, microbatch=1, virtual_stages=1, schedule="1f1b",
                        sequence_parallel=True, recompute="selective", zero=1, overlap_grad_reduce=True,
                        overlap_param_gather=True, global_batch=d * 8, seq_len=2048)


def test_megatron_order_keeps_tensor_groups_in_a_node():
    pl = place(_plan(8, 4, 4), 8)
    tp = pl.members("tensor")
    assert tp.shape == (16, 8)
    assert (tp // 8 == tp[:, :1] // 8).all()                      # each TP group on one node
    assert pl.tensor.ranks_per_node == 8
    dp = pl.members("data")
    assert (np.diff(dp, axis=1) == 8).all()                       # DP neighbours one node apart
    assert pl.data.ranks_per_node == 1 and pl.data.nodes == 4
    pp = pl.members("pipeline")
    assert (np.diff(pp, axis=1) == 32).all()                      # stages tensor·data ranks apart
    assert pl.pipeline.nodes > 1
    # every rank in exactly one group of each kind
    for kind in ("tensor", "data", "pipeline"):
        assert sorted(pl.members(kind).ravel().tolist()) == list(range(128))


def test_another_order_spreads_tensor_groups_over_nodes():
    pl = place(_plan(8, 1, 16), 8, order="dp-tp-pp")
    assert pl.tensor.ranks_per_node == 1 and pl.tensor.nodes == 8
    assert pl.data.ranks_per_node == 8


def test_expert_groups_are_carved_out_of_data_neighbours():
    pl = place(_plan(2, 1, 8, ep=4), 8)
    ep = pl.members("expert")
    edp = pl.members("expert_data")
    assert ep.shape == (4, 4) and edp.shape == (8, 2)
    assert (np.diff(ep, axis=1) == 2).all()                       # data neighbours, tensor stride apart
    assert (np.diff(edp, axis=1) == 8).all()                      # same expert rank, next block


def test_pipeline_inside_a_node_does_not_cross_nodes():
    assert place(_plan(2, 4, 1), 8).pipeline.nodes == 1
