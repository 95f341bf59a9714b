"""The space of parallel plans: one generator for every search.

``plan_choices`` enumerates the plans of a model on a number of GPUs under the rules of a
search (``PlanRules``); ``python -m twin plan`` and ``python -m twin fit`` differ only in their
rules:

- **tensor** parallelism: sizes inside one node (a tensor group inside a node, as Megatron-LM
  places it) that split the heads, the FFN, and the KV heads (or are a multiple of them):
  every divisor of the node's GPU count (plan), or its powers of two (fit);
- **pipeline** stages, no more than the layers: the divisors of the layer count and the powers
  of two (plan), or the powers of two (fit);
- **data** parallelism: left to the plan (``data: auto``, the largest that fits the cluster and
  divides the batch; plan), or every GPU used, tensor × pipeline dividing the GPUs (fit);
- **virtual stages** (interleaved 1F1B): 2 to ``max_virtual_stages`` chunks per stage when they
  split the layers evenly, as Megatron-LM requires (plan: 8; fit: none). GPipe is left out:
  1F1B has its bubble with less memory;
- **expert** parallelism for mixture-of-experts models: divisors of the experts (plan);
- **micro-batch** sizes dividing the global batch (plan: 1, 2, 4, 8, 16; fit: the scenario's);
- **recomputation** none, selective, full (selective only with standard attention: with a
  fused kernel it is "none" again, ``twin.options.recompute_levels``);
- **ZeRO** stages 0-3, one stage (0) when the data parallelism is known to be 1.

The rank order and sequence parallelism stay the scenario's. Plans come in one order: tensor,
pipeline, virtual stages, experts, micro-batch, recomputation, ZeRO, each ascending.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal

from twin.api import Prepared
from twin.options import RECOMPUTES, ZERO_STAGES, Recompute, Schedule, recompute_levels
from twin.workload.model import ModelSpec
from twin.workload.plan import ParallelPlan, PlanRequest, doublings

# Micro-batch sizes the plan search tries (those that divide the global batch).
MICROBATCHES = (1, 2, 4, 8, 16)
# Most model chunks per pipeline stage the plan search interleaves.
MAX_VIRTUAL_STAGES = 8


@dataclass(frozen=True)
class PlanRules:
    """Which sizes a search gives each dimension of the plan (see the module's docstring)."""
    sizes: Literal["divisors", "powers-of-two"]   # tensor sizes and pipeline stages
    fill: bool                     # every GPU used: data = GPUs / (tensor × pipeline); else data auto
    max_virtual_stages: int        # 1: no interleaving
    microbatches: tuple[int, ...]  # () keeps the scenario's micro-batch
    experts: bool                  # vary expert parallelism over the divisors of the experts


# python -m twin plan: a wide space on the scenario's cluster, data parallelism as large as fits.
PLAN_RULES = PlanRules("divisors", fill=False, max_virtual_stages=MAX_VIRTUAL_STAGES, microbatches=MICROBATCHES,
                       experts=True)
# python -m twin fit: many options (node types, GPU counts, methods), each with a narrow space that uses every GPU.
FIT_RULES = PlanRules("powers-of-two", fill=True, max_virtual_stages=1, microbatches=(), experts=False)


@dataclass(frozen=True)
class PlanChoice:
    """One parallel plan of a search: what it varies (``data`` None: auto; ``microbatch`` None: the scenario's)."""
    tensor: int
    pipeline: int
    data: int | None
    zero: int
    recompute: Recompute
    expert: int = 1
    microbatch: int | None = None
    virtual_stages: int = 1
    schedule: Schedule = "1f1b"

    def settings(self) -> dict[str, Any]:
        """The ``training.parallelism`` keys (and ``PlanRequest`` fields) this plan sets."""
        out = {"tensor": self.tensor, "pipeline": self.pipeline, "data": self.data, "expert": self.expert,
               "microbatch": self.microbatch, "virtual_stages": self.virtual_stages, "schedule": self.schedule,
               "recompute": self.recompute, "zero": self.zero}
        if self.microbatch is None:
            del out["microbatch"]
        return out

    def request(self, base: PlanRequest) -> PlanRequest:
        """``base`` (the scenario's request: rank order, sequence parallelism, overlaps) with this plan."""
        return replace(base, **self.settings())

    def dominates(self, other: "PlanChoice") -> bool:
        """At least as fast for certain: the same shape, no more recomputation (it only adds work), and the
        same ZeRO stage, or ZeRO-2 against ZeRO-3 (the same per-micro-batch gradient reduce-scatters, with
        parameter gathers on top). Across ZeRO-0, 1 and 2 the trade depends on the stack: ZeRO-2 reduces
        gradients unit by unit beside the backward where a stack may leave ZeRO-1's once-per-step
        reduction exposed, so none of them dominates another."""
        return self._shape() == other._shape() and self._outranks(other)

    def _outranks(self, other: "PlanChoice") -> bool:
        """``dominates`` between two plans of one shape."""
        return self != other and _no_hungrier(self._cost_terms(), other._cost_terms())

    def _cost_terms(self) -> tuple[int, int]:
        """(recomputation rank, ZeRO stage): what ``dominates`` compares within a shape."""
        return RECOMPUTES.index(self.recompute), self.zero

    def _shape(self) -> tuple:
        return (self.tensor, self.pipeline, self.data, self.expert, self.microbatch, self.virtual_stages)


def undominated(choices: list[PlanChoice]) -> set[PlanChoice]:
    """The choices that no other choice of ``choices`` dominates (``PlanChoice.dominates``).

    Only plans of one shape can dominate each other, so each choice is compared within its
    shape alone: the same answer as comparing every pair, in time linear in the choices for
    the few ZeRO stages and recomputation levels of a shape."""
    by_shape: dict[tuple, list[PlanChoice]] = {}
    for c in choices:
        by_shape.setdefault(c._shape(), []).append(c)
    out = set()
    for alike in by_shape.values():
        terms = [c._cost_terms() for c in alike]          # ``_outranks``, each plan's terms worked out once
        out.update(c for c, mine in zip(alike, terms)
                   if not any(_no_hungrier(theirs, mine) and o != c for o, theirs in zip(alike, terms)))
    return out


def _no_hungrier(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Of two plans of one shape by their ``_cost_terms``: ``a`` recomputes no more than ``b`` and has the same
    ZeRO stage, or ZeRO-2 against ZeRO-3 (``PlanChoice.dominates``)."""
    return a[0] <= b[0] and (a[1] == b[1] or (a[1] == 2 and b[1] == 3))


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def gpu_counts(gpus_per_node: int, max_gpus: int) -> list[int]:
    """1, 2, 4, ... GPUs of one node, then whole nodes (1, 2, 4, ... nodes), up to ``max_gpus``."""
    inside = [g for g in doublings(1, gpus_per_node) if g < gpus_per_node and g <= max_gpus]
    return inside + [gpus_per_node * n for n in doublings(1, max_gpus // gpus_per_node)]


def _tensors(model: ModelSpec, gpus: int, gpus_per_node: int, rules: PlanRules) -> list[int]:
    sizes = _divisors(gpus_per_node) if rules.sizes == "divisors" else doublings(1, gpus_per_node)
    return [t for t in sizes if t <= gpus and not (rules.fill and gpus % t) and model.heads % t == 0
            and model.ffn_hidden % t == 0 and (model.kv_heads % t == 0 or t % model.kv_heads == 0)]


def _pipelines(model: ModelSpec, gpus: int, tensor: int, rules: PlanRules) -> list[int]:
    sizes = set(doublings(1, model.layers))
    if rules.sizes == "divisors":
        sizes |= set(_divisors(model.layers))
    return [p for p in sorted(sizes) if tensor * p <= gpus and not (rules.fill and gpus % (tensor * p))]


def _virtual_stages(model: ModelSpec, pipeline: int, rules: PlanRules) -> list[int]:
    return [1] + [v for v in range(2, rules.max_virtual_stages + 1)
                  if pipeline > 1 and model.layers % (pipeline * v) == 0]


def plan_choices(model: ModelSpec, gpus: int, gpus_per_node: int, recompute: tuple[Recompute, ...] = RECOMPUTES,
                 rules: PlanRules = FIT_RULES, global_batch: int = 1) -> Iterator[PlanChoice]:
    """Every plan of ``model`` on ``gpus`` GPUs (nodes of ``gpus_per_node``) under ``rules``, trying the
    ``recompute`` levels given; micro-batches divide ``global_batch``."""
    experts = _divisors(model.experts) if rules.experts and model.is_moe else [1]
    micro = [b for b in rules.microbatches if global_batch % b == 0] or [None]
    for t in _tensors(model, gpus, gpus_per_node, rules):
        for p in _pipelines(model, gpus, t, rules):
            data = gpus // (t * p) if rules.fill else None
            zeros = (0,) if data == 1 else ZERO_STAGES
            for v in _virtual_stages(model, p, rules):
                schedule: Schedule = "interleaved" if v > 1 else "1f1b"
                for ep in experts:
                    for mb in micro:
                        for level in recompute:
                            for zero in zeros:
                                yield PlanChoice(t, p, data, zero, level, ep, mb, v, schedule)


def outside_space(model: ModelSpec, plan: ParallelPlan, gpus: int, gpus_per_node: int,
                  recompute: tuple[Recompute, ...] = RECOMPUTES, rules: PlanRules = PLAN_RULES,
                  global_batch: int = 1) -> str | None:
    """Why ``plan`` is not among ``plan_choices`` under ``rules`` (one phrase), or None when it is. Its data
    parallelism is left out of the comparison where the rules leave it to the plan (``fill`` false)."""
    if plan.virtual_stages > 1 and model.layers % (plan.pipeline * plan.virtual_stages):
        chunks = plan.pipeline * plan.virtual_stages
        return (f"its {plan.virtual_stages} virtual stages split the {model.layers} layers unevenly over {chunks} "
                "chunks, and the search interleaves even splits only, as Megatron-LM requires")
    if plan.virtual_stages > rules.max_virtual_stages:
        return f"it interleaves {plan.virtual_stages} virtual stages, more than the search's {rules.max_virtual_stages}"
    wanted = PlanChoice(plan.tensor, plan.pipeline, plan.data if rules.fill else None, plan.zero, plan.recompute,
                        plan.expert, plan.microbatch, plan.virtual_stages, plan.schedule)
    for choice in plan_choices(model, gpus, gpus_per_node, recompute, rules, global_batch):
        if replace(choice, microbatch=choice.microbatch or plan.microbatch) == wanted:
            return None
    return "it lies outside the search space (docs/studies.md, \"The space\")"


def plan_space(prepared: Prepared, rules: PlanRules = PLAN_RULES, gpus: int | None = None) -> Iterator[PlanRequest]:
    """Every plan request of a prepared scenario's search space under ``rules``, on ``gpus`` GPUs (default
    the cluster's working GPUs): the scenario's request with each plan of ``plan_choices``."""
    tr, cluster = prepared.scenario.training, prepared.cluster
    choices = plan_choices(prepared.model, cluster.work_gpus if gpus is None else gpus, cluster.node.gpus,
                           recompute_levels(tr.attention), rules, tr.global_batch)
    for choice in choices:
        yield choice.request(prepared.request)
