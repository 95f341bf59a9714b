"""Level 2, closed form: the time of one training step and where it goes.

A pipeline of p stages runs m micro-batches. With U_i the time stage i spends
on one micro-batch (forward + backward + its sends), GPipe and 1F1B take

    T = m · max_i U_i + (Σ_i U_i - max_i U_i)      ( = (m + p - 1) · U for equal stages )

and interleaved 1F1B with v chunks per stage divides the fill/drain term by v.
DeepSpeed's pipeline engine (``deepspeed``) moves in lockstep (``deepspeed_pipe``).
The bubble is T - m · max_i U_i, i.e. (p - 1)/m of the work for equal stages under
1F1B and (p - 1)/(v·m) interleaved (Narayanan et al. SC'21 §2.2). Data-parallel
gradient reduction overlaps the last micro-batch's backward when the plan says so;
the per-step overheads and the optimizer step follow. A pass of compute C beside
a collective M on its own stream takes max(M, C + σ·min(C, M)), σ the slowdown
of compute that shares the GPU with NCCL (``StepCosts.overlapped_s``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from twin.engine.stage_costs import StepCosts
from twin.workload.plan import ParallelPlan


# The parts of a step (``StepBreakdown.parts`` keys, ``Result.step_breakdown_s``) in words.
PART_LABELS = {"compute": "GPU compute", "tp_comm": "tensor-parallel communication",
               "pp_comm": "pipeline send/recv", "bubble": "pipeline bubble",
               "dp_comm": "data-parallel communication (exposed)",
               "dp_latency": "data-parallel collective latency (NCCL ring steps of ZeRO-2/3 gathers and reductions)",
               "overheads": "framework overheads (kernel launches, gradient zeroing and norm)",
               "optimizer": "optimizer step", "data": "waiting for data (storage or loader)",
               "stragglers": "waiting for the slowest GPU (stragglers)",
               "lockstep": "pipeline stages waiting step by step for their neighbours (DeepSpeed)"}


@dataclass(frozen=True)
class StepBreakdown:
    step_s: float
    compute_s: float            # busiest stage's kernels over all micro-batches
    tp_comm_s: float            # exposed tensor/expert-parallel communication inside layers
    pp_comm_s: float            # pipeline sends on the critical path
    bubble_s: float             # pipeline fill and drain (and waiting on slower stages)
    dp_comm_s: float            # exposed data-parallel communication
    overheads_s: float          # kernel launches on the critical path and the per-step gradient work
    optimizer_s: float
    bottleneck_stage: int
    data_s: float = 0.0         # GPUs waiting for the data loader (twin/storage/loading.py); 0 without training.data
    straggler_s: float = 0.0    # the step waiting for its slowest GPU (twin/engine/stragglers.py)
    lockstep_s: float = 0.0     # DeepSpeed's pipeline waiting step by step for its neighbours (deepspeed_pipe.py)
    dp_latency_s: float = 0.0   # of the ZeRO-2/3 traffic the passes cannot hide, what NCCL's latency adds

    def parts(self) -> dict[str, float]:
        """Seconds of the step in each part, by ``PART_LABELS`` key."""
        return {"compute": self.compute_s, "tp_comm": self.tp_comm_s, "pp_comm": self.pp_comm_s,
                "bubble": self.bubble_s, "dp_comm": self.dp_comm_s, "overheads": self.overheads_s,
                "optimizer": self.optimizer_s, "data": self.data_s, "stragglers": self.straggler_s,
                "lockstep": self.lockstep_s, "dp_latency": self.dp_latency_s}

    @property
    def bottleneck(self) -> str:
        """The largest share of the step, in words."""
        parts = self.parts()
        key = max(parts, key=parts.get)
        return f"{PART_LABELS[key]} ({parts[key] / self.step_s:.0%} of the step)"


@dataclass(frozen=True)
class StageMicrobatch:
    """One stage's work for one micro-batch, over its chunks."""
    forward_s: float
    backward_s: float
    comm_s: float               # of which TP/EP communication
    launch_s: float             # of which kernel launches
    sharded_s: float            # ZeRO-2/3 traffic the passes could not hide
    sharded_latency_s: float    # of which the collectives' latency
    sends_s: float              # pipeline sends

    @property
    def total_s(self) -> float:
        return self.forward_s + self.backward_s + self.sharded_s + self.sends_s


def sends_per_microbatch(plan: ParallelPlan) -> int:
    """Activation (or gradient) transfers on a stage's path for one micro-batch: one forward and one
    backward per chunk, none without a pipeline."""
    return 2 * plan.virtual_stages if plan.pipeline > 1 else 0


def stage_microbatch_s(costs: StepCosts, plan: ParallelPlan) -> list[StageMicrobatch]:
    """Per stage: its work for one micro-batch. Stages whose chunks are the same ``ChunkCost`` objects (chunks
    alike share one, ``stage_costs._chunks``) share one row."""
    rows = []
    alike: dict[tuple[int, ...], StageMicrobatch] = {}
    sends = sends_per_microbatch(plan)
    for stage in range(plan.pipeline):
        chunks = costs.stage_chunks(stage, plan.pipeline)
        key = tuple(map(id, chunks))
        row = alike.get(key)
        if row is None:
            row = alike[key] = StageMicrobatch(
                forward_s=sum(c.forward_s for c in chunks),
                backward_s=sum(c.backward_s for c in chunks),
                comm_s=sum(c.forward_comm_s + c.backward_comm_s for c in chunks),
                launch_s=sum(c.forward_launch_s + c.backward_launch_s for c in chunks),
                sharded_s=sum(c.forward_dp_s + c.backward_dp_s for c in chunks),
                sharded_latency_s=sum(c.forward_dp_latency_s + c.backward_dp_latency_s for c in chunks),
                sends_s=sends * costs.p2p_s)
        rows.append(row)
    return rows


def step_time(costs: StepCosts, plan: ParallelPlan) -> StepBreakdown:
    m = plan.microbatches
    rows = stage_microbatch_s(costs, plan)
    totals = [r.total_s for r in rows]
    busiest = max(range(plan.pipeline), key=totals.__getitem__)
    row = rows[busiest]
    fill_drain = sum(totals) - row.total_s
    if plan.schedule == "interleaved":
        fill_drain /= plan.virtual_stages
    pipeline_s = m * row.total_s + fill_drain
    sends_s, lockstep_s = m * row.sends_s, 0.0
    if plan.schedule == "deepspeed":
        pipeline_s, sends_s, fill_drain, lockstep_s = _deepspeed_pipeline(costs, plan, rows, busiest)

    fwd, bwd = row.forward_s, row.backward_s
    dp_s = (costs.overlapped_s(bwd, costs.dp_reduce_s) - bwd if plan.overlap_grad_reduce else costs.dp_reduce_s)
    dp_s += (costs.overlapped_s(fwd, costs.dp_gather_s) - fwd if plan.overlap_param_gather else costs.dp_gather_s)
    step_s = pipeline_s + dp_s + costs.overheads_s + costs.optimizer_s
    return with_stragglers(costs, StepBreakdown(
        step_s=step_s,
        compute_s=m * (fwd + bwd - row.comm_s - row.launch_s),
        tp_comm_s=m * row.comm_s,
        pp_comm_s=sends_s,
        bubble_s=pipeline_s - m * (row.total_s - row.sends_s) - sends_s - lockstep_s,
        dp_comm_s=dp_s + m * (row.sharded_s - row.sharded_latency_s),
        dp_latency_s=m * row.sharded_latency_s,
        overheads_s=m * row.launch_s + costs.overheads_s,
        optimizer_s=costs.optimizer_s,
        bottleneck_stage=busiest,
        lockstep_s=lockstep_s,
    ))


def _deepspeed_pipeline(costs: StepCosts, plan: ParallelPlan, rows: list[StageMicrobatch],
                        busiest: int) -> tuple[float, float, float, float]:
    """(pipeline, sends, fill and drain, lockstep wait) of DeepSpeed's ``TrainSchedule`` (``deepspeed_pipe``):
    the fill and drain are 1F1B's on the same passes, the lockstep the rest of the wait."""
    from twin.engine.deepspeed_pipe import lockstep_pipeline     # only for a DeepSpeed pipeline

    lock = lockstep_pipeline(costs, plan)
    work = [r.total_s - r.sends_s for r in rows]
    fill_drain = sum(work) - work[busiest]
    lockstep_s = max(0.0, lock.pipeline_s - plan.microbatches * work[busiest] - lock.sends_s - fill_drain)
    return lock.pipeline_s, lock.sends_s, fill_drain, lockstep_s


def with_stragglers(costs: StepCosts, step: StepBreakdown) -> StepBreakdown:
    """The step waiting for its slowest GPU: its compute lengthened by ``costs.straggler_fraction``."""
    wait_s = costs.straggler_fraction * step.compute_s
    if wait_s <= 0:
        return step
    return replace(step, step_s=step.step_s + wait_s, straggler_s=wait_s)
