"""The options of a scenario, defined once: every key that takes one of a few names.

Each option is a ``Literal`` alias and the tuple of its values (``typing.get_args``, in the
order docs/scenario.md lists them). The scenario's pydantic models validate against these
aliases, the frozen specs below the boundary are typed with them, and the studies, the API
and the dashboard take their tuples from here instead of restating them. A key that also
takes a sentinel (``data: auto``, ``kv_cache: auto``) adds it where the scenario reads it.
"""

from __future__ import annotations

from typing import Literal, get_args

# -- training: precision, plan and method (training:, docs/scenario.md) -----------------------
Precision = Literal["bf16", "fp16", "fp8", "tf32", "fp32"]
Schedule = Literal["gpipe", "1f1b", "interleaved", "deepspeed"]
# Activation recomputation, from least to most work recomputed.
Recompute = Literal["none", "selective", "full"]
# Rank order, fastest-varying first (Megatron-LM's default, tp-dp-pp, keeps a tensor group in a node).
RankOrder = Literal["tp-dp-pp", "tp-pp-dp", "dp-tp-pp", "dp-pp-tp", "pp-tp-dp", "pp-dp-tp"]
Method = Literal["full", "lora", "qlora"]
# Storage of a frozen base a scenario may ask for (training.weights).
WeightStorage = Literal["bf16", "fp8", "int8", "nf4"]
# Storage of the base below the boundary: the requested one, or fp32 kept by fp32 training.
BaseWeights = Literal["fp32", "bf16", "fp8", "int8", "nf4"]
Fp8Recipe = Literal["delayed", "current", "hybrid"]
LoraTarget = Literal["q", "k", "v", "o", "gate", "up", "down"]
ZeroStage = Literal[0, 1, 2, 3]

# -- the model written inline (training.model) -----------------------------------------------
Activation = Literal["gelu", "swiglu"]
Norm = Literal["layernorm", "rmsnorm"]
Position = Literal["learned", "rope", "alibi"]

# -- the software stack (training.stack, catalog stacks.yaml, docs/model.md §7) --------------
AttentionKernel = Literal["flash", "flash2", "flash1", "triton", "standard"]
KernelStyle = Literal["fused", "eager"]
# Element type of the data-parallel gradient reduction: always fp32; the training
# precision's 16 bits ("param"); or fp32 when the 16-bit type is bf16 (Megatron-LM).
GradReduce = Literal["fp32", "param", "fp32-if-bf16"]
# ZeRO-1 gradient collective: reduce-scatter, or an all-reduce of the whole gradient
# (DeepSpeed's bf16 optimizer), or an all-reduce only when training in bf16.
Zero1Reduce = Literal["reduce-scatter", "all-reduce", "all-reduce-if-bf16"]
# ZeRO-3 parameter gathers: one collective per wrapped block (FSDP) or per parameter tensor (DeepSpeed).
ShardedGather = Literal["per-block", "per-tensor"]
# FSDP backward prefetch: the next block's gather is issued before ("pre") or after ("post")
# the current block's gradient computation.
BackwardPrefetch = Literal["pre", "post"]
CrossEntropy = Literal["fused", "unfused"]
# Pipeline sends: each tensor-parallel rank sends its 1/t slice and the receivers all-gather
# (Megatron's scatter/gather), or every rank sends the whole activation.
PipelineSends = Literal["scatter-gather", "full"]

# -- the cluster (cluster:) ------------------------------------------------------------------
Topology = Literal["rail-optimized-fat-tree", "fat-tree", "single-switch"]

# -- serving (serving:) ----------------------------------------------------------------------
# Weights and GEMMs; int4 is weight-only.
ServingPrecision = Literal["bf16", "fp16", "fp8", "int8", "int4"]
KVPrecision = Literal["bf16", "fp16", "fp8", "int8"]
Distribution = Literal["fixed", "exponential", "lognormal"]
BatchScheduler = Literal["no_evict", "max_utilization"]
# Whether an iteration batches prompt tokens with decodes: always (in-flight batching), only with chunked prefill
# (vLLM's V0 scheduler), never (SGLang without --enable-mixed-chunk).
PrefillWithDecode = Literal["always", "chunked", "never"]
Offload = Literal["none", "grace"]
# What a serving engine's KV memory fraction is a share of: the memory left after the weights and the reserve
# (TensorRT-LLM), or the whole GPU's, which then holds them too (vLLM's gpu_memory_utilization).
KVMemoryBasis = Literal["free", "total"]
# Tensor-parallel all-reduce kernels of a serving engine: its own one-/two-shot kernels over NVLink, or NCCL.
AllReduceKernels = Literal["custom", "nccl"]
CustomAllReduceKernels = Literal["trtllm", "vllm"]   # catalog tp_all_reduce.yaml

# -- the site (site:) ------------------------------------------------------------------------
EmbodiedMethod = Literal["bloom", "llmcarbon"]
# full: every device of the site; gpu-tdp: GPU-hours x TDP (LLaMA, BLOOM papers).
Accounting = Literal["full", "gpu-tdp"]
# How the site pays for its GPUs (site.pricing, docs/power.md "Cost"): rented by the hour, or owned.
Pricing = Literal["rental", "owned"]

# -- many jobs on one cluster (jobs.scheduler) -----------------------------------------------
SchedulerPolicy = Literal["fifo", "backfill", "priority"]
Placement = Literal["topology", "first-fit"]

# -- studies (python -m twin plan, fit) -----------------------------------------------------
Objective = Literal["time", "cost", "carbon", "energy"]
FitRanking = Literal["time", "cost"]
ConstraintName = Literal["deadline", "power", "energy", "cost", "carbon"]

PRECISIONS: tuple[Precision, ...] = get_args(Precision)
SCHEDULES: tuple[Schedule, ...] = get_args(Schedule)
RECOMPUTES: tuple[Recompute, ...] = get_args(Recompute)
RANK_ORDERS: tuple[RankOrder, ...] = get_args(RankOrder)
METHODS: tuple[Method, ...] = get_args(Method)
WEIGHT_STORAGES: tuple[WeightStorage, ...] = get_args(WeightStorage)
BASE_WEIGHTS: tuple[BaseWeights, ...] = get_args(BaseWeights)
FP8_RECIPES: tuple[Fp8Recipe, ...] = get_args(Fp8Recipe)
LORA_TARGETS: tuple[LoraTarget, ...] = get_args(LoraTarget)
ZERO_STAGES: tuple[ZeroStage, ...] = get_args(ZeroStage)
ACTIVATIONS: tuple[Activation, ...] = get_args(Activation)
NORMS: tuple[Norm, ...] = get_args(Norm)
POSITIONS: tuple[Position, ...] = get_args(Position)
ATTENTION_KERNELS: tuple[AttentionKernel, ...] = get_args(AttentionKernel)
KERNEL_STYLES: tuple[KernelStyle, ...] = get_args(KernelStyle)
TOPOLOGIES: tuple[Topology, ...] = get_args(Topology)
SERVING_PRECISIONS: tuple[ServingPrecision, ...] = get_args(ServingPrecision)
KV_PRECISIONS: tuple[KVPrecision, ...] = get_args(KVPrecision)
DISTRIBUTIONS: tuple[Distribution, ...] = get_args(Distribution)
BATCH_SCHEDULERS: tuple[BatchScheduler, ...] = get_args(BatchScheduler)
OFFLOADS: tuple[Offload, ...] = get_args(Offload)
EMBODIED_METHODS: tuple[EmbodiedMethod, ...] = get_args(EmbodiedMethod)
ACCOUNTINGS: tuple[Accounting, ...] = get_args(Accounting)
PRICINGS: tuple[Pricing, ...] = get_args(Pricing)
SCHEDULER_POLICIES: tuple[SchedulerPolicy, ...] = get_args(SchedulerPolicy)
PLACEMENTS: tuple[Placement, ...] = get_args(Placement)
OBJECTIVES: tuple[Objective, ...] = get_args(Objective)
FIT_RANKINGS: tuple[FitRanking, ...] = get_args(FitRanking)
CONSTRAINT_NAMES: tuple[ConstraintName, ...] = get_args(ConstraintName)


def recompute_levels(attention: AttentionKernel | None) -> tuple[Recompute, ...]:
    """Recomputation levels worth searching: a fused attention kernel stores no scores, so
    ``selective`` recomputes nothing and is ``none`` again; it is searched under standard attention only."""
    return RECOMPUTES if attention == "standard" else tuple(r for r in RECOMPUTES if r != "selective")
