"""Cluster IT power by phase, the power timeline of a run, and its energy.

A training step splits into phases (``StepBreakdown``): compute-bound kernels,
memory-bound work (the optimizer step and the framework's per-step overheads:
gradient zeroing and norm, kernel launches), communication left exposed (tensor,
pipeline and data parallel) and the pipeline bubble. Each phase has its GPU
power (``devices.GPUPower``); the step's average is their time-weighted mean.
A job adds its own phases (``Result.timeline`` segments: train, checkpoint,
restart, repair_wait). Busy nodes draw their phase's power; nodes without work
and spare nodes stand idle; switches and storage draw a constant power.

Energy is the integral of the IT power over the timeline; facility energy is IT
energy × PUE. ``gpu-tdp`` accounting instead counts GPU-hours × TDP, the
convention of the LLaMA and BLOOM papers, so their tables can be reproduced.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.engine.step import StepBreakdown
from twin.hardware.specs import ClusterSpec
from twin.jobs.model import Segment
from twin.power.devices import GPUPower, NodePower, node_power
from twin.units import JOULES_PER_KWH, SECONDS_PER_HOUR

# Job phases of ``Result.timeline`` and the GPU phase each one runs (train: the step's mix).
JOB_PHASES = {"train": None, "checkpoint": "checkpoint", "restart": "restart", "repair_wait": "idle"}


@dataclass(frozen=True)
class StepPower:
    """One GPU through one training step."""
    phases_s: dict[str, float]       # GPU phase → seconds per step
    phases_w: dict[str, float]       # GPU phase → watts
    gpu_avg_w: float
    activity: float                  # time-weighted share of the GPU's dynamic range


def step_phases(step: StepBreakdown) -> dict[str, float]:
    """Seconds of one step in each GPU power phase."""
    return {
        "compute": step.compute_s,
        "memory": step.optimizer_s + step.overheads_s,
        "communication": step.tp_comm_s + step.pp_comm_s + step.dp_comm_s + step.dp_latency_s,
        "bubble": step.bubble_s,
    }


def step_power(gpu: GPUPower, step: StepBreakdown) -> StepPower:
    phases = step_phases(step)
    watts = {p: gpu.phase_w(p) for p in phases}
    total_s = sum(phases.values())
    avg = sum(watts[p] * s for p, s in phases.items()) / total_s if total_s > 0 else gpu.idle_w
    span = gpu.limit_w - gpu.idle_w
    activity = (avg - gpu.idle_w) / span if span > 0 else 0.0
    return StepPower(phases, watts, avg, activity)


@dataclass(frozen=True)
class ClusterPower:
    """IT power of the cluster in each job phase."""
    node: NodePower
    busy_nodes: int                  # nodes with work, the last of them possibly partly busy
    idle_nodes: int                  # nodes without work and spare nodes
    infrastructure_w: float          # switches and storage
    step: StepPower
    partial_gpus: int = 0            # busy GPUs of the last busy node when it is not full (its others idle)

    def gpu_activity(self, phase: str) -> float:
        gpu_phase = JOB_PHASES.get(phase, "idle")
        return self.step.activity if gpu_phase is None else self.node.gpu.activity[gpu_phase]

    def busy_node_w(self, phase: str = "train") -> float:
        """One node with every GPU busy."""
        return self.node.draw_w(self.gpu_activity(phase))

    def _busy_w(self, activity: float) -> float:
        if not self.partial_gpus:
            return self.busy_nodes * self.node.draw_w(activity)
        return (self.busy_nodes - 1) * self.node.draw_w(activity) + self.node.draw_w(activity, self.partial_gpus)

    def it_w(self, phase: str = "train") -> float:
        return self.nodes_at_w(self.gpu_activity(phase)) + self.infrastructure_w

    def nodes_at_w(self, activity: float) -> float:
        """Every node: the busy GPUs at ``activity``, the rest of the cluster idle."""
        return self._busy_w(activity) + self.idle_nodes * self.node.idle_w

    @property
    def peak_w(self) -> float:
        """Every busy GPU at its limit at once (the provisioning figure)."""
        return self.nodes_at_w(1.0) + self.infrastructure_w

    @property
    def nodes_w(self) -> float:
        return self.nodes_at_w(self.gpu_activity("train"))


def cluster_power(cluster: ClusterSpec, step: StepBreakdown, gpus_used: int, infrastructure_w: float = 0.0,
                  node: NodePower | None = None) -> ClusterPower:
    """Busy nodes are those the job's GPUs fill; every other node of the cluster, spares included, idles.
    A job on part of a node (4 of its 8 GPUs) leaves the node's other GPUs idle. ``node``: the node's
    power, when already built (``node_power``)."""
    node = node or node_power(cluster.node, cluster.gpu_power_cap_w)
    gpn = cluster.node.gpus
    busy = min(cluster.nodes, -(-gpus_used // gpn))
    partial = gpus_used % gpn if gpus_used < cluster.nodes * gpn else 0
    return ClusterPower(node, busy, cluster.nodes - busy, infrastructure_w, step_power(node.gpu, step), partial)


@dataclass(frozen=True)
class PowerSegment:
    """IT power over one stretch of the job's timeline."""
    start_s: float
    end_s: float
    phase: str
    it_w: float                      # average over the stretch
    checkpoint_s: float = 0.0        # checkpoint writes folded inside it, drawing checkpoint power

    @property
    def energy_j(self) -> float:
        return (self.end_s - self.start_s) * self.it_w


def training_segments(time_s: float) -> list[Segment]:
    """The timeline of a run without interruptions: one training segment."""
    return [Segment(0.0, time_s, "train")]


def power_timeline(power: ClusterPower, segments: list[Segment]) -> list[PowerSegment]:
    """IT power of each timeline segment; adjacent segments of the same phase are merged.

    A segment may carry ``checkpoint_s``, the checkpoint writes folded inside it: those
    seconds draw checkpoint power, the rest the segment's phase power; ``it_w`` is then
    the segment's average.
    """
    out: list[PowerSegment] = []
    watts = {phase: power.it_w(phase) for phase in {s.phase for s in segments} | {"checkpoint"}}
    for seg in segments:
        start, end, phase = seg.start_s, seg.end_s, seg.phase
        duration = end - start
        if duration <= 0:
            continue
        inner_s = min(duration, seg.checkpoint_s) if phase != "checkpoint" else 0.0
        energy = (duration - inner_s) * watts[phase] + inner_s * watts["checkpoint"]
        if out and out[-1].phase == phase and abs(out[-1].end_s - start) < 1e-9:
            last = out[-1]
            out[-1] = PowerSegment(last.start_s, end, phase, (last.energy_j + energy) / (end - last.start_s),
                                   last.checkpoint_s + inner_s)
            continue
        out.append(PowerSegment(start, end, phase, energy / duration, inner_s))
    return out


def timeline_energy_j(timeline: list[PowerSegment]) -> float:
    return sum(s.energy_j for s in timeline)


def phase_energy_kwh(timeline: list[PowerSegment], power: ClusterPower) -> dict[str, float]:
    """IT energy by job phase (checkpoints folded inside segments count as checkpoint)."""
    out: dict[str, float] = {}
    checkpoint_w = power.it_w("checkpoint")
    for s in timeline:
        inner_j = s.checkpoint_s * checkpoint_w
        out[s.phase] = out.get(s.phase, 0.0) + (s.energy_j - inner_j) / JOULES_PER_KWH
        if inner_j:
            out["checkpoint"] = out.get("checkpoint", 0.0) + inner_j / JOULES_PER_KWH
    return out


def gpu_tdp_energy_kwh(gpu_hours: float, tdp_w: float) -> float:
    """GPU-hours × TDP: the accounting of the LLaMA and BLOOM papers (GPUs only, at full power)."""
    return gpu_hours * tdp_w / 1000.0


def facility_energy_kwh(it_kwh: float, pue: float) -> float:
    """Facility energy = IT energy × PUE (PUE ≥ 1 by definition)."""
    return it_kwh * pue


def gpu_hours(gpus: int, seconds: float) -> float:
    return gpus * seconds / SECONDS_PER_HOUR
