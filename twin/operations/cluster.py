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
- **Power** (``meter.py``): each job is charged the idle share of the GPUs it holds
  plus its used GPUs' dynamic power in its phase; idle nodes, spares, nodes in repair
  and the fabric make up the rest.
- **Nodes** (``nodes.py``): the scheduler's pool, the spare pool, nodes in repair.
- **Jobs** (``progress.py``): a training job and a service job behind one interface;
  the checkpoint and restart rules are ``twin.jobs.rules``, shared with the
  single-job engine.

Progress within training is fluid: checkpoint stalls are spread over the steps
(``interval`` steps and one stall per cycle) and a failure loses the steps since
the last whole interval. Without failures a job runs exactly its steps at its
step time, as the single-job twin does.
"""

from __future__ import annotations

import gc
import math

import numpy as np
import simpy

from twin import collector
from twin.hardware.specs import ClusterSpec
from twin.jobs.failures import FailurePolicy, drawn_component, policy_profile
from twin.jobs.model import JobKind, Phase
from twin.jobs.rules import requeue_s, restart_s
from twin.operations.jobs import JobRequest, Service, Shape
from twin.operations.meter import PowerMeter
from twin.operations.nodes import NodePool
from twin.operations.progress import (ClusterJob, ServiceJob, ShapePlan, TrainingJob, service_job, shape_plan,
                                     training_job)
from twin.operations.records import (FINISHED, TIMEOUT, UNFINISHED, ClusterRun, JobOutcome, NodeSpan,
                                     OperationsSpec, PowerSegments, Series)
from twin.operations.scheduler import FairShare, Hold, Need, Queue, Running, Waiting, schedule
from twin.operations.steps import StepTimes
from twin.power.devices import NodePower
from twin.power.hourly import CarbonClock
from twin.units import SECONDS_PER_HOUR

# The records are read from here too (``cluster.ClusterRun`` and friends).
__all__ = ["FINISHED", "TIMEOUT", "UNFINISHED", "ClusterRun", "JobOutcome", "NodeSpan", "OperationsSpec",
           "PowerSegments", "Series", "cleanest_start", "simulate_cluster"]

# Below this fraction of a step, the steps left are taken as done (floating-point rounding).
STEP_TOLERANCE = 1e-9
TRAIN, RESTART, REPAIR_WAIT, DONE = Phase.TRAIN, Phase.RESTART, Phase.REPAIR_WAIT, Phase.DONE


class _Cluster:
    """The state of one run and its SimPy processes: arrivals, scheduling, each job's run, failures, repairs."""

    def __init__(self, cluster: ClusterSpec, steps: StepTimes, jobs: list[JobRequest],
                 shapes: dict[tuple[str, int], Shape], services: dict[str, Service], spec: OperationsSpec,
                 failures: FailurePolicy | None, node_power: NodePower, infrastructure_w: float,
                 site_clock: CarbonClock | None):
        self.cluster, self.spec, self.steps, self.failures = cluster, spec, steps, failures
        self.env = simpy.Environment()
        self.rng = np.random.default_rng(spec.seed)
        self.gpn = cluster.node.gpus
        self.node_power, self.infrastructure_w = node_power, infrastructure_w
        self.profile = policy_profile(failures) if failures is not None else None
        self.recording = True                             # each change records a row (off while one is due)
        self.nodes = NodePool(cluster, steps.node_su, spec.policy.placement, self._changed)
        self.meter = PowerMeter(node_power, self.gpn, cluster.nodes, infrastructure_w, steps, self._changed)
        plans: dict[tuple[str, int], ShapePlan] = {}
        for key in dict.fromkeys((req.template, req.gpus) for req in jobs if req.template not in services):
            plans[key] = shape_plan(shapes[key], steps, cluster, self.profile)
        self.jobs: list[ClusterJob] = [
            self._queued(service_job(i, req, services[req.template]) if req.template in services
                         else training_job(i, req, shapes[(req.template, req.gpus)], plans[(req.template, req.gpus)]),
                         site_clock) for i, req in enumerate(jobs)]
        self.queue = Queue()                              # training jobs, in each policy's order
        self.service_queue: dict[int, ServiceJob] = {}    # serving jobs, in release order
        self.needs: dict[Need, int] = {}                  # what the waiting jobs need, with how many of each
        self.running: dict[int, ClusterJob] = {}
        self.waiting_nodes: list[ClusterJob] = []
        self.crossing: set[int] = set()
        self.fair = FairShare(dict(spec.policy.shares), spec.policy.half_life_s)
        self.hold = self._hold(spec.hold)
        self.rows: list[tuple] = []
        self.busy = 0.0
        self.fragmented = 0
        self.events = 0
        self.failure_count = 0
        self.by_component: dict[str, int] = {}
        self._enqueue = {JobKind.TRAINING: self._queue_training, JobKind.SERVICE: self._queue_service}

    # -- set-up ---------------------------------------------------------------------------------
    def _queued(self, job: ClusterJob, site_clock: CarbonClock | None) -> ClusterJob:
        """When the job enters its queue: at submit, or later when the carbon-aware policy (given the site's
        hourly ``site_clock``) holds a deferrable job."""
        req = job.req
        if req.deferrable and site_clock is not None:
            job.release_s = cleanest_start(site_clock, req.submit_s, job.iterations * job.packed_step_s,
                                           self.spec.max_delay_s)
            job.carbon_hold_s = job.release_s - req.submit_s
        return job

    def _hold(self, held: tuple[str, float] | None) -> Hold | None:
        """The hero reservation: its job is released no earlier than its start, on nodes chosen now."""
        if held is None:
            return None
        name, start = held
        hero = next(j for j in self.jobs if j.req.name == name)
        hero.release_s = max(hero.release_s, start)
        nodes = self.nodes.pool.choose(hero.need, "topology")
        return Hold(hero.index, start, frozenset(nodes or ()))

    # -- records -------------------------------------------------------------------------------
    def _row(self) -> None:
        """The cluster now, as the series' row at this time (a later row at the same time replaces it)."""
        now = self.env.now
        row = (now, self.nodes.allocated, self.busy, len(self.queue) + len(self.service_queue), len(self.running),
               self.meter.it_w, self.fragmented)
        rows = self.rows
        if rows and rows[-1][0] == now:
            rows[-1] = row
        else:
            rows.append(row)

    def _changed(self) -> None:
        """Nodes or power changed: record the row, unless a scheduling pass records it once it is done (no time
        passes meanwhile, so only its last row at this time would stay)."""
        if self.recording:
            self._row()

    # -- scheduling ----------------------------------------------------------------------------
    def _schedule(self) -> None:
        now = self.env.now
        recording, self.recording = self.recording, False
        if self.spec.policy.name == "priority":
            self.fair.advance(now, self.nodes.held)
        for job in list(self.service_queue.values()):     # serving jobs first, each as soon as it fits
            slots = self.nodes.service_slots(job, job.service.devices)
            if slots is not None:
                del self.service_queue[job.index]
                self._begin(job)
                self.nodes.take_slots(job, slots, now)
                self._go(job)

        def running() -> list[Running]:
            """The running training jobs as (estimated end, nodes, GPUs per node): plain tuples, read at every
            reservation (the one a job keeps while its estimate holds)."""
            return [j.ending or j.ending_at(now) for j in self.running.values() if j.kind is JobKind.TRAINING]

        decision = schedule(self.spec.policy, self.nodes.pool, self.queue, running, now, self.fair,
                            self.hold)
        if decision.head is not None and self.jobs[decision.head].reserved_start_s is None:
            self.jobs[decision.head].reserved_start_s = decision.head_start_s
        for index, nodes in decision.starts:
            self._start(self.jobs[index], nodes)
        self._fragmentation()
        self.recording = recording
        self._row()

    def _fragmentation(self) -> None:
        """Free GPUs that no waiting job could use, whatever the policy's order."""
        if not self.queue:
            self.fragmented = 0
            return
        gpn = self.gpn
        small = large = math.inf        # the fewest GPUs a job within a node needs, the fewest whole nodes
        for nodes, gpus in self.needs:
            if gpus < gpn:
                small = min(small, gpus)
            elif gpus == gpn:
                large = min(large, nodes)
        by_free = self.nodes.pool.by_free
        partial = 0
        for f in range(1, min(gpn, small)):
            partial += by_free[f] * f
        whole = by_free[gpn]
        self.fragmented = partial + (whole * gpn if whole < large and small > gpn else 0)

    def _start(self, job: TrainingJob, nodes: list[int]) -> None:
        del self.queue[job.index]
        left = self.needs[job.need] - 1
        if left:
            self.needs[job.need] = left
        else:
            del self.needs[job.need]
        self._begin(job)
        self.nodes.take_nodes(job, nodes, self.env.now)
        self._go(job)

    def _begin(self, job: ClusterJob) -> None:
        self.running[job.index] = job
        now = self.env.now
        job.start_s = now
        job.deadline_s = now + job.req.time_limit_s
        job.mark_s = now

    def _go(self, job: ClusterJob) -> None:
        """A job that holds its nodes starts working."""
        job.place(self.steps)
        self._enter_phase(job, TRAIN)
        job.process = self.env.process(self._run(job))

    # -- phases and speeds -----------------------------------------------------------------------
    def _enter_phase(self, job: ClusterJob, phase: Phase) -> None:
        now = self.env.now
        job.advance(now)
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
            job.set_speed(self.steps)
        self.meter.charge(job, now)
        if was_crossing or is_crossing:
            self._contention()

    def _contention(self) -> None:
        """Solve the shares of the jobs crossing switch pools; re-time those whose speed changed."""
        jobs = [self.jobs[i] for i in sorted(self.crossing)]
        shares = self.steps.shares([j.traffic for j in jobs]) if jobs else []
        for job, share in zip(jobs, shares):
            share = float(share)
            if abs(share - job.share) > 1e-12:
                job.advance(self.env.now)
                job.share = share
                job.set_speed(self.steps)
                self.meter.charge(job, self.env.now)
                self._retime(job)

    def _retime(self, job: ClusterJob) -> None:
        """A job's speed changed: its process recomputes when it ends."""
        if job.process is not None and job.process.is_alive and job.process is not self.env.active_process:
            job.process.interrupt("speed")

    def _restart(self, job: ClusterJob, duration_s: float) -> None:
        job.restart_end_s = self.env.now + duration_s
        self._enter_phase(job, RESTART)

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
                self._enqueue[ordered[i].kind](ordered[i])
                i += 1
            self.events += 1
            self._schedule()
        self.arrived = True
        self._check_done()

    def _queue_service(self, job: ServiceJob) -> None:
        self.service_queue[job.index] = job

    def _queue_training(self, job: TrainingJob) -> None:
        hero = self.hold is not None and job.index == self.hold.index
        self.queue[job.index] = Waiting(job.index, job.need, job.estimate_s,
                                        math.inf if hero else job.req.priority, job.req.tenant, job.release_s)
        self.needs[job.need] = self.needs.get(job.need, 0) + 1

    def _check_done(self) -> None:
        if (self.arrived and not self.running and not self.queue and not self.service_queue
                and not self.done.triggered):
            self.done.succeed()

    def _run(self, job: ClusterJob):
        """A job's life from its start: work, restarts, waits for nodes, until it ends or times out."""
        env = self.env
        while True:
            if env.now >= job.deadline_s:
                self._end(job, TIMEOUT)
                return
            try:
                if job.phase == TRAIN:
                    left = (job.iterations - job.done) / job.rate
                    yield env.timeout(max(0.0, min(left, job.deadline_s - env.now)))
                    job.advance(env.now)
                    if job.done >= job.iterations * (1 - STEP_TOLERANCE):
                        job.done = job.iterations
                        job.ending = None
                        self._end(job, FINISHED)
                        return
                elif job.phase == RESTART:
                    yield env.timeout(max(0.0, min(job.restart_end_s, job.deadline_s) - env.now))
                    if env.now >= job.restart_end_s:
                        job.tally.restart_s += env.now - job.phase_since_s
                        self._enter_phase(job, TRAIN)
                else:
                    yield from self._wait_for_nodes(job)
            except simpy.Interrupt as interrupt:
                job.advance(env.now)
                if interrupt.cause != "speed":
                    self._fail(job, interrupt.cause)

    def _wait_for_nodes(self, job: ClusterJob):
        """Wait for a node to replace a failed one (or for the time limit), then relaunch."""
        env = self.env
        job.ready = env.event()
        waits = [job.ready]
        if math.isfinite(job.deadline_s):
            waits.append(env.timeout(max(0.0, job.deadline_s - env.now)))
        yield env.any_of(waits)
        if job.ready.triggered:
            job.tally.repair_wait_s += env.now - job.phase_since_s
            self._restart(job, requeue_s(self.failures.relaunch_s, job.checkpoint.read_s))

    def _fail(self, job: ClusterJob, failure: tuple) -> None:
        """A failure hit one of the job's nodes: lose the work since the last checkpoint, restart or wait."""
        component, node = failure
        job.interrupted(self.env.now)
        if component.replace and node in job.nodes:
            job.missing += self.nodes.release(job, node, self.env.now)
            if job not in self.waiting_nodes:
                self.waiting_nodes.append(job)
            self._refill()
        restart = restart_s(self.failures.detection_s, self.failures.relaunch_s, job.checkpoint.read_s)
        if job.missing:
            self._enter_phase(job, REPAIR_WAIT)
        else:
            job.place(self.steps)
            self._restart(job, restart)

    def _end(self, job: ClusterJob, status: str) -> None:
        now = self.env.now
        self.recording = False                          # the pass below records the row
        job.status, job.end_s = status, now
        self._enter_phase(job, DONE)
        self.nodes.release_all(job, now)
        if job in self.waiting_nodes:
            self.waiting_nodes.remove(job)
        del self.running[job.index]
        self.events += 1
        self._refill()
        self.recording = True
        self._schedule()
        self._check_done()

    def _refill(self) -> None:
        """Jobs waiting for a node take the free ones first."""
        for job in list(self.waiting_nodes):
            self.nodes.fill(job, self.env.now)
            if job.missing:
                continue
            job.place(self.steps)
            self.waiting_nodes.remove(job)
            if job.ready is not None and not job.ready.triggered:
                job.ready.succeed()

    def _failures(self):
        """Node failures: one Poisson process for the cluster, each on a node drawn at random."""
        env, profile, rng = self.env, self.profile, self.rng
        node_rate, cumulative = profile.shares(self.gpn, 1)
        if node_rate <= 0:
            return
        total = node_rate * self.cluster.nodes
        while True:
            yield env.timeout(rng.exponential(1.0 / total))
            node = int(rng.integers(self.cluster.nodes))
            component = drawn_component(profile, cumulative, rng.random())
            if node in self.nodes.down:
                continue                                    # a node in repair does not fail again (thinning)
            self.failure_count += 1
            self.events += 1
            self.by_component[component.name] = self.by_component.get(component.name, 0) + 1
            for index in sorted(self.nodes.on_node.get(node, ())):
                job = self.jobs[index]
                if node not in job.used_nodes(self.gpn):
                    if component.replace:                   # a held node its plan leaves idle: let it go
                        self.nodes.release(job, node, env.now)
                        self.meter.charge(job, env.now)
                elif job.process is not None and job.process.is_alive:
                    job.process.interrupt((component, node))
            if component.replace:
                self.nodes.failed(node)
                env.process(self._repair(node, rng.exponential(self.failures.repair_mean_s)))
            self._row()

    def _repair(self, node: int, duration_s: float):
        yield self.env.timeout(duration_s)
        self.nodes.repaired(node)
        self.events += 1
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
            job.advance(now)
            self.meter.close(job, now)
            job.close(now)
        self._row()
        rows = np.array(self.rows, dtype=float) if self.rows else np.zeros((0, 7))
        series = Series(rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3], rows[:, 4], rows[:, 5], rows[:, 6])
        outcomes = tuple(j.outcome(self.gpn) for j in self.jobs)
        return ClusterRun(outcomes, series, self.meter.segments(), now, self.spec.horizon_s, self.cluster.gpus,
                          self.steps.node_su, self.meter.base_it_w,
                          self.node_power.idle_w, self.infrastructure_w, self.failure_count, dict(self.by_component),
                          self.nodes.spare_swaps, self.nodes.replacements, self.events, self.steps.priced_count)


def cleanest_start(clock: CarbonClock, submit_s: float, duration_s: float, max_delay_s: float) -> float:
    """The start within ``max_delay`` (at submit or on an hour) with the lowest mean intensity over the run."""
    starts = [submit_s]
    hour = math.ceil(submit_s / SECONDS_PER_HOUR) * SECONDS_PER_HOUR
    while hour <= submit_s + max_delay_s:
        starts.append(hour)
        hour += SECONDS_PER_HOUR
    factors = _mean_factors(clock, starts, duration_s)
    best, best_factor = submit_s, factors[0]
    for start, factor in zip(starts[1:], factors[1:]):
        if factor < best_factor - 1e-12:
            best, best_factor = start, factor
    return best


def _mean_factors(clock: CarbonClock, starts: list[float], duration_s: float) -> list[float]:
    """``clock.mean_factor(start, duration_s)`` for every start, the integrals read in one call (each value
    the same as one call would give: the integral is taken element by element)."""
    if duration_s <= 0:
        return [clock.mean_factor(start, duration_s) for start in starts]
    ends = [start + duration_s for start in starts]
    integral = clock.integral_s(np.array([t for pair in zip(starts, ends) for t in pair]), max(ends))
    return [float(d) / duration_s for d in (integral[1::2] - integral[::2]).tolist()]


def simulate_cluster(cluster: ClusterSpec, steps: StepTimes, jobs: list[JobRequest],
                     shapes: dict[tuple[str, int], Shape], services: dict[str, Service], spec: OperationsSpec,
                     failures: FailurePolicy | None, node_power: NodePower, infrastructure_w: float,
                     site_clock: CarbonClock | None = None) -> ClusterRun:
    """Play ``jobs`` on the cluster under ``spec`` with step times from ``steps`` (its cache may serve
    several runs); training jobs run their ``shapes``, serving jobs their ``services``; the same inputs give
    the same run."""
    with collector.paused():           # its jobs, events and records live until the run ends (twin/collector.py)
        run = _Cluster(cluster, steps, jobs, shapes, services, spec, failures, node_power, infrastructure_w,
                       site_clock).run()
        gc.collect(0)                  # the run's own state (its processes hold it in cycles) is freed at once:
    return run                         # all of it is young, so this walks what the run built and nothing older
