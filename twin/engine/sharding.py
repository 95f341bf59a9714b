"""Sharded data parallelism (ZeRO-2/3, FSDP) as the frameworks run it: per-unit gathers and prefetch.

Under ZeRO-3 a rank holds 1/d of every parameter and all-gathers each unit of
the model just before it runs, in every forward and again in every backward;
under ZeRO-2 and ZeRO-3 each unit's gradients are reduce-scattered right after
its backward. The unit is what the framework gathers at once:

- **per-block** (PyTorch FSDP, FSDP2, Composer): one flat all-gather per wrapped
  transformer block (plus the embedding and the head), one reduce-scatter per block;
- **per-tensor** (DeepSpeed ZeRO-3): one all-gather per parameter tensor larger
  than the persistence threshold (smaller ones stay whole), gradients
  reduce-scattered in buckets.

Every collective is a separate NCCL call, so each pays its ring latency over
the data-parallel ranks (``CommModel``: a launch plus (ranks − 1) steps) on top
of its bytes: thousands of small gathers on thousands of ranks cost seconds.

Collectives share one communication stream, in the order they are issued, and
run beside the compute of the units before them. A gather is issued when the
prefetch window allows: FSDP issues the next block's gather as the current
block starts (backward prefetch ``pre``) or after its gradient computation
(``post``); DeepSpeed gathers ahead as many tensors as fit in its prefetch
bucket (and its live-parameter budget). A unit starts when its parameters have
arrived and the unit before it is done, so what the window cannot hide is
exposed. Compute running beside a collective slows by σ (``StepCosts.overlapped_s``).
Under full recomputation DeepSpeed releases the parameters after the recomputed
forward and gathers them a second time for the backward.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

from twin.engine.stack import StackProfile
from twin.network.collectives import CommModel
from twin.workload.model import ModelSpec
from twin.workload.placement import GroupShape, Placement
from twin.workload.plan import ParallelPlan


def pass_s(compute: Sequence[float], gather: Sequence[float], reduce: Sequence[float], ahead: Sequence[int],
           issue_after: bool, slowdown: float) -> float:
    """Time of one pass, until its last compute and its last collective are done.

    Unit i computes for ``compute[i]``, waits for the all-gather(s) of its parameters (``gather[i]``)
    and issues a reduce-scatter when it is done (``reduce[i]``, backward). ``ahead[i]``: the last unit
    whose gather may be issued once unit i starts (or, with ``issue_after``, once it is done).
    Collectives run one at a time in issue order. One loop, the issuing inlined and ``max(a, b)`` written
    ``b if b > a else a`` (the same value): a search prices thousands of passes.
    """
    n = len(compute)
    last = n - 1
    done = [0.0] * n                  # when each unit's gathers have arrived
    comm_free = 0.0
    issued = 0
    if n:
        comm_free += gather[0]
        done[0] = comm_free
        issued = 1
    t = 0.0
    for i in range(n):
        start = done[i] if done[i] > t else t
        if not issue_after:
            upto = ahead[i] if ahead[i] < last else last
            while issued <= upto:
                comm_free = (start if start > comm_free else comm_free) + gather[issued]
                done[issued] = comm_free
                issued += 1
        beside = comm_free - start                    # traffic already queued runs beside this unit
        if not beside > 0.0:
            beside = 0.0
        c = compute[i]
        t = start + c + slowdown * (beside if beside < c else c)
        if issue_after:
            upto = ahead[i] if ahead[i] < last else last
            while issued <= upto:
                comm_free = (t if t > comm_free else comm_free) + gather[issued]
                done[issued] = comm_free
                issued += 1
        r = reduce[i]
        if r > 0:
            comm_free = (t if t > comm_free else comm_free) + r
    return comm_free if comm_free > t else t


def prefetch_window(params: Sequence[float], stack: StackProfile) -> list[int]:
    """For each unit (``params``: the parameters each gathers), the last unit gathered ahead of it: the
    next one (per block), or as many as the prefetch bucket and the live-parameter budget hold, and at
    least the next (per tensor)."""
    n = len(params)
    if stack.sharded_gather == "per-block" or stack.prefetch_bucket_params <= 0:
        return [min(i + 1, n - 1) for i in range(n)]
    held = [0.0, *accumulate(params)]        # held[j]: parameters of units before j
    window = []
    for i, unit_params in enumerate(params):
        budget = stack.prefetch_bucket_params
        if stack.max_live_params > 0:
            budget = min(budget, stack.max_live_params - unit_params)
        last = bisect_right(held, held[i + 1] + budget) - 2       # units i+1..last hold at most the budget
        window.append(min(max(last, i + 1), n - 1))
    return window


@dataclass(frozen=True)
class Tensor:
    """A parameter tensor on one GPU (tensor- and expert-parallel shard), before data-parallel sharding."""
    params: float
    group: str                    # data | expert_data: the group it is sharded over


def layer_tensors(model: ModelSpec, plan: ParallelPlan) -> list[Tensor]:
    """A layer's parameter tensors in the order its forward uses them."""
    h, t, f = model.hidden, plan.tensor, model.ffn_hidden
    norm = h * (2 if model.norm == "layernorm" else 1)
    tensors = [Tensor(norm, "data"), Tensor(h * (h + 2 * model.kv_dim) / t, "data"),
               Tensor(h * h / t, "data"), Tensor(norm, "data")]
    if model.is_moe:
        tensors.append(Tensor(h * model.experts, "data"))                       # router, replicated over TP
        for _ in range(max(1, model.experts // plan.expert)):
            tensors += [Tensor(h * f / t, "expert_data")] * model.ffn_matrices
    else:
        tensors += [Tensor(h * f / t, "data")] * model.ffn_matrices
    return tensors


@dataclass(frozen=True)
class ChunkWork:
    """The compute of one model chunk for one micro-batch, unit by unit."""
    layers: int
    layer_forward_s: float
    layer_backward_s: float
    embedding_forward_s: float = 0.0      # first chunk only
    head_forward_s: float = 0.0           # last chunk only
    embedding_params: float = 0.0
    head_params: float = 0.0              # 0 when the head is the (already gathered) tied embedding


def sharded_extra_s(work: ChunkWork, model: ModelSpec, plan: ParallelPlan, comm: CommModel,
                    placement: Placement, stack: StackProfile, param_bytes: float, grad_bytes: float,
                    slowdown: float) -> tuple[float, float]:
    """Extra (forward, backward) seconds of one chunk's passes from ZeRO-2/3 traffic, for one micro-batch.

    The chunk's layers are alike: one layer's units are priced once and repeated."""
    if plan.zero < 2 or plan.data <= 1:
        return 0.0, 0.0
    gather = plan.zero >= 3
    groups = {"data": placement.data, "expert_data": placement.expert_data}
    per_tensor = stack.sharded_gather == "per-tensor"
    each_unit = not per_tensor or stack.reduce_bucket_params <= 0     # a reduce-scatter after every unit

    def priced(units: list[tuple[float, float, list[Tensor]]]) -> list[tuple]:
        """(forward s, backward s, gather s, reduce-scatter s after it, parameters, tensors) of each unit."""
        return [(f, b, _collective_s(comm.all_gather_s, xs, param_bytes, per_tensor, groups) if gather else 0.0,
                 _collective_s(comm.reduce_scatter_s, xs, grad_bytes, per_tensor, groups) if each_unit else 0.0,
                 sum(x.params for x in xs), xs) for f, b, xs in units]

    first, layer, last = _pass_units(work, model, plan, stack)
    units = priced(first) + priced(layer) * work.layers + priced(last)
    fwd, bwd, gathers, reduces, params, tensors = zip(*units)
    regather = 2.0 if (stack.regather_under_recompute and plan.recompute == "full") else 1.0
    reduces = reduces[::-1] if each_unit else _bucket_reduce_scatters(tensors[::-1], comm, groups, grad_bytes, stack)

    fwd_compute, bwd_compute = sum(fwd), sum(bwd[::-1])
    forward_s = (pass_s(fwd, gathers, [0.0] * len(units), prefetch_window(params, stack), False, slowdown)
                 if gather else fwd_compute)
    post = not per_tensor and stack.backward_prefetch == "post"
    backward_s = pass_s(bwd[::-1], [regather * g for g in gathers[::-1]], reduces,
                        prefetch_window(params[::-1], stack), post, slowdown)
    return forward_s - fwd_compute, backward_s - bwd_compute


def _pass_units(work: ChunkWork, model: ModelSpec, plan: ParallelPlan,
                stack: StackProfile) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """A chunk's units as (forward s, backward s, tensors gathered): the embedding's (or none), one layer's
    (its block, or its tensors above the persistence threshold), the head's (or none)."""
    tensors = layer_tensors(model, plan)
    if stack.sharded_gather == "per-tensor":
        gathered = [x for x in tensors if x.params > stack.persistence_threshold_params]
        total = sum(x.params for x in gathered) or 1.0
        layer_units = [(x.params / total, [x]) for x in gathered] or [(1.0, [])]
    else:
        layer_units = [(1.0, tensors)]
    first, last = [], []
    if work.embedding_forward_s or work.embedding_params:
        first.append((work.embedding_forward_s, 2 * work.embedding_forward_s,
                      [Tensor(work.embedding_params, "data")] if work.embedding_params else []))
    if work.head_forward_s or work.head_params:
        last.append((work.head_forward_s, 2 * work.head_forward_s,
                     [Tensor(work.head_params, "data")] if work.head_params else []))
    layer = [(share * work.layer_forward_s, share * work.layer_backward_s, xs) for share, xs in layer_units]
    return first, layer, last


def _collective_s(op, tensors: list[Tensor], bytes_per: float, per_tensor: bool,
                  groups: dict[str, GroupShape]) -> float:
    """One collective ``op`` per tensor (per-tensor) or one flat collective per group (per-block) over
    ``tensors`` of ``bytes_per`` bytes per parameter."""
    if per_tensor:
        return sum(op(x.params * bytes_per, groups[x.group]) for x in tensors)
    by_group: dict[str, float] = {}
    for x in tensors:
        by_group[x.group] = by_group.get(x.group, 0.0) + x.params
    return sum(op(params * bytes_per, groups[g]) for g, params in by_group.items())


def _bucket_reduce_scatters(units: Sequence[list[Tensor]], comm: CommModel, groups: dict[str, GroupShape],
                            grad_bytes: float, stack: StackProfile) -> list[float]:
    """Reduce-scatter time issued after each backward unit of tensors: one per full bucket (a bucket per
    group; what is left is reduced after the last unit)."""
    out, bucket = [], dict.fromkeys(groups, 0.0)
    for i, xs in enumerate(units):
        for x in xs:
            bucket[x.group] += x.params
        last = i == len(units) - 1
        full = [g for g, params in bucket.items() if params > 0 and (last or params >= stack.reduce_bucket_params)]
        out.append(sum(comm.reduce_scatter_s(bucket[g] * grad_bytes, groups[g]) for g in full))
        bucket.update(dict.fromkeys(full, 0.0))
    return out
