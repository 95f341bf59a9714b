"""Level 3 without SimPy: one sample of the job as a plain event loop, for the Monte Carlo's many samples.

The job engine's SimPy processes (``engine/job.py``) are the reference. A Monte Carlo of a hundred samples
with hundreds of failures each spends most of its time in SimPy's event machinery, so the samples are played
here by a loop that jumps from event to event with the same rules (``twin/jobs/rules.py``) and the same
random draws in the same order, and gives the same sample to the last digit for a given generator
(``tests/test_job.py`` compares them); with ``record`` it also keeps the sample's timeline as the SimPy
processes do (``timeline.py``), for the sample a result shows. The draws are the generator's own, decoded a
block at a time (``draws.py``). A job that does not shrink plays its common cycles (a failure while
training, restarts no failure cuts short, a spare to take) in one loop, ``_cycles``, and leaves every other
case to the methods of each step; about a third of a failure's cost goes with the calls. Many samples of
such a job play their common failures side by side (``job_lockstep.py``) and come here for the rest, from
the start of a block of training or of a restart (``Sample.advance``).

Two clocks run side by side, as the two SimPy processes do. The job trains, restarts or waits for a repaired
node; the failures of its devices come as one Poisson process, each drawn (its component, then the next
interval) when it fires. The order of the draws is the reference's:

- a failure of a job that trains or restarts draws its component, then the next interval, then the job
  draws the repair time of a node that must be replaced;
- a failure while the job waits for a repaired node interrupts nothing: its component is drawn and the
  failures sleep until the wait ends;
- after such a sleep, and when a job that may shrink has refilled (a new failure rate), the next interval
  is drawn when the job next waits, with its size at that moment.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from twin.engine.draws import Draws
from twin.engine.timeline import Block, expanded
from twin.jobs.failures import Component, drawn_component
from twin.jobs.model import Event, Phase, Segment
from twin.jobs.rules import CheckpointCycle, checkpoint_cycle, checkpoints_before_end, interruption, lost_s, requeue_s


class JobNodes:
    """The job's nodes, as both engines keep them: spare nodes, nodes in repair (their return times, a heap)
    and the nodes the job runs without."""

    def __init__(self, spec):
        self.spec = spec
        self.spares = spec.spare_nodes
        self.missing = 0
        self.repairs: list[float] = []

    def returns(self, now_s: float) -> None:
        """Repaired nodes come back to the spare pool."""
        while self.repairs and self.repairs[0] <= now_s:
            heapq.heappop(self.repairs)
            self.spares += 1

    def lose(self, repaired_s: float) -> None:
        """A node leaves the job for repair until ``repaired_s``."""
        heapq.heappush(self.repairs, repaired_s)
        self.missing += 1

    def data_parallel(self) -> int:
        """Replicas running: one less for each node the job runs without (at least one)."""
        replicas = self.spec.data_parallel - self.missing
        return replicas if replicas > 1 else 1

    def active_share(self) -> float:
        """The share of the job's nodes running (its failure rate scales with it)."""
        return (self.spec.nodes - self.missing) / self.spec.nodes

    def refill_move(self, now_s: float, out) -> str:
        """One move to fill the job back up: ``spare`` (one taken from the pool), ``shrink`` (go on with fewer
        replicas) or ``wait`` (for the next repaired node, ``repairs[0]``)."""
        self.returns(now_s)
        if self.spares > 0:
            self.spares -= 1
            self.missing -= 1
            out.spares_used += 1
            return "spare"
        if self.spec.allow_shrink and self.data_parallel() > 1:
            return "shrink"
        return "wait"


class _Horizon(Exception):
    """The sample reached the simulation's wall-time horizon."""


class Sample:
    """One sample's clocks and counters (the fields of ``JobSample``).

    A Monte Carlo plays hundreds of thousands of failures: the spec's fields read at every event are kept on
    the sample and the failures' clock advances inline (``_until``)."""

    def __init__(self, spec, draws: Draws, out, record: bool = False):
        self.spec, self.out, self.record = spec, out, record
        self.blocks: list[Block] = []           # recorded: the blocks of training (``timeline.py``)
        self.t: float = 0                       # SimPy's clock starts at the integer 0: so does a record's first block
        self.nodes = JobNodes(spec)
        self.rate_full, cumulative = spec.profile.shares(spec.gpus, spec.nodes)
        self.cumulative = cumulative.tolist()   # a list: bisected at every failure
        self.next_failure_s = math.inf          # the failures' clock: when the next one fires
        self.redraw = self.rate_full > 0        # the next interval is drawn when the job next waits
        self.reads(draws)
        self.cycles: dict[int, tuple] = {}      # replicas running → (step, checkpoint cycle)
        self.requeue_s = requeue_s(spec.relaunch_s, spec.checkpoint.read_s)
        self.horizon_s = spec.horizon_s

    def reads(self, draws: Draws) -> None:
        """Draw from ``draws`` from here on: the generator's own numbers, without a call into numpy per draw."""
        self.draws = draws
        self.exponential, self.random = draws.exponential, draws.random

    # -- the failures' clock --------------------------------------------------------------------
    def draw_interval(self) -> None:
        if self.redraw:
            self.next_failure_s = self._next_failure_after(self.t)
            self.redraw = False

    def _next_failure_after(self, t_s: float) -> float:
        """The next failure's time, drawn at ``t_s`` from the job's failure rate at its size now."""
        return t_s + self.exponential(1.0 / (self.rate_full * self.nodes.active_share()))

    def _until(self, end_s: float) -> Component | None:
        """Advance to ``end_s`` unless a failure comes first: then to it, and return its component, drawn
        before the next interval (a failure of a job that trains or restarts)."""
        if self.redraw:
            self.draw_interval()
        next_s = self.next_failure_s
        if next_s < end_s:
            if next_s > self.horizon_s:
                raise _Horizon
            self.t = next_s
            component = drawn_component(self.spec.profile, self.cumulative, self.random())
            self.next_failure_s = self._next_failure_after(next_s)
            return component
        if end_s > self.horizon_s:
            raise _Horizon
        self.t = end_s
        return None

    def _wait_for_repair(self, end_s: float) -> None:
        """Wait until ``end_s``: failures meanwhile interrupt nothing; the first puts the failures to sleep."""
        self.draw_interval()
        if self.next_failure_s < end_s:
            if self.next_failure_s > self.horizon_s:
                raise _Horizon
            self.random()                       # its component, drawn and set aside
            self.next_failure_s, self.redraw = math.inf, True
        if end_s > self.horizon_s:
            raise _Horizon
        self.t = end_s

    # -- the job ------------------------------------------------------------------------------
    def step_and_cycle(self) -> tuple[float, CheckpointCycle]:
        """The step and the checkpoint cycle on the replicas running now."""
        spec = self.spec
        replicas = self.nodes.data_parallel()
        known = self.cycles.get(replicas)
        if known is None:
            step = spec.step_s * spec.data_parallel / replicas
            known = self.cycles[replicas] = (step, checkpoint_cycle(spec.interval_iterations, step, spec.checkpoint))
        return known

    def _train(self, start_iter: int) -> tuple[Component | None, int]:
        """Train from a durable checkpoint to the end: (the failure that stopped it or None, durable steps)."""
        spec, out = self.spec, self.out
        every = spec.interval_iterations
        step, cycle = self.step_and_cycle()
        remaining = spec.iterations - start_iter
        n_ckpt = checkpoints_before_end(remaining, every)
        t0 = self.t
        failed = self._until(t0 + (remaining * step + n_ckpt * cycle.checkpoint_s))
        if failed is None:
            if self.record:
                self._block(t0, cycle, n_ckpt, n_ckpt)
            return self._ended(n_ckpt, cycle)
        cycles, in_checkpoint, trained_s, saved, checkpoint_s = interruption(self.t - t0, cycle, n_ckpt)
        out.lost_work_s += lost_s(trained_s, saved, cycle)
        out.checkpoints += saved
        out.checkpoint_s += checkpoint_s
        if self.record:
            self._block(t0, cycle, cycles + (1 if in_checkpoint else 0), saved)
        return failed, start_iter + saved * every if saved else start_iter

    def _block(self, t0: float, cycle: CheckpointCycle, checkpoints: int, saved: int) -> None:
        """Record the block of training from ``t0`` to now."""
        self.blocks.append(Block(t0, self.t, cycle.train_s, cycle.checkpoint_s, checkpoints, cycle.durable_lag_s))
        self.out.segments.append((len(self.blocks) - 1, saved))

    def _ended(self, n_ckpt: int, cycle: CheckpointCycle) -> tuple[None, int]:
        """Trained to the end: the last block's ``n_ckpt`` checkpoints counted."""
        self.out.checkpoints += n_ckpt
        self.out.checkpoint_s += n_ckpt * cycle.checkpoint_s
        return None, self.spec.iterations

    def _restarting(self, duration_s: float) -> Component | None:
        start = self.t
        again = self._until(start + duration_s)
        if self.record and self.t > start:
            self.out.segments.append(Segment(start, self.t, Phase.RESTART))
        self.out.restart_s += self.t - start
        return again

    def _refill(self) -> None:
        """Take spare nodes for the missing ones; wait for repaired nodes when there are none."""
        nodes = self.nodes
        if nodes.repairs and nodes.repairs[0] <= self.t:
            nodes.returns(self.t)
        while nodes.missing > 0:
            move = nodes.refill_move(self.t, self.out)
            if move == "shrink":
                break
            if move == "wait":
                t_wait = self.t
                self._wait_for_repair(self.t + (nodes.repairs[0] - self.t))
                if self.record and self.t > t_wait:
                    self.out.segments.append(Segment(t_wait, self.t, Phase.REPAIR_WAIT))
                self.out.repair_wait_s += self.t - t_wait

    def _recover(self, component: Component) -> Component | None:
        """One failure: replace or repair, wait if it must, restart. Returns a failure meanwhile, or None."""
        spec, out = self.spec, self.out
        out.interruptions += 1
        out.by_component[component.name] = out.by_component.get(component.name, 0) + 1
        if self.record:
            out.events.append(Event(self.t, "failure", component.name))
        nodes = self.nodes
        if nodes.repairs and nodes.repairs[0] <= self.t:
            nodes.returns(self.t)
        if component.replace:
            nodes.lose(self.t + self.exponential(spec.repair_mean_s))
        return self._restart()

    def _restart(self) -> Component | None:
        """The restart after a failure at ``self.t``, counted: detection, spares or a wait for the missing
        nodes, relaunch. Returns a failure meanwhile, or None."""
        spec, out, nodes = self.spec, self.out, self.nodes
        again = self._restarting(spec.detection_s)
        if again is not None:
            return again
        if nodes.missing > 0 or (nodes.repairs and nodes.repairs[0] <= self.t):
            self._refill()
        out.min_data_parallel = min(out.min_data_parallel, nodes.data_parallel())
        if spec.allow_shrink and self.rate_full > 0:
            self.next_failure_s, self.redraw = math.inf, True     # a new size: a new failure rate
        if self.record:
            out.events.append(Event(self.t, "restart"))
        return self._restarting(self.requeue_s)

    def _cycles(self, durable: int, once: bool = False) -> tuple[Component | None, int]:
        """``_train`` then ``_recover`` inline (the same steps and draws) for a job that does not shrink, cycle
        after cycle while no failure comes before it is back (or ``once``: one cycle); returns as ``_train``
        does, or with no failure and the durable steps so far after a cycle ``once``."""
        spec, out, nodes = self.spec, self.out, self.nodes
        iterations, every, profile = spec.iterations, spec.interval_iterations, spec.profile
        step, cycle = self.step_and_cycle()          # the same replicas all along: missing nodes come back first
        detection_s, requeue_s, horizon_s = spec.detection_s, self.requeue_s, self.horizon_s
        exponential, random, cumulative = self.exponential, self.random, self.cumulative
        interval_mean_s = 1.0 / (self.rate_full * 1.0) if self.rate_full > 0 else math.inf  # all nodes running
        t = self.t
        while True:
            self.draw_interval()                           # when it is due
            remaining = iterations - durable
            n_ckpt = checkpoints_before_end(remaining, every)
            end_s = t + (remaining * step + n_ckpt * cycle.checkpoint_s)
            next_s = self.next_failure_s
            if next_s >= end_s:
                self._until(end_s)                          # no failure first: to the end (or the horizon)
                return self._ended(n_ckpt, cycle)
            if next_s > horizon_s:
                raise _Horizon
            component = drawn_component(profile, cumulative, random())
            self.next_failure_s = after_s = next_s + exponential(interval_mean_s)
            _, _, trained_s, saved, checkpoint_s = interruption(next_s - t, cycle, n_ckpt)
            out.lost_work_s += lost_s(trained_s, saved, cycle)
            out.checkpoints += saved
            out.checkpoint_s += checkpoint_s
            if saved:
                durable += saved * every
            self.t = t = next_s
            requeued_s = (t + detection_s) + requeue_s
            if after_s < requeued_s or requeued_s > horizon_s or out.interruptions >= spec.max_interruptions:
                return component, durable
            out.interruptions += 1
            out.by_component[component.name] = out.by_component.get(component.name, 0) + 1
            if nodes.repairs and nodes.repairs[0] <= t:
                nodes.returns(t)
            if component.replace:
                nodes.lose(t + exponential(spec.repair_mean_s))
            detected_s = t + detection_s
            out.restart_s += detected_s - t
            self.t = t = detected_s
            if nodes.repairs and nodes.repairs[0] <= t:
                nodes.returns(t)
            if nodes.missing > nodes.spares:               # it waits for a repaired node
                self._refill()
                again = self._restarting(requeue_s)
                if again is not None:
                    return again, durable
                t = self.t
            else:
                out.spares_used += nodes.missing            # a spare for each missing node (``refill_move``);
                nodes.spares -= nodes.missing               # every replica runs again (min_data_parallel stays)
                nodes.missing = 0
                back_s = t + requeue_s
                out.restart_s += back_s - t
                self.t = t = back_s
            if once:
                return None, durable

    def play(self, durable: int = 0) -> None:
        """Play on from the start of a block of training on ``durable`` steps to the sample's end."""
        train = self._train if self.spec.allow_shrink or self.record else self._cycles
        while durable < self.spec.iterations:
            failed, durable = train(durable)
            if not self._recovered(failed):
                return
        self.out.wall_s = self.t

    def advance(self, durable: int, restarting: bool) -> int | None:
        """Play a job that does not shrink on from the start of a block of training on ``durable`` steps (one
        cycle and what follows it), or from a restart (``_restart``) after a failure at ``self.t``, to the
        next block's start with its next failure drawn: its durable steps, or None when the sample ended."""
        if restarting:
            failed = self._restart()
        else:
            failed, durable = self._cycles(durable, once=True)
        if not self._recovered(failed):
            return None
        if durable >= self.spec.iterations:
            self.out.wall_s = self.t
            return None
        self.draw_interval()
        return durable

    def _recovered(self, failed: Component | None) -> bool:
        """Recover from ``failed`` and any failure meanwhile; False when the sample stops at its failure bound."""
        out = self.out
        while failed is not None:
            if out.interruptions >= self.spec.max_interruptions:
                out.finished, out.stopped_by, out.wall_s = False, "interruptions", self.t
                return False
            failed = self._recover(failed)
        return True


def play_job(spec, rng: np.random.Generator, out, record: bool = False) -> None:
    """Play one sample of ``spec`` (a ``JobSpec``) into ``out`` (a fresh ``JobSample``); ``record`` keeps its
    timeline, as the SimPy processes record it."""
    sample = Sample(spec, Draws(rng), out, record)
    played_on(sample, 0)
    if record:
        out.segments, out.events = expanded(sample.blocks, out.segments, out.events)


def played_on(sample: Sample, durable: int) -> None:
    """``sample.play(durable)``, the sample stopped at the horizon if it gets there."""
    try:
        sample.play(durable)
    except _Horizon:
        _stopped_at_horizon(sample)


def advanced(sample: Sample, durable: int, restarting: bool) -> int | None:
    """``sample.advance(durable, restarting)``, the sample stopped at the horizon (None) if it gets there."""
    try:
        return sample.advance(durable, restarting)
    except _Horizon:
        _stopped_at_horizon(sample)
        return None


def _stopped_at_horizon(sample: Sample) -> None:
    sample.out.finished, sample.out.stopped_by, sample.out.wall_s = False, "horizon", sample.spec.horizon_s
