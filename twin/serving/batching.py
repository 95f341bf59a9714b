"""Level 2s: the time of one engine iteration from the operator model.

An iteration runs every decoding sequence one token forward and the scheduled prefill
chunks, all through every layer at once (in-flight batching). On one GPU of a
replica (tensor parallelism ``t``) a layer costs:

- GEMMs (QKV, output, FFN in and out; MoE experts by expected use): the roofline of
  ``OperatorModel.matmul_s`` over the iteration's ``m`` tokens. Few tokens make a GEMM
  read its whole weight matrix for little arithmetic (decode is memory-bound); many
  make it compute-bound (prefill). The batch size sets the arithmetic intensity.
- attention: decode reads every decoding sequence's K and V (``decode_context``
  tokens) from HBM, or from Grace memory over NVLink-C2C for the part that spilled;
  prefill chunks do ``4 · heads/t · head_dim`` FLOPs per query-key pair of causal
  attention (FlashAttention) and read the KV of their earlier chunks.
- memory-bound kernels (norms, residual adds, activation function) per token
  (``operators.elementwise.elementwise_bytes``, fused kernels);
- two tensor-parallel all-reduces of ``m · h`` 16-bit activations: NCCL's
  (``CommModel.all_reduce_s`` over NVLink, PCIe or the network, as the fabric has it), or
  the engine's own kernels inside an NVLink node up to the engine's ``custom_all_reduce_max_bytes``,
  chosen by size as the engines choose (``network.tp_kernels``: their measured time).

GEMMs are priced by shape (``operators.gemm``: tiles, waves over the SMs, pipeline fill).
The last stage adds the LM head for every sequence that emits a token (16-bit
weights). With ``p`` pipeline stages the batch runs as ``p`` micro-batches that keep
every stage busy: an iteration takes ``p`` stage-times of a micro-batch plus the
stage-to-stage sends.

Every iteration also pays the engine's fixed costs (its profile, ``EngineSpec``): the
launch of each kernel (``kernels_per_layer`` per layer and ``kernels_per_iteration``
more, ``KERNEL_LAUNCH_S`` each), or one graph launch for a decode-only iteration the
engine captured as a CUDA graph, which bound the iteration when its kernels are shorter
(the host launches ahead of the GPU: the iteration's GPU time is the longer of the
kernels and their launches); and its host work ``host_s`` (scheduling, input
preparation, outputs), added to the GPU's time, or hidden behind it by an overlap
scheduler (the iteration takes the longer of the two). A profile without a published
host cost takes the calibrated ``iteration_overhead_s``. Multi-step scheduling
(``scheduler_steps`` = n, vLLM's ``--num-scheduler-steps``) schedules and prepares the
inputs of n decode iterations at once: a decode-only iteration pays ``host_s / n``, an
iteration with prompt tokens the whole ``host_s`` (vLLM 0.6 runs prefills one step at a
time). The wait of a new request for the current n steps to end is not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import NamedTuple

import numpy as np

from twin.calibration import ServingEfficiency
from twin.network.collectives import CommModel
from twin.network.tp_kernels import custom_all_reduce_s
from twin.operators.elementwise import elementwise_bytes
from twin.operators.launches import KERNEL_LAUNCH_S
from twin.operators.roofline import OperatorModel
from twin.options import KVPrecision
from twin.serving.kv_cache import UNQUANTISED_BYTES, MemoryPlan
from twin.serving.specs import GEMM_PRECISION, KV_BYTES, WEIGHT_BYTES, EngineSpec
from twin.workload.model import ModelSpec
from twin.workload.placement import GroupShape
from twin.workload.plan import stage_layers


class Batch(NamedTuple):
    """One iteration's work on one replica (a named tuple: the engine builds one per clock advance)."""
    decode_seqs: int = 0           # sequences emitting one token each
    decode_context: float = 0.0    # Σ tokens already in their KV caches
    prefill_tokens: int = 0        # prompt tokens of the scheduled prefill chunks
    prefill_pairs: float = 0.0     # Σ query-key pairs of the chunks' causal attention
    prefill_context: float = 0.0   # Σ tokens of earlier chunks the chunks attend to
    prefill_done: int = 0          # chunks that end their prompt (they emit the first token)

    @property
    def tokens(self) -> int:
        return self.decode_seqs + self.prefill_tokens


class IterationTime(NamedTuple):
    total_s: float
    compute_s: float               # of which compute-bound work (GEMMs past their ridge, prefill attention)
    memory_s: float                # of which memory-bound work (weight and KV streaming, elementwise)
    comm_s: float                  # of which tensor- and pipeline-parallel communication
    overhead_s: float


@dataclass(frozen=True, eq=False)
class IterationModel:
    model: ModelSpec
    ops: OperatorModel             # at the GEMM precision, with the serving efficiencies
    head_ops: OperatorModel        # the 16-bit LM head
    comm: CommModel
    tensor: GroupShape
    pipeline: GroupShape
    memory: MemoryPlan
    kv_precision: KVPrecision
    overhead_s: float              # calibrated host work per iteration (profiles without their own)
    host_memory_Bps: float         # Grace memory read over C2C (0 without)
    engine: EngineSpec = EngineSpec()   # the engine's per-iteration costs and all-reduce kernels
    # Costs of one stage that depend on one count alone, priced once per count (an iteration model
    # lives as long as its replica; counts are bounded by max_tokens_in_flight and max_batch).
    _token_costs: dict = field(default_factory=dict, init=False, repr=False)
    _head_costs: dict = field(default_factory=dict, init=False, repr=False)

    @cached_property
    def stages(self) -> int:
        return self.pipeline.ranks

    def time(self, batch: Batch, kv_spilled: float = 0.0) -> IterationTime:
        """One iteration; ``kv_spilled`` is the share of the KV cache that lives in Grace memory."""
        p = self.stages
        micro = _split(batch, p)
        compute, memory, comm, p2p = self._stage(micro, kv_spilled)
        kernels = p * (compute + memory + comm) + p2p
        gpu = max(kernels, self.launch_s(batch))
        host = self.host_s if batch.prefill_tokens else self.host_s / self.engine.scheduler_steps
        total = max(gpu, host) if self.engine.overlap_scheduler else gpu + host
        return IterationTime(total, p * compute, p * memory, p * comm + p2p, total - kernels)

    @cached_property
    def host_s(self) -> float:
        """Host work per iteration: the engine profile's, or the calibrated one where the profile says so."""
        return self.overhead_s if self.engine.host_s is None else self.engine.host_s

    def launch_s(self, batch: Batch) -> float:
        """Kernel launches of one iteration: one graph launch for a captured decode-only batch, else every kernel.

        The host launches kernels ahead of the GPU, so launches bound an iteration only when its
        kernels are shorter than their launches (the iteration takes the longer of the two)."""
        e = self.engine
        if e.cuda_graphs and not batch.prefill_tokens and batch.decode_seqs <= e.graph_max_batch:
            return KERNEL_LAUNCH_S
        return self._every_launch_s

    @cached_property
    def _every_launch_s(self) -> float:
        """Launches of every kernel of an iteration, one by one."""
        e = self.engine
        kernels = e.kernels_per_layer * self._layers * self.stages + e.kernels_per_iteration
        return kernels * KERNEL_LAUNCH_S

    def time_s(self, batch: Batch, kv_spilled: float = 0.0) -> float:
        return self.time(batch, kv_spilled).total_s

    def tables(self, max_tokens: int, max_emits: int) -> tuple[np.ndarray, np.ndarray]:
        """The compiled engine's view of this model (``engine_compiled``): for every token count up to
        ``max_tokens`` what a stage's micro-batch costs whatever its attention (``_price_tokens``: compute- and
        memory-bound GEMM seconds, elementwise, all-reduces, sends; one row each), and the LM head for every
        count of emitting sequences up to ``max_emits``. The same values ``_stage`` reads, from the same caches."""
        tokens, emits = self._token_costs, self._head_costs
        costs = np.array([tokens.get(t) or self._price_tokens(t) for t in range(max_tokens + 1)])
        heads = np.array([emits[e] if e in emits else self._head(e) for e in range(max_emits + 1)])
        return costs, heads

    def constants(self) -> tuple[list[float], list[int]]:
        """The rest of ``time``'s inputs as the compiled engine takes them: (floats, integers), in the order of
        ``iteration_compiled``'s ``F_*`` indices and of its ``I_*`` indices up to ``I_OVERLAP``."""
        kv_per_token, flops_per_pair = self._attention_shape
        ops, e = self.ops, self.engine
        floats = [kv_per_token, flops_per_pair, ops.memory_Bps, ops.attention_flops, self.host_memory_Bps,
                  self.host_memory_Bps * ops.efficiency.memory, self._weight_spill_s, KERNEL_LAUNCH_S,
                  self._every_launch_s, self.host_s]
        ints = [self.stages, self._layers, int(e.cuda_graphs), e.graph_max_batch, e.scheduler_steps,
                int(e.overlap_scheduler)]
        return floats, ints

    # -- one stage, one micro-batch -----------------------------------------------------------
    def _stage(self, b: Batch, kv_spilled: float) -> tuple[float, float, float, float]:
        """(compute, memory, tensor-parallel communication) seconds of one stage, and the stage-to-stage
        sends of the whole pipeline.

        Attention per layer: decode reads every decoding sequence's K and V and the prefill chunks the KV of
        their earlier chunks, from HBM and, for the share that spilled, from Grace memory over C2C; decode's
        FLOPs bound it where they outlast that read; prefill's are compute."""
        tokens = b.decode_seqs + b.prefill_tokens
        g_c, g_m, e_m, comm, p2p = self._token_costs.get(tokens) or self._price_tokens(tokens)
        emits = b.decode_seqs + b.prefill_done
        head = self._head_costs.get(emits)
        if head is None:
            head = self._head(emits)
        kv_per_token, flops_per_pair = self._attention_shape
        ops = self.ops
        read = (b.decode_context + b.prefill_context) * kv_per_token
        read_s = 0.0
        if read > 0:
            read_s = ops.memory_s(read * (1.0 - kv_spilled))
            if kv_spilled > 0 and self.host_memory_Bps > 0:
                read_s += read * kv_spilled / (self.host_memory_Bps * ops.efficiency.memory)
        decode_flops_s = ops.attention_s(flops_per_pair * b.decode_context) if b.decode_context else 0.0
        prefill_s = ops.attention_s(flops_per_pair * b.prefill_pairs) if b.prefill_pairs else 0.0
        if decode_flops_s > read_s:
            a_c, a_m = prefill_s + decode_flops_s, 0.0
        else:
            a_c, a_m = prefill_s, read_s
        layers = self._layers
        return layers * (g_c + a_c), layers * (g_m + a_m + e_m + self._weight_spill_s) + head, comm, p2p

    def _price_tokens(self, tokens: int) -> tuple[float, float, float, float, float]:
        """What a stage's micro-batch of ``tokens`` tokens costs whatever its attention: its layers' GEMMs
        (compute-bound, memory-bound), elementwise kernels and all-reduces, and the stage-to-stage sends; kept
        for the next iteration of as many tokens."""
        g_c, g_m = self._gemm_split(tokens)
        e_m = self.ops.memory_s(tokens * self._elementwise_bytes_per_token)
        tp = 2 * self.all_reduce_s(tokens * self.model.hidden * UNQUANTISED_BYTES)
        p, p2p = self.stages, 0.0
        if p > 1:
            p2p = p * self.comm.send_recv_s(tokens * self.model.hidden * UNQUANTISED_BYTES, self.pipeline)
        costs = self._token_costs[tokens] = (g_c, g_m, e_m, self._layers * tp, p2p)
        return costs

    @cached_property
    def _layers(self) -> int:
        """Layers of the busiest pipeline stage."""
        return max(stage_layers(self.model.layers, self.stages))

    def _head(self, emits: int) -> float:
        """The LM head for ``emits`` sequences that emit a token; kept for the next iteration of as many."""
        m = self.model
        head = self.head_ops.matmul_s(emits, m.vocab / self.tensor.ranks, m.hidden) if emits else 0.0
        self._head_costs[emits] = head
        return head

    def _gemm_split(self, tokens: int) -> tuple[float, float]:
        """(compute-bound, memory-bound) seconds of one layer's GEMMs for ``tokens`` tokens."""
        m, ops, t = self.model, self.ops, self.tensor.ranks
        h, f = m.hidden, m.ffn_hidden
        if m.is_moe:
            ffn_in = (m.ffn_matrices - 1) * f / t
            used = m.experts * (1.0 - (1.0 - m.top_k / m.experts) ** tokens)   # experts any token picks
            per_expert = tokens * m.top_k / used
            shapes = [*dense_gemm_shapes(m, tokens, t)[:2], (tokens, m.experts, h, 1.0),
                      (per_expert, ffn_in, h, used), (per_expert, h, f / t, used)]
        else:
            shapes = dense_gemm_shapes(m, tokens, t)
        compute = memory = 0.0
        for rows, n, k, count in shapes:
            s, compute_s = ops.matmul_and_compute_s(rows, n, k, count)
            if compute_s >= s * (1 - 1e-9):
                compute += s
            else:
                memory += s
        return compute, memory

    @cached_property
    def _attention_shape(self) -> tuple[float, float]:
        """(KV bytes per cached token, FLOPs per query-key pair) on one GPU of the tensor group."""
        m, t = self.model, self.tensor.ranks
        kv_per_token = 2.0 * max(1.0, m.kv_heads / t) * m.head_dim * KV_BYTES[self.kv_precision]
        return kv_per_token, 4.0 * m.heads / t * m.head_dim

    @cached_property
    def _elementwise_bytes_per_token(self) -> float:
        m = self.model
        per_hidden, per_ffn = elementwise_bytes(m.norm, m.activation, "fused", False)
        return per_hidden * m.hidden + per_ffn * m.ffn_hidden / self.tensor.ranks * m.top_k

    def all_reduce_s(self, size_bytes: float) -> float:
        """One tensor-parallel all-reduce: the engine's own kernels inside an NVLink node up to its bound (by size,
        whether or not NCCL would be faster: TensorRT-LLM 0.13's ``AllreducePlugin::selectImplementation``, vLLM's
        ``CustomAllreduce.should_custom_ar``), NCCL's above it and elsewhere."""
        t = self.tensor
        if t.ranks <= 1:
            return 0.0
        e, gpu = self.engine, self.comm.cluster.node.gpu
        on_nvlink = t.ranks_per_node == t.ranks and gpu.nvlink_Bps > 0
        bound = (e.custom_all_reduce_max_bytes_two_gpus if t.ranks <= 2 and e.custom_all_reduce_max_bytes_two_gpus
                 else e.custom_all_reduce_max_bytes)
        if e.all_reduce != "custom" or not on_nvlink or size_bytes > bound:
            return self.comm.all_reduce_s(size_bytes, t)
        return custom_all_reduce_s(size_bytes, t.ranks, e.custom_all_reduce_kernels)

    @cached_property
    def _weight_spill_s(self) -> float:
        """Extra time per layer to read the layer's share of weights held in Grace memory."""
        spilled = self.memory.weights_spilled_bytes
        if spilled <= 0 or self.host_memory_Bps <= 0:
            return 0.0
        per_layer = spilled / self._layers
        eff = self.ops.efficiency.memory
        return per_layer / (self.host_memory_Bps * eff) - per_layer / (self.ops.gpu.memory_Bps * eff)


def _split(batch: Batch, parts: int) -> Batch:
    """One of ``parts`` equal micro-batches."""
    if parts == 1:
        return batch
    return Batch(-(-batch.decode_seqs // parts), batch.decode_context / parts, -(-batch.prefill_tokens // parts),
                 batch.prefill_pairs / parts, batch.prefill_context / parts, -(-batch.prefill_done // parts))


def dense_gemm_shapes(model: ModelSpec, tokens: float, tensor: int) -> list[tuple[float, float, float, float]]:
    """The GEMMs of one dense layer for ``tokens`` tokens on one of ``tensor`` ranks, as (m, n, k, count): QKV,
    attention output, FFN in (gate and up fused), FFN out."""
    h, f, t = model.hidden, model.ffn_hidden, tensor
    return [(tokens, (h + 2 * model.kv_dim) / t, h, 1.0), (tokens, h, h / t, 1.0),
            (tokens, (model.ffn_matrices - 1) * f / t, h, 1.0), (tokens, h, f / t, 1.0)]


def serving_operators(gpu, precision: str, efficiency: ServingEfficiency, training_efficiency,
                      compute_clock: float = 1.0) -> OperatorModel:
    """The operator model of a serving replica's GEMMs at ``precision``, with the serving efficiencies (int4:
    4-bit weights read, 16-bit GEMMs); ``compute_clock``: the share of its clock a power cap leaves."""
    weight = WEIGHT_BYTES[precision] if precision == "int4" else None
    return OperatorModel(gpu, GEMM_PRECISION[precision], efficiency.operator_efficiency(training_efficiency),
                         weight_bytes=weight, separate_fp8_cast=False, shape_aware=True,
                         power_cap_factor=compute_clock)


def iteration_model(model: ModelSpec, gpu, precision: str, kv_precision: str, comm: CommModel,
                    tensor: GroupShape, pipeline: GroupShape, memory: MemoryPlan,
                    efficiency: ServingEfficiency, training_efficiency,
                    engine: EngineSpec = EngineSpec(), compute_clock: float = 1.0) -> IterationModel:
    """The iteration model of one replica on ``gpu`` (a whole GPU or a MIG instance) under ``engine``;
    ``compute_clock``: the share of its clock a power cap leaves tensor-core work."""
    ops = serving_operators(gpu, precision, efficiency, training_efficiency, compute_clock)
    head_ops = replace(ops, precision="fp16" if ops.precision == "fp16" else "bf16", weight_bytes=None)
    return IterationModel(model, ops, head_ops, comm, tensor, pipeline, memory, kv_precision,
                          efficiency.iteration_overhead_s, gpu.host_memory_Bps, engine)
