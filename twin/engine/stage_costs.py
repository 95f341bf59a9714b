"""Per-stage costs of one micro-batch: the bricks of a training step.

For every pipeline stage, the forward and backward time of one micro-batch on
one (representative) GPU: its layers' GEMMs, attention and memory-bound
kernels from the operator model, tensor-parallel and expert all-to-all
communication inside the layers, recomputation, and for the first and last
stages the embedding and the LM head with its loss, and the fixed launch cost
of every kernel. Also the data-parallel gradient traffic, the per-unit ZeRO-2/3
traffic (``sharding``), and the work between steps (``optimizer_step``). How the
framework runs each part is its ``StackProfile``. Both the analytic schedule
and the discrete-event iteration engine play these bricks.

A frozen base (LoRA, QLoRA) skips the weight-gradient GEMMs: its backward computes
the activation gradients alone. Its adapters add their own small GEMMs, a quantised
base a dequantisation kernel per weight use, and only the adapters' gradients cross
data parallelism and reach the optimizer; ZeRO-3 gathers the base in its storage format.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.engine.optimizer_step import step_work_s
from twin.engine.sharding import ChunkWork, sharded_extra_s
from twin.engine.stack import StackProfile
from twin.engine.stragglers import straggler_fraction
from twin.network.collectives import CommModel
from twin.operators.elementwise import (AUTOCAST_CAST_BYTES_PER_PARAM, FLASH_BACKWARD_FACTOR, LOSS_BYTES_PER_LOGIT,
                                        ROPE_BYTES_PER_ELEMENT, STANDARD_ATTENTION_BYTES_PER_SCORE, elementwise_bytes)
from twin.operators.launches import layer_launch_s
from twin.operators.roofline import OperatorModel
from twin.workload.finetune import ATTENTION_TARGETS, FULL, FinetuneSpec, dequant_bytes_per_weight, matrix_shape
from twin.workload.memory import activation_bytes_per_element, stage_params, stage_weight_bytes, trainable_stage_params
from twin.workload.model import ModelSpec
from twin.workload.placement import Placement
from twin.workload.plan import ParallelPlan, stage_layers


@dataclass(frozen=True)
class ChunkCost:
    """One model chunk (a stage, or a virtual stage) for one micro-batch."""
    forward_s: float            # compute + kernel launches + exposed TP/EP communication, forward
    backward_s: float           # the same, backward (+ recomputation)
    forward_comm_s: float       # of which TP/EP communication
    backward_comm_s: float
    layers: int
    forward_launch_s: float = 0.0    # of which kernel launches
    backward_launch_s: float = 0.0
    forward_dp_s: float = 0.0        # added by ZeRO-3 gathers the prefetch cannot hide (and compute slowed beside them)
    backward_dp_s: float = 0.0       # added by ZeRO-2/3 gathers and reduce-scatters, the same way
    forward_dp_latency_s: float = 0.0    # of forward_dp_s, what the collectives' latency adds (NCCL's ring steps)
    backward_dp_latency_s: float = 0.0


@dataclass(frozen=True)
class StepCosts:
    """Hashable: identical costs are simulated once (``iteration.simulate_iteration``)."""
    chunks: tuple[ChunkCost, ...]    # pipeline · virtual_stages chunks, chunk i on stage i % pipeline
    p2p_s: float                     # one activation (or gradient) transfer between stages
    dp_reduce_s: float               # gradient all-reduce (ZeRO-0; ZeRO-1 where the stack does) or reduce-scatter
    dp_gather_s: float               # parameter all-gather after the optimizer (ZeRO-1/2), once per step
    optimizer_s: float
    overlap_slowdown: float = 0.0    # extra time of compute per second of a data-parallel collective running beside it
    overheads_s: float = 0.0         # per-step work outside the passes: gradient zeroing, casts, the gradient norm
    straggler_fraction: float = 0.0  # compute time added per second of it by the slowest of the plan's GPUs

    def __post_init__(self) -> None:
        object.__setattr__(self, "chunks", tuple(self.chunks))

    def overlapped_s(self, compute_s: float, comm_s: float) -> float:
        """Compute and a collective on its own stream, started together: the longer of the two,
        with compute slowed while both run (1 / Efficiency.overlap_compute - 1 per second shared)."""
        return max(comm_s, compute_s + self.overlap_slowdown * min(compute_s, comm_s))

    def stage_chunks(self, stage: int, pipeline: int) -> list[ChunkCost]:
        return self.chunks[stage::pipeline]


def _frozen_base_s(model: ModelSpec, plan: ParallelPlan, ops: OperatorModel, ft: FinetuneSpec) -> tuple[float, float]:
    """(forward, backward) time one layer adds for one micro-batch on a frozen base: its LoRA adapters
    and the dequantisation of its quantised weights.

    Adapters (Hu et al. 2021) follow their projection's tensor-parallel split: a column-parallel
    projection (q, k, v, gate, up) shards B, a row-parallel one (o, down) shards A. Their backward
    is twice their forward (input and weight gradients). Every use of a quantised weight (forward
    and the backward's data gradient) first writes it in the compute precision.
    """
    if not ft.frozen:
        return 0.0, 0.0
    tokens, t = plan.microbatch * plan.seq_len, plan.tensor
    adapters = 0.0
    for target in ft.lora.targets if ft.lora else ():
        d_in, d_out = matrix_shape(model, target)
        rank = ft.lora.rank
        count = 1.0 if target in ATTENTION_TARGETS else float(model.top_k)
        if target in ("o", "down"):
            adapters += ops.matmul_s(tokens, rank, d_in / t, count) + ops.matmul_s(tokens, d_out, rank, count)
        else:
            adapters += ops.matmul_s(tokens, rank, d_in, count) + ops.matmul_s(tokens, d_out / t, rank, count)
    per_weight = dequant_bytes_per_weight(ft.storage(ops.precision), ops.precision)
    weights = (model.attention_params_per_layer + model.router_params_per_layer) / t \
        + model.expert_params_per_layer / (t * plan.expert)
    dequant = ops.memory_s(per_weight * weights)
    return adapters + dequant, 2.0 * adapters + dequant


def _projection_gemms(model: ModelSpec, plan: ParallelPlan) -> list[tuple[float, float, float, float]]:
    """One layer's projections (column-parallel QKV and FFN-in, row-parallel output and FFN-out), forward, on
    one GPU: (m, n, k, count) of each GEMM."""
    h, t, f = model.hidden, plan.tensor, model.ffn_hidden
    tokens = plan.microbatch * plan.seq_len
    gemms = [(tokens, (h + 2 * model.kv_dim) / t, h, 1.0), (tokens, h, h / t, 1.0)]
    ffn_in_width = (model.ffn_matrices - 1) * f / t
    if model.is_moe:
        local_experts = model.experts / plan.expert
        tokens_per_expert = tokens * model.top_k * plan.expert / model.experts
        gemms += [(tokens, model.experts, h, 1.0),                                     # router
                  (tokens_per_expert, ffn_in_width, h, local_experts),
                  (tokens_per_expert, h, f / t, local_experts)]
    else:
        gemms += [(tokens, ffn_in_width, h, 1.0), (tokens, h, f / t, 1.0)]
    return gemms


def _projection_gemms_s(model: ModelSpec, plan: ParallelPlan, ops: OperatorModel) -> float:
    """One layer's projection GEMMs, forward, on one GPU (``_projection_gemms``), summed as attention's two,
    then the FFN's (a dense FFN's two together)."""
    seconds = [ops.matmul_s(m, n, k, count) for m, n, k, count in _projection_gemms(model, plan)]
    if model.is_moe:
        return sum(seconds)
    return (seconds[0] + seconds[1]) + (seconds[2] + seconds[3])


# A plan of one token on one GPU, unsplit: what ``projection_flops_per_token`` counts the GEMMs of.
_ONE_TOKEN = ParallelPlan(tensor=1, pipeline=1, data=1, expert=1, microbatch=1, virtual_stages=1, schedule="1f1b",
                          sequence_parallel=False, recompute="none", zero=0, overlap_grad_reduce=False,
                          overlap_param_gather=False, global_batch=1, seq_len=1)


def projection_flops_per_token(model: ModelSpec) -> float:
    """The FLOPs (2·m·n·k each) of one layer's projection GEMMs for one token, forward: what every split of the
    layer's GEMMs over tensor-parallel and expert-parallel ranks adds up to."""
    return sum(2.0 * m * n * k * count for m, n, k, count in _projection_gemms(model, _ONE_TOKEN))


def _attention_core_s(model: ModelSpec, plan: ParallelPlan, ops: OperatorModel) -> tuple[float, float]:
    """(forward, backward) of one layer's attention core: Q·Kᵀ and ·V over (a / t) heads."""
    s, b, t = plan.seq_len, plan.microbatch, plan.tensor
    heads_local = model.heads / t
    if ops.attention_kernel != "standard":
        # FlashAttention skips the masked half of a causal s×s matrix and computes over
        # its padded head dimension.
        padding = ops.padded_head_dim(model.head_dim) / model.head_dim
        core_flops = b * s * model.layer_attention_flops_per_token(s) / t / 2 * padding
        return ops.attention_s(core_flops), ops.attention_backward_s(FLASH_BACKWARD_FACTOR * core_flops)
    core_fwd = (ops.matmul_s(s, s, model.head_dim, count=b * heads_local)
                + ops.matmul_s(s, model.head_dim, s, count=b * heads_local)
                + ops.memory_s(STANDARD_ATTENTION_BYTES_PER_SCORE * b * heads_local * s * s))
    return core_fwd, 2.0 * core_fwd


def _memory_bound_s(model: ModelSpec, plan: ParallelPlan, ops: OperatorModel,
                    stack: StackProfile) -> tuple[float, float]:
    """(memory-bound kernels, rotary embedding) of one layer, forward: norms, residuals, dropout
    (split by SP) and the activation function; the rotation of q and k."""
    h, t, kernels = model.hidden, plan.tensor, stack.kernels
    tokens = plan.microbatch * plan.seq_len
    act = activation_bytes_per_element(ops.precision)
    per_hidden, per_ffn = elementwise_bytes(model.norm, model.activation, kernels, stack.autocast)
    elementwise = per_hidden * h / (t if plan.sequence_parallel else 1)
    act_fn = per_ffn * model.ffn_hidden / t * model.top_k
    memory_fwd = ops.memory_s(tokens * (elementwise + act_fn) * act / 2.0)
    rope = 0.0
    if model.position == "rope":
        rope = ops.memory_s(tokens * ROPE_BYTES_PER_ELEMENT[kernels] * (h + model.kv_dim) / t * act / 2.0)
    return memory_fwd, rope


def _layer_comm_s(model: ModelSpec, plan: ParallelPlan, ops: OperatorModel, comm: CommModel,
                  placement: Placement, stack: StackProfile, gemm: float) -> tuple[float, float]:
    """(forward, backward) exposed tensor- and expert-parallel communication of one layer.

    Tensor parallelism: two all-reduces (or reduce-scatter + all-gather with SP, the same
    traffic) forward and two backward, of the b·s·h activations."""
    tokens, h = plan.microbatch * plan.seq_len, model.hidden
    act = activation_bytes_per_element(ops.precision)
    tp_ar = comm.all_reduce_s(tokens * h * act, placement.tensor)
    fwd_comm = bwd_comm = 2 * tp_ar
    if stack.tp_comm_overlap:
        # Userbuffers split each GEMM and its all-gather or reduce-scatter into chunks that
        # pipeline (Megatron-Core --tp-comm-overlap): the layer's GEMMs hide the collectives,
        # slowed by σ while they share the GPU; what outlasts them stays exposed.
        fwd_comm = _exposed(gemm, fwd_comm, ops.efficiency.overlap_slowdown)
        bwd_comm = _exposed(2.0 * gemm, bwd_comm, ops.efficiency.overlap_slowdown)
    if model.is_moe and plan.expert > 1:
        a2a = comm.all_to_all_s(tokens * model.top_k * h * act, placement.expert)
        fwd_comm += 2 * a2a                                   # dispatch and combine
        bwd_comm += 2 * a2a
    return fwd_comm, bwd_comm


def _layer_costs(model: ModelSpec, plan: ParallelPlan, ops: OperatorModel, comm: CommModel,
                 placement: Placement, stack: StackProfile,
                 ft: FinetuneSpec = FULL) -> tuple[float, float, float, float]:
    """(forward compute, backward compute, forward comm, backward comm) of one layer, one micro-batch.

    The communication is what stays exposed: with ``tp_comm_overlap`` the tensor-parallel
    collectives run beside the layer's GEMMs and only what those cannot hide remains."""
    fwd, bwd, gemm = _layer_compute_s(model, plan, ops, stack, ft)
    fwd_comm, bwd_comm = _layer_comm_s(model, plan, ops, comm, placement, stack, gemm)
    if plan.recompute == "full":
        bwd_comm += fwd_comm
    return fwd, bwd, fwd_comm, bwd_comm


def _passes(model: ModelSpec, plan: ParallelPlan, ops: OperatorModel, comm: CommModel, placement: Placement,
            stack: StackProfile, ft: FinetuneSpec, memo: dict | None) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """One layer's (fwd, bwd, fwd comm, bwd comm, fwd launch, bwd launch) and the end stages' (head forward,
    head backward, embedding forward) for one micro-batch.

    ``memo``: answers kept for the plans priced with the same model, operator model, stack and method
    (one prepared scenario), by what they depend on: the layer's split (tensor, experts, sequence
    parallelism), its micro-batch and sequence, the recomputation and where its tensor- and expert-parallel
    groups are placed (``CommModel.groups_key``: plans of one tensor size that differ in pipeline or data
    size place their tensor groups alike)."""
    key = None
    if memo is not None:
        tensor = comm.groups_key(placement.tensor) if plan.tensor > 1 else None
        expert = comm.groups_key(placement.expert) if model.is_moe and plan.expert > 1 else None
        key = ("passes", plan.tensor, plan.expert, plan.sequence_parallel, plan.microbatch, plan.seq_len,
               plan.recompute, tensor, expert)
        found = memo.get(key)
        if found is not None:
            return found
    fwd, bwd, fwd_comm, bwd_comm = _layer_costs(model, plan, ops, comm, placement, stack, ft)
    launch_f, launch_b = layer_launch_s(model, stack.kernels, stack.autocast, ops.attention_kernel, ops.precision,
                                        model.experts / plan.expert)
    if plan.recompute == "full":
        launch_b += launch_f
    found = (fwd, bwd, fwd_comm, bwd_comm, launch_f, launch_b), _head_s(model, plan, ops, stack, ft)
    if key is not None:
        memo[key] = found
    return found


def chunks_work_s(model: ModelSpec, plan: ParallelPlan, ops: OperatorModel, comm: CommModel, placement: Placement,
                  stack: StackProfile, ft: FinetuneSpec = FULL, memo: dict | None = None) -> float:
    """Forward and backward of every chunk for one micro-batch, summed over the pipeline: what the chunks'
    ``ChunkCost`` times add up to (each layer's compute, exposed tensor- and expert-parallel communication
    and kernel launches, recomputation included, and the embedding and head), without ZeRO-2/3 traffic.
    ``memo``: as ``_passes``'s."""
    (fwd, bwd, fwd_comm, bwd_comm, launch_f, launch_b), (head_fwd, head_bwd, embed_fwd) = _passes(
        model, plan, ops, comm, placement, stack, ft, memo)
    layers = sum(stage_layers(model.layers, plan.pipeline, plan.virtual_stages))
    return layers * ((fwd + fwd_comm + launch_f) + (bwd + bwd_comm + launch_b)) + 3 * embed_fwd + head_fwd + head_bwd


def stage_passes_s(model: ModelSpec, plan: ParallelPlan, ops: OperatorModel, comm: CommModel, placement: Placement,
                   stack: StackProfile, ft: FinetuneSpec = FULL, memo: dict | None = None,
                   compute_only: bool = False) -> list[float]:
    """Each pipeline stage's chunks' forward and backward for one micro-batch, as ``_chunks`` prices them,
    without ZeRO-2/3 traffic (``memo``: as ``_passes``'s); ``compute_only``: their kernels alone, without
    communication and launches (what ``engine.step`` counts as a stage's compute)."""
    (fwd_l, bwd_l, fcomm_l, bcomm_l, launch_f, launch_b), (head_fwd, head_bwd, embed_fwd) = _passes(
        model, plan, ops, comm, placement, stack, ft, memo)
    if compute_only:
        fcomm_l = bcomm_l = launch_f = launch_b = 0.0
    layers = stage_layers(model.layers, plan.pipeline, plan.virtual_stages)
    stages = [0.0] * plan.pipeline
    for i, n in enumerate(layers):
        first, last = i == 0, i == len(layers) - 1
        fwd = n * (fwd_l + fcomm_l + launch_f) + (embed_fwd if first else 0.0) + (head_fwd if last else 0.0)
        bwd = n * (bwd_l + bcomm_l + launch_b) + (2 * embed_fwd if first else 0.0) + (head_bwd if last else 0.0)
        stages[i % plan.pipeline] += fwd + bwd
    return stages


def _layer_compute_s(model: ModelSpec, plan: ParallelPlan, ops: OperatorModel, stack: StackProfile,
                    ft: FinetuneSpec = FULL) -> tuple[float, float, float]:
    """(forward, backward with its recomputation, the projection GEMMs' forward) compute of one layer for one
    micro-batch, without communication: what a chunk's passes cost at the least."""
    gemm = _projection_gemms_s(model, plan, ops)
    core_fwd, core_bwd = _attention_core_s(model, plan, ops)
    memory_fwd, rope = _memory_bound_s(model, plan, ops, stack)
    weight_grads = 0.0 if ft.frozen else gemm                 # dW GEMMs: none for frozen weights
    base_fwd, base_bwd = _frozen_base_s(model, plan, ops, ft)
    fwd = gemm + core_fwd + memory_fwd + rope + base_fwd
    bwd = gemm + weight_grads + core_bwd + 2.0 * memory_fwd + rope + base_bwd
    if stack.autocast:
        cast = ops.memory_s(AUTOCAST_CAST_BYTES_PER_PARAM * (
            model.dense_params_per_layer / plan.tensor + model.expert_params_per_layer / (plan.tensor * plan.expert)))
        fwd += cast
        bwd += cast
    if plan.recompute == "full":
        bwd += fwd
    elif plan.recompute == "selective" and (ops.attention_kernel == "standard" or stack.recompute_fused_attention):
        bwd += core_fwd
    return fwd, bwd, gemm


def _exposed(compute_s: float, comm_s: float, slowdown: float) -> float:
    """What a collective overlapped with ``compute_s`` adds to it: max(M, C + σ·min(C, M)) - C."""
    return max(comm_s, compute_s + slowdown * min(compute_s, comm_s)) - compute_s


def _head_s(model: ModelSpec, plan: ParallelPlan, ops: OperatorModel, stack: StackProfile,
            ft: FinetuneSpec) -> tuple[float, float, float]:
    """(head forward, head backward, embedding forward) of one micro-batch: the logits GEMM and the
    vocabulary-parallel cross-entropy (fused or not), and the embedding lookup."""
    h, t, v = model.hidden, plan.tensor, model.vocab
    tokens = plan.microbatch * plan.seq_len
    loss_fwd, loss_bwd = (ops.memory_s(n * tokens * v / t) for n in LOSS_BYTES_PER_LOGIT[stack.cross_entropy])
    head_gemm = ops.matmul_s(tokens, v / t, h)
    head_dw = 0.0 if ft.frozen else head_gemm                 # a frozen LM head: its input gradient alone
    head_fwd, head_bwd = head_gemm + loss_fwd, head_gemm + head_dw + loss_bwd
    if stack.autocast:
        cast = ops.memory_s(AUTOCAST_CAST_BYTES_PER_PARAM * v * h / t)
        head_fwd, head_bwd = head_fwd + cast, head_bwd + cast
    act = activation_bytes_per_element(ops.precision)
    embed_fwd = ops.memory_s(2.0 * tokens * h * act / (t if plan.sequence_parallel else 1))
    return head_fwd, head_bwd, embed_fwd


def _unit_bytes(model: ModelSpec, plan: ParallelPlan, precision: str, stack: StackProfile, ft: FinetuneSpec,
                trained: tuple[float, float]) -> tuple[float, float]:
    """(parameter, gradient) bytes per parameter a GPU holds, for ZeRO-2/3's unit-by-unit traffic.

    Parameters are gathered in 16 bits, or in fp32 where autocast keeps no 16-bit copy of them;
    a frozen base is gathered in its storage format and only its adapters' gradients are
    reduce-scattered, so both are priced per parameter held."""
    grad_bytes = stack.grad_reduce_bytes(precision)
    param_bytes = activation_bytes_per_element("fp32") if stack.autocast else activation_bytes_per_element(precision)
    if not ft.frozen:
        return param_bytes, grad_bytes
    ends = {0, plan.pipeline - 1}
    held = sum(max((stage_params(model, plan, st) for st in ends), key=sum))
    stored = sum(max((stage_weight_bytes(model, plan, st, precision, ft) for st in ends), key=sum))
    return stored / max(1.0, held), grad_bytes * sum(trained) / max(1.0, held)


def _chunks(model: ModelSpec, plan: ParallelPlan, comm: CommModel, placement: Placement, stack: StackProfile,
            layer: tuple[float, ...], ends: tuple[float, ...], unit: tuple[float, float],
            slowdown: float, latency_split: bool = True) -> list[ChunkCost]:
    """Every chunk's cost from one layer's (fwd, bwd, fwd comm, bwd comm, fwd launch, bwd launch), the
    (head forward, head backward, embedding forward) of the end stages and the ZeRO-2/3 unit bytes
    (``latency_split``: as ``step_costs``'s). A chunk's cost depends only on its layers and whether it is
    the first or the last: chunks alike are priced once and share one ``ChunkCost``."""
    layers = stage_layers(model.layers, plan.pipeline, plan.virtual_stages)
    comms = (comm, comm.bandwidth_only() if latency_split else None)
    alike: dict[tuple[int, bool, bool], ChunkCost] = {}
    chunks = []
    for i, n in enumerate(layers):
        shape = (n, i == 0, i == len(layers) - 1)
        cost = alike.get(shape)
        if cost is None:
            cost = alike[shape] = _chunk_cost(*shape, model, plan, comms, placement, stack, layer, ends, unit,
                                              slowdown)
        chunks.append(cost)
    return chunks


def _chunk_cost(n: int, first: bool, last: bool, model: ModelSpec, plan: ParallelPlan,
                comms: tuple[CommModel, CommModel | None], placement: Placement, stack: StackProfile,
                layer: tuple[float, ...], ends: tuple[float, ...], unit: tuple[float, float],
                slowdown: float) -> ChunkCost:
    """One chunk of ``n`` layers (with the embedding when ``first``, the head when ``last``), as ``_chunks``'s."""
    fwd_l, bwd_l, fcomm_l, bcomm_l, launch_f, launch_b = layer
    head_fwd, head_bwd, embed_fwd = ends
    t = plan.tensor
    fwd = n * (fwd_l + fcomm_l + launch_f) + (embed_fwd if first else 0.0) + (head_fwd if last else 0.0)
    bwd = n * (bwd_l + bcomm_l + launch_b) + (2 * embed_fwd if first else 0.0) + (head_bwd if last else 0.0)
    work = ChunkWork(n, fwd_l + fcomm_l + launch_f, bwd_l + bcomm_l + launch_b,
                     embed_fwd if first else 0.0, head_fwd if last else 0.0,
                     model.embedding_params / t if first else 0.0,
                     model.head_params / t if last else 0.0)
    dp_fwd, dp_bwd, lat_fwd, lat_bwd = _sharded_s(work, model, plan, comms, placement, stack, unit, slowdown)
    return ChunkCost(fwd, bwd, n * fcomm_l, n * bcomm_l, n, n * launch_f, n * launch_b, dp_fwd, dp_bwd,
                     lat_fwd, lat_bwd)


def _sharded_s(work: ChunkWork, model: ModelSpec, plan: ParallelPlan, comms: tuple[CommModel, CommModel | None],
               placement: Placement, stack: StackProfile, unit: tuple[float, float],
               slowdown: float) -> tuple[float, float, float, float]:
    """A chunk's ZeRO-2/3 extra (forward, backward) and, of it, what the collectives' latency adds: the
    extra less the extra the same passes would have if every collective cost its bytes alone (0 without
    the bytes-only model)."""
    full = sharded_extra_s(work, model, plan, comms[0], placement, stack, unit[0], unit[1], slowdown)
    if full == (0.0, 0.0) or comms[1] is None:
        return full[0], full[1], 0.0, 0.0
    bare = sharded_extra_s(work, model, plan, comms[1], placement, stack, unit[0], unit[1], slowdown)
    return full[0], full[1], max(0.0, full[0] - bare[0]), max(0.0, full[1] - bare[1])


def _p2p_s(model: ModelSpec, plan: ParallelPlan, precision: str, comm: CommModel, placement: Placement,
           stack: StackProfile) -> float:
    """One activation transfer between pipeline stages.

    Each tensor-parallel rank sends its 1/t slice of the b·s·h boundary activation (Megatron's
    scatter/gather optimisation, Narayanan et al. SC'21 §4.1); without sequence parallelism the
    receiving ranks all-gather the slices over NVLink. Stacks without it send the whole
    activation from every rank."""
    if plan.pipeline <= 1:
        return 0.0
    size = plan.microbatch * plan.seq_len * model.hidden * activation_bytes_per_element(precision)
    if stack.pipeline_sends == "full" and not plan.sequence_parallel:
        return comm.send_recv_s(size, placement.pipeline)
    p2p = comm.send_recv_s(size / plan.tensor, placement.pipeline)
    if not plan.sequence_parallel:
        p2p += comm.all_gather_s(size, placement.tensor)
    return p2p


def _dp_collectives_s(plan: ParallelPlan, precision: str, comm: CommModel, placement: Placement,
                      stack: StackProfile, trained: tuple[float, float]) -> tuple[float, float]:
    """(gradient reduce, parameter gather) once per step over the fullest stage's trained parameters.

    ZeRO-0/1 reduce whole gradients once per step (ZeRO-2/3 reduce-scatter them every backward,
    in ``sharding``); ZeRO-1/2 all-gather the updated parameters."""
    dense, expert = trained
    grad_bytes = stack.grad_reduce_bytes(precision)
    param_bytes = activation_bytes_per_element("fp32") if stack.autocast else activation_bytes_per_element(precision)

    def over_dp(collective, bytes_per_param: float) -> float:
        return (collective(dense * bytes_per_param, placement.data)
                + collective(expert * bytes_per_param, placement.expert_data))

    dp_reduce = dp_gather = 0.0
    if plan.zero == 0 or (plan.zero == 1 and stack.zero1_all_reduce(precision)):
        dp_reduce = over_dp(comm.all_reduce_s, grad_bytes)
    elif plan.zero == 1:
        dp_reduce = over_dp(comm.reduce_scatter_s, grad_bytes)
    if plan.zero in (1, 2):
        dp_gather = over_dp(comm.all_gather_s, param_bytes)
    return dp_reduce, dp_gather


def step_costs(model: ModelSpec, plan: ParallelPlan, ops: OperatorModel, comm: CommModel,
               placement: Placement, stack: StackProfile, ft: FinetuneSpec = FULL,
               straggler_spread: float = 0.0, latency_split: bool = True, memo: dict | None = None) -> StepCosts:
    """Costs of every chunk, the stage boundary, data parallelism and the work between steps.

    Data parallelism works over the fullest stage's trained parameters (all of them, or the
    adapters), gradients reduced in the stack's element type. ``straggler_spread``: σ of a GPU's
    kernel time (``stragglers``); the step waits for the slowest of the plan's GPUs.
    ``latency_split`` False leaves out what NCCL's latency adds to the ZeRO-2/3 traffic
    (``ChunkCost.*_dp_latency_s`` stay 0): the step takes as long, only its breakdown lacks that
    share, and the bytes-only pricing it needs is skipped (a search ranking plans by their step).
    ``memo``: as ``_passes``'s."""
    precision = ops.precision
    layer, ends = _passes(model, plan, ops, comm, placement, stack, ft, memo)
    trained, p2p, overheads, optimizer = _extras(model, plan, ops, comm, placement, stack, ft, memo)
    unit = _unit_bytes(model, plan, precision, stack, ft, trained)
    slowdown = ops.efficiency.overlap_slowdown
    chunks = _chunks(model, plan, comm, placement, stack, layer, ends, unit, slowdown, latency_split)
    dp_reduce, dp_gather = _dp_collectives_s(plan, precision, comm, placement, stack, trained)
    return StepCosts(chunks, p2p, dp_reduce, dp_gather, optimizer, slowdown, overheads,
                     straggler_fraction(plan.gpus, straggler_spread))


def _step_work_s(plan: ParallelPlan, ops: OperatorModel, comm: CommModel, placement: Placement, stack: StackProfile,
                 trained: tuple[float, float]) -> tuple[float, float]:
    """(overheads, optimizer) of the step over the fullest stage's ``trained`` (dense, expert) parameters, the
    optimizer's shard of them under ZeRO-1 and above."""
    dense, expert = trained
    shard = (dense / plan.data + expert / plan.expert_data) if plan.zero >= 1 else dense + expert
    return step_work_s(dense + expert, shard, plan, ops, comm, placement, stack)


def step_extras_s(model: ModelSpec, plan: ParallelPlan, ops: OperatorModel, comm: CommModel, placement: Placement,
                  stack: StackProfile, ft: FinetuneSpec = FULL, memo: dict | None = None) -> tuple[float, float, float]:
    """(one transfer between stages, the step's overheads, its optimizer step), each as ``step_costs`` prices
    it: what a step adds to its chunks' passes (``chunks_work_s``) besides ZeRO-2/3 and data-parallel traffic.
    ``memo``: as ``_extras``'s."""
    _, p2p, overheads, optimizer = _extras(model, plan, ops, comm, placement, stack, ft, memo)
    return p2p, overheads, optimizer


def _extras(model: ModelSpec, plan: ParallelPlan, ops: OperatorModel, comm: CommModel, placement: Placement,
            stack: StackProfile, ft: FinetuneSpec,
            memo: dict | None) -> tuple[tuple[float, float], float, float, float]:
    """(the fullest end stage's trained (dense, expert) parameters, one transfer between stages, the step's
    overheads, its optimizer step). ``memo``: as ``_passes``'s, keyed by the whole plan and its placement: a
    search asks for them once for a plan's floor (``step_extras_s``) and again for its step (``step_costs``)."""
    key = None
    if memo is not None:
        key = ("extras", plan, placement)
        found = memo.get(key)
        if found is not None:
            return found
    trained = max((trainable_stage_params(model, plan, st, ft) for st in {0, plan.pipeline - 1}), key=sum)
    overheads, optimizer = _step_work_s(plan, ops, comm, placement, stack, trained)
    found = trained, _p2p_s(model, plan, ops.precision, comm, placement, stack), overheads, optimizer
    if key is not None:
        memo[key] = found
    return found
