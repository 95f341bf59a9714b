"""Job progress on the cluster: the two kinds of job behind one small interface.

A **training job** runs steps of work at a speed set by its placement and its share of
the switch pools, with its checkpoint stalls spread over the steps (``interval`` steps
and one stall per cycle, ``jobs.rules.fluid_rate_per_s``); a failure loses the steps
since the last whole interval (``jobs.rules.durable_steps``). A **service job** serves
for its duration, a second of work per second, on devices (whole GPUs or MIG
instances) it holds as slots; nothing to checkpoint, so a failure loses the fraction
of a second in progress, and a restart reloads it.

Both kinds share the state of a job on the cluster (``ClusterJob``: phase, nodes held,
progress and what it cost); each kind answers the few questions whose answer differs:
the GPUs it computes on, its activity while it works, its speed, its placement, the
nodes it runs on, and how it gives back a node.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from operator import attrgetter
from typing import ClassVar

import simpy

from twin.hardware.specs import ClusterSpec
from twin.jobs.checkpoint import CheckpointCost
from twin.jobs.failures import FailureProfile
from twin.jobs.model import JobKind, Phase
from twin.jobs.rules import checkpoint_plan, durable_steps, fluid_rate_per_s, stall_share
from twin.operations.jobs import JobRequest, PricedStep, Service, Shape, allocated_gpus, nodes_needed
from twin.operations.records import UNFINISHED, JobOutcome, NodeSpan
from twin.operations.scheduler import Need, Slot
from twin.operations.steps import StepTimes, Traffic
from twin.power.devices import GPUPower
from twin.power.energy import step_power
from twin.units import SECONDS_PER_HOUR

# A service's checkpoint: nothing to write or read back.
NO_CHECKPOINT = CheckpointCost(0.0, 1.0, 1.0, 0.0, 0.0, 0.0, False)
# A job's node spans in its outcome: by start, then node.
_SPAN_ORDER = attrgetter("start_s", "node")


@dataclass
class Tally:
    """What a job's run cost it, for its outcome."""
    interruptions: int = 0
    lost_work_s: float = 0.0
    restart_s: float = 0.0
    repair_wait_s: float = 0.0
    train_s: float = 0.0             # time spent making progress
    step_time_integral: float = 0.0  # step time × time, over the training time
    gpu_seconds: float = 0.0         # GPUs held × time held


@dataclass
class ClusterJob(ABC):
    """A job on the cluster: what it asked for, where it is, how far it got."""
    index: int
    req: JobRequest
    need: Need
    iterations: float                # steps of work (fractional: the last one partly); a service's seconds
    packed_step_s: float
    checkpoint: CheckpointCost
    interval: int | None             # steps between checkpoints (None: none)
    release_s: float
    estimate_s: float                # the scheduler's estimate of its run time
    carbon_hold_s: float = 0.0
    phase: Phase = Phase.QUEUED
    phase_since_s: float = 0.0
    nodes: list[int] = field(default_factory=list)
    spans: dict[int, float] = field(default_factory=dict)     # node → held since
    closed_spans: list[NodeSpan] = field(default_factory=list)
    held_gpus: float = 0.0
    busy_gpus: float = 0.0           # counted in the cluster's training GPUs while it trains
    missing: int = 0                 # nodes (a service: devices) lost to repair, not yet replaced
    first_placement: tuple[int, ...] | None = None
    scalable_units: int = 0
    share: float = 1.0
    step_s: float = 0.0
    rate: float = 0.0                # steps per second while training
    done: float = 0.0
    mark_s: float = 0.0              # progress counted up to here
    start_s: float | None = None
    end_s: float | None = None
    status: str = UNFINISHED
    deadline_s: float = math.inf
    restart_end_s: float = 0.0
    reserved_start_s: float | None = None
    traffic: Traffic | None = None   # its coflow on the switch pools (a training job across SUs)
    tally: Tally = field(default_factory=Tally)
    process: simpy.Process | None = None
    ready: simpy.Event | None = None         # fires when the nodes it waits for are there
    # (estimated end, nodes, GPUs per node) while the estimate holds (``ending_at``)
    ending: tuple[float, list[int], int] | None = field(default=None, repr=False, compare=False)

    kind: ClassVar[JobKind]

    # -- the kind's answers ----------------------------------------------------------------
    @property
    @abstractmethod
    def compute_gpus(self) -> float:
        """GPUs' worth of compute it uses."""

    @property
    @abstractmethod
    def gpus_used(self) -> float:
        """GPUs it keeps busy while it works."""

    @abstractmethod
    def activity(self, steps: StepTimes, gpu: GPUPower) -> float:
        """A used GPU's mean share of its dynamic range while the job works."""

    @property
    @abstractmethod
    def activity_key(self) -> tuple | None:
        """What ``activity`` is a function of within one run, for a meter to keep it (None: not worth keeping)."""

    @abstractmethod
    def set_speed(self, steps: StepTimes) -> None:
        """Its step time and rate where it runs now."""

    @abstractmethod
    def place(self, steps: StepTimes) -> None:
        """Its placement class and traffic, once it holds all its nodes."""

    @abstractmethod
    def used_nodes(self, gpus_per_node: int) -> list[int]:
        """The nodes its ranks or devices run on."""

    @abstractmethod
    def open_gpu_seconds(self, now: float) -> None:
        """Count the GPU time of what it still holds at ``now`` (the end of the run)."""

    @abstractmethod
    def outcome_gpus(self, gpus_per_node: int) -> tuple[float, float]:
        """(GPUs its plan uses, GPUs it holds) as its outcome reports them."""

    # -- progress ----------------------------------------------------------------------------
    def advance(self, now: float) -> None:
        """Count its progress up to ``now``."""
        self.ending = None
        if self.phase == Phase.TRAIN and now > self.mark_s:
            dt = now - self.mark_s
            self.done = min(self.iterations, self.done + dt * self.rate)
            self.tally.train_s += dt
            self.tally.step_time_integral += dt * self.step_s
        self.mark_s = now

    def ending_at(self, now: float) -> tuple[float, list[int], int]:
        """(estimated end, nodes, GPUs per node): what a backfill reservation reads of every running job. The
        end is its time limit, or its remaining work at its current speed (after a restart in progress). Kept
        while the estimate holds (a time limit; training at one speed), until the job's progress, speed or
        phase next change (``advance``, ``set_speed``, ``interrupted``)."""
        if self.ending is not None:
            return self.ending
        if math.isfinite(self.req.time_limit_s):
            end_s = self.start_s + self.req.time_limit_s
        elif self.phase == Phase.TRAIN:                # constant while it trains at one speed
            end_s = self.mark_s + (self.iterations - self.done) / self.rate
        else:
            extra = max(0.0, self.restart_end_s - now) if self.phase == Phase.RESTART else 0.0
            return now + extra + (self.iterations - self.done) / self.rate, self.nodes, self.need.gpus
        self.ending = (end_s, self.nodes, self.need.gpus)
        return self.ending

    def interrupted(self, now: float) -> None:
        """A failure hit it: close the time of the phase it was in and lose the steps since its last checkpoint."""
        self.tally.interruptions += 1
        self.ending = None
        if self.phase == Phase.RESTART:
            self.tally.restart_s += now - self.phase_since_s
        elif self.phase == Phase.REPAIR_WAIT:
            self.tally.repair_wait_s += now - self.phase_since_s
        if self.phase == Phase.TRAIN:
            durable = durable_steps(self.done, self.interval)
            self.tally.lost_work_s += (self.done - durable) * self.step_s
            self.done = durable

    def close(self, now: float) -> None:
        """The run ends with the job holding its nodes: close its spans and count their GPU time."""
        self.advance(now)
        for node in list(self.spans):
            self.closed_spans.append(NodeSpan(node, self.spans[node], now))
        self.open_gpu_seconds(now)

    def outcome(self, gpus_per_node: int) -> JobOutcome:
        """The job as it ran."""
        t = self.tally
        gpus_used, gpus_allocated = self.outcome_gpus(gpus_per_node)
        return JobOutcome(
            name=self.req.name, tenant=self.req.tenant, template=self.req.template, origin=self.req.origin,
            gpus=self.req.gpus, gpus_used=gpus_used, gpus_allocated=gpus_allocated,
            submit_s=self.req.submit_s, release_s=self.release_s, carbon_hold_s=self.carbon_hold_s,
            start_s=self.start_s, end_s=self.end_s,
            status=self.status, iterations=self.iterations, iterations_done=self.done,
            packed_step_s=self.packed_step_s, ideal_s=self.iterations * self.packed_step_s,
            mean_step_s=t.step_time_integral / t.train_s if t.train_s > 0 else self.packed_step_s,
            placement=self.first_placement or (), scalable_units=self.scalable_units,
            interruptions=t.interruptions, lost_work_s=t.lost_work_s, restart_s=t.restart_s,
            repair_wait_s=t.repair_wait_s,
            node_spans=tuple(sorted(self.closed_spans, key=_SPAN_ORDER)),
            gpu_hours=t.gpu_seconds / SECONDS_PER_HOUR,
            reserved_start_s=self.reserved_start_s,
        )


@dataclass
class TrainingJob(ClusterJob):
    """A training job: its shape's steps, on whole nodes (or GPUs of one node), checkpointing."""
    shape: Shape | None = None
    placement: tuple[int, ...] = ()

    kind: ClassVar[JobKind] = JobKind.TRAINING

    @property
    def compute_gpus(self) -> float:
        return self.gpus_used

    @property
    def gpus_used(self) -> float:
        return min(self.shape.plan.gpus, self.held_gpus)

    def activity(self, steps: StepTimes, gpu: GPUPower) -> float:
        return training_activity(gpu, steps.priced(self.shape, self.placement), self.step_s, self.checkpoint,
                                 self.interval)

    @property
    def activity_key(self) -> tuple:
        """Its shape (which sets its checkpoint and interval in a run), placement class and step time."""
        return self.shape.key, self.placement, self.step_s

    def set_speed(self, steps: StepTimes) -> None:
        self.step_s = steps.step_s(self.shape, self.placement, self.share)
        self.rate = fluid_rate_per_s(self.step_s, self.checkpoint, self.interval)
        self.ending = None

    def place(self, steps: StepTimes) -> None:
        cls, sus = steps.classify(tuple(sorted(self.nodes)), self.req.gpus)
        self.placement, self.scalable_units = cls, len(sus)
        if self.first_placement is None:
            self.first_placement = cls
        self.traffic = steps.traffic(self.shape, cls, sus) if cls else None

    def used_nodes(self, gpus_per_node: int) -> list[int]:
        """A multi-node plan may leave the last nodes idle."""
        return sorted(self.nodes)[:-(-self.shape.plan.gpus // gpus_per_node)]

    def open_gpu_seconds(self, now: float) -> None:
        for node in self.spans:
            self.tally.gpu_seconds += self.need.gpus * (now - self.spans[node])

    def outcome_gpus(self, gpus_per_node: int) -> tuple[float, float]:
        return self.shape.plan.gpus, allocated_gpus(self.req.gpus, gpus_per_node)


@dataclass
class ServiceJob(ClusterJob):
    """A serving job: its replicas' devices for its duration, a second of service per second."""
    service: Service | None = None
    slots: list[tuple[Slot, float]] = field(default_factory=list)     # its devices, held since

    kind: ClassVar[JobKind] = JobKind.SERVICE

    @property
    def compute_gpus(self) -> float:
        """Its devices' share of their GPUs (a MIG instance of c slices: c/7)."""
        return sum(slot.count for slot, _ in self.slots) * self.service.compute_share

    @property
    def gpus_used(self) -> float:
        """The GPUs its devices fill."""
        return self.held_gpus

    def activity(self, steps: StepTimes, gpu: GPUPower) -> float:
        return self.service.activity

    @property
    def activity_key(self) -> None:
        return None

    def set_speed(self, steps: StepTimes) -> None:
        self.step_s = self.rate = 1.0
        self.ending = None

    def place(self, steps: StepTimes) -> None:
        self.scalable_units = len({steps.node_su[n] for n in self.nodes})
        self.first_placement = ()

    def used_nodes(self, gpus_per_node: int) -> list[int]:
        return self.nodes

    def gpus_of(self, slot: Slot) -> float:
        """GPUs a slot of its devices holds."""
        return slot.count if slot.gpu < 0 else slot.count / self.service.instances_per_gpu

    def open_gpu_seconds(self, now: float) -> None:
        self.tally.gpu_seconds += sum(self.gpus_of(slot) * (now - since) for slot, since in self.slots)

    def outcome_gpus(self, gpus_per_node: int) -> tuple[float, float]:
        return self.req.gpus, self.service.devices / self.service.instances_per_gpu


def training_activity(gpu: GPUPower, solo: PricedStep, step_s: float, checkpoint: CheckpointCost,
                      interval: int | None) -> float:
    """A training GPU's mean activity: its step's phases alone (``solo``), the extra time of contention at
    communication power, and its checkpoint stalls at checkpoint power."""
    sp = step_power(gpu, solo)
    extra_s = max(0.0, step_s - solo.step_s)
    avg_w = (sp.gpu_avg_w * solo.step_s + extra_s * gpu.phase_w("communication")) / step_s
    share = stall_share(step_s, checkpoint, interval)
    avg_w = (1 - share) * avg_w + share * gpu.phase_w("checkpoint")
    span = gpu.limit_w - gpu.idle_w
    return (avg_w - gpu.idle_w) / span if span > 0 else 0.0


@dataclass(frozen=True)
class ShapePlan:
    """What every job of one shape shares: its step alone on a packed placement, its checkpoint and Young/Daly
    interval for its own failure rate (none without failures), what it holds."""
    packed: PricedStep
    checkpoint: CheckpointCost
    interval: int | None
    need: Need


def shape_plan(shape: Shape, steps: StepTimes, cluster: ClusterSpec, profile: FailureProfile | None) -> ShapePlan:
    """The plan of the jobs of ``shape`` on ``cluster`` (computed once per shape and run)."""
    gpn = cluster.node.gpus
    packed = steps.priced(shape, steps.packed_class(shape.gpus))
    nodes = nodes_needed(shape.gpus, gpn)
    cost, interval = checkpoint_plan(shape.checkpoint, shape.params, shape.precision, shape.frozen, cluster, nodes,
                                     shape.plan.gpus, packed.step_s, profile)
    need = Need(nodes, gpn) if shape.gpus > gpn else Need(1, shape.gpus)
    return ShapePlan(packed, cost, interval, need)


def training_job(index: int, req: JobRequest, shape: Shape, plan: ShapePlan) -> TrainingJob:
    """A training job of ``shape`` (its ``plan``): its steps are its tokens, or its duration alone at its packed
    step time."""
    packed = plan.packed
    if req.tokens is not None:                          # as the single-job twin: tokens / tokens per step
        iterations = req.tokens / shape.plan.tokens_per_step
    else:
        iterations = req.duration_s / packed.step_s
    ideal = iterations * packed.step_s
    return TrainingJob(index, req, plan.need, iterations, packed.step_s, plan.checkpoint, plan.interval,
                       req.submit_s, min(req.time_limit_s, ideal), shape=shape)


def service_job(index: int, req: JobRequest, service: Service) -> ServiceJob:
    """A serving job: its work is the seconds it serves; nothing to checkpoint, a restart reloads it."""
    return ServiceJob(index, req, Need(1, service.devices_per_replica), req.duration_s, 1.0, NO_CHECKPOINT, 1,
                      req.submit_s, min(req.time_limit_s, req.duration_s), service=service)
