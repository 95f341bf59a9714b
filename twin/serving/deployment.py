"""A deployment: replicas of one model on whole GPUs or MIG instances, and what they serve.

Builds, once, each replica's memory plan and iteration model, then runs the request
level (``engine.ReplicaEngine``). Replicas are identical and requests are dispatched
to them at random, which splits a Poisson stream of rate λ into R Poisson streams of
rate λ/R: one replica is simulated (with the scenario's request count, at λ/R) and the
deployment's throughput is R times its own. Offline runs give each replica its
share of the requests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from twin import catalog
from twin.calibration import Efficiency, ServingEfficiency
from twin.errors import ScenarioError
from twin.hardware.mig import MigProfile, mig_profile, slice_gpu
from twin.hardware.specs import ClusterSpec, GPUSpec
from twin.network.collectives import CommModel
from twin.options import KVPrecision, ServingPrecision
from twin.quantiles import percentiles
from twin.serving.batching import IterationModel, iteration_model
from twin.serving.engine import EngineRun, ReplicaEngine
from twin.serving.kv_cache import MemoryPlan, decoder_bytes, memory_plan
from twin.serving.load import requests
from twin.serving.specs import GEMM_PRECISION, KV_BYTES, WEIGHT_BYTES, EngineSpec, LoadSpec, SLOSpec
from twin.units import fmt_bytes
from twin.workload.model import ModelSpec
from twin.workload.placement import GroupShape

PERCENTILES = (50, 90, 99)
# Precisions that need the engine's quantised GEMM kernels (EngineSpec.quantised).
QUANTISED = ("fp8", "int8", "int4")


@dataclass(frozen=True)
class ServingSpec:
    model: ModelSpec
    precision: ServingPrecision
    kv_cache: KVPrecision
    tensor: int
    pipeline: int
    replicas: int | None          # None: as many as the cluster holds
    mig: str | None
    engine: EngineSpec
    load: LoadSpec
    slo: SLOSpec


@dataclass(frozen=True)
class Replica:
    """One replica's hardware and models."""
    gpu: GPUSpec                  # the GPU, or the MIG instance seen as a GPU
    profile: MigProfile | None
    memory: MemoryPlan
    iteration: IterationModel
    devices: int                  # GPUs or MIG instances per replica
    replicas: int

    @property
    def devices_used(self) -> int:
        return self.devices * self.replicas

    @property
    def gpus_used(self) -> int:
        """Physical GPUs the replicas occupy (MIG instances packed onto whole GPUs)."""
        if self.profile is None:
            return self.devices_used
        return math.ceil(self.devices_used / self.profile.instances)


@dataclass(frozen=True)
class Percentiles:
    p50: float
    p90: float
    p99: float

    @classmethod
    def of(cls, values: np.ndarray) -> "Percentiles":
        v = values[np.isfinite(values)]
        if len(v) == 0:
            return cls(math.nan, math.nan, math.nan)
        return cls(*(float(x) for x in percentiles(v, PERCENTILES)))


@dataclass(frozen=True)
class ServingRun:
    """The deployment over one load."""
    rate_per_s: float | None      # offered, whole deployment (None: offline)
    requests_per_s: float         # completed, whole deployment
    output_tokens_per_s: float
    tokens_per_s: float           # input + output
    ttft_s: Percentiles
    tpot_s: Percentiles
    e2e_latency_s: Percentiles
    slo_met: bool
    engine: EngineRun             # the simulated replica
    replicas: int

    @property
    def requests(self) -> int:
        """Requests the run simulated on its replica."""
        return len(self.engine.requests.arrival_s)

    @property
    def busy_fraction(self) -> float:
        return self.engine.busy_s / self.engine.makespan_s if self.engine.makespan_s > 0 else 0.0


def check_precision(gpu: GPUSpec, precision: str, kv_cache: str, where: str = "serving") -> None:
    """fp8 and int8 need the GPU's tensor cores for them (fp8: Hopper, Ada and later)."""
    gemm = GEMM_PRECISION[precision]
    if gemm not in gpu.peak_flops:
        have = ", ".join(p for p in ("bf16", "fp16", "fp8", "int8") if p in gpu.peak_flops)
        raise ScenarioError(f"{where}.precision", f"{precision} needs {gemm} tensor cores, which the {gpu.name} "
                            f"lacks; it runs {have}, or int4 weight-only")
    if kv_cache == "fp8" and "fp8" not in gpu.peak_flops:
        raise ScenarioError(f"{where}.kv_cache", f"an fp8 KV cache needs FP8 support, which the {gpu.name} lacks; "
                            "use bf16, fp16 or int8")


def replica(spec: ServingSpec, cluster: ClusterSpec, efficiency: ServingEfficiency,
            training_efficiency: Efficiency, where: str = "serving", compute_clock: float = 1.0) -> Replica:
    """One replica on ``cluster``: its GPU (or MIG instance), memory plan and iteration model.

    ``where`` is the scenario key the deployment comes from (``serving``, ``serving.compare[0]``),
    which errors name; ``compute_clock`` the share of its clock a power cap leaves compute-bound work
    (``power.capping.power_cap_factor``; 1 uncapped).
    """
    node = cluster.node
    gpu, profile = node.gpu, None
    devices = spec.tensor * spec.pipeline
    if spec.mig:
        profile = mig_profile(gpu, spec.mig, f"{where}.mig")
        gpu = slice_gpu(gpu, profile)
        if devices > 1:
            raise ScenarioError(f"{where}.parallelism", f"tensor {spec.tensor} × pipeline {spec.pipeline} on MIG "
                                "instances: an instance has no NVLink or peer access; use 1 × 1 per instance")
    check_precision(gpu, spec.precision, spec.kv_cache, where)
    if spec.precision in QUANTISED and spec.precision not in spec.engine.quantised:
        have = ", ".join(spec.engine.quantised) or "none"
        raise ScenarioError(f"{where}.precision", f"{spec.engine.profile} has no {spec.precision} kernels; "
                            f"its quantised kernels: {have}; or bf16, fp16")
    if spec.engine.offload == "grace" and node.gpu.host_memory_bytes <= 0:
        key = "serving.engine.offload" if where == "serving" else f"{where}.offload"   # alternatives name it flat
        raise ScenarioError(key, f"grace offload needs a Grace Hopper superchip; the {node.gpu.name} has no Grace "
                            f"memory; write offload: none")
    m = spec.model
    if m.heads % spec.tensor or m.kv_heads % min(spec.tensor, m.kv_heads):
        raise ScenarioError(f"{where}.parallelism.tensor", f"{spec.tensor} does not divide the {m.heads} attention "
                            f"heads and {m.kv_heads} KV heads of {m.name}")
    per_node = node.gpus * (profile.instances if profile else 1)
    available = cluster.work_nodes * per_node
    unit = f"{profile.name} instances" if profile else "GPUs"
    if devices > available:
        raise ScenarioError(f"{where}.parallelism", f"a replica needs {devices} {unit}; the cluster has {available}")
    count = spec.replicas if spec.replicas is not None else available // devices
    if count * devices > available:
        raise ScenarioError(f"{where}.replicas", f"{count} replicas × {devices} {unit} need {count * devices}; "
                            f"the cluster has {available}")
    mem = memory_plan(m, gpu, spec.precision, spec.kv_cache, spec.tensor, spec.pipeline, spec.engine)
    tensor = GroupShape(spec.tensor, min(spec.tensor, node.gpus))
    stage_nodes = max(1, node.gpus // spec.tensor)
    pipeline = GroupShape(spec.pipeline, max(1, min(spec.pipeline, stage_nodes)))
    comm = CommModel(cluster, training_efficiency)
    it = iteration_model(m, gpu, spec.precision, spec.kv_cache, comm, tensor, pipeline, mem,
                         efficiency, training_efficiency, spec.engine, compute_clock)
    return Replica(gpu, profile, mem, it, devices, count)


def longest_request_tokens(load: LoadSpec) -> int:
    """Prompt and output of the longest request the load can draw (both at their max)."""
    return load.input_tokens.max + load.output_tokens.max


def memory_problem(spec: ServingSpec, memory: MemoryPlan) -> str | None:
    """Why a replica cannot hold the load: weights over memory, or the longest request beyond its KV cache."""
    spilled = memory.weights_spilled_bytes - memory.host_bytes
    if spilled > 0 or memory.kv_blocks <= 0:
        over = max(spilled, memory.weights_in_hbm_bytes + memory.reserve_bytes - memory.hbm_bytes, 0.0)
        sampler = decoder_bytes(spec.model, spec.engine)
        held = (f" (the sampler's buffers for {spec.engine.max_batch:,} batch slots: {fmt_bytes(sampler)})"
                if sampler > 0 else "")
        return (f"weights {fmt_bytes(memory.weights_bytes)} and reserve {fmt_bytes(memory.reserve_bytes)}{held} per "
                f"GPU leave no room for a KV cache in {fmt_bytes(memory.hbm_bytes)}"
                + (f" ({fmt_bytes(over)} over)" if over > 0 else ""))
    longest = longest_request_tokens(spec.load)
    if memory.kv_capacity_tokens < longest:
        return (f"the KV cache holds {memory.kv_capacity_tokens:,} tokens per replica, less than the longest request "
                f"({longest:,} tokens: input and output at their max)")
    return None


def fitting_changes(spec: ServingSpec, gpu: GPUSpec, node_gpus: int, limit: int = 3) -> list[str]:
    """Single changes of the deployment that would hold the load: more tensor ranks, a smaller precision,
    a larger MIG profile; each with the KV capacity it leaves."""
    trials: list[tuple[str, ServingSpec]] = []
    m = spec.model
    default_batch = EngineSpec.max_batch   # the usual limit: trtllm-build's --max_batch_size, vLLM's max_num_seqs
    if decoder_bytes(m, spec.engine) > 0 and spec.engine.max_batch > default_batch:
        smaller = replace(spec.engine, max_batch=default_batch)
        trials.append((f"max_batch {default_batch}", replace(spec, engine=smaller)))
    if spec.mig is None:
        trials += [(f"tensor {t}", replace(spec, tensor=t)) for t in (2, 4, 8, 16)
                   if spec.tensor < t <= node_gpus and m.heads % t == 0]
    trials += [(f"precision {p}", replace(spec, precision=p)) for p in ("fp8", "int4")
               if WEIGHT_BYTES[p] < WEIGHT_BYTES[spec.precision] and GEMM_PRECISION[p] in gpu.peak_flops]
    trials += [(f"kv_cache {k}", replace(spec, kv_cache=k)) for k in ("fp8", "int8")
               if KV_BYTES[k] < KV_BYTES[spec.kv_cache] and (k != "fp8" or "fp8" in gpu.peak_flops)]
    if spec.mig is not None:
        current = mig_profile(gpu, spec.mig)
        profiles = catalog.table("mig")[gpu.name]["profiles"]
        trials += [(f"mig {name}", replace(spec, mig=name)) for name, (_, memory, _) in profiles.items()
                   if memory > current.memory_slices]
    out = []
    for label, trial in trials:
        device = slice_gpu(gpu, mig_profile(gpu, trial.mig)) if trial.mig else gpu
        plan = memory_plan(m, device, trial.precision, trial.kv_cache, trial.tensor, trial.pipeline, trial.engine)
        if memory_problem(trial, plan) is None:
            out.append(f"{label} would fit (KV cache for {plan.kv_capacity_tokens:,} tokens)")
        if len(out) == limit:
            break
    return out


def simulate(spec: ServingSpec, rep: Replica, rate_per_s: float | None = None, offline: bool | None = None,
             count: int | None = None, compiled: bool | None = None) -> ServingRun:
    """The deployment at ``rate_per_s`` (default: the scenario's), or offline; ``compiled``: whether the replica
    engine plays its compiled loop (the same times; None: as ``ReplicaEngine`` decides by the run's length)."""
    load = spec.load
    if offline is None:
        offline = load.rate_per_s is None and rate_per_s is None
    rate = None if offline else (rate_per_s if rate_per_s is not None else load.rate_per_s)
    if count is None:
        count = math.ceil(load.requests / rep.replicas) if offline else load.requests
    reqs = requests(load, count, None if rate is None else rate / rep.replicas)
    engine = ReplicaEngine(rep.iteration, spec.engine, rep.memory.kv_blocks, rep.memory.kv_hbm_tokens,
                           load.prefix_tokens, compiled=compiled)
    run = engine.run(reqs)
    t = run.requests
    ttft = t.first_token_s - t.arrival_s
    e2e = t.finish_s - t.arrival_s
    steps = np.maximum(t.output_tokens - 1, 1)
    tpot = np.where(t.output_tokens > 1, (t.finish_s - t.first_token_s) / steps, np.nan)
    span = run.makespan_s if run.makespan_s > 0 else math.inf
    out_tokens = float(t.output_tokens.sum())
    in_tokens = float(t.input_tokens.sum())
    r = rep.replicas
    ttft_p, tpot_p = Percentiles.of(ttft), Percentiles.of(tpot)
    met = spec.slo.met(ttft_p.p99, tpot_p.p99 if math.isfinite(tpot_p.p99) else 0.0)
    return ServingRun(rate, r * len(reqs) / span, r * out_tokens / span, r * (out_tokens + in_tokens) / span,
                      ttft_p, tpot_p, Percentiles.of(e2e), met, run, r)
