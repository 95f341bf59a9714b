"""Level 3, discrete-event: the whole training job with failures, checkpoints and spares.

The clock jumps from event to event (failure, end of a restart, a repaired
node, the end of training); between two events the job advances a whole
block of iterations at the step time, with its periodic checkpoints computed
in closed form. A run of weeks with hundreds of failures costs a few thousand
events, whatever the number of iterations or GPUs.

SimPy processes, after SimPy's machine-shop example: ``_job`` trains, and
``_failures`` draws the next failure of the job's devices (one Poisson process
of the summed component rates, the component drawn in proportion to its rate)
and interrupts ``_job``. On a failure the job loses the work since its last
durable checkpoint; the faulty node (for hardware causes) goes to repair and a
spare takes its place; without a spare the job waits for a repaired node, or,
when ``cluster.allow_shrink`` is set, restarts on fewer data-parallel replicas.
A restart costs detection + relaunch + reading the checkpoint back.

Checkpoints every ``interval`` iterations: synchronous ones stop training for
the write; asynchronous ones stop it only for the host copy and become durable
when the background write ends (the next snapshot waits for that write).
``interval: auto`` is Daly's (2006) first-order optimum, which reduces to
Young's (1974) sqrt(2·δ·M) for δ << M (δ: checkpoint stall, M: job MTBF).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache, partial

import numpy as np
import simpy

from twin.cores import can_split, split_map
from twin.engine.budget import expected_failures, job_costs, per_sample_share
from twin.engine.job_lockstep import alike, lockstep_plays, play_jobs, play_samples
from twin.engine.job_loop import JobNodes, play_job
from twin.engine.timeline import Block, expanded
from twin.hardware.specs import ClusterSpec
from twin.jobs.checkpoint import CheckpointCost, CheckpointPolicy
from twin.jobs.failures import FailurePolicy, FailureProfile, drawn_component, policy_profile
from twin.jobs.model import Event, Phase, Segment
from twin.jobs.rules import (CheckpointCycle, checkpoint_cycle, checkpoint_plan, checkpoints_before_end, interrupted,
                             requeue_s)
from twin.quantiles import percentile, percentiles

TRAIN, RESTART, REPAIR_WAIT = Phase.TRAIN, Phase.RESTART, Phase.REPAIR_WAIT
# Work bound: failures simulated over all the samples of one job. A job expected to finish whose
# samples would not fit is refused up front (twin.engine.budget); a sample of a job that never
# finishes stops at its share and is reported as not finished (docs/engine.md). At most 10-20 s of CPU:
# the event loop (twin.engine.job_loop) plays about 110,000-200,000 failures per CPU-second of the
# 16,384-GPU Llama 3 job, its samples side by side (twin.engine.job_lockstep) 220,000-500,000
# (benchmarks/bench_job.py, the machines of docs/speed.md), so 1,000 samples of it (~868 failures each) run.
MAX_SIMULATED_FAILURES = 2_000_000
# Failures over all the samples past which the samples are split over two cores (twin/cores.py): about
# 0.08 s of play at 8 µs a failure (the 16,384-GPU scenario: 74,500 failures in 0.54-0.69 s on one core, 2-core
# machine of docs/speed.md), against a few milliseconds to fork and send a half back.
SPLIT_FAILURES = 10_000


@dataclass(frozen=True)
class JobSpec:
    """Everything the job engine needs, in SI units."""
    iterations: int
    step_s: float
    nodes: int                       # nodes the job runs on
    gpus: int
    data_parallel: int               # replicas; a lost node takes one out when the job shrinks
    spare_nodes: int
    checkpoint: CheckpointCost
    interval_iterations: int | None  # iterations between checkpoints; None: none (no failures)
    detection_s: float               # failure → the job knows (collective timeout, health checks)
    relaunch_s: float                # reschedule, start processes, initialise communicators
    repair_mean_s: float             # mean time to repair a node (exponential)
    allow_shrink: bool
    profile: FailureProfile
    horizon_s: float = math.inf      # wall time at which the simulation stops
    max_interruptions: float = math.inf    # failures one sample may simulate

    @property
    def ideal_s(self) -> float:
        return self.iterations * self.step_s

    @property
    def interval_s(self) -> float:
        """Training time between checkpoints (inf: none)."""
        return self.interval_iterations * self.step_s if self.interval_iterations is not None else math.inf


@dataclass
class JobSample:
    """One simulated run."""
    wall_s: float = 0.0
    finished: bool = True            # False: stopped at the horizon or the failure bound
    stopped_by: str = ""             # horizon | interruptions, when not finished
    interruptions: int = 0
    by_component: dict[str, int] = field(default_factory=dict)
    lost_work_s: float = 0.0
    restart_s: float = 0.0
    repair_wait_s: float = 0.0
    checkpoint_s: float = 0.0
    checkpoints: int = 0
    spares_used: int = 0
    min_data_parallel: int = 0
    segments: list = field(default_factory=list)    # Segment (and block markers while running)
    events: list[Event] = field(default_factory=list)


class _Run:
    """State of one sample: the SimPy processes and their bookkeeping."""

    def __init__(self, spec: JobSpec, rng: np.random.Generator, record: bool):
        self.spec, self.rng, self.record = spec, rng, record
        self.env = simpy.Environment()
        self.out = JobSample(min_data_parallel=spec.data_parallel)
        self.phase = TRAIN
        self.nodes = JobNodes(spec)
        self.blocks: list[Block] = []
        self.resumed: simpy.Event | None = None    # fires when a repair wait ends
        self.rate_full, self.cumulative = spec.profile.shares(spec.gpus, spec.nodes)
        self.job = self.env.process(self._job())
        self.failure_process = self.env.process(self._failures()) if self.rate_full > 0 else None

    # -- helpers -----------------------------------------------------------------
    def _segment(self, start: float, end: float, phase: str) -> None:
        if self.record and end > start:
            self.out.segments.append(Segment(start, end, phase))

    def _event(self, t: float, kind: str, component: str = "") -> None:
        if self.record:
            self.out.events.append(Event(t, kind, component))

    def _step_s(self) -> float:
        """Step time on the current replicas (the global batch is spread over fewer of them)."""
        return self.spec.step_s * self.spec.data_parallel / self.nodes.data_parallel()

    # -- processes -----------------------------------------------------------------
    def _failures(self):
        """Failures of the job's devices; each interrupts the job unless it is waiting for repair."""
        while True:
            active = self.nodes.active_share()
            try:
                yield self.env.timeout(self.rng.exponential(1.0 / (self.rate_full * active)))
            except simpy.Interrupt:
                continue                        # the job's size changed: redraw (memoryless)
            component = drawn_component(self.spec.profile, self.cumulative, self.rng.random())
            if self.phase == REPAIR_WAIT and self.resumed is not None:
                try:
                    yield self.resumed          # idle nodes' failures interrupt nothing: sleep (memoryless)
                except simpy.Interrupt:
                    pass
            elif self.job.is_alive:
                self.job.interrupt(component)

    def _job(self):
        spec, env = self.spec, self.env
        durable = 0                              # iterations safe in a checkpoint
        while durable < spec.iterations:
            failed, durable = yield from self._train(durable)
            if failed is None:
                break
            component = failed
            while component is not None:
                if self.out.interruptions >= spec.max_interruptions:
                    self.out.finished, self.out.stopped_by = False, "interruptions"
                    self.out.wall_s = env.now
                    return
                component = yield from self._recover(component)
        self.out.wall_s = env.now

    def _train(self, start_iter: int):
        """Train from a durable checkpoint to the end; returns (failed component or None, durable iterations)."""
        spec, env = self.spec, self.env
        step = self._step_s()
        every = spec.interval_iterations
        cycle = checkpoint_cycle(every, step, spec.checkpoint)
        remaining = spec.iterations - start_iter
        n_ckpt = checkpoints_before_end(remaining, every)
        duration = remaining * step + n_ckpt * cycle.checkpoint_s
        t0 = env.now
        self.phase = TRAIN
        try:
            yield env.timeout(duration)
        except simpy.Interrupt as failure:
            cut = interrupted(env.now - t0, cycle, n_ckpt)
            self.out.lost_work_s += cut.lost_s(cycle)
            self.out.checkpoints += cut.saved
            self.out.checkpoint_s += cut.checkpoint_s
            self._blocks_done(t0, env.now, cycle, cut.cycles + (1 if cut.in_checkpoint else 0), cut.saved)
            return failure.cause, start_iter + cut.saved * every if cut.saved else start_iter
        self.out.checkpoints += n_ckpt
        self.out.checkpoint_s += n_ckpt * cycle.checkpoint_s
        self._blocks_done(t0, env.now, cycle, n_ckpt, n_ckpt)
        return None, spec.iterations

    def _recover(self, component):
        """Handle one failure: repair or replace, wait if needed, restart. Returns a new failure or None."""
        spec, env, out = self.spec, self.env, self.out
        out.interruptions += 1
        out.by_component[component.name] = out.by_component.get(component.name, 0) + 1
        self._event(env.now, "failure", component.name)
        self.nodes.returns(env.now)
        if component.replace:
            self.nodes.lose(env.now + self.rng.exponential(spec.repair_mean_s))
        self.phase = RESTART
        again = yield from self._restarting(spec.detection_s)
        if again is not None:
            return again
        # Fill the job back up from the spare pool; wait for repairs when it must.
        nodes = self.nodes
        nodes.returns(env.now)
        while nodes.missing > 0:
            move = nodes.refill_move(env.now, out)
            if move == "spare":
                continue
            if move == "shrink":
                break
            self.phase = REPAIR_WAIT
            self.resumed = env.event()
            t_wait = env.now
            yield env.timeout(nodes.repairs[0] - env.now)
            self.resumed.succeed()
            self._segment(t_wait, env.now, REPAIR_WAIT)
            out.repair_wait_s += env.now - t_wait
        out.min_data_parallel = min(out.min_data_parallel, nodes.data_parallel())
        if spec.allow_shrink and self.failure_process is not None:
            self.failure_process.interrupt()    # the job's size may have changed: new failure rate
        self.phase = RESTART
        self._event(env.now, "restart")
        return (yield from self._restarting(requeue_s(spec.relaunch_s, spec.checkpoint.read_s)))

    def _restarting(self, duration_s: float):
        """Spend ``duration_s`` restarting; a failure meanwhile cuts it short and is returned."""
        env, out = self.env, self.out
        start = env.now
        cause = None
        try:
            yield env.timeout(duration_s)
        except simpy.Interrupt as again:
            cause = again.cause
        self._segment(start, env.now, RESTART)
        out.restart_s += env.now - start
        return cause

    def _blocks_done(self, t0: float, t1: float, cycle: CheckpointCycle, cycles: int, saved: int) -> None:
        if self.record:
            self.blocks.append(Block(t0, t1, cycle.train_s, cycle.checkpoint_s, cycles, cycle.durable_lag_s))
            self.out.segments.append((len(self.blocks) - 1, saved))

    def timeline(self) -> None:
        """Expand the recorded blocks into train/checkpoint segments and checkpoint events."""
        self.out.segments, self.out.events = expanded(self.blocks, self.out.segments, self.out.events)


def simulate_job(spec: JobSpec, rng: np.random.Generator, record: bool = False) -> JobSample:
    """One sample of the job; ``record`` keeps its timeline."""
    run = _Run(spec, rng, record)
    if math.isfinite(spec.horizon_s):
        run.env.run(until=run.env.any_of([run.job, run.env.timeout(spec.horizon_s)]))
        if run.job.is_alive:
            run.out.finished, run.out.stopped_by = False, "horizon"
            run.out.wall_s = spec.horizon_s
    else:
        run.env.run(until=run.job)
    if record:
        run.timeline()
    return run.out


def _played(spec: JobSpec, rng: np.random.Generator, record: bool = False) -> JobSample:
    """One sample by the plain event loop (``job_loop.py``): the same sample as ``simulate_job``, in a fraction
    of the time; ``record`` keeps its timeline."""
    out = JobSample(min_data_parallel=spec.data_parallel)
    play_job(spec, rng, out, record)
    return out


@dataclass(frozen=True)
class JobStats:
    samples: tuple[JobSample, ...]
    median: JobSample                # the sample whose wall time is the median, with its timeline
    ideal_s: float

    def percentile(self, key: str, q: float) -> float:
        return percentile([getattr(s, key) for s in self.samples], q)

    def mean(self, key: str) -> float:
        return float(np.mean([getattr(s, key) for s in self.samples]))

    def goodputs(self) -> np.ndarray:
        return np.array([self.ideal_s / s.wall_s for s in self.samples])


def _seeded(spec: JobSpec, seeds: list[np.random.SeedSequence]) -> list[JobSample]:
    """A sample for each seed: side by side (``job_lockstep.py``) where that plays them, else one by one."""
    rngs = [np.random.default_rng(seed) for seed in seeds]
    if not lockstep_plays(spec, len(seeds)):
        return [_played(spec, rng) for rng in rngs]
    runs = [JobSample(min_data_parallel=spec.data_parallel) for _ in seeds]
    play_samples(spec, rngs, runs)
    return runs


def _failures_per_sample(spec: JobSpec) -> float:
    """About how many failures one sample plays: the expected count of a finishing job (``budget``), at most
    the per-sample bound (the bound itself for a job not expected to finish)."""
    expected = expected_failures(job_costs(spec, spec.profile.mtbf_s(spec.gpus, spec.nodes)))
    return min(math.inf if expected is None else expected, spec.max_interruptions)


# A Monte Carlo played by ``play_ahead``, by its ``monte_carlo`` arguments, handed to ``monte_carlo``'s cache.
_HANDED: dict[tuple, JobStats] = {}


@lru_cache(maxsize=64)
def monte_carlo(spec: JobSpec, seed: int, samples: int) -> JobStats:
    """``samples`` runs with seeds derived from ``seed`` (side by side, or one by one by the event loop); the
    median run is replayed by the event loop recording its timeline as the SimPy processes (``simulate_job``,
    the reference) do.

    Identical jobs are simulated once (cached): scenarios that differ only in their site
    (country, PUE, prices) share their job. Treat the returned samples as read-only.
    """
    handed = _HANDED.pop((spec, seed, samples), None)
    if handed is not None:
        return handed
    seeds = np.random.SeedSequence(seed).spawn(samples)
    worth = (samples * _failures_per_sample(spec) >= SPLIT_FAILURES and can_split()
             and not lockstep_plays(spec, samples))    # side by side, a step costs alike for 50 samples or 100
    halves = [seeds[:samples // 2], seeds[samples // 2:]] if worth else [seeds]
    return _stats(spec, seeds, [run for half in split_map(partial(_seeded, spec), halves, worth) for run in half])


def play_ahead(jobs: list[tuple[JobSpec, int, int]]) -> None:
    """Play the Monte Carlos of several jobs (each ``monte_carlo``'s arguments) at once, into ``monte_carlo``'s
    cache: the samples of the jobs it would play side by side (``job_lockstep.py``), of one failure profile and
    checkpointing alike, in one array, where a step costs about as much for a thousand samples as for a
    hundred (a plan search's refined plans). The others are left to ``monte_carlo``. The answers are
    ``monte_carlo``'s own, to the last digit."""
    groups: dict[tuple, list[tuple]] = {}
    for job in dict.fromkeys(jobs):
        spec, _, samples = job
        if lockstep_plays(spec, samples):
            groups.setdefault(alike(spec), []).append(job)
    for group in groups.values():
        if len(group) < 2:
            continue                                   # alone: played by ``monte_carlo`` as it is
        seeds = [np.random.SeedSequence(seed).spawn(samples) for _, seed, samples in group]
        runs = [[JobSample(min_data_parallel=spec.data_parallel) for _ in job_seeds]
                for (spec, _, _), job_seeds in zip(group, seeds)]
        play_jobs([(spec, [np.random.default_rng(s) for s in job_seeds], job_runs)
                   for (spec, _, _), job_seeds, job_runs in zip(group, seeds, runs)])
        for job, job_seeds, job_runs in zip(group, seeds, runs):
            _HANDED[job] = _stats(job[0], job_seeds, job_runs)
            monte_carlo(*job)                          # takes it into its cache
            _HANDED.clear()                            # (not taken where the cache held the job already)


def _stats(spec: JobSpec, seeds: list[np.random.SeedSequence], runs: list[JobSample]) -> JobStats:
    """The samples' statistics, with the median sample replayed recording its timeline."""
    order = np.argsort([r.wall_s for r in runs], kind="stable")
    median_index = int(order[(len(runs) - 1) // 2])
    median = _played(spec, np.random.default_rng(seeds[median_index]), record=True)
    return JobStats(tuple(runs), median, spec.ideal_s)


def job_spec(failures: FailurePolicy, checkpoint: CheckpointPolicy, cluster: ClusterSpec, params: float,
             precision: str, tokens: float, gpus_used: int, data_parallel: int, tokens_per_step: int,
             step_s: float, frozen: bool = False, max_simulated_failures: int = MAX_SIMULATED_FAILURES) -> JobSpec:
    """The job to simulate: ``tokens`` at ``step_s`` per step of ``tokens_per_step`` on ``gpus_used`` GPUs;
    checkpoints hold the ``params`` trained parameters (a ``frozen`` base's adapters alone). A finishing job
    whose samples would not fit ``max_simulated_failures`` is refused (twin.engine.budget)."""
    nodes_used = -(-gpus_used // cluster.node.gpus)
    profile = policy_profile(failures)
    cost, every = checkpoint_plan(checkpoint, params, precision, frozen, cluster, nodes_used, gpus_used, step_s,
                                  profile)
    spec = JobSpec(
        iterations=max(1, math.ceil(tokens / tokens_per_step)),
        step_s=step_s,
        nodes=nodes_used,
        gpus=gpus_used,
        data_parallel=data_parallel,
        spare_nodes=cluster.nodes - nodes_used,       # held-back spares and idle nodes alike
        checkpoint=cost,
        interval_iterations=every,
        detection_s=failures.detection_s,
        relaunch_s=failures.relaunch_s,
        repair_mean_s=failures.repair_mean_s,
        allow_shrink=failures.allow_shrink,
        profile=profile,
        horizon_s=failures.horizon_s,
        max_interruptions=max(1, max_simulated_failures // failures.samples),
    )
    per_sample_share(job_costs(spec, profile.mtbf_s(gpus_used, nodes_used)), failures.samples,
                     max_simulated_failures)
    return spec


@dataclass(frozen=True)
class Spread:
    """A distribution over the samples."""
    p10: float
    p50: float
    p90: float
    mean: float


def _spread(values: list[float]) -> Spread:
    p10, p50, p90 = percentiles(values, [10, 50, 90])
    return Spread(float(p10), float(p50), float(p90), float(np.mean(values)))


@dataclass(frozen=True)
class FailureSummary:
    """The job simulation over its samples: distributions and the checkpoint plan (``Result.failures``)."""
    profile: str
    source: str
    samples: int
    seed: int
    mtbf_s: float
    finished_samples: int            # samples that finished within the horizon and the failure bound
    stopped_at_horizon: int          # samples stopped at the wall-time horizon
    stopped_by_interruptions: int    # samples stopped after their share of simulated failures
    horizon_s: float
    max_interruptions: int
    time_to_train_s: Spread
    interruptions: Spread
    goodput: Spread
    lost_work_s: Spread
    restart_s: Spread
    repair_wait_s: Spread
    checkpoint_s: Spread
    spares_used: Spread
    spare_nodes: int
    min_data_parallel: int
    by_component: dict[str, float]
    checkpoint_interval_s: float
    checkpoint_interval_iterations: int | None   # None: no checkpoints (no failures)
    checkpoint_bytes: float
    checkpoint_write_s: float
    checkpoint_read_s: float
    checkpoint_stall_s: float
    checkpoint_asynchronous: bool
    storage_write_Bps: float
    storage_read_Bps: float
    detection_s: float
    relaunch_s: float
    repair_mean_s: float
    per_component_rates_per_device_hour: dict[str, float]
    samples_values: dict[str, list]            # every sample's time to train and interruptions


def job_summary(spec: JobSpec, stats: JobStats, seed: int) -> FailureSummary:
    """Distributions over the samples and the checkpoint plan."""
    runs = stats.samples
    components = sorted({name for r in runs for name in r.by_component})
    ck = spec.checkpoint
    return FailureSummary(
        profile=spec.profile.name,
        source=spec.profile.source,
        samples=len(runs),
        seed=seed,
        mtbf_s=spec.profile.mtbf_s(spec.gpus, spec.nodes),
        finished_samples=sum(r.finished for r in runs),
        stopped_at_horizon=sum(r.stopped_by == "horizon" for r in runs),
        stopped_by_interruptions=sum(r.stopped_by == "interruptions" for r in runs),
        horizon_s=spec.horizon_s,
        max_interruptions=spec.max_interruptions,
        time_to_train_s=_spread([r.wall_s for r in runs]),
        interruptions=_spread([r.interruptions for r in runs]),
        goodput=_spread(list(stats.goodputs())),
        lost_work_s=_spread([r.lost_work_s for r in runs]),
        restart_s=_spread([r.restart_s for r in runs]),
        repair_wait_s=_spread([r.repair_wait_s for r in runs]),
        checkpoint_s=_spread([r.checkpoint_s for r in runs]),
        spares_used=_spread([r.spares_used for r in runs]),
        spare_nodes=spec.spare_nodes,
        min_data_parallel=min(r.min_data_parallel for r in runs),
        by_component={c: float(np.mean([r.by_component.get(c, 0) for r in runs])) for c in components},
        checkpoint_interval_s=spec.interval_s,
        checkpoint_interval_iterations=spec.interval_iterations,
        checkpoint_bytes=ck.bytes,
        checkpoint_write_s=ck.write_s,
        checkpoint_read_s=ck.read_s,
        checkpoint_stall_s=ck.stall_s,
        checkpoint_asynchronous=ck.asynchronous,
        storage_write_Bps=ck.write_Bps,
        storage_read_Bps=ck.read_Bps,
        detection_s=spec.detection_s,
        relaunch_s=spec.relaunch_s,
        repair_mean_s=spec.repair_mean_s,
        per_component_rates_per_device_hour={c.name: c.rate_per_device_hour for c in spec.profile.components},
        samples_values={"time_to_train_s": [r.wall_s for r in runs],
                        "interruptions": [r.interruptions for r in runs]},
    )
