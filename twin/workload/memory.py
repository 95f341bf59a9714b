"""Memory per GPU: model states (Rajbhandari et al. 2020) and activations (Korthikanti et al. 2022).

Model states, mixed precision with Adam, per parameter: 16-bit weights (2 B),
fp32 gradient accumulation (4 B, Megatron's main grads) and fp32 master
weights + Adam m + v (12 B) = 18 B; ZeRO-1 shards the 12 B of optimizer
states over data parallelism, ZeRO-2 also the gradients, ZeRO-3 also the weights.

Activations per layer, per micro-batch, 16-bit (Korthikanti et al. 2022 §4):
s·b·h·(34 + 5·a·s/h) bytes for a GPT layer, generalised here to GQA and SwiGLU
term by term; tensor parallelism divides all but 10·s·b·h of it, sequence
parallelism divides the rest; selective recomputation (or FlashAttention,
which never stores the s×s scores) drops the 5·a·s/h term; full recomputation
keeps only each layer's 2·s·b·h input.

Fine-tuning (``twin.workload.finetune``): a frozen base keeps its weights alone, its
linear projections in their storage format (bf16, fp8, int8, NF4); the adapters keep
weights, gradients and Adam states. A quantised base whose linears keep their inputs for the
backward (bitsandbytes before 0.43.2) holds those inputs too (``layer_activation_bytes``).
FP8 training (NVIDIA Transformer Engine) spends a cached fp8 copy of each linear weight and
its transpose, and amax histories under delayed scaling, and saves the inputs of the linear
layers in fp8 (1 B instead of 2).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import product

from twin.options import Fp8Recipe
from twin.workload.finetune import (
    ADAPTER_STATE_BYTES,
    FULL,
    GEMM_OPERAND_BYTES,
    FinetuneSpec,
    adapter_params_per_layer,
    dequantised_per_use,
    kept_input_bytes,
    linear_params_per_layer,
    matrix_shape,
    model_targets,
)
from twin.workload.model import ModelSpec
from twin.workload.plan import ParallelPlan, doublings, layers_on_stage

# What a training process holds beyond its tensors (docs/limits.md). Assumptions: the CUDA
# context with the cuBLAS/cuDNN workspaces ~0.5 GiB on Hopper, and as much again of the caching
# allocator's fragmentation; NCCL's communicator buffers ~1 GiB at scale. A one-GPU job creates no
# communicator, so it holds no NCCL buffers (NCCL allocates them in ncclCommInitRank).
RUNTIME_CONTEXT_BYTES = 1 * 2**30
NCCL_BUFFER_BYTES = 1 * 2**30
RUNTIME_RESERVED_BYTES = RUNTIME_CONTEXT_BYTES + NCCL_BUFFER_BYTES

# Bytes per logit held at the loss's peak when the stack does not say otherwise: the 16-bit logits
# and their fp32 softmax (Megatron's vocabulary-parallel cross-entropy keeps the fp32 exponentials
# for its backward). Stacks that upcast the whole logits first hold more (catalog stacks.yaml,
# ``loss_bytes_per_logit``).
LOSS_HELD_BYTES_PER_LOGIT = 6.0

# FP8 training with NVIDIA Transformer Engine (Hopper). Each linear weight is cast once per
# step to fp8 and its transpose is kept too (the backward's data-gradient GEMM reads Wᵀ):
# 2 B per weight stored wider than fp8, 1 B (the transpose) for a weight stored in fp8
# (TE ``Linear`` fp8 weight workspaces, kept across micro-batches).
FP8_WEIGHT_CACHE_BYTES = 2.0
# Delayed scaling keeps, per GEMM, an amax history of ``amax_history_len`` fp32 values for
# each scaled tensor: input, weight and output forward, output and input gradients backward
# (TE ``DelayedScaling``: amax_history_len 1024 by default); four GEMMs per layer (QKV,
# output projection, FFN in, FFN out). Current scaling keeps no history.
FP8_AMAX_HISTORY_LEN = 1024
FP8_SCALED_TENSORS_PER_GEMM = 5
FP8_GEMMS_PER_LAYER = 4


def state_bytes_per_param(precision: str) -> tuple[float, float, float]:
    """(weights, gradients, optimizer states) bytes per parameter for Adam (fp8's weight copies:
    ``fp8_weight_extra_bytes``)."""
    if precision in ("fp32", "tf32"):
        return 4.0, 4.0, 8.0            # fp32 weights are the master copy: Adam m, v only
    return 2.0, 4.0, 12.0               # bf16 / fp16 / fp8



def activation_bytes_per_element(precision: str) -> float:
    return 4.0 if precision in ("fp32", "tf32") else 2.0


@dataclass(frozen=True)
class MemoryBreakdown:
    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    runtime_bytes: float
    stage: int                  # the pipeline stage this breakdown is for (the fullest)
    optimizer_paged: bool = False   # optimizer states in paged memory: they move to the host when HBM is full

    @property
    def total_bytes(self) -> float:
        return (self.weights_bytes + self.gradients_bytes + self.optimizer_bytes
                + self.activations_bytes + self.runtime_bytes)

    @property
    def required_bytes(self) -> float:
        """HBM a step cannot do without: everything but paged optimizer states (QLoRA §3)."""
        return self.total_bytes - (self.optimizer_bytes if self.optimizer_paged else 0.0)

    def parts(self) -> dict[str, float]:
        """Bytes of each part of the memory, and their total."""
        return {"weights": self.weights_bytes, "gradients": self.gradients_bytes,
                "optimizer": self.optimizer_bytes, "activations": self.activations_bytes,
                "runtime": self.runtime_bytes, "total": self.total_bytes}


def stage_params(model: ModelSpec, plan: ParallelPlan, stage: int) -> tuple[float, float]:
    """(dense, expert) parameters held by one GPU of ``stage`` (TP and EP shards)."""
    layers = layers_on_stage(model.layers, plan, stage)
    dense = layers * model.dense_params_per_layer / plan.tensor
    expert = layers * model.expert_params_per_layer / (plan.tensor * plan.expert)
    if stage == 0:
        dense += model.embedding_params / plan.tensor
    if stage == plan.pipeline - 1:
        head = model.head_params if not model.tied_embeddings or plan.pipeline == 1 else model.embedding_params
        dense += (head + model.final_norm_params) / plan.tensor
    return dense, expert


def trainable_stage_params(model: ModelSpec, plan: ParallelPlan, stage: int, ft: FinetuneSpec) -> tuple[float, float]:
    """(dense, expert) parameters one GPU of ``stage`` trains: its whole share, or its adapters."""
    if not ft.frozen:
        return stage_params(model, plan, stage)
    if ft.lora is None:
        return 0.0, 0.0
    layers = layers_on_stage(model.layers, plan, stage)
    attention, ffn = adapter_params_per_layer(model, ft.lora)
    return layers * attention / plan.tensor, layers * model.experts * ffn / (plan.tensor * plan.expert)


def stage_weight_bytes(model: ModelSpec, plan: ParallelPlan, stage: int, precision: str,
                       ft: FinetuneSpec) -> tuple[float, float]:
    """(dense, expert) bytes of the weights one GPU of ``stage`` stores (before ZeRO-3 sharding).

    The linear projections in the storage format, the rest (embeddings, norms, LM head) in the
    training precision's 16 bits (fp32 for fp32 training), adapters in their own precision.
    """
    fp32 = precision in ("fp32", "tf32")
    w_b = state_bytes_per_param(precision)[0]
    dense, expert = stage_params(model, plan, stage)
    layers = layers_on_stage(model.layers, plan, stage)
    linear_dense = layers * linear_params_per_layer(model)[0] / plan.tensor
    stored_b = ft.storage(precision).bits / 8
    dense_bytes = w_b * (dense - linear_dense) + stored_b * linear_dense
    expert_bytes = stored_b * expert
    if ft.frozen and ft.lora is not None:
        adapter_dense, adapter_expert = trainable_stage_params(model, plan, stage, ft)
        adapter_b = ADAPTER_STATE_BYTES[fp32][0]
        dense_bytes += adapter_b * adapter_dense
        expert_bytes += adapter_b * adapter_expert
    return dense_bytes, expert_bytes


def fp8_weight_extra_bytes(model: ModelSpec, plan: ParallelPlan, stage: int, precision: str,
                           ft: FinetuneSpec, fp8_recipe: Fp8Recipe) -> tuple[float, float]:
    """(dense, expert) bytes FP8 training adds beside the weights: the fp8 copies and transposes of the
    linear weights (sharded with them; an fp8 base keeps its transpose alone, an int8 or NF4 one is
    dequantised at every use instead) and the amax histories of delayed scaling."""
    if precision != "fp8":
        return 0.0, 0.0
    layers = layers_on_stage(model.layers, plan, stage)
    linear_dense = layers * linear_params_per_layer(model)[0] / plan.tensor
    _, expert = stage_params(model, plan, stage)
    storage = ft.storage(precision)
    cache_b = {"fp8": FP8_WEIGHT_CACHE_BYTES - 1.0, "int8": 0.0, "nf4": 0.0}.get(storage.name, FP8_WEIGHT_CACHE_BYTES)
    history = 0.0
    if fp8_recipe in ("delayed", "hybrid"):
        history = layers * FP8_GEMMS_PER_LAYER * FP8_SCALED_TENSORS_PER_GEMM * FP8_AMAX_HISTORY_LEN * 4.0
    return cache_b * linear_dense + history, cache_b * expert


def dequant_workspace_bytes(model: ModelSpec, plan: ParallelPlan, precision: str, ft: FinetuneSpec) -> float:
    """One linear weight dequantised to the compute precision at a time (the largest, TP-sharded)."""
    if not dequantised_per_use(ft.storage(precision), precision):
        return 0.0
    largest = max(d_in * d_out for d_in, d_out in (matrix_shape(model, t) for t in model_targets(model)))
    return GEMM_OPERAND_BYTES[precision] * largest / plan.tensor


def layer_activation_bytes(model: ModelSpec, plan: ParallelPlan, attention: str, fp8: bool = False,
                           kept_bytes_per_element: float = 0.0) -> float:
    """Activations one layer stores for one micro-batch on one GPU (no recomputation).

    ``fp8``: the inputs of the linear layers are saved in fp8 (Transformer Engine): the QKV and
    FFN-in inputs (2h of the 10h that tensor parallelism leaves whole) and the output projection's
    and FFN-out's inputs (h + top_k·f) take 1 B instead of 2.

    ``kept_bytes_per_element``: a frozen, quantised base's linears keep their inputs until the backward, this
    many bytes per element (``kept_input_bytes``), which a frozen base does not hold otherwise: the
    attention norm's output (adapters read it through their own dropout), the FFN's input (with
    experts, the router's input and each expert's copy of its tokens, (1 + top_k)·h) and the
    FFN-out input (top_k·f); the output projection's input is the attention kernel's own saved
    output, except under standard attention, where it is a copy (h).
    """
    s, b, h, t = plan.seq_len, plan.microbatch, model.hidden, plan.tensor
    f, kvd = model.ffn_hidden, model.kv_dim
    attn = 7 * h + 4 * kvd                                    # 11h for multi-head attention
    if model.activation == "swiglu":
        mlp = 3 * h + model.top_k * 6 * f
    else:
        mlp = 3 * h + model.top_k * 4 * f                     # 19h for f = 4h
    norms = 4 * h
    whole = 10 * h                                            # stays whole under TP without SP
    split = attn + mlp + norms - whole                        # 34h for a GPT layer, in all
    if fp8:
        whole -= 2 * h
        split -= h + model.top_k * f
    if kept_bytes_per_element:
        ffn_in = (1 + model.top_k) * h if model.is_moe else h
        whole += kept_bytes_per_element * (h + ffn_in)
        split += kept_bytes_per_element * (model.top_k * f + (h if attention == "standard" else 0))
    if plan.sequence_parallel:
        per_token = (whole + split) / t
    else:
        per_token = whole + split / t
    scores = 0.0
    if attention == "standard" and plan.recompute == "none":
        scores = 5 * model.heads * s / t                      # softmax, dropout mask and output
    return s * b * (per_token + scores)


def microbatches_in_flight(plan: ParallelPlan, stage: int) -> float:
    """Micro-batches whose activations a stage holds at its peak, in units of its full layer set.

    GPipe: all m; 1F1B: p - stage (at most m); interleaved 1F1B: the first stage
    holds p·(1 + (p-1)/(p·v)) (Korthikanti et al. 2022 §4.2.3).
    """
    p, m = plan.pipeline, plan.microbatches
    if plan.schedule == "gpipe":
        return float(m)
    in_flight = float(min(p - stage, m))
    if plan.schedule == "interleaved":
        in_flight *= 1 + (p - 1) / (p * plan.virtual_stages)
    return in_flight


def runtime_reserved_bytes(plan: ParallelPlan) -> float:
    """The process's memory beyond its tensors: CUDA context and fragmentation, NCCL buffers when the
    job spans more than one GPU."""
    return RUNTIME_CONTEXT_BYTES + (NCCL_BUFFER_BYTES if plan.gpus > 1 else 0)


def memory_per_gpu(model: ModelSpec, plan: ParallelPlan, precision: str, attention: str,
                   ft: FinetuneSpec = FULL, fp8_recipe: Fp8Recipe = "hybrid",
                   loss_bytes_per_logit: float = LOSS_HELD_BYTES_PER_LOGIT) -> MemoryBreakdown:
    """Memory of the fullest GPU: the first stage (most activations) or the last (LM head).

    ``loss_bytes_per_logit``: bytes the loss holds per logit at its peak (the stack's). A function of
    its arguments alone (no GPU, no cluster): a search asks the same plan on every node type with that
    many GPUs, so answers are kept (``MemoryBreakdown`` is frozen, shared safely)."""
    return _memory_per_gpu(model, plan, precision, attention, ft, fp8_recipe, loss_bytes_per_logit)


@lru_cache(maxsize=1 << 16)
def _memory_per_gpu(model: ModelSpec, plan: ParallelPlan, precision: str, attention: str, ft: FinetuneSpec,
                    fp8_recipe: Fp8Recipe, loss_bytes_per_logit: float) -> MemoryBreakdown:
    best: MemoryBreakdown | None = None
    for stage in sorted({0, plan.pipeline - 1}):
        breakdown = _stage_memory(model, plan, precision, attention, stage, ft, fp8_recipe, loss_bytes_per_logit)
        if best is None or breakdown.total_bytes > best.total_bytes:
            best = breakdown
    assert best is not None
    return best


def _stage_memory(model: ModelSpec, plan: ParallelPlan, precision: str, attention: str, stage: int,
                  ft: FinetuneSpec, fp8_recipe: Fp8Recipe, loss_bytes_per_logit: float) -> MemoryBreakdown:
    fp32 = precision in ("fp32", "tf32")
    _, g_b, o_b = ADAPTER_STATE_BYTES[fp32] if ft.frozen else state_bytes_per_param(precision)
    (trained_dense, trained_expert), (stored_dense, stored_expert), (fp8_dense, fp8_expert), dequant = \
        _stage_weights(model, plan, stage, precision, ft, fp8_recipe)

    def sharded(dense_bytes: float, expert_bytes: float, level: int) -> float:
        if plan.zero >= level:
            return dense_bytes / plan.data + expert_bytes / plan.expert_data
        return dense_bytes + expert_bytes

    layers = layers_on_stage(model.layers, plan, stage)
    act_scale = activation_bytes_per_element(precision) / 2.0
    in_flight = microbatches_in_flight(plan, stage)
    s, b, h, t = plan.seq_len, plan.microbatch, model.hidden, plan.tensor
    fp8 = precision == "fp8"
    kept = kept_input_bytes(ft, precision)
    if plan.recompute == "full":
        layer_input = 2 * s * b * h / (t if plan.sequence_parallel else 1)
        activations = layers * in_flight * layer_input + layer_activation_bytes(model, plan, attention, fp8, kept)
    else:
        activations = layers * in_flight * layer_activation_bytes(model, plan, attention, fp8, kept)
    loss = loss_bytes_per_logit * s * b * model.vocab / t if stage == plan.pipeline - 1 else 0.0
    weights = sharded(stored_dense + fp8_dense, stored_expert + fp8_expert, 3)
    return MemoryBreakdown(
        weights_bytes=weights + dequant,
        gradients_bytes=sharded(g_b * trained_dense, g_b * trained_expert, 2),
        optimizer_bytes=sharded(o_b * trained_dense, o_b * trained_expert, 1),
        activations_bytes=(activations + loss) * act_scale,
        runtime_bytes=runtime_reserved_bytes(plan),
        stage=stage,
        optimizer_paged=ft.paged_optimizer,
    )


_WEIGHTS: dict[tuple, tuple] = {}      # ``_stage_weights``' answers, by model split and stage
_WEIGHTS_KEPT = 1 << 14                 # kept before the memo starts again (the 405B fit asks 624)


def _stage_weights(model: ModelSpec, plan: ParallelPlan, stage: int, precision: str, ft: FinetuneSpec,
                   fp8_recipe: Fp8Recipe) -> tuple:
    """(trained, stored, fp8 extra) (dense, expert) parameters and bytes of a stage's weights, and the dequantisation
    workspace: what of ``_stage_memory`` depends on the plan's model split alone (its tensor, pipeline, virtual
    and expert sizes), not on its data size, batch, recomputation or ZeRO stage; worked out once per split for
    the plans a search sizes on it."""
    key = (model, plan.tensor, plan.pipeline, plan.virtual_stages, plan.expert, stage, precision, ft, fp8_recipe)
    found = _WEIGHTS.get(key)
    if found is None:
        if len(_WEIGHTS) >= _WEIGHTS_KEPT:
            _WEIGHTS.clear()
        found = _WEIGHTS[key] = (trainable_stage_params(model, plan, stage, ft),
                                 stage_weight_bytes(model, plan, stage, precision, ft),
                                 fp8_weight_extra_bytes(model, plan, stage, precision, ft, fp8_recipe),
                                 dequant_workspace_bytes(model, plan, precision, ft))
    return found


def longest_sequence(model: ModelSpec, plan: ParallelPlan, precision: str, attention: str, capacity_bytes: float,
                     ft: FinetuneSpec = FULL, fp8_recipe: Fp8Recipe = "hybrid", limit: int = 2**21,
                     loss_bytes_per_logit: float = LOSS_HELD_BYTES_PER_LOGIT) -> int:
    """The longest sequence (tokens) whose step fits ``capacity_bytes`` under the same plan; 0 if none.

    Memory grows with the sequence: linearly with fused attention (every activation term is
    proportional to it), so two evaluations give the answer, checked at it and one token
    beyond; quadratically with stored scores, where a bisection finds it.
    """
    def needed(seq_len: int) -> float:
        return memory_per_gpu(model, replace(plan, seq_len=seq_len), precision, attention, ft,
                              fp8_recipe, loss_bytes_per_logit).required_bytes

    def fits(seq_len: int) -> bool:
        return needed(seq_len) <= capacity_bytes

    if not fits(1):
        return 0
    if fits(limit):
        return limit
    one, slope = needed(1), needed(2) - needed(1)
    guess = min(limit - 1, 1 + int((capacity_bytes - one) // slope)) if slope > 0 else limit - 1
    if fits(guess) and not fits(guess + 1):
        return guess
    low, high = 1, limit
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low


def fitting_alternatives(model: ModelSpec, plan: ParallelPlan, precision: str, attention: str,
                         capacity_bytes: float, gpus_per_node: int, ft: FinetuneSpec = FULL,
                         fp8_recipe: Fp8Recipe = "hybrid",
                         loss_bytes_per_logit: float = LOSS_HELD_BYTES_PER_LOGIT) -> list[tuple[str, float]]:
    """Nearby plans that fit in ``capacity_bytes``: (description, bytes per GPU). A quantised base that keeps its
    linears' inputs (``kept_input_bytes``) is also tried without them: an NF4 base on bitsandbytes 0.43.2 or later."""
    options: list[tuple[str, ParallelPlan]] = []
    for z in range(plan.zero + 1, 4):
        options.append((f"ZeRO-{z}", replace(plan, zero=z)))
    if plan.recompute != "full":
        options.append(("recompute full", replace(plan, recompute="full")))
    if plan.microbatch > 1:
        options.append(("microbatch 1", replace(plan, microbatch=1)))
    if plan.data % 2 == 0 and 2 * plan.pipeline * plan.virtual_stages <= model.layers:
        options.append((f"pipeline {2 * plan.pipeline}", replace(plan, pipeline=2 * plan.pipeline, data=plan.data // 2)))
    if (plan.data % 2 == 0 and model.heads % (2 * plan.tensor) == 0
            and 2 * plan.tensor <= gpus_per_node):
        options.append((f"tensor {2 * plan.tensor}", replace(plan, tensor=2 * plan.tensor, data=plan.data // 2,
                                                           sequence_parallel=True)))
    tried = [(label, alternative, ft) for label, alternative in options]
    if ft.storage(precision).name == "nf4" and kept_input_bytes(ft, precision):
        tried.append(("bitsandbytes 0.43.2 or later (stack quantised_inputs_kept: false)", plan,
                      replace(ft, quantised_inputs_kept=False)))
    fits = []
    for label, alternative, finetune in tried:
        total = memory_per_gpu(model, alternative, precision, attention, finetune, fp8_recipe,
                               loss_bytes_per_logit).required_bytes
        if total <= capacity_bytes:
            fits.append((label, total))
    return fits


# Most doublings of a plan's GPUs ``combined_fit`` tries when nothing fits on them (64 times the GPUs).
MAX_GPU_DOUBLINGS = 6


def combined_fit(model: ModelSpec, plan: ParallelPlan, precision: str, attention: str, capacity_bytes: float,
                 gpus_per_node: int, ft: FinetuneSpec = FULL, fp8_recipe: Fp8Recipe = "hybrid",
                 loss_bytes_per_logit: float = LOSS_HELD_BYTES_PER_LOGIT) -> tuple[str, float] | None:
    """What fits when no single change does (``fitting_alternatives``): the plan on the same GPUs that changes the
    fewest of ZeRO stage, recomputation, micro-batch, tensor and pipeline size (ties: the smallest tensor ×
    pipeline, then the least memory); where none fits, the same on the fewest doublings of the GPUs (data
    parallelism grows, and ZeRO shards over it). (description, bytes per GPU), or None when nothing fits even on
    ``2 ** MAX_GPU_DOUBLINGS`` times the GPUs."""
    for doubled in range(MAX_GPU_DOUBLINGS + 1):
        fitting = []
        for changes, alternative in _combinations(model, plan, replace(plan, data=plan.data * 2 ** doubled),
                                                  gpus_per_node):
            total = memory_per_gpu(model, alternative, precision, attention, ft, fp8_recipe,
                                   loss_bytes_per_logit).required_bytes
            if total <= capacity_bytes:
                fitting.append((len(changes), alternative.tensor * alternative.pipeline, total, changes, alternative))
        if fitting:
            _, _, total, changes, p = min(fitting, key=lambda found: found[:3])
            if doubled == 0:
                return "together, " + _listed(changes) + " would fit", total
            return (f"on {p.gpus:,} GPUs, TP{p.tensor} PP{p.pipeline} DP{p.data} with ZeRO-{p.zero}, recompute "
                    f"{p.recompute} and microbatch {p.microbatch} would fit"), total
    return None


def _combinations(model: ModelSpec, plan: ParallelPlan, base: ParallelPlan,
                  gpus_per_node: int) -> list[tuple[list[str], ParallelPlan]]:
    """Every plan on ``base``'s GPUs of a ZeRO stage, recomputation and micro-batch no hungrier than ``plan``'s and
    tensor and pipeline sizes doubled from its (splitting the heads, the layers, the global batch and the expert
    groups as ``plan.resolve_plan`` requires), with the changes from ``plan`` that make it."""
    gpus, out = base.gpus, []
    tensors = [t for t in doublings(plan.tensor, gpus_per_node) if gpus % t == 0 and model.heads % t == 0
               and model.ffn_hidden % t == 0 and (model.kv_heads % t == 0 or t % model.kv_heads == 0)]
    recomputes = [plan.recompute] + (["full"] if plan.recompute != "full" else [])
    micro = [plan.microbatch] + ([1] if plan.microbatch > 1 else [])
    shapes = [(t, p) for t in tensors for p in doublings(plan.pipeline, model.layers // plan.virtual_stages)
              if gpus % (t * p) == 0]
    for (t, p), zero, recompute, mb in product(shapes, range(plan.zero, 4), recomputes, micro):
        data = gpus // (t * p)
        replica_microbatches, rest = divmod(plan.global_batch, data * mb)
        if rest or data % plan.expert or (plan.virtual_stages > 1 and replica_microbatches % p):
            continue                      # the rules of ``plan.resolve_plan``: the batch, experts, interleaving
        changes = [label for label, changed in (
            (f"ZeRO-{zero}", zero != plan.zero), (f"recompute {recompute}", recompute != plan.recompute),
            (f"microbatch {mb}", mb != plan.microbatch), (f"tensor {t}", t != plan.tensor),
            (f"pipeline {p}", p != plan.pipeline)) if changed]
        sequence_parallel = (plan.sequence_parallel or plan.tensor == 1) and t > 1
        out.append((changes, replace(base, tensor=t, pipeline=p, data=data, zero=zero, recompute=recompute,
                                     microbatch=mb, sequence_parallel=sequence_parallel)))
    return out


def _listed(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
