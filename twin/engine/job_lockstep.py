"""Level 3 for many samples at once: the failure Monte Carlo's common failures as array arithmetic over samples.

The event loop (``job_loop.py``) plays one sample at a time, a few microseconds of Python per failure. Most
failures of a job that does not shrink are common: a failure while training (the work since the last durable
checkpoint lost) or while restarting after the last one, its detection, a spare node for each node sent to
repair, the relaunch. ``play_samples`` plays the samples side by side, the next failure of every sample a
step, with numpy over the samples. Each sample's draws are its own generator's, in its own order, read from
its row of ``Rows`` (``draws.py``); a draw on the ziggurat's rare path is read word by word from the row, or
past its end by the sample's ``RowDraws``.

Several jobs' samples may share the arrays (``play_jobs``): jobs of one failure profile that all checkpoint (or
none), each sample with its own job's step, cycle, failure rate and shares, size and bounds (a value for all
where the samples agree, an array over them where they do not).

A sample whose failure is not common (training ends first; it waits for a repaired node; it reaches the
failure bound or the horizon) keeps its state at the step's start, is played by the event loop up to the
start of its next block of training (``Sample.advance``) and joins the others again. Below
``LOCKSTEP_SAMPLES`` samples left, or when most failures are not common, the rest are played to their end
by the event loop. So every sample is the event loop's own to the last digit (``tests/test_job.py``): the
same draws in the same order, the same float operations on them.
"""

from __future__ import annotations

import math

import numpy as np

from twin.engine.draws import ROW_WORDS, Rows, RowDraws
from twin.engine.job_loop import Sample, advanced, played_on

# Samples left below which the rest are played one by one: a step over the samples costs about as much as
# 30-35 failures played by the event loop (about a million instructions against 30,000; docs/speed.md).
LOCKSTEP_SAMPLES = 32
_REPAIR_SLOTS = 16      # nodes in repair a row holds at first; doubled when a sample needs more
_COMPACT_EVERY = 8      # steps between takings back of repaired nodes (``_Lockstep._compact``)
_STEP_WORDS = 3         # words a common failure reads: its component, its next interval, a repair
# A job whose failures are mostly not common (few spares, long repairs: most wait for a node) is played one
# sample at a time: checked after _TRIAL_STEPS steps, when more than _MOST_APART of its failures were played
# apart.
_TRIAL_STEPS = 8
_MOST_APART = 0.2


def lockstep_plays(spec, samples: int) -> bool:
    """Whether ``play_samples`` plays ``samples`` samples of ``spec`` side by side."""
    return samples >= LOCKSTEP_SAMPLES and not spec.allow_shrink and spec.profile.shares(spec.gpus, spec.nodes)[0] > 0


def alike(spec) -> tuple:
    """What jobs played side by side in one array (``play_jobs``) share: their failure profile's components (a
    failure's kinds) and whether they checkpoint; the rest (step, cycle, failure rate, sizes, bounds) may differ
    from sample to sample."""
    return tuple((c.name, c.replace) for c in spec.profile.components), spec.interval_iterations is None


def play_samples(spec, rngs: list[np.random.Generator], outs: list) -> None:
    """Play a sample of ``spec`` (a ``JobSpec`` that does not shrink, with failures) with each generator of
    ``rngs`` into the fresh ``JobSample`` of ``outs`` at the same place: what ``play_job`` gives each."""
    play_jobs([(spec, rngs, outs)])


def play_jobs(jobs: list[tuple]) -> None:
    """``play_samples`` for several jobs (spec, generators, samples) at once, their samples side by side in one
    array: a step costs about as much for a thousand samples as for a hundred. The jobs are ``alike``."""
    if len({alike(spec) for spec, _, _ in jobs}) > 1:
        raise ValueError("jobs played side by side share their failure components and checkpointing")
    with np.errstate(all="ignore"):          # the rows of samples done compute on, unread
        _Lockstep(jobs).play()


def _per_sample(values: list) -> float | np.ndarray:
    """One value for every sample where they all agree (the arithmetic of one job's samples, as it was), else
    an array of each sample's."""
    first = values[0]
    return first if all(v == first for v in values) else np.array(values)


class _Lockstep:
    """The samples' state between failures, an array each (what a sample's ``Sample`` holds while the event
    loop plays it), and a failure of every sample at once as array arithmetic.

    A sample is at a step's start in one of two states: training, from ``t`` on ``durable`` steps, or
    ``restarting`` after a failure at ``t`` (counted, its node sent to repair, ``missing`` nodes to take
    back), its next failure due before the job is back. Two things are kept lazily, and made exact when a
    sample leaves the arrays (``_left``):
    - nodes back from repair: a row holds the return times of the nodes sent to repair since it joined
      (``repairs``, ``filled`` of them), and ``returned_at``, the last time the event loop would have taken
      back the nodes repaired by then. ``spares`` leaves them out until the rows are compacted, so a restart
      that needs more spares than are counted is played by the event loop, which counts them all;
    - failures by component, checkpoints and spares used: integers, counted apart and added at the end."""

    def __init__(self, jobs: list[tuple]):
        specs = [spec for spec, rngs, _ in jobs for _ in rngs]
        self.rows = rows = Rows([rng for _, rngs, _ in jobs for rng in rngs])
        self.samples = [Sample(spec, RowDraws(rows, r), out)
                        for r, (spec, out) in enumerate(zip(specs, [out for _, _, outs in jobs for out in outs]))]
        m = len(self.samples)
        components = specs[0].profile.components
        self.names = [c.name for c in components]
        self.replaces = np.array([c.replace for c in components])
        # Each sample's job: one value where the samples agree, else an array over them (``_per_sample``).
        self.cumulative = np.array(_per_sample([sample.cumulative for sample in self.samples]))   # shares: a row each
        cycles = [sample.step_and_cycle() for sample in self.samples]   # all replicas: missing nodes come back
        self.step_s = _per_sample([step for step, _ in cycles])
        self.train_s = _per_sample([cycle.train_s for _, cycle in cycles])
        self.stall_s = _per_sample([cycle.checkpoint_s for _, cycle in cycles])
        self.lag_s = _per_sample([cycle.durable_lag_s for _, cycle in cycles])
        self.rate_full_per_s = _per_sample([sample.rate_full for sample in self.samples])   # every node running
        self.requeue_s = _per_sample([sample.requeue_s for sample in self.samples])
        self.iterations = _per_sample([spec.iterations for spec in specs])
        self.every = None if specs[0].interval_iterations is None else _per_sample(
            [spec.interval_iterations for spec in specs])
        self.nodes = _per_sample([spec.nodes for spec in specs])
        self.detection_s = _per_sample([spec.detection_s for spec in specs])
        self.repair_mean_s = _per_sample([spec.repair_mean_s for spec in specs])
        self.horizon_s = _per_sample([spec.horizon_s for spec in specs])
        self.max_interruptions = _per_sample([spec.max_interruptions for spec in specs])
        self.bounded = bool(np.any(self.horizon_s < math.inf)), bool(np.any(self.max_interruptions < math.inf))
        self.first_word = np.arange(m) * ROW_WORDS             # each row's first word in the flat rows
        self.live, self.restarting = np.ones(m, dtype=bool), np.zeros(m, dtype=bool)
        self.t, self.next_s, self.returned_at = np.zeros(m), np.zeros(m), np.zeros(m)
        self.durable, self.missing, self.spares, self.filled = (np.zeros(m, dtype=np.int64) for _ in range(4))
        self.repairs = np.full((m, _REPAIR_SLOTS), math.inf)
        self.interruptions, self.checkpoints, self.spares_used = (np.zeros(m, dtype=np.int64) for _ in range(3))
        self.lost_work_s, self.restart_s, self.checkpoint_s = np.zeros(m), np.zeros(m), np.zeros(m)
        self.counts = np.zeros((m, len(self.names)), dtype=np.int64)
        for r, sample in enumerate(self.samples):
            sample.draw_interval()
            self._join(r, 0)

    # -- a sample between the arrays and its event loop -----------------------------------------
    def _join(self, r: int, durable: int) -> None:
        """Sample ``r``, at the start of a block of training on ``durable`` steps, its next failure drawn,
        into the arrays."""
        sample = self.samples[r]
        sample.draws.give_back()
        sample.draws.rewind = True                  # a step may put it back to the step's start
        nodes, out = sample.nodes, sample.out
        self.t[r], self.next_s[r], self.durable[r] = sample.t, sample.next_failure_s, durable
        self.restarting[r], self.missing[r] = False, 0
        self.spares[r], self.returned_at[r] = nodes.spares, -math.inf
        while len(nodes.repairs) >= self.repairs.shape[1]:
            self._more_slots()
        self.repairs[r] = math.inf
        self.repairs[r, :len(nodes.repairs)] = nodes.repairs
        self.filled[r] = len(nodes.repairs)
        self.interruptions[r] = out.interruptions
        self.lost_work_s[r], self.restart_s[r], self.checkpoint_s[r] = out.lost_work_s, out.restart_s, out.checkpoint_s

    def _left(self, r: int) -> int:
        """Sample ``r`` out of the arrays into its ``Sample``: its durable steps."""
        sample = self.samples[r]
        sample.draws.rewind = False                 # played on by the event loop: no going back
        nodes, out = sample.nodes, sample.out
        sample.t, sample.next_failure_s, sample.redraw = float(self.t[r]), float(self.next_s[r]), False
        returned_at = self.returned_at[r]
        pending = self.repairs[r, :self.filled[r]].tolist()
        nodes.repairs = sorted(x for x in pending if x > returned_at)          # a sorted list is a heap
        nodes.spares = int(self.spares[r]) + len(pending) - len(nodes.repairs)
        nodes.missing = int(self.missing[r])
        out.interruptions = int(self.interruptions[r])
        out.lost_work_s, out.restart_s, out.checkpoint_s = (
            float(self.lost_work_s[r]), float(self.restart_s[r]), float(self.checkpoint_s[r]))
        return int(self.durable[r])

    def _more_slots(self) -> None:
        self.repairs = np.hstack([self.repairs, np.full_like(self.repairs, math.inf)])

    def _compact(self) -> None:
        """Take back the nodes repaired by each row's ``returned_at``, and move the rest to the row's front."""
        back = self.repairs <= self.returned_at[:, None]
        self.spares += np.count_nonzero(back, axis=1)
        self.repairs[back] = math.inf
        self.repairs.sort(axis=1)
        self.filled = np.count_nonzero(self.repairs < math.inf, axis=1)
        if self.filled.max() > self.repairs.shape[1] // 2:
            self._more_slots()

    def _counted(self, r: int) -> None:
        """Sample ``r``'s integers counted apart added to its ``JobSample``."""
        out = self.samples[r].out
        out.checkpoints += int(self.checkpoints[r])
        out.spares_used += int(self.spares_used[r])
        for name, n in zip(self.names, self.counts[r].tolist()):
            if n:
                out.by_component[name] = out.by_component.get(name, 0) + n

    # -- the play ----------------------------------------------------------------------------------
    def play(self) -> None:
        rows, live = self.rows, self.live
        left, steps, apart = len(self.samples), 0, 0
        while left >= LOCKSTEP_SAMPLES and (steps < _TRIAL_STEPS or apart <= _MOST_APART * steps * left):
            rows.mark[:] = rows.at                    # a step's first word: a sample played apart reads from it
            if rows.at.max() > ROW_WORDS - _STEP_WORDS:
                rows.top_up(np.flatnonzero(live & (rows.at > ROW_WORDS - _STEP_WORDS)))
            uncommon = self._step()
            played_apart = np.flatnonzero(uncommon).tolist()
            apart += len(played_apart)
            for r in played_apart:
                restarting = bool(self.restarting[r])
                durable = advanced(self.samples[r], self._left(r), restarting)
                if durable is None:
                    live[r], rows.at[r] = False, 0
                    left -= 1
                else:
                    self._join(r, durable)
            steps += 1
            if steps % _COMPACT_EVERY == 0 or self.filled.max() >= self.repairs.shape[1]:
                self._compact()
        for r in np.flatnonzero(live).tolist():
            sample = self.samples[r]
            restarting = bool(self.restarting[r])
            durable = self._left(r)
            sample.reads(rows.handed_over(r))
            durable = advanced(sample, durable, True) if restarting else durable
            if durable is not None:
                played_on(sample, durable)
        for r in range(len(self.samples)):
            self._counted(r)

    def _draws(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Each live sample's failure: its component, whether its node goes to repair, its next interval's
        and the repair's standard exponentials, and the words they take (0: read by the sample's
        ``RowDraws``, which moved the row's ``at``: a rare path of the ziggurat past the row's words)."""
        rows = self.rows
        word = self.first_word + rows.at
        fast = rows.fast.ravel()
        drawn = rows.uniform.ravel().take(word)
        if self.cumulative.ndim == 1:
            component = np.searchsorted(self.cumulative, drawn, side="right")
        else:                                  # each sample's own shares: the count of bounds at or below its draw
            component = np.count_nonzero(self.cumulative <= drawn[:, None], axis=1)
        np.minimum(component, len(self.names) - 1, out=component)
        replace = self.replaces.take(component)
        first, repair = fast.take(word + 1), fast.take(word + 2)
        words = 2 + replace
        for r in np.flatnonzero(self.live & ((first < 0) | (replace & (repair < 0)))).tolist():
            read = self._rare_paths(r, bool(replace[r]))
            if read is None:                          # past the row: its draws read on from the generator
                draws = self.samples[r].draws
                draws.random()
                read = draws.exponential(1.0), draws.exponential(1.0) if replace[r] else 0.0, 0
                draws.give_back()
            first[r], repair[r], words[r] = read
        return component, replace, first, repair, words

    def _rare_paths(self, r: int, replace: bool) -> tuple[float, float, int] | None:
        """Row ``r``'s next interval and repair (if ``replace``) where one takes the ziggurat's rare path, and the
        words they and the component take; None where they would read past the row."""
        rows = self.rows
        at = int(rows.at[r])
        first = rows.exponential_at(r, at + 1)
        if first is None:
            return None
        if not replace:
            return first[0], 0.0, first[1] - at
        repair = rows.exponential_at(r, first[1])
        return None if repair is None else (first[0], repair[0], repair[1] - at)

    def _training_stopped(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """For a sample training, its block's end and what its failure stops (``Sample._cycles``): the work
        since the last durable checkpoint lost, the checkpoints made durable and the time they took."""
        t, next_s, every = self.t, self.next_s, self.every
        remaining = self.iterations - self.durable
        if every is None:
            return t + remaining * self.step_s, next_s - t, np.zeros_like(t), np.zeros_like(t)
        checkpoints = np.ceil(remaining / every)
        checkpoints -= 1.0
        np.maximum(checkpoints, 0.0, out=checkpoints)
        end_s = t + (remaining * self.step_s + checkpoints * self.stall_s)
        trained_s, saved, checkpoint_s = _interrupted(next_s - t, self.train_s, self.stall_s, self.lag_s, checkpoints)
        return end_s, trained_s - saved * self.train_s, saved, checkpoint_s     # ``lost_s``: less 0 if none saved

    def _step(self) -> np.ndarray:
        """The next failure of every live sample; returns the live samples whose failure is not common, which
        keep their state at the step's start."""
        rows, live = self.rows, self.live
        t, next_s, durable, restarting, missing = self.t, self.next_s, self.durable, self.restarting, self.missing
        component, replace, first, repair, words = self._draws()
        # What the failure stops: training, or a restart begun at t (in its detection, or relaunching on the
        # spares taken when it was detected).
        training = ~restarting
        end_s, lost_s, saved, checkpoint_s = self._training_stopped()
        detected_before_s = t + self.detection_s
        relaunching = restarting & (next_s >= detected_before_s)
        refilled = np.where(relaunching, missing, 0)
        spares = self.spares - refilled
        # The failure, its next interval drawn at the rate of the nodes running then, and the restart after it.
        missing_then = missing - refilled
        interval_s = 1.0 / (self.rate_full_per_s * ((self.nodes - missing_then) / self.nodes))
        after_s = next_s + interval_s * first
        detected_s = next_s + self.detection_s
        back_s = detected_s + self.requeue_s
        missing_now = missing_then + replace
        back = after_s >= back_s                                 # no failure before the job is back
        spares_back = spares - missing_now * back
        uncommon = (training & (next_s >= end_s)) | (spares < 0) | (spares_back < 0)
        by_horizon, by_count = self.bounded
        if by_horizon:
            uncommon |= back_s > self.horizon_s                  # so is the failure, before it
        if by_count:
            uncommon |= self.interruptions >= self.max_interruptions
        common = live & ~uncommon
        uncommon &= live
        # The event loop's operations in its order, on the common failures.
        trains, restarts, backs = common & training, common & restarting, common & back
        saved_steps = saved.astype(np.int64)
        np.add(self.lost_work_s, lost_s, out=self.lost_work_s, where=trains)
        np.add(self.checkpoints, saved_steps, out=self.checkpoints, where=trains)
        np.add(self.checkpoint_s, checkpoint_s, out=self.checkpoint_s, where=trains)
        if self.every is not None:
            np.add(durable, saved_steps * self.every, out=durable, where=trains)
        np.add(self.restart_s, np.minimum(next_s, detected_before_s) - t, out=self.restart_s, where=restarts)
        np.add(self.restart_s, next_s - detected_before_s, out=self.restart_s, where=restarts & relaunching)
        np.add(self.interruptions, 1, out=self.interruptions, where=common)
        rows_common = np.flatnonzero(common)
        self.counts[rows_common, component[rows_common]] += 1
        self._to_repair(np.flatnonzero(common & replace), next_s, repair)
        np.add(self.spares_used, refilled + missing_now * back, out=self.spares_used, where=common)
        np.copyto(self.spares, spares_back, where=common)
        np.add(self.restart_s, detected_s - next_s, out=self.restart_s, where=backs)
        np.add(self.restart_s, back_s - detected_s, out=self.restart_s, where=backs)
        np.copyto(self.returned_at, next_s, where=common)
        np.copyto(self.returned_at, detected_s, where=backs)
        np.copyto(t, next_s, where=common)
        np.copyto(t, back_s, where=backs)
        np.copyto(missing, missing_now * ~back, where=common)
        np.copyto(restarting, ~back, where=common)
        np.copyto(next_s, after_s, where=common)
        np.add(rows.at, words, out=rows.at, where=common)
        np.copyto(rows.at, rows.mark, where=uncommon)
        return uncommon

    def _to_repair(self, sent: np.ndarray, failed_s: np.ndarray, repair: np.ndarray) -> None:
        """The failed node of each sample of ``sent`` goes to repair at ``failed_s``, for its job's mean repair time
        times the sample's standard exponential ``repair``."""
        mean_s = self.repair_mean_s[sent] if isinstance(self.repair_mean_s, np.ndarray) else self.repair_mean_s
        self.repairs[sent, self.filled[sent]] = failed_s[sent] + mean_s * repair[sent]
        self.filled[sent] += 1


def _interrupted(elapsed_s: np.ndarray, train_s, stall_s, lag, checkpoints: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``rules.interruption``'s (trained_s, saved, checkpoint_s) over the samples, the same operations on each
    (with none of a block's checkpoints planned, the same numbers as its shortcut); the checkpoint cycle's
    parts (``CheckpointCycle``: training, stall, durable lag) one for all or one per sample."""
    cycle_s = train_s + stall_s
    n = np.minimum(checkpoints, elapsed_s // cycle_s)
    r = elapsed_s - n * cycle_s
    in_checkpoint = (n < checkpoints) & (r >= train_s)
    trained_s = np.where(in_checkpoint, (n + 1) * train_s, n * train_s + r)
    if np.ndim(lag):                       # each sample's own lag: each sample's branch of the two below
        saved = np.where(lag > 0, np.where(elapsed_s >= lag, np.minimum(checkpoints, (elapsed_s - lag) // cycle_s),
                                           0.0), n)
    elif lag > 0:
        saved = np.where(elapsed_s >= lag, np.minimum(checkpoints, (elapsed_s - lag) // cycle_s), 0.0)
    else:
        saved = n                          # (elapsed_s - 0.0) // cycle_s: n's own quotient
    checkpoint_s = n * stall_s + np.where(in_checkpoint, r - train_s, 0.0)
    return trained_s, saved, checkpoint_s
