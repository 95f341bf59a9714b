"""The level-3 rules of a job with checkpoints, as pure functions.

Both the single-job engine (``engine/job.py``, checkpoints as discrete cycles) and the
cluster (``operations/``, progress as a fluid) use these; the rules exist here only.

- **Interval.** ``interval: auto`` is Daly's (2006, eq. 37) first-order optimum, which
  reduces to Young's (1974) ``sqrt(2·δ·M)`` for ``δ << M`` (δ: checkpoint stall, M: job
  MTBF). An asynchronous snapshot waits for the previous write, so the interval is at
  least one write. Without failures (M infinite) a job never checkpoints: ``None``.
- **Cycle.** ``every`` steps of training, then the checkpoint: a synchronous one stops
  training for the write; an asynchronous one for the host copy (and for what is left of
  the previous write), and becomes durable when its write ends.
- **Progress kept across a failure.** A failure loses the work since the last durable
  checkpoint.
- **Restart.** Detection + relaunch + reading the checkpoint back; after a wait for a
  node the failure is already known: relaunch + read (a requeue).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from twin.hardware.specs import ClusterSpec
from twin.jobs.checkpoint import CheckpointCost, CheckpointPolicy, checkpoint_cost
from twin.jobs.failures import FailureProfile


def young_daly_interval_s(stall_s: float, mtbf_s: float) -> float:
    """Daly (2006) eq. 37: optimum compute time between checkpoints.

    τ = sqrt(2δM)·[1 + (1/3)·sqrt(δ/2M) + (1/9)·(δ/2M)] − δ for δ < 2M, else M;
    to first order Young's (1974) τ = sqrt(2δM).
    """
    if not math.isfinite(mtbf_s):
        return math.inf
    if stall_s <= 0:
        return 0.0
    if stall_s >= 2 * mtbf_s:
        return mtbf_s
    x = stall_s / (2 * mtbf_s)
    return math.sqrt(2 * stall_s * mtbf_s) * (1 + math.sqrt(x) / 3 + x / 9) - stall_s


def interval_iterations(interval_s: float | None, step_s: float, checkpoint: CheckpointCost,
                        mtbf_s: float) -> int | None:
    """Iterations between checkpoints: ``interval_s`` seconds, or Young/Daly's optimum when None;
    None when the job never checkpoints (no failures to guard against)."""
    if interval_s is None:
        tau = young_daly_interval_s(checkpoint.stall_s, mtbf_s)
        if checkpoint.asynchronous:
            tau = max(tau, checkpoint.write_s)     # a snapshot waits for the previous write
    else:
        tau = float(interval_s)
    if not math.isfinite(tau):
        return None
    return max(1, round(tau / step_s))


def checkpoint_plan(policy: CheckpointPolicy, params: float, precision: str, frozen: bool, cluster: ClusterSpec,
                    nodes: int, gpus: int, step_s: float,
                    profile: FailureProfile | None) -> tuple[CheckpointCost, int | None]:
    """A job's checkpoint and its interval in steps: ``params`` trained parameters (a ``frozen`` base's adapters
    alone) written from ``gpus`` GPUs on ``nodes`` nodes, every ``policy.interval_s`` or at Young/Daly's optimum
    for the job's own failure rate under ``profile`` (None: no failures, no checkpoints)."""
    cost = checkpoint_cost(params, precision, cluster, nodes, gpus, policy.asynchronous, frozen)
    mtbf_s = profile.mtbf_s(gpus, nodes) if profile is not None else math.inf
    return cost, interval_iterations(policy.interval_s, step_s, cost, mtbf_s)


@dataclass(frozen=True)
class CheckpointCycle:
    """One cycle of training and checkpoint, as the single-job engine plays it."""
    train_s: float                   # training between two checkpoints
    checkpoint_s: float              # training stopped per checkpoint (async: stall + wait on the last write)
    durable_lag_s: float             # from the end of the stall to the checkpoint being durable (async: the write)

    @property
    def cycle_s(self) -> float:
        return self.train_s + self.checkpoint_s


def checkpoint_cycle(every: int | None, step_s: float, checkpoint: CheckpointCost) -> CheckpointCycle:
    """The cycle of a job checkpointing every ``every`` steps of ``step_s`` (``None``: never)."""
    train_s = every * step_s if every is not None else math.inf
    if checkpoint.asynchronous:
        return CheckpointCycle(train_s, checkpoint.stall_s + max(0.0, checkpoint.write_s - train_s),
                               checkpoint.write_s)
    return CheckpointCycle(train_s, checkpoint.write_s, 0.0)


def checkpoints_before_end(steps: int, every: int | None) -> int:
    """Checkpoints written while running ``steps`` steps to the end (none after the last step)."""
    return max(0, math.ceil(steps / every) - 1) if every is not None else 0


@dataclass(frozen=True)
class Interrupted:
    """Where a failure caught a block of training that started on a durable checkpoint."""
    cycles: int                      # whole cycles (training + checkpoint) behind it
    in_checkpoint: bool              # caught while writing one
    trained_s: float                 # training time done in the block
    saved: int                       # checkpoints of the block that are durable
    checkpoint_s: float              # time spent checkpointing in the block

    def lost_s(self, cycle: CheckpointCycle) -> float:
        """Training time the failure loses: everything after the last durable checkpoint."""
        return lost_s(self.trained_s, self.saved, cycle)


def lost_s(trained_s: float, saved: int, cycle: CheckpointCycle) -> float:
    """Training time lost when ``trained_s`` of a block were done and ``saved`` of its checkpoints are durable."""
    return trained_s - saved * cycle.train_s if saved else trained_s


def interrupted(elapsed_s: float, cycle: CheckpointCycle, checkpoints: int) -> Interrupted:
    """A failure ``elapsed_s`` into a block of ``checkpoints`` planned checkpoints."""
    return Interrupted(*interruption(elapsed_s, cycle, checkpoints))


def interruption(elapsed_s: float, cycle: CheckpointCycle,
                 checkpoints: int) -> tuple[int, bool, float, int, float]:
    """``interrupted``'s fields as a tuple (cycles, in_checkpoint, trained_s, saved, checkpoint_s): the Monte
    Carlo's event loop reads them without building the record."""
    if checkpoints == 0:                   # one stretch of training (a cycle may be endless)
        return 0, False, elapsed_s, 0, 0.0
    train_s, stall_s, lag = cycle.train_s, cycle.checkpoint_s, cycle.durable_lag_s
    cycle_s = train_s + stall_s            # cycle.cycle_s: the Monte Carlo asks at every failure
    n = min(checkpoints, int(elapsed_s // cycle_s))
    r = elapsed_s - n * cycle_s
    in_ckpt = not (n >= checkpoints or r < train_s)
    trained_s = (n + 1) * train_s if in_ckpt else n * train_s + r
    saved = min(checkpoints, int((elapsed_s - lag) // cycle_s)) if elapsed_s >= lag else 0
    checkpoint_s = n * stall_s + (r - train_s if in_ckpt else 0.0)
    return n, in_ckpt, trained_s, saved, checkpoint_s


def durable_steps(done: float, every: int | None) -> float:
    """Steps safe in a checkpoint after ``done`` steps of fluid progress (the last whole interval)."""
    return (done // every) * every if every is not None else 0.0


def fluid_rate_per_s(step_s: float, checkpoint: CheckpointCost, every: int | None) -> float:
    """Steps per second with each checkpoint's stall spread over the ``every`` steps of its interval."""
    if every is None:
        return 1.0 / step_s
    return 1.0 / (step_s + checkpoint.stall_s / every)


def stall_share(step_s: float, checkpoint: CheckpointCost, every: int | None) -> float:
    """Fraction of the wall time stopped for checkpoints in the fluid picture."""
    if every is None:
        return 0.0
    cycle = every * step_s
    stall = checkpoint.stall_s
    return stall / (cycle + stall) if cycle + stall > 0 else 0.0


def restart_s(detection_s: float, relaunch_s: float, read_s: float) -> float:
    """A restart after a failure: the failure is detected, the job relaunched, its checkpoint read back."""
    return detection_s + relaunch_s + read_s


def requeue_s(relaunch_s: float, read_s: float) -> float:
    """A restart whose failure is already known (after a wait for a node): relaunch and read back."""
    return relaunch_s + read_s
