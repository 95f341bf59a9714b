"""Software stacks: how a framework runs a training step, as data.

A ``StackProfile`` holds every choice of a framework that the step model
prices: the attention kernel, fused or eager elementwise kernels,
torch.autocast, the precision and collective of the gradient reduction, which
data-parallel collectives overlap compute, tensor-parallel communication
overlap, how ZeRO-3 gathers parameters, the cross-entropy kernel, attention
re-run under selective recomputation, pipeline sends, gradient-buffer
zeroing and the bytes the loss holds per logit. Profiles live in ``catalog/data/stacks.yaml``, each value with its
source (a framework flag, its default, or a paper); ``stack_profile`` reads
one. A scenario may override any value (docs/scenario.md).

The ZeRO-3 fields default to PyTorch FSDP's own defaults (below); a profile
names them only where its framework gathers differently.
"""

from __future__ import annotations

import typing
from dataclasses import MISSING, dataclass, fields, replace
from functools import lru_cache

from twin import catalog
from twin.options import (AttentionKernel, BackwardPrefetch, CrossEntropy, GradReduce, KernelStyle, PipelineSends,
                          ShardedGather, Zero1Reduce)
from twin.workload.memory import LOSS_HELD_BYTES_PER_LOGIT

# PyTorch FSDP defaults (torch.distributed.fsdp.FullyShardedDataParallel): backward_prefetch
# BackwardPrefetch.BACKWARD_PRE; the next block's all-gather is issued while the current
# block computes (implicit forward prefetch, PyTorch docs "FSDP Notes: FSDP Prefetch Nuances").
FSDP_BACKWARD_PREFETCH: BackwardPrefetch = "pre"


@dataclass(frozen=True)
class StackProfile:
    """One framework's way of running a step (catalog stacks.yaml, docs/model.md §7)."""
    name: str
    attention: AttentionKernel
    kernels: KernelStyle
    autocast: bool                    # fp32 weights and residual stream under torch.autocast
    grad_reduce: GradReduce
    zero1_reduce: Zero1Reduce
    overlap_grad_reduce: bool         # gradient reduction in buckets during the last backward
    overlap_param_gather: bool        # ZeRO-1/2 parameter all-gather under the next step's forward
    tp_comm_overlap: bool             # tensor-parallel collectives pipelined with the GEMMs (userbuffers)
    cross_entropy: CrossEntropy
    recompute_fused_attention: bool   # selective recomputation re-runs a fused attention kernel's forward
    pipeline_sends: PipelineSends
    zero_grad_buffer: bool            # a contiguous gradient buffer is zeroed (memset) every step
    sharded_gather: ShardedGather = "per-block"
    backward_prefetch: BackwardPrefetch = FSDP_BACKWARD_PREFETCH
    prefetch_bucket_params: float = 0.0       # per-tensor: parameters gathered ahead of use (0: one block)
    max_live_params: float = 0.0              # per-tensor: most parameters gathered at once (0: no limit)
    reduce_bucket_params: float = 0.0         # per-tensor: gradients reduce-scattered per bucket (0: per unit)
    persistence_threshold_params: float = 0.0  # per-tensor: smaller tensors stay whole, never gathered
    regather_under_recompute: bool = False    # the recomputed forward gathers again, then the backward
    loss_bytes_per_logit: float = LOSS_HELD_BYTES_PER_LOGIT   # logits and loss tensors held at the loss's peak
    quantised_inputs_kept: bool = False      # an int8 or NF4 base's linears keep their inputs for the backward

    def grad_reduce_bytes(self, precision: str) -> float:
        """Bytes per gradient element in the data-parallel reduction."""
        if self.grad_reduce == "fp32" or precision in ("fp32", "tf32"):
            return 4.0
        return 4.0 if self.grad_reduce == "fp32-if-bf16" and _bf16_weights(precision) else 2.0

    def zero1_all_reduce(self, precision: str) -> bool:
        """True when ZeRO-1 all-reduces the whole gradient instead of reduce-scattering it."""
        return self.zero1_reduce == "all-reduce" or (self.zero1_reduce == "all-reduce-if-bf16"
                                                     and _bf16_weights(precision))

    def with_overrides(self, **changes) -> "StackProfile":
        """This profile with the scenario's own values in place of some of its fields."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def _bf16_weights(precision: str) -> bool:
    """The training runs on bf16 weights (FP8 training keeps its weights in bf16)."""
    return precision in ("bf16", "fp8")


META_KEYS = ("description", "source", "extends")


def behaviour_fields() -> list[str]:
    """The profile's fields that a catalog entry sets (all but ``name``)."""
    return [f.name for f in fields(StackProfile) if f.name != "name"]


def _required() -> set[str]:
    return {f.name for f in fields(StackProfile) if f.name != "name" and f.default is MISSING}


def stack_names() -> list[str]:
    return catalog.names("stacks")


def _values(name: str, where: str, seen: tuple[str, ...] = ()) -> dict[str, object]:
    """The entry's values after its ``extends`` chain, parent first."""
    row = catalog.entry("stacks", name, where)
    if name in seen:
        raise ValueError(f"stacks.yaml: {name} extends itself through {' -> '.join(seen)}")
    values: dict[str, object] = {}
    parent = row.get("extends")
    if parent:
        values.update(_values(parent, f"stacks.yaml: {name}.extends", seen + (name,)))
    known = set(behaviour_fields())
    hints = _hints()
    for key, cell in row.items():
        if key in META_KEYS:
            continue
        if key not in known:
            raise ValueError(f"stacks.yaml: {name}.{key} is not a stack behaviour; known: {', '.join(sorted(known))}")
        if not isinstance(cell, dict) or "value" not in cell or not cell.get("source"):
            raise ValueError(f"stacks.yaml: {name}.{key} needs a value and its source")
        value = cell["value"]
        allowed = typing.get_args(hints[key]) or ((True, False) if hints[key] is bool else ())
        if allowed and value not in allowed:
            raise ValueError(f"stacks.yaml: {name}.{key} = {value!r}; allowed: {', '.join(map(str, allowed))}")
        values[key] = float(value) if hints[key] is float else value
    return values


@lru_cache(maxsize=1)
def _hints() -> dict[str, object]:
    """StackProfile's resolved field types (``typing.get_type_hints`` is slow: once per process)."""
    return typing.get_type_hints(StackProfile)


@lru_cache(maxsize=256)
def stack_profile(name: str, where: str = "training.stack") -> StackProfile:
    """The catalog profile ``name`` (frozen; built once per process); an unknown name is a ScenarioError
    naming ``where``."""
    values = _values(name, where)
    missing = _required() - set(values)
    if missing:
        raise ValueError(f"stacks.yaml: {name} leaves {', '.join(sorted(missing))} unset")
    canonical = {n.lower(): n for n in stack_names()}[name.lower()]     # the catalog's spelling
    return StackProfile(name=canonical, **values)
