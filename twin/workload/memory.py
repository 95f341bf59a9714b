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
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from twin.workload.model import ModelSpec
from twin.workload.plan import ParallelPlan, layers_on_stage

# CUDA context, NCCL communicator buffers and allocator fragmentation that a
# training process holds beyond its tensors. Assumption (docs/limits.md): the
# CUDA context alone takes ~0.5 GiB on Hopper and NCCL buffers ~1 GiB at scale.
RUNTIME_RESERVED_BYTES = 2 * 2**30


def state_bytes_per_param(precision: str) -> tuple[float, float, float]:
    """(weights, gradients, optimizer states) bytes per parameter for Adam."""
    if precision in ("fp32", "tf32"):
        return 4.0, 4.0, 8.0            # fp32 weights are the master copy: Adam m, v only
    if precision == "fp8":
        return 3.0, 4.0, 12.0           # bf16 weights plus their fp8 copy (Transformer Engine)
    return 2.0, 4.0, 12.0               # bf16 / fp16


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

    @property
    def total_bytes(self) -> float:
        return (self.weights_bytes + self.gradients_bytes + self.optimizer_bytes
                + self.activations_bytes + self.runtime_bytes)

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


def layer_activation_bytes(model: ModelSpec, plan: ParallelPlan, attention: str) -> float:
    """Activations one layer stores for one micro-batch on one GPU (no recomputation)."""
    s, b, h, t = plan.seq_len, plan.microbatch, model.hidden, plan.tensor
    f, kvd = model.ffn_hidden, model.kv_dim
    attn = 7 * h + 4 * kvd                                    # 11h for multi-head attention
    if model.activation == "swiglu":
        mlp = 3 * h + model.top_k * 6 * f
    else:
        mlp = 3 * h + model.top_k * 4 * f                     # 19h for f = 4h
    norms = 4 * h
    per_token = attn + mlp + norms                            # 34h for a GPT layer
    if plan.sequence_parallel:
        per_token /= t
    elif t > 1:
        per_token = 10 * h + (per_token - 10 * h) / t         # 10h stays whole without SP
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


def memory_per_gpu(model: ModelSpec, plan: ParallelPlan, precision: str, attention: str) -> MemoryBreakdown:
    """Memory of the fullest GPU: the first stage (most activations) or the last (LM head)."""
    best: MemoryBreakdown | None = None
    for stage in sorted({0, plan.pipeline - 1}):
        breakdown = _stage_memory(model, plan, precision, attention, stage)
        if best is None or breakdown.total_bytes > best.total_bytes:
            best = breakdown
    assert best is not None
    return best


def _stage_memory(model: ModelSpec, plan: ParallelPlan, precision: str, attention: str, stage: int) -> MemoryBreakdown:
    w_b, g_b, o_b = state_bytes_per_param(precision)
    dense, expert = stage_params(model, plan, stage)

    def sharded(bytes_per_param: float, level: int) -> float:
        if plan.zero >= level:
            return bytes_per_param * (dense / plan.data + expert / plan.expert_data)
        return bytes_per_param * (dense + expert)

    layers = layers_on_stage(model.layers, plan, stage)
    act_scale = activation_bytes_per_element(precision) / 2.0
    in_flight = microbatches_in_flight(plan, stage)
    s, b, h, t = plan.seq_len, plan.microbatch, model.hidden, plan.tensor
    if plan.recompute == "full":
        layer_input = 2 * s * b * h / (t if plan.sequence_parallel else 1)
        activations = layers * in_flight * layer_input + layer_activation_bytes(model, plan, attention)
    else:
        activations = layers * in_flight * layer_activation_bytes(model, plan, attention)
    if stage == plan.pipeline - 1:
        activations += 6.0 * s * b * model.vocab / t          # bf16 logits and their fp32 softmax
    return MemoryBreakdown(
        weights_bytes=sharded(w_b, 3),
        gradients_bytes=sharded(g_b, 2),
        optimizer_bytes=sharded(o_b, 1),
        activations_bytes=activations * act_scale,
        runtime_bytes=RUNTIME_RESERVED_BYTES,
        stage=stage,
    )


def fitting_alternatives(model: ModelSpec, plan: ParallelPlan, precision: str, attention: str,
                         capacity_bytes: float, gpus_per_node: int) -> list[tuple[str, float]]:
    """Nearby plans that fit in ``capacity_bytes``: (description, bytes per GPU)."""
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
    fits = []
    for label, alternative in options:
        total = memory_per_gpu(model, alternative, precision, attention).total_bytes
        if total <= capacity_bytes:
            fits.append((label, total))
    return fits
