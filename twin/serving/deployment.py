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
from dataclasses import dataclass

import numpy as np

from twin.calibration import Efficiency, ServingEfficiency
from twin.errors import ScenarioError
from twin.hardware.mig import MigProfile, mig_profile, slice_gpu
from twin.hardware.specs import ClusterSpec, GPUSpec
from twin.network.collectives import CommModel
from twin.serving.batching import IterationModel, iteration_model
from twin.serving.engine import EngineRun, ReplicaEngine
from twin.serving.kv_cache import MemoryPlan, memory_plan
from twin.serving.load import requests
from twin.serving.specs import GEMM_PRECISION, EngineSpec, LoadSpec, SLOSpec
from twin.workload.model import ModelSpec
from twin.workload.placement import GroupShape

PERCENTILES = (50, 90, 99)


@dataclass(frozen=True)
class ServingSpec:
    model: ModelSpec
    precision: str
    kv_cache: str
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
        return cls(*(float(x) for x in np.percentile(v, PERCENTILES)))


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
    def busy_fraction(self) -> float:
        return self.engine.busy_s / self.engine.makespan_s if self.engine.makespan_s > 0 else 0.0


def check_precision(gpu: GPUSpec, precision: str, kv_cache: str) -> None:
    """fp8 and int8 need the GPU's tensor cores for them (fp8: Hopper, Ada and later)."""
    gemm = GEMM_PRECISION[precision]
    if gemm not in gpu.peak_flops:
        have = ", ".join(p for p in ("bf16", "fp16", "fp8", "int8") if p in gpu.peak_flops)
        raise ScenarioError("serving.precision", f"{precision} needs {gemm} tensor cores, which the {gpu.name} "
                            f"lacks; it runs {have}, or int4 weight-only")
    if kv_cache == "fp8" and "fp8" not in gpu.peak_flops:
        raise ScenarioError("serving.kv_cache", f"an fp8 KV cache needs FP8 support, which the {gpu.name} lacks; "
                            "use bf16, fp16 or int8")


def replica(spec: ServingSpec, cluster: ClusterSpec, efficiency: ServingEfficiency,
            training_efficiency: Efficiency) -> Replica:
    """One replica on ``cluster``: its GPU (or MIG instance), memory plan and iteration model."""
    node = cluster.node
    gpu, profile = node.gpu, None
    devices = spec.tensor * spec.pipeline
    if spec.mig:
        profile = mig_profile(gpu, spec.mig)
        gpu = slice_gpu(gpu, profile)
        if devices > 1:
            raise ScenarioError("serving.parallelism", f"tensor {spec.tensor} × pipeline {spec.pipeline} on MIG "
                                "instances: an instance has no NVLink or peer access; use 1 × 1 per instance")
    check_precision(gpu, spec.precision, spec.kv_cache)
    if spec.engine.offload == "grace" and node.gpu.host_memory_bytes <= 0:
        raise ScenarioError("serving.engine.offload", f"grace offload needs a Grace Hopper superchip; "
                            f"the {node.gpu.name} has no Grace memory")
    if spec.model.kv_heads % min(spec.tensor, spec.model.kv_heads) or spec.model.heads % spec.tensor:
        raise ScenarioError("serving.parallelism.tensor", f"{spec.tensor} does not divide the "
                            f"{spec.model.heads} attention heads of {spec.model.name}")
    per_node = node.gpus * (profile.instances if profile else 1)
    available = cluster.nodes * per_node
    if devices > available:
        raise ScenarioError("serving.parallelism", f"a replica needs {devices} GPUs; the cluster has {available}")
    count = spec.replicas if spec.replicas is not None else available // devices
    if count * devices > available:
        raise ScenarioError("serving.replicas", f"{count} replicas × {devices} GPUs need {count * devices}; "
                            f"the cluster has {available}")
    mem = memory_plan(spec.model, gpu, spec.precision, spec.kv_cache, spec.tensor, spec.pipeline, spec.engine)
    tensor = GroupShape(spec.tensor, min(spec.tensor, node.gpus))
    stage_nodes = max(1, node.gpus // spec.tensor)
    pipeline = GroupShape(spec.pipeline, max(1, min(spec.pipeline, stage_nodes)))
    comm = CommModel(cluster, training_efficiency)
    it = iteration_model(spec.model, gpu, spec.precision, spec.kv_cache, comm, tensor, pipeline, mem,
                         efficiency, training_efficiency)
    return Replica(gpu, profile, mem, it, devices, count)


def longest_request_tokens(load: LoadSpec) -> int:
    return int(min(load.input_tokens.max, 10**9) + min(load.output_tokens.max, 10**9))


def simulate(spec: ServingSpec, rep: Replica, rate_per_s: float | None = None, offline: bool | None = None,
             count: int | None = None) -> ServingRun:
    """The deployment at ``rate_per_s`` (default: the scenario's), or offline."""
    load = spec.load
    if offline is None:
        offline = load.rate_per_s is None and rate_per_s is None
    rate = None if offline else (rate_per_s if rate_per_s is not None else load.rate_per_s)
    if count is None:
        count = math.ceil(load.requests / rep.replicas) if offline else load.requests
    reqs = requests(load, count, None if rate is None else rate / rep.replicas)
    engine = ReplicaEngine(rep.iteration, spec.engine, rep.memory.kv_blocks, rep.memory.kv_hbm_tokens,
                           load.prefix_tokens)
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
