"""The parallel plan: how a model is split over the cluster's GPUs.

Megatron-style 4-D parallelism: tensor (TP, inside a layer), pipeline (PP,
across layers, with optional virtual stages), data (DP, replicas, optionally
ZeRO-sharded) and expert (EP, carved out of DP for MoE FFNs). Divisibility
that real frameworks require is checked here; a plan that cannot run raises
``InfeasibleError`` naming the key and what would work.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from twin.errors import InfeasibleError
from twin.hardware.specs import ClusterSpec
from twin.options import RankOrder, Recompute, Schedule
from twin.workload.model import ModelSpec


@dataclass(frozen=True)
class PlanRequest:
    """The parallel plan a scenario asks for (``training.parallelism``); ``data`` None means auto."""
    tensor: int = 1
    pipeline: int = 1
    data: int | None = None
    expert: int = 1
    microbatch: int = 1
    virtual_stages: int = 1
    schedule: Schedule = "1f1b"
    sequence_parallel: bool = True
    recompute: Recompute = "selective"
    zero: int = 1
    overlap_grad_reduce: bool = True
    overlap_param_gather: bool = True
    order: RankOrder = "tp-dp-pp"         # rank order, fastest-varying first


@dataclass(frozen=True)
class ParallelPlan:
    tensor: int
    pipeline: int
    data: int
    expert: int
    microbatch: int
    virtual_stages: int
    schedule: Schedule
    sequence_parallel: bool       # effective: False when tensor == 1
    recompute: Recompute
    zero: int
    overlap_grad_reduce: bool     # gradient reduction in buckets during the last backward
    overlap_param_gather: bool    # ZeRO-1/2 parameter all-gather under the next step's forward
    global_batch: int
    seq_len: int

    @property
    def gpus(self) -> int:
        return self.tensor * self.pipeline * self.data

    @property
    def microbatches(self) -> int:
        """Micro-batches per data-parallel replica per step (m)."""
        return self.global_batch // (self.data * self.microbatch)

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch * self.seq_len

    @property
    def expert_data(self) -> int:
        """Replicas of each expert's weights: data-parallel ranks over expert-parallel ones."""
        return max(1, self.data // self.expert)

    def describe(self) -> str:
        parts = [f"TP{self.tensor}", f"PP{self.pipeline}", f"DP{self.data}"]
        if self.expert > 1:
            parts.append(f"EP{self.expert}")
        if self.virtual_stages > 1:
            parts.append(f"v{self.virtual_stages}")
        extras = [self.schedule, f"micro-batch {self.microbatch} × {self.microbatches}",
                  f"ZeRO-{self.zero}", f"recompute {self.recompute}"]
        if self.sequence_parallel:
            extras.append("SP")
        return " ".join(parts) + " (" + ", ".join(extras) + ")"


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def stage_layers(layers: int, pipeline: int, virtual_stages: int = 1) -> list[int]:
    """Layers per model chunk (pipeline · virtual_stages chunks), split as evenly as possible.

    70 layers on 12 chunks → 10 chunks of 6 and 2 of 5: the first chunks take the
    remainder, as Megatron's uneven split and torchtitan do.
    """
    chunks = pipeline * virtual_stages
    base, extra = divmod(layers, chunks)
    return [base + (1 if i < extra else 0) for i in range(chunks)]


def layers_on_stage(layers: int, plan: "ParallelPlan", stage: int) -> int:
    """Layers a pipeline stage holds over its virtual chunks (chunk i sits on stage i % pipeline)."""
    return _layers_on_stage(layers, plan.pipeline, plan.virtual_stages, stage)


@lru_cache(maxsize=4096)
def _layers_on_stage(layers: int, pipeline: int, virtual_stages: int, stage: int) -> int:
    return sum(stage_layers(layers, pipeline, virtual_stages)[stage::pipeline])


def resolve_plan(par: PlanRequest, model: ModelSpec, cluster: ClusterSpec,
                 global_batch: int, seq_len: int) -> ParallelPlan:
    """Check a requested plan against the model and the cluster's working nodes; fill ``data: auto``.

    ``data: auto`` takes the largest data-parallel size that fits the GPUs and that every rule
    below accepts: it divides the batch's micro-batches, is a multiple of expert parallelism, and
    under the interleaved schedule leaves a multiple of ``pipeline`` micro-batches per replica.
    """
    schedule = _check_model_split(par, model, cluster.node.gpus)
    d = _data_size(par, cluster, global_batch)
    t, p, mb, v = par.tensor, par.pipeline, par.microbatch, par.virtual_stages
    if v > 1 and (global_batch // (d * mb)) % p:
        raise InfeasibleError(f"{_WHERE}.virtual_stages", f"the interleaved schedule needs micro-batches per "
                              f"replica ({global_batch // (d * mb)}) to be a multiple of pipeline {p}")
    return ParallelPlan(
        tensor=t, pipeline=p, data=d, expert=par.expert, microbatch=mb, virtual_stages=v, schedule=schedule,
        sequence_parallel=par.sequence_parallel and t > 1, recompute=par.recompute, zero=par.zero,
        overlap_grad_reduce=par.overlap_grad_reduce, overlap_param_gather=par.overlap_param_gather,
        global_batch=global_batch, seq_len=seq_len,
    )


_WHERE = "training.parallelism"


def _check_model_split(par: PlanRequest, model: ModelSpec, gpus_per_node: int) -> Schedule:
    """Tensor ranks that split the heads and the FFN, stages and chunks no more than the layers, experts that
    divide the model's; the schedule the plan runs (interleaving one chunk per stage is plain 1F1B). A refused
    tensor size names those allowed, up to ``gpus_per_node``."""
    t, p, ep, v = par.tensor, par.pipeline, par.expert, par.virtual_stages
    if model.heads % t:
        ok = [d for d in _divisors(model.heads) if d <= gpus_per_node] or [1]
        raise InfeasibleError(f"{_WHERE}.tensor", f"{t} does not divide the model's {model.heads} attention heads; "
                              f"allowed: {', '.join(map(str, ok))}")
    if model.kv_heads % t and t % model.kv_heads:
        raise InfeasibleError(f"{_WHERE}.tensor", f"{t} neither divides nor is a multiple of the model's "
                              f"{model.kv_heads} KV heads")
    if model.ffn_hidden % t:
        raise InfeasibleError(f"{_WHERE}.tensor", f"{t} does not divide ffn_hidden {model.ffn_hidden}")
    if p * v > model.layers:
        raise InfeasibleError(f"{_WHERE}.pipeline", f"{p} stages × {v} virtual stages exceeds the model's "
                              f"{model.layers} layers")
    if v > 1 and par.schedule != "interleaved":
        raise InfeasibleError(f"{_WHERE}.virtual_stages", f"{v} needs schedule: interleaved (schedule is "
                              f"{par.schedule})")
    if ep > 1 and model.experts % ep:
        raise InfeasibleError(f"{_WHERE}.expert", f"{ep} does not divide the model's {model.experts} experts")
    if ep > 1 and not model.is_moe:
        raise InfeasibleError(f"{_WHERE}.expert", f"{ep} > 1 but {model.name} is a dense model (experts: 1)")
    return "1f1b" if par.schedule == "interleaved" and v == 1 else par.schedule


@lru_cache(maxsize=4096)
def _auto_data_size(micro: int, most: int, expert: int, pipeline: int) -> int:
    """``data: auto``: the largest size up to ``most`` that divides the ``micro`` micro-batches, is a multiple of
    ``expert`` and leaves a multiple of ``pipeline`` micro-batches per replica (1: any); 0 when none does.
    Only the divisors of ``micro`` are tried, largest first (a cluster of 16,384 GPUs offers thousands of sizes)."""
    return next((d for d in reversed(_divisors(micro))
                 if d <= most and d % expert == 0 and (micro // d) % pipeline == 0), 0)


def _data_size(par: PlanRequest, cluster: ClusterSpec, global_batch: int) -> int:
    """The data-parallel size: the one asked for, checked against the GPUs and the batch, or for ``auto``
    the largest the rules of ``resolve_plan`` accept."""
    t, p, ep, mb, v = par.tensor, par.pipeline, par.expert, par.microbatch, par.virtual_stages
    gpus = cluster.work_gpus
    spares = f" ({cluster.spare_nodes} spare nodes held back)" if cluster.spare_nodes else ""
    if t * p > gpus:
        raise InfeasibleError(_WHERE, f"tensor {t} × pipeline {p} = {t * p} GPUs, the cluster has {gpus}{spares}")
    if global_batch % mb:
        raise InfeasibleError(f"{_WHERE}.microbatch", f"{mb} does not divide global_batch {global_batch}")
    if par.data is None:
        d = _auto_data_size(global_batch // mb, gpus // (t * p), ep, p if v > 1 else 1)
        if not d:
            rule = f" with a multiple of pipeline {p} micro-batches per replica" if v > 1 else ""
            raise InfeasibleError(f"{_WHERE}.data", f"no data-parallel size divides global_batch {global_batch} / "
                                  f"microbatch {mb}{rule} and is a multiple of expert {ep}")
        return d
    d = par.data
    if t * p * d > gpus:
        raise InfeasibleError(f"{_WHERE}.data", f"tensor {t} × pipeline {p} × data {d} = {t * p * d} GPUs, "
                              f"the cluster has {gpus}{spares}; largest data size: {gpus // (t * p)}")
    if global_batch % (d * mb):
        raise InfeasibleError(f"{_WHERE}.data", f"global_batch {global_batch} is not a multiple of data {d} × "
                              f"microbatch {mb}")
    if d % ep:
        raise InfeasibleError(f"{_WHERE}.expert", f"{ep} does not divide data {d} (experts are carved out of "
                              "data parallelism)")
    return d


def doublings(size: int, limit: int) -> list[int]:
    """``size``, twice it, four times it, ... up to ``limit`` (parallel sizes a search or advice tries)."""
    out = []
    while size <= limit:
        out.append(size)
        size *= 2
    return out
