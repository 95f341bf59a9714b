"""The work of a step outside its passes: gradient zeroing, the gradient norm and the optimizer.

Memory-bound kernels over the parameters one GPU holds (its stage, its tensor-
and expert-parallel shard), in bytes per parameter:

- **zeroing the gradient buffer** (frameworks that keep a contiguous buffer,
  ``StackProfile.zero_grad_buffer``): a memset of one gradient element each, over
  every local gradient (ZeRO-0/1 keep them whole) or the shard (ZeRO-2/3);
- **16-bit gradients to the fp32 master gradients** where the reduction ran in
  16 bits: read 2, write 4 over the optimizer's shard;
- **fp16 loss scaling**: unscale and check for inf/NaN, read 4, write 4;
- **the gradient norm** for clipping: read the fp32 shard (4), then one-element
  all-reduces over every group the gradients are split over (tensor, pipeline,
  and data under a sharded optimizer), each its latency alone
  (``CommModel.scalar_all_reduce_s``);
- **the optimizer**: Adam over the shard, ``OPTIMIZER_BYTES_PER_PARAM``.

All but the optimizer are the step's ``overheads``; the optimizer is its own part.
"""

from __future__ import annotations

from twin.operators.roofline import OperatorModel
from twin.engine.stack import StackProfile
from twin.network.collectives import CommModel
from twin.workload.placement import Placement
from twin.workload.plan import ParallelPlan

# Adam step per parameter of the local shard: fp32 grad read (4), master r/w (8),
# m r/w (8), v r/w (8), 16-bit weight write (2).
OPTIMIZER_BYTES_PER_PARAM = 30.0
# 16-bit reduced gradients cast to fp32 master gradients: read 2, write 4.
GRAD_TO_FP32_BYTES_PER_PARAM = 6.0
# fp16 dynamic loss scaling: unscale and check for inf/NaN (torch._amp_foreach_non_finite_check_and_unscale_).
UNSCALE_BYTES_PER_PARAM = 8.0
# Gradient norm: read each fp32 gradient once (multi_tensor_l2norm).
NORM_BYTES_PER_PARAM = 4.0


def step_work_s(local_params: float, shard_params: float, plan: ParallelPlan, ops: OperatorModel,
                comm: CommModel, placement: Placement, stack: StackProfile) -> tuple[float, float]:
    """(overheads, optimizer) seconds of one step on the fullest GPU.

    ``local_params``: parameters the GPU holds; ``shard_params``: those its optimizer updates.
    """
    grad_bytes = stack.grad_reduce_bytes(ops.precision)
    per_param = NORM_BYTES_PER_PARAM
    if grad_bytes < 4.0:
        per_param += GRAD_TO_FP32_BYTES_PER_PARAM
    if ops.precision == "fp16":
        per_param += UNSCALE_BYTES_PER_PARAM
    moved = per_param * shard_params
    if stack.zero_grad_buffer:
        moved += grad_bytes * (shard_params if plan.zero >= 2 else local_params)
    groups = [placement.tensor, placement.pipeline] + ([placement.data] if plan.zero >= 1 else [])
    norm = sum(comm.scalar_all_reduce_s(g) for g in groups)
    if ops.precision == "fp16":
        norm *= 2                                  # the found-inf flag crosses the same groups
    return ops.memory_s(moved) + norm, ops.memory_s(OPTIMIZER_BYTES_PER_PARAM * shard_params)
