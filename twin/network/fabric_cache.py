"""The fabrics a process keeps: each cluster's topology graph and its compiled ``Fabric``, built once and shared.

A plan search or a fit prices many plans on one cluster, and clusters of node types built alike
(``topology.node_shape``) share one graph and its compiled links. Node types wired alike but for their NVLinks'
rate and NVSwitch chips (``topology.node_wiring``: DGX H100, H200 and B200) share the compiled links and routes,
rerated (``Fabric.rerated``), without a graph of their own. A 16,384-GPU graph holds about 40,000
vertices, so only a few are kept. Phases that stay inside one node are routed on a fabric of that node alone
(``node_fabric``), so that pricing a tensor-parallel group never builds the whole cluster's.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING

from twin import collector
from twin.calibration import Efficiency
from twin.hardware import topology
from twin.hardware.specs import ClusterSpec
from twin.network.fabric import Fabric
from twin.network.symmetry import cluster_node_kind

if TYPE_CHECKING:
    import networkx as nx


@dataclass(frozen=True)
class _Node:
    """A catalog node as its part of a fabric sees it: equal for node types of one shape
    (``topology.node_shape``), whose clusters of one size share a graph and its compiled links."""
    shape: tuple
    name: str = field(compare=False)      # the node type the graph is built from: any of the shape's


@lru_cache(maxsize=4)      # a 16,384-GPU graph holds ~40k vertices: keep a few
def _cached_graph(node: _Node, nodes: int, topology_name: str, link_Bps: float, nodes_per_su: int,
                  oversubscription: float, storage_write_Bps: float | None) -> nx.Graph:
    from twin.hardware.specs import node_spec

    with collector.paused():           # its vertices and links all live on (twin/collector.py)
        return topology.build(node_spec(node.name), nodes, topology_name, link_Bps, nodes_per_su, oversubscription,
                              storage_write_Bps)


def _graph_key(cluster: ClusterSpec) -> tuple:
    """What the topology graph of a cluster depends on."""
    f = cluster.fabric
    return (_Node(topology.node_shape(cluster.node), cluster.node.name), cluster.nodes, f.topology, f.link_Bps,
            f.nodes_per_su, f.oversubscription, cluster.storage.write_Bps)


def cluster_graph(cluster: ClusterSpec) -> nx.Graph:
    """The topology a cluster spec describes (built once per distinct cluster; do not mutate it)."""
    return _cached_graph(*_graph_key(cluster))


# The fabrics compiled, by what their graph's vertices and links follow (the node's ``topology.node_wiring``, the
# rest of the graph's key) and their efficiencies: one is rerated for a node type wired alike but for its NVLinks'
# rate instead of building that type's graph (``Fabric.rerated``). Held weakly: the fabrics ``_compiled`` keeps.
_WIRED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


@lru_cache(maxsize=4)
def _compiled(graph_key: tuple, efficiency: Efficiency) -> Fabric:
    """The compiled links and routes of a graph, shared by the node types built alike; for node types wired
    alike but for their NVLinks' rate, one fabric's links and routes rerated (``Fabric.rerated``)."""
    from twin.hardware.specs import node_spec

    node = node_spec(graph_key[0].name)
    wiring = ((topology.node_wiring(node),) + graph_key[1:], efficiency)
    with collector.paused():           # its link tables all live on (twin/collector.py)
        wired = _WIRED.get(wiring)
        if wired is not None:
            return wired.rerated(node.gpu.nvlink_per_direction_Bps)
        fabric = _WIRED[wiring] = Fabric(_cached_graph(*graph_key), efficiency)
        return fabric


@lru_cache(maxsize=4)
def _cached_fabric(graph_key: tuple, node_kind: tuple, efficiency: Efficiency) -> Fabric:
    return _compiled(graph_key, efficiency).alike(node_kind)


def cluster_fabric(cluster: ClusterSpec, efficiency: Efficiency) -> Fabric:
    """The compiled fabric of a cluster at the link efficiencies ``efficiency`` names.

    Built once per distinct (cluster, efficiencies) and shared, with its routing tables and the collective rates
    memoised on it (``Fabric.memo``), by every ``CommModel`` of that cluster: a plan search prices many plans on
    one fabric. Clusters of node types built alike (``topology.node_shape``) share its graph, links and routes,
    each with its own memo. Do not mutate it.
    """
    return _cached_fabric(_graph_key(cluster), cluster_node_kind(cluster, efficiency), efficiency)


def node_fabric(cluster: ClusterSpec, efficiency: Efficiency) -> Fabric:
    """One node of ``cluster``'s kind as a fabric, built once per kind and kept apart from the clusters' own: where
    a phase that stays inside one node is routed (``network/symmetry.py``) without building the cluster's fabric."""
    one = replace(cluster, nodes=1, spare_nodes=0)
    return _node_fabric(_graph_key(one), cluster_node_kind(cluster, efficiency), efficiency)


@lru_cache(maxsize=16)      # a node's graph is small
def _node_fabric(graph_key: tuple, node_kind: tuple, efficiency: Efficiency) -> Fabric:
    with collector.paused():           # its graph built apart: ``_cached_graph``'s few places are the clusters'
        return Fabric(_cached_graph.__wrapped__(*graph_key), efficiency, node_kind)
