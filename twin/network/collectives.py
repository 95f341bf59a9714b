"""Collective times for a group of GPUs, from bandwidth and latency.

Convention (NCCL's nccl-tests): for an all-reduce of S bytes over n ranks the
algorithm bandwidth is S / t and the bus bandwidth busbw = algbw · 2(n-1)/n;
reduce-scatter and all-gather move (n-1)/n · S per rank. A ring moves exactly
that volume through each rank's slowest link, so

    t_all_reduce = 2(n-1)/n · S / busbw + 2(n-1) · latency_per_step

A group is described by its shape: how many ranks, how many of them share a
node, and whether every GPU of a node talks at the same time (so NICs are
shared). Inside a node the bus bandwidth is the NVLink (or PCIe) per-direction
rate times the NVLink efficiency; across nodes it is the NIC bandwidth that
each member gets times the network efficiency, multiplied by the members per
node (NCCL rings use one NIC per local rank: 8 GPUs × 24 GB/s = 192 GB/s on
DGX A100 with HDR).
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.calibration import Efficiency
from twin.hardware.specs import ClusterSpec
from twin.workload.placement import GroupShape

# Per-step latencies of NCCL's Simple protocol (NCCL src/graph/tuning.cc base
# and hardware latencies, order of magnitude): a few µs per NVLink step, more
# per network hop.
NVLINK_STEP_LATENCY_S = 2e-6
NETWORK_STEP_LATENCY_S = 6e-6
COLLECTIVE_BASE_LATENCY_S = 7e-6


@dataclass(frozen=True)
class CommModel:
    cluster: ClusterSpec
    efficiency: Efficiency

    # -- bandwidths ----------------------------------------------------------------
    @property
    def intra_node_busbw_Bps(self) -> float:
        return self.cluster.node.intra_node_Bps * self.efficiency.nvlink

    @property
    def nic_share_per_gpu_Bps(self) -> float:
        """Compute-fabric bandwidth each GPU gets when every GPU of its node sends at once."""
        node = self.cluster.node
        per_nic = min(node.compute_nics.line_rate_Bps, self.cluster.fabric.link_Bps)
        return node.compute_nics.count * per_nic / node.gpus * self.efficiency.network

    def cross_tier_factor(self, group: GroupShape) -> float:
        """Oversubscription slows groups that leave a scalable unit (pod)."""
        if group.nodes > self.cluster.fabric.nodes_per_su:
            return 1.0 / self.cluster.fabric.oversubscription
        return 1.0

    def busbw_Bps(self, group: GroupShape) -> float:
        """Bus bandwidth of a ring over ``group``."""
        if group.nodes <= 1:
            return self.intra_node_busbw_Bps
        inter = group.ranks_per_node * self.nic_share_per_gpu_Bps * self.cross_tier_factor(group)
        return min(self.intra_node_busbw_Bps, inter)

    def step_latency_s(self, group: GroupShape) -> float:
        return NVLINK_STEP_LATENCY_S if group.nodes <= 1 else NETWORK_STEP_LATENCY_S

    # -- collectives ----------------------------------------------------------------
    def all_reduce_s(self, size_bytes: float, group: GroupShape) -> float:
        n = group.ranks
        if n <= 1 or size_bytes <= 0:
            return 0.0
        return (COLLECTIVE_BASE_LATENCY_S + 2 * (n - 1) * self.step_latency_s(group)
                + 2 * (n - 1) / n * size_bytes / self.busbw_Bps(group))

    def reduce_scatter_s(self, size_bytes: float, group: GroupShape) -> float:
        """Reduce-scatter of a ``size_bytes`` buffer (each rank ends with 1/n of it)."""
        n = group.ranks
        if n <= 1 or size_bytes <= 0:
            return 0.0
        return (COLLECTIVE_BASE_LATENCY_S + (n - 1) * self.step_latency_s(group)
                + (n - 1) / n * size_bytes / self.busbw_Bps(group))

    def all_gather_s(self, size_bytes: float, group: GroupShape) -> float:
        """All-gather into a ``size_bytes`` buffer: the same traffic as reduce-scatter."""
        return self.reduce_scatter_s(size_bytes, group)

    def all_to_all_s(self, size_bytes: float, group: GroupShape) -> float:
        """All-to-all where each rank sends ``size_bytes`` in all, (n-1)/n of it away."""
        return self.reduce_scatter_s(size_bytes, group)

    def send_recv_s(self, size_bytes: float, crosses_nodes: bool) -> float:
        """Point-to-point transfer between pipeline neighbours."""
        if size_bytes <= 0:
            return 0.0
        if crosses_nodes:
            return COLLECTIVE_BASE_LATENCY_S + NETWORK_STEP_LATENCY_S + size_bytes / self.nic_share_per_gpu_Bps
        return COLLECTIVE_BASE_LATENCY_S + NVLINK_STEP_LATENCY_S + size_bytes / self.intra_node_busbw_Bps
