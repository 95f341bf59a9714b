"""Jobs placed on given nodes and sharing the switch pools: placement mapping, pool shares, step times."""

from __future__ import annotations

import numpy as np
import pytest

from twin.api import build, parse_scenario
from twin.engine.iteration import simulate_iteration
from twin.engine.stage_costs import step_costs
from twin.engine.stragglers import PER_GPU_SPREAD
from twin.network.collectives import CommModel
from twin.network.fabric import Fabric
from twin.network.fabric_cache import cluster_graph
from twin.workload.placement import place

# Four scalable units of four nodes under 1:7 oversubscription: a leaf's up-links carry 4/7 of
# one node's rail, so any ring that leaves its SU is throttled by the spines.
SMALL_SUS = {"node": "dgx-h100", "nodes": 16, "fabric": {"nodes_per_su": 4, "oversubscription": 7}}


def _built(nodes: int = 4, cluster: dict | None = None):
    return build(parse_scenario({
        "cluster": cluster or SMALL_SUS,
        "training": {"model": "llama2-7b", "tokens": "1B", "seq_len": 4096, "global_batch": 8 * nodes * 4,
                     "parallelism": {"tensor": 1, "data": 8 * nodes, "zero": 0}}}))


def _step(b, fabric: Fabric, nodes: tuple[int, ...]) -> float:
    """The step of the built job with its nodes at ``nodes`` of the fabric."""
    placement = place(b.plan, 8, "tp-dp-pp", nodes)
    comm = CommModel.on_fabric(fabric, b.cluster, b.efficiency, placement)
    costs = step_costs(b.model, b.plan, b.ops, comm, placement, b.stack, straggler_spread=PER_GPU_SPREAD)
    return simulate_iteration(costs, b.plan).breakdown.step_s


def test_a_placement_on_given_nodes_maps_every_rank_to_those_nodes():
    b = _built()
    placement = place(b.plan, 8, "tp-dp-pp", (0, 5, 9, 14))
    data = placement.members("data")
    assert sorted(set((data // 8).ravel())) == [0, 5, 9, 14]
    assert sorted(data.ravel() % 8) == sorted(list(range(8)) * 4)
    # The shapes (sizes, members per node) do not depend on which nodes.
    assert placement.data == b.placement.data and placement.tensor == b.placement.tensor


def test_first_nodes_reproduce_the_single_job_placement_and_costs():
    b = _built()
    fabric = Fabric(cluster_graph(b.cluster), b.efficiency)
    assert _step(b, fabric, (0, 1, 2, 3)) == pytest.approx(simulate_iteration(b.costs, b.plan).breakdown.step_s,
                                                          rel=1e-12)


def test_scaled_pools_leave_links_inside_nodes_and_nics_alone():
    b = _built()
    fabric = Fabric(cluster_graph(b.cluster), b.efficiency)
    half = fabric.scaled_pools(0.5)
    pools = np.array(sorted(fabric.pool_owners()))
    assert np.allclose(half.capacity_Bps[pools], fabric.capacity_Bps[pools] / 2)
    others = np.setdiff1d(np.arange(len(fabric.capacity_Bps)), pools)
    assert np.array_equal(half.capacity_Bps[others], fabric.capacity_Bps[others])


def test_a_job_scattered_over_scalable_units_is_slower_than_packed_and_slower_still_when_sharing():
    """Acceptance: under 1:7 oversubscription, across SUs and sharing the core with another job."""
    b = _built()
    fabric = Fabric(cluster_graph(b.cluster), b.efficiency)
    packed = _step(b, fabric, (0, 1, 2, 3))
    scattered = _step(b, fabric, (0, 4, 8, 12))
    sharing = _step(b, fabric.scaled_pools(0.5), (0, 4, 8, 12))
    assert packed < scattered < sharing


def test_without_oversubscription_a_scattered_ring_is_as_fast_as_a_packed_one():
    b = _built(cluster={"node": "dgx-h100", "nodes": 16, "fabric": {"nodes_per_su": 4}})
    fabric = Fabric(cluster_graph(b.cluster), b.efficiency)
    assert _step(b, fabric, (0, 4, 8, 12)) == pytest.approx(_step(b, fabric, (0, 1, 2, 3)), rel=1e-9)
