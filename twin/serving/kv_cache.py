"""Memory of one serving GPU: weights, the runtime reserve, and the paged KV cache in what is left.

Per GPU of a replica with tensor parallelism ``t`` and pipeline parallelism ``p``:

- weights: the fullest stage's layers ÷ t at the weight precision, plus the embedding
  and LM head ÷ t kept in 16 bits (quantisation toolkits leave them unquantised:
  NVIDIA ModelOpt FP8, AWQ);
- reserve: the CUDA context and runtime (``RUNTIME_CONTEXT_BYTES``), the activation
  workspace of one iteration of ``max_tokens_in_flight`` tokens, and the sampler's buffers
  for ``max_batch`` sequences over the vocabulary (``decoder_bytes``);
- KV cache: ``kv_memory_fraction`` of what remains (``kv_memory_basis`` free: TensorRT-LLM's
  ``kv_cache_free_gpu_mem_fraction``), or that fraction of the GPU's memory less the weights
  and the reserve (``total``: vLLM's ``gpu_memory_utilization``, ``total_gpu_memory ·
  gpu_memory_utilization − peak_memory`` in its worker; SGLang's ``mem_fraction_static``), in
  blocks of ``block_tokens`` tokens. One token holds ``2 · layers/p · max(1, kv_heads/t) ·
  head_dim`` elements (K and V) at the KV precision.

With ``offload: grace`` a GH200's Grace memory extends both: weights that do not fit in
HBM and KV blocks beyond HBM live in LPDDR5X and are read over NVLink-C2C.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from twin.hardware.specs import GPUSpec
from twin.options import KVMemoryBasis
from twin.serving.specs import KV_BYTES, WEIGHT_BYTES, EngineSpec
from twin.workload.model import ModelSpec
from twin.workload.plan import stage_layers

# CUDA context, cuBLAS/NCCL workspaces and the runtime's own buffers: about 1 GiB per
# GPU (assumption; the CUDA context alone takes ~0.5 GiB on Hopper, docs/serving.md).
RUNTIME_CONTEXT_BYTES = 1 * 2**30
# Bytes of a 16-bit element: activations, and the embedding and LM head weights.
UNQUANTISED_BYTES = 2.0
# Grace memory kept for the operating system and the serving process's host buffers
# when KV and weights spill to it (assumption, docs/serving.md).
GRACE_RESERVED_BYTES = 32 * 2**30


@dataclass(frozen=True)
class MemoryPlan:
    """One GPU of a replica."""
    weights_bytes: float
    reserve_bytes: float
    kv_bytes_per_token: float          # K and V of one token on this GPU (its layers, its heads)
    hbm_bytes: float                   # the GPU's memory
    host_bytes: float                  # Grace memory usable with offload (0 without)
    kv_memory_fraction: float
    block_tokens: int
    kv_memory_basis: KVMemoryBasis = "free"   # what kv_memory_fraction is a share of (EngineSpec.kv_memory_basis)

    @property
    def weights_in_hbm_bytes(self) -> float:
        return min(self.weights_bytes, max(0.0, self.hbm_bytes - self.reserve_bytes))

    @property
    def weights_spilled_bytes(self) -> float:
        """Weights held in Grace memory (read over C2C at every iteration)."""
        return self.weights_bytes - self.weights_in_hbm_bytes

    @property
    def weights_grace_bytes(self) -> float:
        """Weights held in Grace memory (0 without offload: what HBM cannot hold then does not fit)."""
        return min(self.weights_spilled_bytes, self.host_bytes)

    @property
    def free_hbm_bytes(self) -> float:
        return self.hbm_bytes - self.weights_in_hbm_bytes - self.reserve_bytes

    @property
    def kv_hbm_tokens(self) -> int:
        """KV tokens held in HBM: the fraction of free memory, or of the whole memory less what else it holds, in
        whole blocks."""
        if self.kv_memory_basis == "total":
            return self._tokens(max(0.0, self.free_hbm_bytes - (1.0 - self.kv_memory_fraction) * self.hbm_bytes))
        return self._tokens(max(0.0, self.free_hbm_bytes) * self.kv_memory_fraction)

    @property
    def kv_host_tokens(self) -> int:
        free_host = self.host_bytes - self.weights_spilled_bytes
        return self._tokens(max(0.0, free_host))

    @property
    def kv_capacity_tokens(self) -> int:
        return self.kv_hbm_tokens + self.kv_host_tokens

    @property
    def kv_blocks(self) -> int:
        return self.kv_capacity_tokens // self.block_tokens

    @property
    def fits(self) -> bool:
        """Weights fit (in HBM, or in HBM and Grace with offload) and at least one block of KV is left."""
        return self.weights_spilled_bytes <= self.host_bytes and self.kv_blocks > 0

    @property
    def total_bytes(self) -> float:
        """HBM needed: the weights not held in Grace memory, the reserve and the KV cache at capacity
        (more than ``hbm_bytes`` when the weights do not fit)."""
        weights = self.weights_bytes - self.weights_grace_bytes
        return weights + self.reserve_bytes + self.kv_hbm_tokens * self.kv_bytes_per_token

    def _tokens(self, space_bytes: float) -> int:
        blocks = math.floor(space_bytes / (self.kv_bytes_per_token * self.block_tokens))
        return blocks * self.block_tokens


def kv_bytes_per_token(model: ModelSpec, kv_precision: str, tensor: int, pipeline: int) -> float:
    """K and V of one token on one GPU: 2 · layers/p · max(1, kv_heads/t) · head_dim · bytes.

    With fewer KV heads than tensor ranks each rank keeps a copy of one head (GQA).
    """
    layers = max(stage_layers(model.layers, pipeline))
    heads = max(1.0, model.kv_heads / tensor)
    return 2.0 * layers * heads * model.head_dim * KV_BYTES[kv_precision]


def weight_bytes(model: ModelSpec, precision: str, tensor: int, pipeline: int) -> float:
    """Weights on the fullest GPU: its stage's layers at ``precision``, embedding and head in 16 bits."""
    layers = max(stage_layers(model.layers, pipeline))
    per_layer = model.dense_params_per_layer + model.expert_params_per_layer
    unquantised = model.embedding_params + model.head_params + model.final_norm_params
    if pipeline > 1:                          # embedding on the first stage, head on the last
        unquantised = max(model.embedding_params, model.head_params + model.final_norm_params)
    return (layers * per_layer * WEIGHT_BYTES[precision] + unquantised * UNQUANTISED_BYTES) / tensor


def workspace_bytes(model: ModelSpec, tokens: int, tensor: int) -> float:
    """Activation buffers of one iteration of ``tokens`` tokens, 16-bit: the residual stream and norm
    output (2h), the QKV output ((h + 2·kv_dim)/t), the FFN's intermediate and activation
    (ffn_matrices · f/t); buffers are reused layer to layer."""
    h, f, t = model.hidden, model.ffn_hidden, tensor
    per_token = 2 * h + (h + 2 * model.kv_dim) / t + model.ffn_matrices * f / t * model.top_k
    return tokens * per_token * UNQUANTISED_BYTES


def decoder_bytes(model: ModelSpec, engine: EngineSpec) -> float:
    """The sampler's buffers allocated up front for every batch slot: ``max_batch · V ·
    decoder_bytes_per_logit`` (TensorRT-LLM's penalty layer keeps the penalised logits and the
    tokens' occurrence counts of each slot over the whole vocabulary; catalog engines.yaml)."""
    return engine.max_batch * model.vocab * engine.decoder_bytes_per_logit


def memory_plan(model: ModelSpec, gpu: GPUSpec, precision: str, kv_precision: str, tensor: int, pipeline: int,
                engine: EngineSpec) -> MemoryPlan:
    host = max(0.0, gpu.host_memory_bytes - GRACE_RESERVED_BYTES) if engine.offload == "grace" else 0.0
    return MemoryPlan(
        weights_bytes=weight_bytes(model, precision, tensor, pipeline),
        reserve_bytes=(RUNTIME_CONTEXT_BYTES + workspace_bytes(model, engine.max_tokens_in_flight, tensor)
                       + decoder_bytes(model, engine)),
        kv_bytes_per_token=kv_bytes_per_token(model, kv_precision, tensor, pipeline),
        hbm_bytes=gpu.memory_bytes,
        host_bytes=host,
        kv_memory_fraction=engine.kv_memory_fraction,
        block_tokens=engine.block_tokens,
        kv_memory_basis=engine.kv_memory_basis,
    )
