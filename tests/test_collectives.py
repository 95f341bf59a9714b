"""Collectives on the fabric: published NCCL bus bandwidths, latency floor, sharing invariants."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from tests.conftest import BASE
from twin.api import build, run_dict
from twin.calibration import Efficiency
from twin.figures.fabric import fabric_figure
from twin.hardware import topology as T
from twin.api.specs import cluster_of as cluster_spec
from twin.network.collectives import CommModel
from twin.network.describe import describe
from twin.network.flows import max_min_rates
from twin.scenario import Cluster, parse_scenario
from twin.workload.placement import GroupShape

EFF = Efficiency.calibrated()
GIB4 = 4 * 2**30


def comm(node: str, nodes: int, placement=None, graph=None, efficiency=EFF, **fabric) -> CommModel:
    return CommModel(cluster_spec(Cluster(node=node, nodes=nodes, fabric=fabric)), efficiency, placement, graph)


# ---------------------------------------------------------------------------
# Published NCCL all-reduce bus bandwidths (nccl-tests, NVIDIA maintainers)


@pytest.mark.parametrize("node, nodes, ranks, per_node, algorithm, published_GBps", [
    ("dgx-a100-80gb", 1, 8, 8, None, 230),        # DGX A100 inside a node
    ("dgx-a100-80gb", 4, 32, 8, None, 192),       # 8x HDR 200G across nodes
    ("dgx-a100-80gb", 2, 2, 1, None, 24),         # one HDR NIC
    ("dgx-h100", 1, 8, 8, "ring", 370),           # DGX H100 ring
    ("dgx-h100", 1, 8, 8, None, 480),             # DGX H100 NVLS (the default for large messages)
    ("dgx-h100", 2, 2, 1, None, 47),              # one NDR NIC (46-48)
])
def test_large_all_reduce_bus_bandwidth_matches_nccl(node, nodes, ranks, per_node, algorithm, published_GBps):
    busbw = comm(node, nodes).busbw_Bps(GroupShape(ranks, per_node), "all_reduce", GIB4, algorithm) / 1e9
    assert busbw == pytest.approx(published_GBps, rel=0.10)


def test_gpus_on_pcie_reduce_at_the_pcie_efficiency_and_dgx_nics_keep_theirs():
    """An 8-GPU L40S box has no NVLink: its ring runs over PCIe Gen4 x16 (32 GB/s per direction) at the
    ``pcie`` efficiency (NCCL's 8-GPU PCIe figure, 0.44), about 14 GB/s; a DGX's GPU-to-NIC PCIe hop is not
    one of those links (one NDR NIC still reaches the network's rate)."""
    busbw = comm("l40s-8", 1).busbw_Bps(GroupShape(8, 8), "all_reduce", GIB4)
    assert busbw == pytest.approx(32e9 * EFF.pcie, rel=0.01)
    assert 12e9 < busbw < 16e9
    assert comm("dgx-h100", 2).busbw_Bps(GroupShape(2, 1)) == pytest.approx(400e9 / 8 * EFF.network, rel=0.01)
    faster = comm("l40s-8", 1, efficiency=Efficiency(**{**EFF.__dict__, "pcie": 0.8}))
    assert faster.busbw_Bps(GroupShape(8, 8), "all_reduce", GIB4) > busbw


def test_nccl_rings_on_a_four_gpu_mesh_use_every_link_and_a_pair_has_its_own_links_alone():
    """On the four-GH200 node every pair has its own 150 GB/s per direction. Two GPUs reduce over their
    pair's links only; four run NCCL's rings in several orders over all three of a GPU's pairs (a ring in
    one order would use one), so their bus bandwidth is three pairs' (no NVLS: there is no switch)."""
    mesh = comm("gh200-4", 1)
    pair = mesh.busbw_Bps(GroupShape(2, 2), "all_reduce", GIB4)
    four = mesh.busbw_Bps(GroupShape(4, 4), "all_reduce", GIB4)
    assert pair == pytest.approx(150e9 * EFF.nvlink, rel=0.01)
    assert four == pytest.approx(3 * pair, rel=0.01)
    assert mesh.algorithm(GIB4, GroupShape(4, 4)) == "ring"
    assert four == pytest.approx(comm("dgx-h100", 1).busbw_Bps(GroupShape(4, 4), "all_reduce", GIB4, "ring"), rel=0.01)


def test_nvls_only_where_the_switch_reduces():
    assert comm("dgx-h100", 1).algorithm(GIB4, GroupShape(8, 8)) == "nvls"
    assert comm("dgx-a100-80gb", 1).algorithm(GIB4, GroupShape(8, 8)) == "ring"
    with pytest.raises(ValueError):
        comm("dgx-a100-80gb", 1).all_reduce_s(GIB4, GroupShape(8, 8), algorithm="nvls")


def test_small_messages_hit_a_latency_floor_of_tens_of_microseconds():
    c = comm("dgx-h100", 2)
    across = c.all_reduce_s(8, GroupShape(16, 8))
    inside = c.all_reduce_s(8, GroupShape(8, 8))
    assert 10e-6 <= across <= 100e-6
    assert inside < across
    big = comm("dgx-h100", 16).all_reduce_s(8, GroupShape(128, 8))
    assert across < big <= 150e-6                  # logarithmic (tree), not 2(n-1) ring steps
    assert comm("dgx-h100", 16).algorithm(8, GroupShape(128, 8)) == "tree"


@pytest.mark.parametrize("node, nodes, ranks, per_node", [
    ("dgx-h100", 1, 8, 8), ("dgx-h100", 16, 128, 8), ("dgx-h100", 16, 16, 1), ("dgx-a100-80gb", 4, 32, 8),
    ("l40s-8", 2, 16, 8),
])
def test_a_scalar_all_reduce_is_a_four_byte_one_less_its_bytes_and_routes_nothing(node, nodes, ranks, per_node):
    """A gradient norm's all-reduce is priced at the least latency of the algorithms and protocols: a 4-byte
    all-reduce less its bytes' term (nanoseconds against tens of microseconds), found from the groups' layout
    without routing them (no fabric is built for it)."""
    group = GroupShape(ranks, per_node)
    scalar = comm(node, nodes)
    found = scalar.scalar_all_reduce_s(group)
    assert "fabric" not in scalar._cache
    routed = comm(node, nodes).all_reduce_s(4, group)
    assert found <= routed <= found * (1 + 1e-3)
    assert comm(node, nodes).scalar_all_reduce_s(GroupShape(1, 1)) == 0.0


def test_reduce_scatter_and_all_gather_are_half_an_all_reduce_at_large_sizes():
    c = comm("dgx-a100-80gb", 4)
    g = GroupShape(32, 8)
    ar = c.all_reduce_s(GIB4, g, algorithm="ring")
    assert c.reduce_scatter_s(GIB4, g) == pytest.approx(ar / 2, rel=0.01)
    assert c.all_gather_s(GIB4, g) == pytest.approx(c.reduce_scatter_s(GIB4, g))
    assert c.broadcast_s(GIB4, g) > 0 and c.all_to_all_s(GIB4, g) > 0


def test_pcie_instance_shares_its_one_nic_between_eight_gpus():
    # 8x L40S instance: one 20 Gb/s network for 8 GPUs. The eight one-GPU-per-node groups that
    # run at once share it: each gets an eighth.
    c = comm("l40s-8", 2)
    one_gpu_per_node = c.busbw_Bps(GroupShape(2, 1))
    assert one_gpu_per_node == pytest.approx(20e9 / 8 * EFF.network / 8, rel=0.01)


def test_send_recv_across_nodes_runs_at_the_nic_rate():
    c = comm("dgx-h100", 2)
    t = c.send_recv_s(1e9, GroupShape(2, 1))                      # neighbours on two nodes, same rail
    assert 1e9 / t == pytest.approx(NDR := 400e9 / 8 * EFF.network, rel=0.01), NDR
    assert c.send_recv_s(1e9, GroupShape(2, 2)) < t               # neighbours in one node


# ---------------------------------------------------------------------------
# Max-min fair sharing


def test_max_min_hand_computed():
    # links: 0 (capacity 2), 1 (capacity 1); A on link 0; B on links 0 and 1; C on link 1.
    co = np.array([0, 1, 1, 2])
    link = np.array([0, 0, 1, 1])
    load = np.ones(4)
    rates = max_min_rates(co, link, load, np.array([2.0, 1.0]), 3)
    assert rates == pytest.approx([1.5, 0.5, 0.5])
    alone = max_min_rates(np.array([0]), np.array([0]), np.array([4.0]), np.array([2.0]), 1)
    assert alone == pytest.approx([0.5])           # capacity / load


def test_an_extra_competing_flow_never_speeds_anyone_up():
    rng = np.random.default_rng(3)
    for _ in range(20):
        flows, links = 6, 4
        co = np.repeat(np.arange(flows), 2)
        link = rng.integers(0, links, size=2 * flows)
        load = rng.uniform(0.5, 2.0, size=2 * flows)
        cap = rng.uniform(1.0, 3.0, size=links)
        before = max_min_rates(co, link, load, cap, flows)
        extra_co = np.concatenate([co, [flows, flows]])
        extra_link = np.concatenate([link, rng.integers(0, links, size=2)])
        extra_load = np.concatenate([load, [1.0, 1.0]])
        after = max_min_rates(extra_co, extra_link, extra_load, cap, flows + 1)
        assert after[:flows].min() <= before.min() + 1e-12      # the slowest never gains
        assert (after[:flows] <= before * (1 + 1e-9) + 1e-12).sum() >= 1


def test_more_bandwidth_never_slows_a_collective():
    for node, nodes, g in (("dgx-a100-80gb", 4, GroupShape(32, 8)), ("dgx-h100", 2, GroupShape(2, 1)),
                           ("dgx-h100", 1, GroupShape(8, 8)), ("dgx-a100-80gb", 4, GroupShape(4, 1))):
        slow = comm(node, nodes, link="100 Gb/s")
        fast = comm(node, nodes)
        faster_nvlink = comm(node, nodes, efficiency=Efficiency(**{**EFF.__dict__, "nvlink": 1.0}))
        for size in (8.0, 1e6, GIB4):
            assert fast.all_reduce_s(size, g) <= slow.all_reduce_s(size, g)
            assert faster_nvlink.all_reduce_s(size, g) <= fast.all_reduce_s(size, g)
            assert fast.reduce_scatter_s(size, g) <= slow.reduce_scatter_s(size, g)


def test_all_groups_reducing_at_once_share_a_pcie_nic_but_not_a_rail():
    # Rail-optimised DGX: 8 DP groups (one per rail) at once run as fast as one alone.
    c = comm("dgx-h100", 4)
    assert c.members(GroupShape(4, 1)).shape == (8, 4)
    assert c.busbw_Bps(GroupShape(4, 1)) == pytest.approx(400e9 / 8 * EFF.network, rel=0.01)


# ---------------------------------------------------------------------------
# Whole scenarios: oversubscription, placement, degraded fabric


def _scenario(nodes, t, p, d, oversubscription=1, order="tp-dp-pp", topology="fat-tree"):
    s = copy.deepcopy(BASE)
    s["cluster"] = {"node": "dgx-h100", "nodes": nodes,
                    "fabric": {"topology": topology, "nodes_per_su": 4, "oversubscription": oversubscription}}
    s["training"]["global_batch"] = 8 * d
    s["training"]["parallelism"] = {"tensor": t, "pipeline": p, "data": d, "zero": 0, "overlap_grad_reduce": False,
                                    "order": order}
    return s


def test_oversubscription_slows_a_data_parallel_plan_and_not_a_plan_inside_a_pod():
    dp_full = build(parse_scenario(_scenario(16, 8, 1, 16)))
    dp_over = build(parse_scenario(_scenario(16, 8, 1, 16, oversubscription=7)))
    assert dp_over.costs.dp_reduce_s > 1.5 * dp_full.costs.dp_reduce_s
    assert run_dict(_scenario(16, 8, 1, 16, oversubscription=7)).step_time_s > \
        run_dict(_scenario(16, 8, 1, 16)).step_time_s
    # TP 8 x PP 4 on the 4 nodes of the first pod: nothing leaves the pod.
    pod_full = run_dict(_scenario(16, 8, 4, 1))
    pod_over = run_dict(_scenario(16, 8, 4, 1, oversubscription=7))
    assert pod_over.step_time_s == pytest.approx(pod_full.step_time_s, rel=1e-9)
    assert pod_full.fabric.groups["pipeline"].reach == "leaf"


def test_result_reports_where_groups_land():
    r = run_dict(_scenario(16, 8, 2, 8, topology="rail-optimized-fat-tree"))
    f = r.fabric
    assert f.gpus == 128 and f.scalable_units == 5      # 16 nodes + UFM in SUs of 4 slots
    assert f.leaves == 5 * 8 and f.spines == 4
    assert f.bisection_Bps == pytest.approx(f.injection_Bps / 2)
    assert f.groups["tensor"].reach == "node" and not f.groups["tensor"].crosses_nodes
    # DP over 8 consecutive nodes on one rail, two SUs: through the spines
    assert f.groups["data"].crosses_nodes
    assert f.groups["data"].reach == "spine"
    assert "tensor" in describe(f) and "bisection" in describe(f)
    fig = fabric_figure(r.to_dict()["fabric"])
    assert len(fig.data) >= 4 and "spines" in fig.layout.title.text


def test_rank_order_moves_tensor_traffic_onto_the_network():
    megatron = build(parse_scenario(_scenario(2, 8, 1, 2, topology="rail-optimized-fat-tree")))
    spread = build(parse_scenario(_scenario(2, 8, 1, 2, order="dp-tp-pp", topology="rail-optimized-fat-tree")))
    assert megatron.placement.tensor.ranks_per_node == 8
    assert spread.placement.tensor.ranks_per_node == 4
    tp_bytes = 4096 * 4096 * 2
    assert spread.comm.all_reduce_s(tp_bytes, spread.placement.tensor) > \
        2 * megatron.comm.all_reduce_s(tp_bytes, megatron.placement.tensor)


def test_a_lost_spine_slows_traffic_through_the_spines_only():
    # TP 8 x DP 4 x PP 2 on 8 nodes in SUs of 4: data groups stay on their SU's rail leaves,
    # the pipeline crosses from SU0 to SU1 through the spines, 4 flows per leaf on 4 up-links.
    built = build(parse_scenario(_scenario(8, 8, 2, 4, topology="rail-optimized-fat-tree")))
    g = built.comm.fabric.graph
    spines = [v for v, k in g.nodes(data="kind") if k == "spine"]
    assert len(spines) == 2
    degraded = CommModel(built.cluster, built.efficiency, built.placement, T.degrade(g, switches=spines[:1]))
    pl = built.placement
    assert degraded.send_recv_s(1e9, pl.pipeline) == pytest.approx(2 * built.comm.send_recv_s(1e9, pl.pipeline),
                                                                   rel=0.01)
    assert degraded.reduce_scatter_s(1e9, pl.data) == pytest.approx(built.comm.reduce_scatter_s(1e9, pl.data))
    assert degraded.all_reduce_s(1e8, pl.tensor) == pytest.approx(built.comm.all_reduce_s(1e8, pl.tensor))
    cut_off = CommModel(built.cluster, built.efficiency, built.placement, T.degrade(g, switches=spines))
    with pytest.raises(ValueError, match="disconnected"):
        cut_off.send_recv_s(1e9, pl.pipeline)


def test_a_lost_nic_cable_moves_its_gpu_to_a_neighbour_rail():
    c = comm("dgx-h100", 2)
    g = c.fabric.graph
    lost = CommModel(c.cluster, EFF, None, T.degrade(g, links=[(("nic", 0, 0), ("leaf", 0))]))
    shape = GroupShape(2, 1)
    assert lost.busbw_Bps(shape) == pytest.approx(c.busbw_Bps(shape) / 2, rel=0.01)   # two GPUs share NIC 1


def test_checkpoint_writes_share_the_storage_system():
    c = comm("dgx-h100", 4)
    nic_bound = c.storage_write_s(1e9)
    assert 1e9 / nic_bound == pytest.approx(2 * 400e9 / 8, rel=0.01)        # two storage NICs per node
    slow = CommModel(cluster_spec(Cluster(node="dgx-h100", nodes=4, storage={"read": "40 GB/s", "write": "20 GB/s"})),
                     EFF)
    assert slow.storage_write_s(1e9) == pytest.approx(4 * 1e9 / 20e9, rel=0.01)          # 4 nodes share 20 GB/s
    assert slow.storage_write_s(1e9, nodes=1) < slow.storage_write_s(1e9)


def test_vectorised_routes_equal_flow_by_flow_routes_on_a_degraded_fabric():
    c = comm("dgx-h100", 40, nodes_per_su=8)
    g = T.degrade(c.fabric.graph, links=[(("nic", 3, 2), ("leaf", 2))], switches=[("spine", 1)])
    fab = CommModel(c.cluster, EFF, None, g).fabric
    rng = np.random.default_rng(7)
    src = rng.integers(0, 320, size=200)
    dst = rng.integers(0, 320, size=200)
    src[:10], dst[10:20] = -1, -1                  # NVSwitch ends
    dst[:10] = src[10:20] = np.arange(10) * 8
    keep = src != dst
    src, dst = src[keep], dst[keep]
    flow, res = fab.route_many(src, dst)
    for i, (s, d) in enumerate(zip(src.tolist(), dst.tolist())):
        a = fab.gpu(s) if s >= 0 else ("nvswitch", d // 8)
        b = fab.gpu(d) if d >= 0 else ("nvswitch", s // 8)
        assert sorted(res[flow == i].tolist()) == sorted(fab.route(a, b))


def test_topology_command_prints_the_fabric_and_the_groups():
    from tests.conftest import ROOT, cli

    code, stdout, err, _ = cli("topology", str(ROOT / "scenarios" / "superpod.yaml"))
    assert code == 0, err
    assert "32 leaves, 16 spines" in stdout and "1,024" in stdout      # the RA's 4-SU fabric
    for kind in ("tensor", "data", "pipeline"):
        assert kind in stdout


def test_hierarchical_all_reduce_matches_its_hand_computed_phases():
    # DGX A100, 4 nodes x 8 GPUs: reduce-scatter on NVLink (7/8 S at 240 GB/s), 8 rail all-reduces of S/8
    # across 4 nodes (2·3/4 · S/8 at 23.75 GB/s), all-gather on NVLink.
    c = comm("dgx-a100-80gb", 4)
    nvlink, nic = 300e9 * EFF.nvlink, 25e9 * EFF.network
    seconds_per_byte = 2 * (7 / 8) / nvlink + 2 * (3 / 4) / 8 / nic
    expected = 2 * 31 / 32 / seconds_per_byte
    assert c.busbw_Bps(GroupShape(32, 8), algorithm="hierarchical") == pytest.approx(expected, rel=0.01)
    assert c.algorithm(GIB4, GroupShape(32, 8)) == "ring"          # the multi-rail ring beats it here


def test_plans_priced_on_the_shared_fabric_equal_plans_priced_on_a_fresh_one():
    """The cluster's fabric and its memoised rates are shared by every plan; sharing changes no number."""
    from twin.network.fabric_cache import cluster_fabric, cluster_graph
    from twin.workload.placement import place
    from twin.workload.plan import ParallelPlan

    cluster = cluster_spec(Cluster(node="dgx-h100", nodes=8, fabric={"topology": "fat-tree", "nodes_per_su": 4,
                                                                     "oversubscription": 2}))
    sizes = (2**20, 3 * 2**27)
    for t, p, d, order in [(8, 2, 4, "tp-dp-pp"), (4, 4, 4, "tp-pp-dp"), (8, 2, 4, "dp-tp-pp"), (2, 1, 32, "tp-dp-pp")]:
        plan = ParallelPlan(t, p, d, 1, 1, 1, "1f1b", t > 1, "selective", 1, True, True, 64 * d, 4096)
        placement = place(plan, 8, order)
        shared = CommModel(cluster, EFF, placement)
        fresh = CommModel(cluster, EFF, placement, graph=cluster_graph(cluster))
        assert shared.fabric is cluster_fabric(cluster, EFF) and fresh.fabric is not shared.fabric
        _assert_priced_alike(shared, fresh, sizes)


def _assert_priced_alike(shared: CommModel, fresh: CommModel, sizes: tuple[int, ...]) -> None:
    """Every collective of the placement's groups at ``sizes`` bytes, and the fabric's record, equal on both."""
    for size in sizes:
        for kind in ("tensor", "data", "pipeline"):
            shape = getattr(shared.placement, kind)
            assert shared.all_reduce_s(size, shape) == fresh.all_reduce_s(size, shape)
            assert shared.send_recv_s(size, shape) == fresh.send_recv_s(size, shape)
            assert shared.all_gather_s(size, shape) == fresh.all_gather_s(size, shape)
    assert shared.summary() == fresh.summary()


def test_a_fabric_rerated_for_a_node_type_wired_alike_prices_as_one_built_from_its_own_graph():
    """DGX H100 and B200 are wired alike but for their NVLinks' rate and NVSwitch chips: the cache rerates the
    H100 cluster's compiled fabric for the B200 one (``Fabric.rerated``) instead of building the B200's graph, and
    every capacity, every collective and the fabric's record are those of the B200's own graph."""
    from twin.network.fabric import Fabric
    from twin.network.fabric_cache import cluster_fabric, cluster_graph
    from twin.workload.placement import place
    from twin.workload.plan import ParallelPlan

    h100, b200 = (cluster_spec(Cluster(node=node, nodes=6, fabric={"nodes_per_su": 3})) for node in ("dgx-h100",
                                                                                                      "dgx-b200"))
    donor = cluster_fabric(h100, EFF)
    rerated = cluster_fabric(b200, EFF)
    assert rerated.graph is donor.graph                 # the B200's own graph was not built for it
    own = Fabric(cluster_graph(b200), EFF)
    assert np.array_equal(rerated.capacity_Bps, own.capacity_Bps)
    assert not np.array_equal(rerated.capacity_Bps, donor.capacity_Bps)
    for t, p, d, order in [(8, 2, 3, "tp-dp-pp"), (4, 2, 6, "dp-tp-pp"), (1, 1, 48, "tp-dp-pp")]:
        placement = place(ParallelPlan(t, p, d, 1, 1, 1, "1f1b", t > 1, "selective", 1, True, True, 64 * d, 4096),
                          6, order)
        shared = CommModel(b200, EFF, placement)
        fresh = CommModel(b200, EFF, placement, graph=cluster_graph(b200))
        assert shared.fabric.graph is donor.graph and fresh.fabric.graph is not donor.graph
        _assert_priced_alike(shared, fresh, (2**16, 2**20, 3 * 2**27))
        assert shared.summary().nvswitch_chips == 6 * 2


def test_a_fabric_with_scaled_pools_prices_its_own_rates():
    """Rates memoised on a fabric are not reused by a copy whose switch pools have less capacity."""
    from twin.network.fabric_cache import cluster_fabric

    cluster = cluster_spec(Cluster(node="dgx-h100", nodes=8, fabric={"topology": "fat-tree", "nodes_per_su": 2,
                                                                     "oversubscription": 4}))
    shape = GroupShape(8, 1)                         # one GPU per node: every ring step crosses the spines
    base = CommModel(cluster, EFF).all_reduce_s(GIB4, shape)
    quarter = CommModel.on_fabric(cluster_fabric(cluster, EFF).scaled_pools(0.25), cluster, EFF)
    assert quarter.all_reduce_s(GIB4, shape) > 3 * base
    assert CommModel(cluster, EFF).all_reduce_s(GIB4, shape) == base


# ---------------------------------------------------------------------------
# NCCL's protocols (src/graph/tuning.cc): LL, LL128 and Simple, chosen by size


def _protocol(c: CommModel, op: str, size: float, group: GroupShape) -> str:
    """The protocol of the fastest candidate at ``size`` (the model keeps only the time and algorithm)."""
    best = min(((sum(lat + vol * size / bw for lat, vol, bw in phases), i)
                for i, (_, phases) in enumerate(c._candidates(op, group, "ring"))))
    return c.protocols[best[1]]


def test_protocol_follows_message_size_ll_then_ll128_then_simple():
    c, g = comm("dgx-a100-80gb", 4), GroupShape(32, 8)
    assert c.protocols == ("simple", "ll128", "ll")
    assert [_protocol(c, "all_gather", s, g) for s in (4e3, 4e6, 4e9)] == ["ll", "ll128", "simple"]


def test_ll128_can_be_switched_off_and_only_runs_inside_nvlink_nodes():
    g = GroupShape(32, 8)
    on, off = comm("dgx-a100-80gb", 4), comm("dgx-a100-80gb", 4, ll128=False)
    assert off.protocols == ("simple", "ll")
    assert off.all_gather_s(4e6, g) > on.all_gather_s(4e6, g)             # LL128's middle sizes cost more
    assert off.all_gather_s(4e9, g) == pytest.approx(on.all_gather_s(4e9, g))
    assert comm("l40s-8", 2).protocols == ("simple", "ll")


def test_ring_latency_is_nccl_tuning_model_by_hand():
    """All-reduce of 8 bytes over 32 ranks on 4 DGX A100 (AMD hosts), LL: 6.6 µs + 2(n - m) steps at
    max(0.6, 2) µs + 2(m - 1) network steps at 2.7 µs; the tree: 6.8 + 2·7·0.6 + 2·2·5.0 µs."""
    c, g = comm("dgx-a100-80gb", 4), GroupShape(32, 8)
    ring = 6.6e-6 + 2 * 28 * 2.0e-6 + 2 * 3 * 2.7e-6
    tree = 6.8e-6 + 2 * 7 * 0.6e-6 + 2 * 2 * 5.0e-6
    assert c.all_reduce_s(8, g, "ring") == pytest.approx(ring, rel=1e-3)
    assert c.all_reduce_s(8, g, "tree") == pytest.approx(tree, rel=1e-3)
    assert c.all_reduce_s(8, g) == pytest.approx(min(ring, tree), rel=1e-3)


def test_ll_bus_bandwidth_stops_at_nccl_ceiling_across_nodes():
    """LL moves half the bus bandwidth, at most 19 GB/s across more than two nodes of AMD hosts."""
    c, g = comm("dgx-a100-80gb", 4), GroupShape(32, 8)
    ll = [phases for (_, phases), p in zip(c._candidates("all_gather", g, "ring"), c.protocols) if p == "ll"][0]
    assert ll[0][2] == pytest.approx(19.0e9)


def test_ring_latency_grows_with_ranks_and_nodes():
    small = [comm("dgx-a100-80gb", m).all_gather_s(64e3, GroupShape(8 * m, 8)) for m in (2, 8, 32, 128)]
    assert all(a < b for a, b in zip(small, small[1:]))
    assert small[-1] > 20 * small[0]


# ---------------------------------------------------------------------------
# Symmetry: traffic inside a node is priced once per kind of node (network/symmetry.py)


def test_a_phase_inside_a_node_is_priced_once_for_every_cluster_size_of_that_node():
    from twin.network import algorithms as alg
    from twin.network import symmetry

    shape = GroupShape(8, 8)
    small, large = comm("dgx-h100", 2), comm("dgx-h100", 16)
    assert small.fabric.node_kind == large.fabric.node_kind == ("dgx-h100", EFF)
    members = alg.synthetic_members(shape, 8, 16 * 8)
    phase = alg.ring_phase(members, 8, 1.0, 1)
    inside = symmetry.one_node(phase, 8)
    assert inside.coflows == 1 and set(inside.src.tolist()) <= set(range(8))   # the first node's group alone
    key_small = symmetry.node_key(inside, 8, small.fabric.node_kind)
    assert key_small == symmetry.node_key(symmetry.one_node(alg.ring_phase(alg.synthetic_members(shape, 8, 16), 8,
                                                                           1.0, 1), 8), 8, large.fabric.node_kind)
    # the same rate on both fabrics, whichever priced it first; another kind of node does not share it
    assert small.busbw_Bps(shape, "reduce_scatter") == large.busbw_Bps(shape, "reduce_scatter")
    assert comm("dgx-a100-80gb", 2).fabric.node_kind != small.fabric.node_kind
    across = alg.ring_phase(alg.synthetic_members(GroupShape(16, 8), 8, 16), 8, 1.0, 1)
    assert symmetry.one_node(across, 8) is across                                # crosses nodes: kept whole


@pytest.mark.parametrize("node", ["dgx-h100", "dgx-a100-80gb", "l40s-8", "h100-pcie-2"])
def test_a_phase_inside_a_node_is_routed_alike_on_the_node_alone_and_on_its_cluster(node):
    """Phases that stay inside nodes are routed on a fabric of one node (``fabric_cache.node_fabric``), so that
    pricing tensor groups never builds the cluster's fabric: every algorithm's phases over every group size
    inside a node get the same rate and reach there as on a 4-node cluster of that node."""
    from twin.network import algorithms as alg
    from twin.network import symmetry
    from twin.network.fabric_cache import node_fabric

    model = comm(node, 4)
    gpn = model.cluster.node.gpus
    assert node_fabric(model.cluster, EFF).nodes == 1
    compared = 0
    for ranks in (g for g in (2, 4, 8) if g <= gpn):
        members = alg.synthetic_members(GroupShape(ranks, ranks), gpn, 4 * gpn)
        phases = [alg.ring_phase(members, gpn, 1.0, 1)] + [
            p for name in alg.ALL_REDUCE_ALGORITHMS if name != "nvls" or model.nvls_capable
            for p in alg.all_reduce_phases(name, members, gpn, 1.0) or ()]
        for phase in phases:
            inside = symmetry.one_node(phase, gpn)
            assert inside is not phase
            assert (model._routed_and_shared(inside, node_fabric(model.cluster, EFF))
                    == model._routed_and_shared(inside, model.fabric))
            compared += 1
    assert compared >= 2


def test_a_fabric_of_a_graph_given_shares_no_node_rate():
    """A graph passed in (a degraded or hand-made one) may hold nodes unlike the catalog's: no node kind, no key."""
    from twin.network import algorithms as alg
    from twin.network import symmetry

    cluster = cluster_spec(Cluster(node="dgx-h100", nodes=2))
    own = CommModel(cluster, EFF, None, graph=T.build(cluster.node, 2, cluster.fabric.topology,
                                                      cluster.fabric.link_Bps, cluster.fabric.nodes_per_su))
    assert own.fabric.node_kind is None
    inside = symmetry.one_node(alg.ring_phase(alg.synthetic_members(GroupShape(8, 8), 8, 16), 8, 1.0, 1), 8)
    assert symmetry.node_key(inside, 8, own.fabric.node_kind) is None


def test_the_collector_pause_restores_what_it_found():
    """Fabrics and fits pause the cyclic collector (twin/collector.py); after the block it is as it was."""
    import gc

    from twin import collector

    was = gc.isenabled()
    try:
        for state in (True, False):
            (gc.enable if state else gc.disable)()
            with collector.paused():
                assert not gc.isenabled()
            assert gc.isenabled() is state
        gc.enable()
        with pytest.raises(RuntimeError), collector.paused():
            raise RuntimeError("an error inside the block")
        assert gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
