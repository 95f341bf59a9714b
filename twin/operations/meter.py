"""Power accounting of the cluster: each job's attributed IT power over time, and the cluster's total.

A node draws ``idle + activity · (peak - idle)``, affine in its GPUs' mean activity
(``power/devices.py``), so each job is charged ``idle / g`` per GPU it holds plus its
used GPUs' dynamic power in its phase: while it works, its kind's activity (a training
step's mix of phases, with the extra communication time of contention at
communication power and its checkpoint stalls at checkpoint power; a service's mean
activity at its load); restarting, the GPU's restart activity; waiting, idle. Idle
nodes, spares, nodes in repair and the fabric make up the rest: the cluster's IT power
is ``base_it_w`` (every node idle, switches, storage) plus the jobs' dynamic power.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from twin.jobs.model import Phase
from twin.operations.progress import ClusterJob
from twin.operations.records import PowerSegments
from twin.operations.steps import StepTimes
from twin.power.devices import GPUPower, NodePower


@dataclass
class _Draw:
    """What one job draws from ``since_s``."""
    w: float = 0.0                   # attributed IT power: idle share of the GPUs it holds + dynamic
    dynamic_w: float = 0.0           # above the idle share
    since_s: float = 0.0


class PowerMeter:
    """Charges each job its power, piecewise constant; ``changed`` is called after every change."""

    def __init__(self, node_power: NodePower, gpus_per_node: int, nodes: int, infrastructure_w: float,
                 steps: StepTimes, changed: Callable[[], None]):
        self.node_power, self.steps, self.changed = node_power, steps, changed
        self.idle_per_gpu_w = node_power.idle_w / gpus_per_node
        self.dynamic_per_gpu_w = (node_power.peak_w - node_power.idle_w) / gpus_per_node
        self.base_it_w = nodes * node_power.idle_w + infrastructure_w
        self.dynamic_w = 0.0                         # the jobs' dynamic power together
        self._draws: dict[int, _Draw] = {}
        self._segments: list[tuple[int, float, float, float]] = []
        self._activities: dict[tuple, float] = {}

    @property
    def it_w(self) -> float:
        """The cluster's IT power now."""
        return self.base_it_w + self.dynamic_w

    def charge(self, job: ClusterJob, now: float) -> None:
        """Charge the job's power from now: the idle share of the GPUs it holds, the dynamic power of those
        it uses in its phase; the power it drew since the last change becomes a segment."""
        draw = self._draws.setdefault(job.index, _Draw())
        self._close(job.index, draw, now)
        if job.phase == Phase.DONE:
            watts = dynamic = 0.0
        else:
            gpu = self.node_power.gpu
            if job.phase == Phase.TRAIN:
                activity = self._activity(job, gpu)
            else:
                activity = gpu.activity["restart" if job.phase == Phase.RESTART else "idle"]
            dynamic = job.compute_gpus * self.dynamic_per_gpu_w * activity
            watts = job.held_gpus * self.idle_per_gpu_w + dynamic
        self.dynamic_w += dynamic - draw.dynamic_w
        draw.w, draw.dynamic_w, draw.since_s = watts, dynamic, now
        self.changed()

    def _activity(self, job: ClusterJob, gpu: GPUPower) -> float:
        """The job's activity while it works, kept by what it is a function of (``ClusterJob.activity_key``)."""
        key = job.activity_key
        if key is None:
            return job.activity(self.steps, gpu)
        found = self._activities.get(key)
        if found is None:
            found = self._activities[key] = job.activity(self.steps, gpu)
        return found

    def _close(self, index: int, draw: _Draw, now: float) -> None:
        if now > draw.since_s and draw.w:
            self._segments.append((index, draw.since_s, now, draw.w))

    def close(self, job: ClusterJob, now: float) -> None:
        """The run ends: the job's power until now becomes its last segment."""
        draw = self._draws.get(job.index)
        if draw is not None:
            self._close(job.index, draw, now)

    def segments(self) -> PowerSegments:
        seg = np.array(self._segments, dtype=float) if self._segments else np.zeros((0, 4))
        return PowerSegments(seg[:, 0].astype(np.int64), seg[:, 1], seg[:, 2], seg[:, 3])
