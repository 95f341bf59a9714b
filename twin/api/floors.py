"""Lower bounds on a plan's step and on a run, cheaper than pricing the plan: what lets a search skip plans
and options that cannot win (``twin.studies.fit``). Each is checked against what it bounds in
``tests/test_fit.py``."""

from __future__ import annotations

from twin.api.training import Prepared, plan_memory
from twin.engine.stage_costs import chunks_work_s, projection_flops_per_token, stage_passes_s, step_extras_s
from twin.engine.step import sends_per_microbatch
from twin.engine.stragglers import straggler_fraction
from twin.network.collectives import CommModel
from twin.workload.memory import MemoryBreakdown
from twin.workload.placement import Placement, place
from twin.workload.plan import ParallelPlan, PlanRequest


# A floor is lowered by this share so that rounding in a different order of sums never lifts it above the step.
FLOOR_ROUNDING_MARGIN = 1e-9


def plan_passes_floor_s(prepared: Prepared, request: PlanRequest,
                        planned: tuple[ParallelPlan, MemoryBreakdown] | None = None) -> float:
    """A lower bound on ``plan_step_s`` from the chunks' passes alone (``chunks_work_s``) and the wait for the
    slowest GPU (``_straggler_floor_s``), without ZeRO-2/3 traffic, stage sends, data-parallel collectives,
    overheads or the optimizer: the same for plans that differ only in their ZeRO stage.

    The pipeline takes ``m · U_max + (Σ U_i - U_max) / v`` (``engine.step``), which grows with ``U_max``
    and so is at least ``U_avg · (m + (p - 1) / v)``; a stage's ``U`` holds at least its chunks' passes,
    and what is left out only adds to the step. 0 for DeepSpeed's lockstep pipeline, which this bound
    does not describe."""
    s = prepared.section
    plan, _ = planned or plan_memory(prepared, request)
    if plan.schedule == "deepspeed":
        return 0.0
    placement = place(plan, prepared.cluster.node.gpus, request.order)
    comm = prepared.comm(placement)
    per_stage = chunks_work_s(s.model, plan, s.ops, comm, placement, s.stack, s.finetune,
                              prepared.memo) / plan.pipeline
    return ((per_stage * _pipeline_factor(plan) + _straggler_floor_s(prepared, plan, comm, placement))
            * (1.0 - FLOOR_ROUNDING_MARGIN))


def plan_step_floor_s(prepared: Prepared, request: PlanRequest,
                      planned: tuple[ParallelPlan, MemoryBreakdown] | None = None) -> float:
    """A lower bound on ``plan_step_s``, at least ``plan_passes_floor_s``: the pipeline of ``engine.step``
    (``m · U_max + (Σ U_i - U_max) / v``, which grows with every ``U_i``) on each stage's chunks' passes and
    sends (``stage_costs.stage_passes_s``, ``step_extras_s``), then the overheads and the optimizer step,
    each priced as ``step_costs`` prices it, and the wait for the slowest GPU (``_straggler_floor_s``). Only
    ZeRO-2/3 traffic (in the ``U_i``) and the data-parallel collectives' exposed part are left out, and they
    only add. 0 for DeepSpeed's pipeline."""
    s = prepared.section
    plan, _ = planned or plan_memory(prepared, request)
    if plan.schedule == "deepspeed":
        return 0.0
    placement = place(plan, prepared.cluster.node.gpus, request.order)
    comm = prepared.comm(placement)
    p2p, overheads, optimizer = step_extras_s(s.model, plan, s.ops, comm, placement, s.stack, s.finetune,
                                              prepared.memo)
    sends = sends_per_microbatch(plan) * p2p
    stages = [passes + sends for passes in stage_passes_s(s.model, plan, s.ops, comm, placement, s.stack,
                                                          s.finetune, prepared.memo)]
    busiest = max(stages)
    chunks = plan.virtual_stages if plan.schedule == "interleaved" else 1
    pipeline = plan.microbatches * busiest + (sum(stages) - busiest) / chunks
    return (pipeline + overheads + optimizer + _straggler_floor_s(prepared, plan, comm, placement)) \
        * (1.0 - FLOOR_ROUNDING_MARGIN)


def _straggler_floor_s(prepared: Prepared, plan: ParallelPlan, comm: CommModel, placement: Placement) -> float:
    """A lower bound on the step's wait for its slowest GPU: ``straggler_fraction`` of the busiest stage's
    compute over the micro-batches (``engine.step.with_stragglers``), that compute at least the least of the
    stages' (``stage_costs.stage_passes_s`` of their kernels alone); 0 with stragglers off."""
    s = prepared.section
    fraction = straggler_fraction(plan.gpus, s.straggler_spread)
    if fraction == 0.0:
        return 0.0
    return fraction * plan.microbatches * min(stage_passes_s(s.model, plan, s.ops, comm, placement, s.stack,
                                                             s.finetune, prepared.memo, compute_only=True))


def gemm_floor_s(prepared: Prepared, gpus: int) -> float:
    """A lower bound on the time to train, failures left out, of every plan of a pipeline schedule that runs the
    prepared scenario on ``gpus`` GPUs, known before any plan is sized: its layers' projection GEMMs alone
    (``stage_costs.projection_flops_per_token``), forward, the backward's input gradients and, unless the base
    is frozen, its weight gradients, at the rate of large GEMMs on every GPU at once.

    Every plan's ``plan_passes_floor_s`` holds at least this per step: its average stage does ``m`` micro-batches
    of ``b · s`` tokens over ``layers / p`` layers split ``t`` ways, ``m · b = B / d``, and the operator model
    prices no GEMM faster than ``2·m·n·k`` FLOPs at ``OperatorModel.matmul_flops`` (its shape factor is at least
    1, its memory side only adds). So ``tokens / (B · s)`` steps take at least ``tokens · layers · passes · F``
    over ``t · p · d = gpus`` GPUs at that rate."""
    s = prepared.section
    passes = 2.0 if s.finetune.frozen else 3.0
    flops = prepared.scenario.training.tokens * s.model.layers * passes * projection_flops_per_token(s.model)
    return flops / (gpus * s.ops.matmul_flops) * (1.0 - FLOOR_ROUNDING_MARGIN)


def _pipeline_factor(plan: ParallelPlan) -> float:
    """``m + (p - 1) / v``: the average stage's micro-batch times this is at most the pipeline's time."""
    chunks = plan.virtual_stages if plan.schedule == "interleaved" else 1
    return plan.microbatches + (plan.pipeline - 1) / chunks
