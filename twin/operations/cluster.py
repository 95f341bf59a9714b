"""Level 4, discrete-event: many jobs on one cluster, played with SimPy.

The clock jumps from event to event: a job arrives (or is released by the
carbon-aware policy), a job ends or reaches its time limit, a node fails, a
restart ends, a repaired node comes back. Between two events every running job
advances at its own speed, ``1 / (step + checkpoint stall / interval)`` steps per
second, in closed form; nothing loops over GPUs or steps.

- **Scheduling** (``scheduler.py``) runs after every arrival, end and repair: the
  policy picks the jobs that start now and their nodes.
- **Step times** (``steps.py``) come from the single-job engines on the job's
  placement class, and from its share of the switch pools it crosses with the
  other running jobs (max-min fair). When a job that crosses pools starts, ends,
  stops or resumes training, the shares are solved again and the jobs whose speed
  changes are re-timed.
- **Failures**: every node fails as the failure profile says (its GPUs' and its own
  components'), one Poisson process for the cluster; a failure on a down node is
  thinned away. It interrupts every job on the node: the job loses the work since
  its last checkpoint and restarts (detection, relaunch, checkpoint read); for a
  hardware cause the node goes to repair and the job takes another node, first a
  free one of the scheduler's (in its own SUs when it can), else one of the spare
  pool, else it waits for one. A repaired node refills the spare pool up to its
  size, else it returns to the scheduler. Checkpoints follow Young/Daly for the
  job's own failure rate, as in the single-job engine (none without failures).
- **Power**: a node draws ``idle + activity · (peak - idle)``, affine in its GPUs'
  mean activity (``power/devices.py``), so each job is charged ``idle / g`` per GPU it
  holds plus its used GPUs' dynamic power in its phase (a training step's mix of
  phases, with the extra communication time of contention at communication power,
  and its checkpoint stalls); idle nodes, spares, nodes in repair and the fabric
  make up the rest.

Progress within training is fluid: checkpoint stalls are spread over the steps
(``interval`` steps and one stall per cycle) and a failure loses the steps since
the last whole interval. Without failures a job runs exactly its steps at its
step time, as the single-job twin does.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import simpy

from twin.hardware.specs import ClusterSpec
from twin.jobs.checkpoint import CheckpointCost, checkpoint_cost
from twin.jobs.failures import FailurePolicy, FailureProfile, failure_profile
from twin.jobs.rules import durable_steps, fluid_rate_per_s, interval_iterations, requeue_s, restart_s, stall_share
from twin.operations.jobs import JobRequest, Service, Shape, allocated_gpus, nodes_needed
from twin.operations.scheduler import (FairShare, Hold, Need, Partitions, Policy, Pool, Running, Slot, Waiting,
                                       place_service, release_slot, schedule)
from twin.operations.steps import StepTimes, Traffic
from twin.power.devices import NodePower
from twin.power.energy import step_power
from twin.power.hourly import CarbonClock
from twin.units import SECONDS_PER_HOUR

QUEUED, TRAIN, RESTART, WAIT, DONE = "queued", "train", "restart", "wait", "done"
# How a job ended: ran its steps, hit its time limit, still running or queued at the horizon.
FINISHED, TIMEOUT, UNFINISHED = "finished", "timeout", "unfinished"
# Below this fraction of a step, the steps left are taken as done (floating-point rounding).
STEP_TOLERANCE = 1e-9


@dataclass(frozen=True)
class OperationsSpec:
    """How the cluster is run, in SI units."""
    policy: Policy = Policy()
    horizon_s: float = 365 * 86400.0
    seed: int = 0                                # of the failure draws (failures.seed)
    hold: tuple[str, float] | None = None        # (job name, start) of a hero reservation
    max_delay_s: float = 12 * SECONDS_PER_HOUR   # the carbon-aware policy's longest hold


@dataclass(frozen=True)
class NodeSpan:
    node: int
    start_s: float
    end_s: float


@dataclass(frozen=True)
class JobOutcome:
    """One job, as it ran (``OperationsResult.jobs``)."""
    name: str
    tenant: str
    template: str
    origin: str
    gpus: int                        # asked for
    gpus_used: int                   # by its plan
    gpus_allocated: float            # held: whole nodes for a multi-node job, a GPU's share per MIG instance
    submit_s: float
    release_s: float                 # entered the queue (after a carbon-aware hold or at its reservation)
    carbon_hold_s: float             # held by the carbon-aware policy
    start_s: float | None
    end_s: float | None
    status: str                      # finished | timeout | unfinished
    iterations: float
    iterations_done: float
    packed_step_s: float             # step time alone on the cluster's first nodes (a service: 1 s of serving)
    ideal_s: float                   # its steps at that step time: the run time alone, without failures
    mean_step_s: float               # time-weighted step time while training (placement and contention)
    placement: tuple[int, ...]       # nodes per SU at its first start; () inside one node
    scalable_units: int
    interruptions: int
    lost_work_s: float
    restart_s: float
    repair_wait_s: float
    node_spans: tuple[NodeSpan, ...]
    gpu_hours: float                 # GPUs held × time held
    reserved_start_s: float | None   # its reserved start when it was the blocked head (EASY backfill)

    @property
    def wait_s(self) -> float | None:
        return None if self.start_s is None else self.start_s - self.submit_s

    @property
    def turnaround_s(self) -> float | None:
        return None if self.end_s is None else self.end_s - self.submit_s


@dataclass(frozen=True)
class Series:
    """The cluster after each event: a step function, value held until the next time."""
    t_s: np.ndarray
    gpus_allocated: np.ndarray
    gpus_busy: np.ndarray            # used by a job's plan while it trains, or serving
    queued: np.ndarray
    running: np.ndarray
    it_w: np.ndarray                 # IT power of the whole cluster
    fragmented_gpus: np.ndarray      # free GPUs that none of the waiting jobs can use


@dataclass(frozen=True)
class PowerSegments:
    """Each job's attributed IT power, piecewise constant: job index, start, end, watts."""
    job: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray
    w: np.ndarray


@dataclass(frozen=True)
class ClusterRun:
    """What the cluster simulation returns."""
    jobs: tuple[JobOutcome, ...]
    series: Series
    segments: PowerSegments
    end_s: float                     # the last event (all jobs done) or the horizon
    horizon_s: float
    gpus_total: int                  # every GPU of the cluster, spares included
    node_su: tuple[int, ...]         # scalable unit of each node
    base_it_w: float                 # every node idle, plus switches and storage
    node_idle_w: float
    infrastructure_w: float
    failures: int                    # node failures (on up nodes)
    failures_by_component: dict[str, int]
    spare_swaps: int                 # nodes taken from the spare pool
    replacements: int                # failed nodes of running jobs replaced
    events: int
    steps_priced: int                # engine runs (distinct shape, class and share)


@dataclass
class _Job:
    index: int
    req: JobRequest
    shape: Shape | None              # a training job's
    service: Service | None          # a serving job's
    need: Need
    iterations: float                # steps of work (fractional: the last one partly); a service's seconds
    packed_step_s: float
    checkpoint: CheckpointCost
    interval: int | None             # steps between checkpoints (None: no checkpoints)
    release_s: float
    estimate_s: float                # the scheduler's estimate of its run time
    carbon_hold_s: float = 0.0
    phase: str = QUEUED
    nodes: list[int] = field(default_factory=list)
    slots: list[tuple[Slot, float]] = field(default_factory=list)     # a serving job's allocation, since when
    held_gpus: float = 0.0
    busy_gpus: float = 0.0           # counted in the cluster's training GPUs while it trains
    gpu_seconds: float = 0.0
    placement: tuple[int, ...] = ()
    first_placement: tuple[int, ...] | None = None
    scalable_units: int = 0
    traffic: Traffic | None = None
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
    missing: int = 0                 # nodes (a service: devices) lost to repair, not yet replaced
    interruptions: int = 0
    lost_work_s: float = 0.0
    restart_s: float = 0.0
    repair_wait_s: float = 0.0
    phase_since_s: float = 0.0
    train_s: float = 0.0
    step_time_integral: float = 0.0
    power_w: float = 0.0             # attributed IT power: idle share of the GPUs it holds + dynamic
    dynamic_w: float = 0.0           # above the idle share
    power_since_s: float = 0.0
    spans: dict[int, float] = field(default_factory=dict)
    closed_spans: list[NodeSpan] = field(default_factory=list)
    reserved_start_s: float | None = None
    process: simpy.Process | None = None
    ready: simpy.Event | None = None

    @property
    def compute_gpus(self) -> float:
        """GPUs' worth of compute it uses: its plan's GPUs, or its devices' share of their GPUs (a MIG
        instance of c slices: c/7)."""
        if self.service is None:
            return self.gpus_used
        return sum(slot.count for slot, _ in self.slots) * self.service.compute_share

    @property
    def gpus_used(self) -> float:
        """GPUs its plan uses (a service: the GPUs its devices fill)."""
        return self.held_gpus if self.service is not None else min(self.shape.plan.gpus, self.held_gpus)


class _Cluster:
    """The state of one run and its SimPy processes."""

    def __init__(self, cluster: ClusterSpec, steps: StepTimes, jobs: list[JobRequest],
                 shapes: dict[tuple[str, int], Shape], services: dict[str, Service], spec: OperationsSpec,
                 failures: FailurePolicy | None, node_power: NodePower, infrastructure_w: float,
                 site_clock: CarbonClock | None):
        self.cluster, self.spec = cluster, spec
        self.env = simpy.Environment()
        self.rng = np.random.default_rng(spec.seed)
        self.steps = steps
        self.gpn = cluster.node.gpus
        self.node_power = node_power
        self.idle_per_gpu_w = node_power.idle_w / self.gpn
        self.dynamic_per_gpu_w = (node_power.peak_w - node_power.idle_w) / self.gpn
        self.base_it_w = cluster.nodes * node_power.idle_w + infrastructure_w
        self.infrastructure_w = infrastructure_w
        self.failures = failures
        self.profile: FailureProfile | None = None
        if failures is not None:
            self.profile = failure_profile(failures.profile, failures.rate_scale, dict(failures.custom_rates))
        self.pool = Pool(self.gpn, [int(s) for s in self.steps.node_su])
        spare_count = cluster.spare_nodes
        self.spares: list[int] = list(range(cluster.nodes - spare_count, cluster.nodes))
        for n in self.spares:
            self.pool.set_usable(n, False)
        self.down: set[int] = set()
        self.on_node: dict[int, set[int]] = {}
        self.parts = Partitions()
        self.jobs = [self._service(i, req, services[req.template], site_clock) if req.template in services
                     else self._job(i, req, shapes[(req.template, req.gpus)], site_clock) for i, req in enumerate(jobs)]
        self.queue: dict[int, Waiting] = {}          # training jobs, in release order
        self.service_queue: dict[int, _Job] = {}     # serving jobs, in release order
        self.needs: Counter[Need] = Counter()        # what the waiting jobs need
        self.running: dict[int, _Job] = {}
        self.waiting_nodes: list[_Job] = []
        self.crossing: set[int] = set()
        self.fair = FairShare(dict(spec.policy.shares), spec.policy.half_life_s)
        self.hold = None
        if spec.hold is not None:
            name, start = spec.hold
            hero = next(j for j in self.jobs if j.req.name == name)
            hero.release_s = max(hero.release_s, start)
            nodes = self.pool.choose(hero.need, "topology")
            self.hold = Hold(hero.index, start, frozenset(nodes or ()))
        self.rows: list[tuple] = []
        self.seg: list[tuple[int, float, float, float]] = []
        self.dynamic_w = 0.0
        self.allocated = 0.0
        self.held: dict[str, float] = {}             # GPUs each tenant holds
        self.busy = 0.0
        self.fragmented = 0
        self.events = 0
        self.failure_count = 0
        self.by_component: dict[str, int] = {}
        self.spare_swaps = 0
        self.replacements = 0

    # -- set-up ---------------------------------------------------------------------------------
    def _job(self, index: int, req: JobRequest, shape: Shape, site_clock: CarbonClock | None) -> _Job:
        packed_cls = self.steps.packed_class(req.gpus)
        packed = self.steps.priced(shape, packed_cls)
        if req.tokens is not None:                          # as the single-job twin: tokens / tokens per step
            iterations = req.tokens / shape.plan.tokens_per_step
        else:
            iterations = req.duration_s / packed.step_s
        nodes = nodes_needed(req.gpus, self.gpn)
        cost = checkpoint_cost(shape.params, shape.precision, self.cluster, nodes, shape.plan.gpus,
                               shape.checkpoint.asynchronous, shape.frozen)
        mtbf = self.profile.mtbf_s(shape.plan.gpus, nodes) if self.profile is not None else math.inf
        interval = interval_iterations(shape.checkpoint.interval_s, packed.step_s, cost, mtbf)
        ideal = iterations * packed.step_s
        need = Need(nodes, self.gpn) if req.gpus > self.gpn else Need(1, req.gpus)
        return self._queued(_Job(index, req, shape, None, need, iterations, packed.step_s, cost, interval,
                                 req.submit_s, min(req.time_limit_s, ideal)), site_clock)

    def _service(self, index: int, req: JobRequest, service: Service, site_clock: CarbonClock | None) -> _Job:
        """A serving job: its work is the seconds it serves; nothing to checkpoint, a restart reloads it."""
        nothing = CheckpointCost(0.0, 1.0, 1.0, 0.0, 0.0, 0.0, False)
        return self._queued(_Job(index, req, None, service, Need(1, service.devices_per_replica), req.duration_s, 1.0,
                                 nothing, 1, req.submit_s, min(req.time_limit_s, req.duration_s)), site_clock)

    def _queued(self, job: _Job, site_clock: CarbonClock | None) -> _Job:
        """When the job enters its queue: at submit, or later when the carbon-aware policy (given the site's
        hourly ``site_clock``) holds a deferrable job."""
        req = job.req
        if req.deferrable and site_clock is not None:
            job.release_s = cleanest_start(site_clock, req.submit_s, job.iterations * job.packed_step_s,
                                           self.spec.max_delay_s)
            job.carbon_hold_s = job.release_s - req.submit_s
        return job

    # -- records -------------------------------------------------------------------------------
    def _row(self) -> None:
        now = self.env.now
        row = (now, self.allocated, self.busy, len(self.queue) + len(self.service_queue), len(self.running),
               self.base_it_w + self.dynamic_w, self.fragmented)
        if self.rows and self.rows[-1][0] == now:
            self.rows[-1] = row
        else:
            self.rows.append(row)

    def _power(self, job: _Job) -> None:
        """Charge the job's power from now: the idle share of the GPUs it holds, the dynamic power of those
        its plan uses in its phase; the power it drew since the last change becomes a segment."""
        now = self.env.now
        if now > job.power_since_s and job.power_w:
            self.seg.append((job.index, job.power_since_s, now, job.power_w))
        if job.phase == DONE:
            watts = dynamic = 0.0
        else:
            gpu = self.node_power.gpu
            if job.phase == TRAIN:
                activity = job.service.activity if job.service is not None else self._train_activity(job)
            else:
                activity = gpu.activity["restart" if job.phase == RESTART else "idle"]
            dynamic = job.compute_gpus * self.dynamic_per_gpu_w * activity
            watts = job.held_gpus * self.idle_per_gpu_w + dynamic
        self.dynamic_w += dynamic - job.dynamic_w
        job.power_w, job.dynamic_w, job.power_since_s = watts, dynamic, now
        self._row()

    def _train_activity(self, job: _Job) -> float:
        """A training GPU's mean activity: its step's phases alone, the extra time of contention at
        communication power, and its checkpoint stalls at checkpoint power."""
        gpu = self.node_power.gpu
        solo = self.steps.priced(job.shape, job.placement)
        sp = step_power(gpu, solo)
        extra_s = max(0.0, job.step_s - solo.step_s)
        avg_w = (sp.gpu_avg_w * solo.step_s + extra_s * gpu.phase_w("communication")) / job.step_s
        share = stall_share(job.step_s, job.checkpoint, job.interval)
        avg_w = (1 - share) * avg_w + share * gpu.phase_w("checkpoint")
        span = gpu.limit_w - gpu.idle_w
        return (avg_w - gpu.idle_w) / span if span > 0 else 0.0

    # -- progress ------------------------------------------------------------------------------
    def _advance(self, job: _Job) -> None:
        now = self.env.now
        if job.phase == TRAIN and now > job.mark_s:
            dt = now - job.mark_s
            job.done = min(job.iterations, job.done + dt * job.rate)
            job.train_s += dt
            job.step_time_integral += dt * job.step_s
        job.mark_s = now

    def _set_speed(self, job: _Job) -> None:
        if job.service is not None:                         # a second of service per second
            job.step_s = job.rate = 1.0
            return
        job.step_s = self.steps.step_s(job.shape, job.placement, job.share)
        job.rate = fluid_rate_per_s(job.step_s, job.checkpoint, job.interval)

    def _retime(self, job: _Job) -> None:
        """A job's speed changed: its process recomputes when it ends."""
        if job.process is not None and job.process.is_alive and job.process is not self.env.active_process:
            job.process.interrupt("speed")

    def _contention(self) -> None:
        """Solve the shares of the jobs crossing switch pools; re-time those whose speed changed."""
        jobs = [self.jobs[i] for i in sorted(self.crossing)]
        shares = self.steps.shares([j.traffic for j in jobs]) if jobs else []
        for job, share in zip(jobs, shares):
            share = float(share)
            if abs(share - job.share) > 1e-12:
                self._advance(job)
                job.share = share
                self._set_speed(job)
                self._power(job)
                self._retime(job)

    def _enter_phase(self, job: _Job, phase: str) -> None:
        now = self.env.now
        self._advance(job)
        if job.phase == TRAIN:
            self.busy -= job.busy_gpus
        job.phase, job.phase_since_s = phase, now
        if phase == TRAIN:
            job.busy_gpus = job.gpus_used
            self.busy += job.busy_gpus
        was_crossing = job.index in self.crossing
        is_crossing = phase == TRAIN and job.traffic is not None
        if is_crossing:
            self.crossing.add(job.index)
        else:
            self.crossing.discard(job.index)
            job.share = 1.0
        if phase == TRAIN:
            self._set_speed(job)
        self._power(job)
        if was_crossing or is_crossing:
            self._contention()

    # -- nodes ---------------------------------------------------------------------------------
    def _assign(self, job: _Job, nodes: list[int]) -> None:
        now = self.env.now
        self.pool.take(nodes, job.need.gpus)
        for n in nodes:
            job.spans[n] = now
            self.on_node.setdefault(n, set()).add(job.index)
        self._hold(job, len(nodes) * job.need.gpus)
        job.nodes += nodes
        self._row()

    def _hold(self, job: _Job, gpus: float) -> None:
        """The job holds ``gpus`` more (or fewer) GPUs from now."""
        job.held_gpus += gpus
        self.allocated += gpus
        self.held[job.req.tenant] = self.held.get(job.req.tenant, 0) + gpus

    def _assign_slots(self, job: _Job, slots: list[Slot]) -> None:
        """A serving job takes its slots (already taken from the pool)."""
        now = self.env.now
        for slot in slots:
            if slot.node not in job.spans:
                job.spans[slot.node] = now
                job.nodes.append(slot.node)
            self.on_node.setdefault(slot.node, set()).add(job.index)
            job.slots.append((slot, now))
            self._hold(job, self._gpus_of(job, slot))
        self._row()

    def _gpus_of(self, job: _Job, slot: Slot) -> float:
        return slot.count if slot.gpu < 0 else slot.count / job.service.instances_per_gpu

    def _release_slots(self, job: _Job, node: int) -> int:
        """A serving job lets go of its slots on ``node``; returns the devices freed."""
        freed = 0
        for held in [h for h in job.slots if h[0].node == node]:
            slot, since = held
            release_slot(self.pool, self.parts, slot)
            job.slots.remove(held)
            gpus = self._gpus_of(job, slot)
            job.gpu_seconds += gpus * (self.env.now - since)
            self._hold(job, -gpus)
            freed += slot.count
        job.closed_spans.append(NodeSpan(node, job.spans.pop(node), self.env.now))
        job.nodes.remove(node)
        self.on_node[node].discard(job.index)
        self._row()
        return freed

    def _place(self, job: _Job) -> None:
        """The job's placement class and traffic on the pools, once it holds all its nodes."""
        if job.service is not None:
            job.scalable_units = len({int(self.steps.node_su[n]) for n in job.nodes})
            job.first_placement = ()
            return
        cls, sus = self.steps.classify(tuple(sorted(job.nodes)), job.req.gpus)
        job.placement, job.scalable_units = cls, len(sus)
        if job.first_placement is None:
            job.first_placement = cls
        job.traffic = self.steps.traffic(job.shape, cls, sus) if cls else None

    def _used_nodes(self, job: _Job) -> list[int]:
        """The nodes the job's ranks run on (in rank order); a multi-node plan may leave the last ones idle."""
        if job.service is not None:
            return job.nodes
        return sorted(job.nodes)[:-(-job.shape.plan.gpus // self.gpn)]

    def _release(self, job: _Job, node: int) -> int:
        """The job lets go of ``node`` (a node in repair stays out of the scheduler's use); returns what it
        lost there: one node, or a serving job's devices."""
        now = self.env.now
        if job.service is not None:
            return self._release_slots(job, node)
        job.gpu_seconds += job.need.gpus * (now - job.spans[node])
        job.closed_spans.append(NodeSpan(node, job.spans.pop(node), now))
        job.nodes.remove(node)
        self.on_node[node].discard(job.index)
        self._hold(job, -job.need.gpus)
        self.pool.give([node], job.need.gpus)
        self._row()
        return 1

    def _replacement(self, job: _Job) -> int | None:
        """A node for a job that lost one: the scheduler's (in the job's SUs if it can), else a spare."""
        need = Need(1, job.need.gpus)
        candidates = None
        own = {int(self.steps.node_su[n]) for n in job.nodes}
        if own and job.need.gpus == self.gpn:
            elsewhere = frozenset(n for n in range(self.cluster.nodes) if int(self.steps.node_su[n]) not in own)
            candidates = self.pool.choose(need, "first-fit", elsewhere)
        if candidates is None:
            candidates = self.pool.choose(need, self.spec.policy.placement)
        if candidates is not None:
            return candidates[0]
        if self.spares:
            node = self.spares.pop(0)
            self.pool.set_usable(node, True)
            self.spare_swaps += 1
            return node
        return None

    def _refill(self) -> None:
        """Jobs waiting for a node take the free ones first."""
        for job in list(self.waiting_nodes):
            if job.service is not None:
                slots = self._service_slots(job, job.missing)
                if slots is None:
                    continue
                self._assign_slots(job, slots)
                job.missing = 0
                self.replacements += 1
            while job.missing:
                node = self._replacement(job)
                if node is None:
                    break
                self._assign(job, [node])
                job.missing -= 1
                self.replacements += 1
            if job.missing:
                continue
            self._place(job)
            self.waiting_nodes.remove(job)
            if job.ready is not None and not job.ready.triggered:
                job.ready.succeed()

    def _service_slots(self, job: _Job, devices: int) -> list[Slot] | None:
        """Slots for ``devices`` of a serving job (taken from the pool), or None; a spare node joins the
        pool when nothing else is free."""
        svc = job.service
        while True:
            slots = place_service(self.pool, self.parts, devices, svc.devices_per_replica, svc.profile,
                                  svc.instances_per_gpu, self.spec.policy.placement)
            if slots is not None or not self.spares or job.start_s is None:
                return slots
            node = self.spares.pop(0)
            self.pool.set_usable(node, True)
            self.spare_swaps += 1

    # -- scheduling ----------------------------------------------------------------------------
    def _schedule(self) -> None:
        now = self.env.now
        if self.spec.policy.name == "priority":
            self.fair.advance(now, self.held)
        for job in list(self.service_queue.values()):     # serving jobs first, each as soon as it fits
            slots = self._service_slots(job, job.service.devices)
            if slots is not None:
                del self.service_queue[job.index]
                self._begin(job)
                self._assign_slots(job, slots)
                self._place(job)
                self._enter_phase(job, TRAIN)
                job.process = self.env.process(self._run(job))
        def running() -> list[Running]:
            return [Running(self._estimated_end(j), tuple(j.nodes), j.need.gpus) for j in self.running.values()
                    if j.service is None]

        decision = schedule(self.spec.policy, self.pool, list(self.queue.values()), running, now, self.fair,
                            self.hold)
        if decision.head is not None and self.jobs[decision.head].reserved_start_s is None:
            self.jobs[decision.head].reserved_start_s = decision.head_start_s
        for index, nodes in decision.starts:
            self._start(self.jobs[index], nodes)
        self._fragmentation()
        self._row()

    def _estimated_end(self, job: _Job) -> float:
        """Its time limit, or its remaining work at its current speed (after a restart in progress)."""
        if math.isfinite(job.req.time_limit_s):
            return job.start_s + job.req.time_limit_s
        if job.phase == TRAIN:                  # constant while it trains at one speed
            return job.mark_s + (job.iterations - job.done) / job.rate
        now = self.env.now
        extra = max(0.0, job.restart_end_s - now) if job.phase == RESTART else 0.0
        return now + extra + (job.iterations - job.done) / job.rate

    def _fragmentation(self) -> None:
        """Free GPUs that no waiting job could use, whatever the policy's order."""
        if not self.queue:
            self.fragmented = 0
            return
        small = min((need.gpus for need in self.needs if need.gpus < self.gpn), default=math.inf)
        large = min((need.nodes for need in self.needs if need.gpus == self.gpn), default=math.inf)
        by_free = self.pool.by_free
        partial = sum(by_free[f] * f for f in range(1, self.gpn) if f < small)
        whole = by_free[self.gpn]
        self.fragmented = partial + (whole * self.gpn if whole < large and small > self.gpn else 0)

    def _start(self, job: _Job, nodes: list[int]) -> None:
        del self.queue[job.index]
        self.needs[job.need] -= 1
        if not self.needs[job.need]:
            del self.needs[job.need]
        self._begin(job)
        self._assign(job, nodes)
        self._place(job)
        self._enter_phase(job, TRAIN)
        job.process = self.env.process(self._run(job))

    def _begin(self, job: _Job) -> None:
        self.running[job.index] = job
        now = self.env.now
        job.start_s = now
        job.deadline_s = now + job.req.time_limit_s
        job.mark_s = now

    # -- processes -----------------------------------------------------------------------------
    def _arrivals(self):
        """Jobs enter the queue at their release; one scheduling pass per distinct time."""
        env = self.env
        ordered = sorted(self.jobs, key=lambda j: (j.release_s, j.index))
        i = 0
        while i < len(ordered):
            t = ordered[i].release_s
            if t > env.now:
                yield env.timeout(t - env.now)
            while i < len(ordered) and ordered[i].release_s == t:
                job = ordered[i]
                i += 1
                if job.service is not None:
                    self.service_queue[job.index] = job
                    continue
                hero = self.hold is not None and job.index == self.hold.index
                self.queue[job.index] = Waiting(job.index, job.need, job.estimate_s,
                                                math.inf if hero else job.req.priority, job.req.tenant, job.release_s)
                self.needs[job.need] += 1
            self.events += 1
            self._schedule()
        self.arrived = True
        self._check_done()

    def _check_done(self) -> None:
        if (self.arrived and not self.running and not self.queue and not self.service_queue
                and not self.done.triggered):
            self.done.succeed()

    def _run(self, job: _Job):
        env = self.env
        while True:
            if env.now >= job.deadline_s:
                self._end(job, TIMEOUT)
                return
            try:
                if job.phase == TRAIN:
                    left = (job.iterations - job.done) / job.rate
                    yield env.timeout(max(0.0, min(left, job.deadline_s - env.now)))
                    self._advance(job)
                    if job.done >= job.iterations * (1 - STEP_TOLERANCE):
                        job.done = job.iterations
                        self._end(job, FINISHED)
                        return
                elif job.phase == RESTART:
                    yield env.timeout(max(0.0, min(job.restart_end_s, job.deadline_s) - env.now))
                    if env.now >= job.restart_end_s:
                        job.restart_s += env.now - job.phase_since_s
                        self._enter_phase(job, TRAIN)
                else:  # WAIT: for a node to replace a failed one
                    job.ready = env.event()
                    waits = [job.ready]
                    if math.isfinite(job.deadline_s):
                        waits.append(env.timeout(max(0.0, job.deadline_s - env.now)))
                    yield env.any_of(waits)
                    if job.ready.triggered:
                        job.repair_wait_s += env.now - job.phase_since_s
                        self._restart(job, requeue_s(self.failures.relaunch_s, job.checkpoint.read_s))
            except simpy.Interrupt as interrupt:
                self._advance(job)
                if interrupt.cause != "speed":
                    self._fail(job, interrupt.cause)

    def _restart(self, job: _Job, duration_s: float) -> None:
        job.restart_end_s = self.env.now + duration_s
        self._enter_phase(job, RESTART)

    def _fail(self, job: _Job, failure: tuple) -> None:
        """A failure hit one of the job's nodes: lose the work since the last checkpoint, restart or wait."""
        component, node = failure
        job.interruptions += 1
        if job.phase == RESTART:
            job.restart_s += self.env.now - job.phase_since_s
        elif job.phase == WAIT:
            job.repair_wait_s += self.env.now - job.phase_since_s
        if job.phase == TRAIN:
            durable = durable_steps(job.done, job.interval)
            job.lost_work_s += (job.done - durable) * job.step_s
            job.done = durable
        if component.replace and node in job.nodes:
            job.missing += self._release(job, node)
            if job not in self.waiting_nodes:
                self.waiting_nodes.append(job)
            self._refill()
        restart = restart_s(self.failures.detection_s, self.failures.relaunch_s, job.checkpoint.read_s)
        if job.missing:
            self._enter_phase(job, WAIT)
        else:
            self._place(job)
            self._restart(job, restart)

    def _end(self, job: _Job, status: str) -> None:
        now = self.env.now
        job.status, job.end_s = status, now
        self._enter_phase(job, DONE)
        for node in list(job.nodes):
            self._release(job, node)
        if job in self.waiting_nodes:
            self.waiting_nodes.remove(job)
        del self.running[job.index]
        self.events += 1
        self._refill()
        self._schedule()
        self._check_done()

    def _failures(self):
        env, profile, rng = self.env, self.profile, self.rng
        rates = np.array(profile.job_rates_per_s(self.gpn, 1))
        node_rate = float(rates.sum())
        if node_rate <= 0:
            return
        cumulative = np.cumsum(rates) / node_rate
        total = node_rate * self.cluster.nodes
        while True:
            yield env.timeout(rng.exponential(1.0 / total))
            node = int(rng.integers(self.cluster.nodes))
            component = profile.components[min(int(np.searchsorted(cumulative, rng.random(), side="right")),
                                               len(cumulative) - 1)]
            if node in self.down:
                continue                                    # a node in repair does not fail again (thinning)
            self.failure_count += 1
            self.events += 1
            self.by_component[component.name] = self.by_component.get(component.name, 0) + 1
            for index in sorted(self.on_node.get(node, ())):
                job = self.jobs[index]
                if node not in self._used_nodes(job):
                    if component.replace:                   # a held node its plan leaves idle: let it go
                        self._release(job, node)
                        self._power(job)
                elif job.process is not None and job.process.is_alive:
                    job.process.interrupt((component, node))
            if component.replace:
                self.down.add(node)
                if node in self.spares:
                    self.spares.remove(node)
                self.pool.set_usable(node, False)
                env.process(self._repair(node, rng.exponential(self.failures.repair_mean_s)))
            self._row()

    def _repair(self, node: int, duration_s: float):
        yield self.env.timeout(duration_s)
        self.down.discard(node)
        self.events += 1
        if len(self.spares) < self.cluster.spare_nodes and not self.on_node.get(node):
            self.spares.append(node)
        else:
            self.pool.set_usable(node, True)
        self._refill()
        self._schedule()

    # -- the run -------------------------------------------------------------------------------
    def run(self) -> ClusterRun:
        env = self.env
        self.arrived = False
        self.done = env.event()
        self._row()
        env.process(self._arrivals())
        if self.profile is not None:
            env.process(self._failures())
        env.run(until=env.any_of([self.done, env.timeout(self.spec.horizon_s)]))
        return self._result()

    def _result(self) -> ClusterRun:
        now = self.env.now
        for job in self.running.values():
            self._advance(job)
            if now > job.power_since_s and job.power_w:      # its power until the end of the run
                self.seg.append((job.index, job.power_since_s, now, job.power_w))
            for node in list(job.spans):
                job.closed_spans.append(NodeSpan(node, job.spans[node], now))
                if job.service is None:
                    job.gpu_seconds += job.need.gpus * (now - job.spans[node])
            job.gpu_seconds += sum(self._gpus_of(job, slot) * (now - since) for slot, since in job.slots)
        self._row()
        rows = np.array(self.rows, dtype=float) if self.rows else np.zeros((0, 7))
        series = Series(rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3], rows[:, 4], rows[:, 5], rows[:, 6])
        seg = np.array(self.seg, dtype=float) if self.seg else np.zeros((0, 4))
        segments = PowerSegments(seg[:, 0].astype(np.int64), seg[:, 1], seg[:, 2], seg[:, 3])
        outcomes = tuple(self._outcome(j) for j in self.jobs)
        return ClusterRun(outcomes, series, segments, now, self.spec.horizon_s, self.cluster.gpus,
                          tuple(int(s) for s in self.steps.node_su), self.base_it_w,
                          self.node_power.idle_w, self.infrastructure_w, self.failure_count, dict(self.by_component),
                          self.spare_swaps, self.replacements, self.events, self.steps.priced_count)

    def _outcome(self, job: _Job) -> JobOutcome:
        return JobOutcome(
            name=job.req.name, tenant=job.req.tenant, template=job.req.template, origin=job.req.origin,
            gpus=job.req.gpus, gpus_used=job.shape.plan.gpus if job.service is None else job.req.gpus,
            gpus_allocated=(allocated_gpus(job.req.gpus, self.gpn) if job.service is None
                            else job.service.devices / job.service.instances_per_gpu),
            submit_s=job.req.submit_s, release_s=job.release_s, carbon_hold_s=job.carbon_hold_s,
            start_s=job.start_s, end_s=job.end_s,
            status=job.status, iterations=job.iterations, iterations_done=job.done,
            packed_step_s=job.packed_step_s, ideal_s=job.iterations * job.packed_step_s,
            mean_step_s=job.step_time_integral / job.train_s if job.train_s > 0 else job.packed_step_s,
            placement=job.first_placement or (), scalable_units=job.scalable_units,
            interruptions=job.interruptions, lost_work_s=job.lost_work_s, restart_s=job.restart_s,
            repair_wait_s=job.repair_wait_s,
            node_spans=tuple(sorted(job.closed_spans, key=lambda s: (s.start_s, s.node))),
            gpu_hours=job.gpu_seconds / SECONDS_PER_HOUR,
            reserved_start_s=job.reserved_start_s,
        )


def cleanest_start(clock: CarbonClock, submit_s: float, duration_s: float, max_delay_s: float) -> float:
    """The start within ``max_delay`` (at submit or on an hour) with the lowest mean intensity over the run."""
    best, best_factor = submit_s, clock.mean_factor(submit_s, duration_s)
    hour = math.ceil(submit_s / SECONDS_PER_HOUR) * SECONDS_PER_HOUR
    while hour <= submit_s + max_delay_s:
        factor = clock.mean_factor(hour, duration_s)
        if factor < best_factor - 1e-12:
            best, best_factor = hour, factor
        hour += SECONDS_PER_HOUR
    return best


def simulate_cluster(cluster: ClusterSpec, steps: StepTimes, jobs: list[JobRequest],
                     shapes: dict[tuple[str, int], Shape], services: dict[str, Service], spec: OperationsSpec,
                     failures: FailurePolicy | None, node_power: NodePower, infrastructure_w: float,
                     site_clock: CarbonClock | None = None) -> ClusterRun:
    """Play ``jobs`` on the cluster under ``spec`` with step times from ``steps`` (its cache may serve
    several runs); training jobs run their ``shapes``, serving jobs their ``services``; the same inputs give
    the same run."""
    return _Cluster(cluster, steps, jobs, shapes, services, spec, failures, node_power, infrastructure_w,
                    site_clock).run()
