"""Phases priced by symmetry: traffic that stays inside its nodes.

Nodes are built alike and traffic inside a node shares no link with other nodes, so a
phase whose every flow stays inside its node is priced on one node (``one_node``): the
groups of the first node see exactly what every node's groups see. Its rate and reach
then depend on that node's links alone, so they are the same on every fabric whose nodes
are alike (``Fabric.node_kind``: built from one catalog node at one set of efficiencies):
``NODE_RATES`` keeps them by the node's kind and the flows' local ends (``node_key``), and
a fit prices the tensor groups of a node type once for every cluster size.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from twin.network import algorithms as alg

if TYPE_CHECKING:
    from twin.calibration import Efficiency
    from twin.hardware.specs import ClusterSpec

# (rate, reach) of phases inside one node, by ``node_key`` (``CommModel._route_and_share``).
NODE_RATES: dict[tuple, tuple[float, str]] = {}
# Phases, rates and candidates of groups that each lie inside one node, by a key that holds ``inside_key``
# (``CommModel._memo``): the same on every fabric of one node kind, whatever its size.
INSIDE: dict[tuple, object] = {}


def one_node(phase: alg.Phase, gpus_per_node: int) -> alg.Phase:
    """The phase on the node of its first flow when every flow stays inside its node; else ``phase`` itself."""
    src_node = np.where(phase.src >= 0, phase.src, phase.dst) // gpus_per_node
    dst_node = np.where(phase.dst >= 0, phase.dst, phase.src) // gpus_per_node
    if len(src_node) == 0 or (src_node != dst_node).any():
        return phase
    keep = src_node == src_node[0]
    coflows, index = np.unique(phase.coflow[keep], return_inverse=True)
    return alg.Phase(index, phase.src[keep], phase.dst[keep], phase.weight[keep], phase.volume, phase.hops,
                     len(coflows), phase.intra_scale)


def cluster_node_kind(cluster: ClusterSpec, efficiency: Efficiency) -> tuple:
    """``Fabric.node_kind`` of the fabric ``cluster_fabric`` builds for ``cluster`` at ``efficiency``, known without
    building it: the catalog node and the efficiencies."""
    return cluster.node.name, efficiency


def node_key(inside: alg.Phase, gpus_per_node: int, node_kind: tuple | None) -> tuple | None:
    """What the rate of a phase on one node (``one_node``) depends on: the kind of node (None: a fabric whose
    nodes may differ, no key), its coflows, the load on the node's links, and each flow's local ends (-1: the
    node's NVSwitch)."""
    if node_kind is None:
        return None
    src = np.where(inside.src >= 0, inside.src % gpus_per_node, -1)
    dst = np.where(inside.dst >= 0, inside.dst % gpus_per_node, -1)
    return (node_kind, inside.coflows, inside.intra_scale, inside.coflow.tobytes(), src.tobytes(), dst.tobytes(),
            inside.weight.tobytes())


def inside_key(members: np.ndarray, gpus_per_node: int, node_kind: tuple | None) -> tuple | None:
    """What collectives over groups (``members``: one row each) that each lie inside one node depend on: the kind of
    node and the local ranks of the groups on the first group's node, in order. Every phase over such groups stays
    inside nodes, so its rate and reach are those of that node's flows alone (``one_node``), and its volume and hops
    those of a group inside a node of its size. None when a group spans nodes, or the fabric's nodes may differ."""
    if node_kind is None:
        return None
    nodes = members // gpus_per_node
    if not (nodes == nodes[:, :1]).all():
        return None
    first = members[nodes[:, 0] == nodes[0, 0]] % gpus_per_node
    return ("inside", node_kind, first.shape, first.tobytes())
