"""Placement: where the ranks of each parallel group land, in Megatron's order.

Ranks are numbered with tensor parallelism fastest, then data (experts are
carved out of neighbouring data ranks), then pipeline: consecutive GPUs of a
node hold one tensor group, and pipeline neighbours are tensor·data ranks apart.
Identical groups are described once by their shape.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.workload.plan import ParallelPlan


@dataclass(frozen=True)
class GroupShape:
    ranks: int                 # group size n
    ranks_per_node: int        # members sharing one node (1 when every rank is on its own node)

    @property
    def nodes(self) -> int:
        return -(-self.ranks // self.ranks_per_node)


@dataclass(frozen=True)
class Placement:
    tensor: GroupShape
    data: GroupShape
    expert: GroupShape
    expert_data: GroupShape        # data-parallel group of the expert weights (data / expert ranks)
    pipeline_crosses_nodes: bool


def _stride_group(ranks: int, stride: int, gpus_per_node: int) -> GroupShape:
    """A group of ``ranks`` members ``stride`` ranks apart."""
    if ranks <= 1:
        return GroupShape(1, 1)
    per_node = max(1, min(ranks, gpus_per_node // stride)) if stride < gpus_per_node else 1
    return GroupShape(ranks, per_node)


def place(plan: ParallelPlan, gpus_per_node: int) -> Placement:
    t, d, ep = plan.tensor, plan.data, plan.expert
    return Placement(
        tensor=_stride_group(t, 1, gpus_per_node),
        data=_stride_group(d, t, gpus_per_node),
        expert=_stride_group(ep, t, gpus_per_node),
        expert_data=_stride_group(max(1, d // ep), t * ep, gpus_per_node),
        pipeline_crosses_nodes=plan.pipeline > 1 and t * d >= gpus_per_node,
    )
