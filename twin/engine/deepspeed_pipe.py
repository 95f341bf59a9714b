"""DeepSpeed's pipeline engine, replayed from its instruction schedule.

DeepSpeed's ``PipelineEngine`` (microsoft/DeepSpeed deepspeed/runtime/pipe/schedule.py,
``TrainSchedule``) runs ``2·(m + p − 1)`` steps per batch on every stage. Steps
alternate forward and backward by the stage's parity: stage s runs the forward of
micro-batch j at step ``2j + s`` and its backward at step ``2j + 2p − 1 − s``
(``_step_to_micro_batch``); a step with no valid micro-batch is idle. Each step
starts with the stage's point-to-point exchange with its neighbours: it sends the
result of its previous step (``SendActivation`` / ``SendGrad``) and receives the
input of this one (``RecvActivation`` / ``RecvGrad``). The sends are blocking and
paired step by step with the neighbour's receives (deepspeed/runtime/pipe/p2p.py),
so no stage starts step k + 1 before its neighbours have finished step k: the
pipeline moves in lockstep, and each step lasts as long as the longest pass any
stage runs in it, plus a send and a receive. In the steady state half the stages
run a forward and half a backward in every step, so a micro-batch costs about
``2·max(F, B)`` instead of Megatron's ``F + B``. After the last step come
``ReduceTiedGrads``, ``ReduceGrads`` and ``OptimizerStep`` (no overlap of the
gradient reduction with the backward).

The pipeline's time splits into what Megatron's 1F1B would take on the same
costs (``m·U + fill/drain``, ``engine.step``) and the lockstep's extra wait.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.engine.stage_costs import StepCosts
from twin.workload.plan import ParallelPlan

# Transfers per step and stage: a send of the last step's result, then a receive of this step's input.
TRANSFERS_PER_STEP = 2


@dataclass(frozen=True)
class LockstepPipeline:
    """The pipeline part of a step under DeepSpeed's ``TrainSchedule``."""
    pipeline_s: float           # from the first step's start to the last step's end
    sends_s: float              # point-to-point transfers on the critical path
    steps: int                  # 2·(m + p − 1)


def pass_at(step: int, stage: int, stages: int, microbatches: int) -> tuple[str, int] | None:
    """The pass (forward|backward, micro-batch) ``stage`` runs at ``step``, or None when it is idle."""
    if (step - stage) % 2 == 0:
        j, kind = (step - stage) // 2, "forward"
    else:
        j, kind = (step - 2 * stages + 1 + stage) // 2, "backward"
    return (kind, j) if 0 <= j < microbatches else None


def lockstep_pipeline(costs: StepCosts, plan: ParallelPlan) -> LockstepPipeline:
    """Play the steps: each lasts its longest pass plus the step's exchange (when the pipeline has stages)."""
    p, m = plan.pipeline, plan.microbatches
    forward = [sum(c.forward_s + c.forward_dp_s for c in costs.stage_chunks(s, p)) for s in range(p)]
    backward = [sum(c.backward_s + c.backward_dp_s for c in costs.stage_chunks(s, p)) for s in range(p)]
    exchange_s = TRANSFERS_PER_STEP * costs.p2p_s if p > 1 else 0.0
    steps = 2 * (m + p - 1)
    total = 0.0
    for step in range(steps):
        longest = 0.0
        for stage in range(p):
            work = pass_at(step, stage, p, m)
            if work is not None:
                longest = max(longest, forward[stage] if work[0] == "forward" else backward[stage])
        total += longest + exchange_s
    return LockstepPipeline(total, steps * exchange_s, steps)
