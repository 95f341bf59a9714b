"""What a serving run is made of, in SI units: the model's precisions, the engine's settings, the load, the SLO.

The API converts the scenario's ``serving:`` section into these frozen records once;
the serving levels below never see the YAML.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.options import (AllReduceKernels, BatchScheduler, CustomAllReduceKernels, Distribution, KVMemoryBasis,
                          Offload, PrefillWithDecode)

# Bytes per stored weight. int4 is weight-only (AWQ/GPTQ style): 4-bit weights with one
# 16-bit scale per group of 128 (Lin et al. 2024, AWQ, §3: group size 128), 0.5 + 2/128 B.
WEIGHT_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5 + 2.0 / 128}
KV_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0}
# The tensor-core precision the GEMMs run at: fp8 (FP8 weights and activations), int8
# (SmoothQuant W8A8), int4 weight-only dequantises into fp16 GEMMs.
GEMM_PRECISION = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "int8": "int8", "int4": "fp16"}


@dataclass(frozen=True)
class LengthSpec:
    """Token counts of requests: a distribution with its mean, clipped to [1, max]."""
    mean: float
    distribution: Distribution = "fixed"
    max: int = 1 << 20
    sigma: float = 1.0          # lognormal shape (standard deviation of the log)


@dataclass(frozen=True)
class LoadSpec:
    rate_per_s: float | None    # Poisson arrivals over the whole deployment; None = offline (all at t = 0)
    requests: int
    input_tokens: LengthSpec
    output_tokens: LengthSpec
    prefix_tokens: int = 0      # leading prompt tokens every request shares (a system prompt)
    seed: int = 0


@dataclass(frozen=True)
class EngineSpec:
    """The serving engine's settings (TensorRT-LLM / vLLM vocabulary)."""
    max_batch: int = 256                   # sequences in flight at once
    max_tokens_in_flight: int = 8192       # tokens one iteration processes (prefill chunks + decodes)
    chunked_prefill: bool = True
    prefix_cache: bool = False             # share the KV blocks of ``LoadSpec.prefix_tokens``
    scheduler: BatchScheduler = "no_evict"
    prefill_with_decode: PrefillWithDecode = "always"   # whether an iteration with prompt tokens runs the decodes too
    offload: Offload = "none"              # "grace": KV and weights may spill to Grace memory over NVLink-C2C
    block_tokens: int = 64                 # tokens per paged-KV block (TensorRT-LLM default tokens_per_block)
    kv_memory_fraction: float = 0.9        # share of the memory left after weights and reserve given to the KV cache
    kv_memory_basis: KVMemoryBasis = "free"  # or "total": the fraction is of the GPU's memory, weights and reserve in it
    decoder_bytes_per_logit: float = 0.0   # bytes the sampler keeps per batch slot and vocabulary entry, for all
                                           # max_batch slots (penalised logits, occurrence counts): part of the reserve
    # What an engine release adds to every iteration (catalog engines.yaml; twin.serving.profiles).
    # The defaults launch nothing and take the calibrated host work per iteration.
    profile: str = "none"                  # the catalog profile these settings came from
    kernels_per_layer: float = 0.0         # kernels one layer launches per iteration (communication apart)
    kernels_per_iteration: float = 0.0     # kernels outside the layers: embedding, final norm, LM head, sampling
    cuda_graphs: bool = False              # decode-only iterations of up to graph_max_batch sequences replay a graph
    graph_max_batch: int = 0
    host_s: float | None = None            # host work per iteration: scheduling, input preparation, outputs;
                                           # None: the calibrated ServingEfficiency.iteration_overhead_s
    overlap_scheduler: bool = False        # host work for iteration i+1 runs while the GPU runs iteration i
    scheduler_steps: int = 1               # decode iterations one scheduling pass runs (vLLM --num-scheduler-steps):
                                           # a decode-only iteration pays host_s / scheduler_steps
    all_reduce: AllReduceKernels = "nccl"  # tensor-parallel all-reduce kernels
    custom_all_reduce_max_bytes: float = 0.0   # the engine's own kernels up to this size, NCCL above
    custom_all_reduce_max_bytes_two_gpus: float = 0.0   # that bound for two GPUs where it differs (0: the same)
    custom_all_reduce_kernels: CustomAllReduceKernels = "trtllm"   # whose measured kernels (tp_all_reduce.yaml)
    quantised: tuple[str, ...] = ("fp8", "int8", "int4")   # weight precisions the engine has kernels for

    @property
    def prefill_alone(self) -> bool:
        """Whether an iteration with prompt tokens runs no decodes: ``prefill_with_decode`` never, or chunked
        (vLLM's V0 scheduler) without chunked prefill."""
        return self.prefill_with_decode == "never" or (self.prefill_with_decode == "chunked"
                                                       and not self.chunked_prefill)


@dataclass(frozen=True)
class SLOSpec:
    ttft_p99_s: float | None = None
    tpot_p99_s: float | None = None

    def met(self, ttft_p99_s: float, tpot_p99_s: float) -> bool:
        return ((self.ttft_p99_s is None or ttft_p99_s <= self.ttft_p99_s)
                and (self.tpot_p99_s is None or tpot_p99_s <= self.tpot_p99_s))

    @property
    def any(self) -> bool:
        return self.ttft_p99_s is not None or self.tpot_p99_s is not None
