"""Placement: where the ranks of each parallel group land.

Rank ``r`` runs on GPU ``r`` (GPU ``r`` is local GPU ``r mod g`` of node
``r div g``, with ``g`` GPUs per node). Ranks are numbered from the tensor,
data and pipeline coordinates in an order the scenario may choose
(``training.parallelism.order``, first = fastest-varying). Megatron-LM's
default ``tp-dp-pp`` (its ``tp-cp-ep-dp-pp`` without context parallelism)
keeps a tensor group on consecutive GPUs of one node and puts pipeline
neighbours tensor·data ranks apart. Experts are carved out of neighbouring data
ranks: data coordinate ``d = e + expert·q`` (expert rank ``e``, expert-data rank ``q``).

Identical groups are described once by their shape (``GroupShape``); the rank
lists of every group are computed on demand (``Placement.members``) for the
fabric model, which places their traffic on the topology.

A job alone on a cluster runs on its first nodes. A job that shares the cluster
runs on the nodes its scheduler gave it (``Placement.nodes``): its ``k``-th node
of ranks is cluster node ``nodes[k]``, and ``members`` returns cluster GPU ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from twin.options import RANK_ORDERS, RankOrder
from twin.workload.plan import ParallelPlan

ORDERS = RANK_ORDERS
KINDS = ("tensor", "data", "pipeline", "expert", "expert_data")


@dataclass(frozen=True)
class GroupShape:
    ranks: int                 # group size n
    ranks_per_node: int        # members sharing one node (1 when every rank is on its own node)
    kind: str = ""             # the placement's group it describes ("tensor", "data", ...); "" = a bare shape

    @property
    def nodes(self) -> int:
        return -(-self.ranks // self.ranks_per_node)


@dataclass(frozen=True)
class Placement:
    tensor: GroupShape
    data: GroupShape
    expert: GroupShape
    expert_data: GroupShape        # data-parallel group of the expert weights (data / expert ranks)
    pipeline: GroupShape = GroupShape(1, 1, "pipeline")
    order: RankOrder = "tp-dp-pp"
    sizes: tuple[int, int, int, int] = (1, 1, 1, 1)      # tensor, data, pipeline, expert
    gpus_per_node: int = 8
    nodes: tuple[int, ...] = ()          # cluster node of each of the job's nodes, in rank order; () = the first

    @property
    def ranks(self) -> int:
        t, d, p, _ = self.sizes
        return t * d * p

    def rank_grid(self) -> np.ndarray:
        """Rank of every (tensor, data, pipeline) coordinate, shape (t, d, p)."""
        t, d, p, _ = self.sizes
        size = {"tp": t, "dp": d, "pp": p}
        stride, acc = {}, 1
        for dim in self.order.split("-"):
            stride[dim] = acc
            acc *= size[dim]
        ti, di, pi = np.indices((t, d, p))
        return ti * stride["tp"] + di * stride["dp"] + pi * stride["pp"]

    def members(self, kind: str) -> np.ndarray:
        """GPUs of every group of one kind, shape (groups, group size), in group-rank order.

        Rank ``r`` is GPU ``r``, or with ``nodes`` local GPU ``r mod g`` of cluster node ``nodes[r div g]``.
        """
        t, d, p, ep = self.sizes
        grid = self.rank_grid()
        if self.nodes:
            g = self.gpus_per_node
            grid = np.asarray(self.nodes, dtype=np.int64)[grid // g] * g + grid % g
        if kind == "tensor":
            return grid.transpose(1, 2, 0).reshape(-1, t)
        if kind == "data":
            return grid.transpose(0, 2, 1).reshape(-1, d)
        if kind == "pipeline":
            return grid.reshape(-1, p)
        q = d // ep
        split = grid.reshape(t, q, ep, p)          # d = e + ep·q  →  axes (t, q, e, p)
        if kind == "expert":
            return split.transpose(0, 1, 3, 2).reshape(-1, ep)
        if kind == "expert_data":
            return split.transpose(0, 2, 3, 1).reshape(-1, q)
        raise ValueError(f"unknown group kind {kind!r}; known: {', '.join(KINDS)}")


def _shape(members: np.ndarray, gpus_per_node: int, kind: str) -> GroupShape:
    """Size and members per node of the groups (the fullest node of the first group)."""
    n = members.shape[1]
    if n <= 1:
        return GroupShape(1, 1, kind)
    _, per_node = np.unique(members[0] // gpus_per_node, return_counts=True)
    return GroupShape(n, int(per_node.max()), kind)


def place(plan: ParallelPlan, gpus_per_node: int, order: str = "tp-dp-pp", nodes: tuple[int, ...] = ()) -> Placement:
    """Every group of the plan laid out on GPUs in rank ``order``, on ``nodes`` (default: the first nodes)."""
    if order not in ORDERS:
        raise ValueError(f"unknown rank order {order!r}; known: {', '.join(ORDERS)}")
    needed = -(-plan.gpus // gpus_per_node)
    if nodes and len(nodes) < needed:
        raise ValueError(f"{plan.gpus} ranks need {needed} nodes of {gpus_per_node} GPUs; {len(nodes)} given")
    sizes = (plan.tensor, plan.data, plan.pipeline, max(1, plan.expert))
    return _place(sizes, gpus_per_node, order, tuple(int(n) for n in nodes[:needed]))


@lru_cache(maxsize=1024)        # plans that differ only in batch, recompute or ZeRO share their placement
def _place(sizes: tuple[int, int, int, int], gpus_per_node: int, order: str, nodes: tuple[int, ...]) -> Placement:
    skeleton = Placement(GroupShape(1, 1), GroupShape(1, 1), GroupShape(1, 1), GroupShape(1, 1),
                         order=order, sizes=sizes, gpus_per_node=gpus_per_node)
    shapes = {kind: _shape(skeleton.members(kind), gpus_per_node, kind) for kind in KINDS}
    return Placement(shapes["tensor"], shapes["data"], shapes["expert"], shapes["expert_data"],
                     pipeline=shapes["pipeline"], order=order, sizes=sizes, gpus_per_node=gpus_per_node, nodes=nodes)
