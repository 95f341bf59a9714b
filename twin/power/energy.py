"""IT power of the cluster during training, and the energy of a run.

A GPU draws its idle power plus (TDP - idle) times its activity, the share of
the step its kernels run; the rest of the node (CPUs, memory, NICs, NVSwitches,
fans) draws the node's maximum less its GPUs' TDP at full load. Spare nodes
stand idle. Facility energy = IT energy × PUE.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.engine.step import StepBreakdown
from twin.hardware.specs import ClusterSpec

# Share of its full-load power that a node's host (everything but GPUs) draws when idle.
# Assumption: CPUs, fans and NICs of an idle DGX draw about a third of their maximum.
HOST_IDLE_FRACTION = 0.35


@dataclass(frozen=True)
class PowerDraw:
    gpu_w: float                 # one GPU, average over a step
    node_w: float                # one training node, average
    cluster_avg_w: float         # all training nodes + idle spares, average
    cluster_peak_w: float        # all nodes at maximum (GPUs at TDP or cap)


def gpu_activity(step: StepBreakdown) -> float:
    """Share of the step that a GPU's compute kernels run (communication and bubbles idle it)."""
    return min(1.0, step.compute_s / step.step_s) if step.step_s > 0 else 0.0


def power_draw(cluster: ClusterSpec, step: StepBreakdown, gpus_used: int) -> PowerDraw:
    node = cluster.node
    gpu = node.gpu
    tdp_w = min(gpu.tdp_w, cluster.gpu_power_cap_w or gpu.tdp_w)
    activity = gpu_activity(step)
    gpu_w = gpu.idle_w + (tdp_w - gpu.idle_w) * activity
    host_w = node.host_power_w
    host_idle_w = HOST_IDLE_FRACTION * host_w
    node_w = node.gpus * gpu_w + host_w
    idle_node_w = node.gpus * gpu.idle_w + host_idle_w
    busy_nodes = -(-gpus_used // node.gpus)
    idle_nodes = cluster.nodes - busy_nodes + cluster.spare_nodes
    avg = busy_nodes * node_w + idle_nodes * idle_node_w
    peak = busy_nodes * (node.gpus * tdp_w + host_w) + idle_nodes * idle_node_w
    return PowerDraw(gpu_w, node_w, avg, peak)
