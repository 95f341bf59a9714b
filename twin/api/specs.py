"""The boundary: scenario sections (validated pydantic models) → the frozen specs the layers below take.

This is the only place that reads a ``Scenario`` field by field. Every spec it
returns is a frozen dataclass in SI units; nothing below ``twin.api`` sees the
YAML schema.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from twin.errors import ScenarioError
from twin.hardware.specs import ClusterSpec, FabricSpec, StorageSpec, NodeSpec, nic_bound_storage, node_spec
from twin.options import KVPrecision, ServingPrecision
from twin.power.pricing import UNPRICED, NodeForPrice, PricingRequest, hour_price
from twin.power.site import EmbodiedRequest, SiteSpec
from twin.scenario import Checkpoint, Cluster, Failures, InlineModel, Parallelism, Serving, Site, Training
from twin.scenario.serving import Alternative, Engine, Lengths, Load
from twin.workload.model import ModelSpec, model_spec

if TYPE_CHECKING:
    from twin.engine.stack import StackProfile
    from twin.jobs.checkpoint import CheckpointPolicy
    from twin.jobs.failures import FailurePolicy
    from twin.serving.deployment import ServingSpec
    from twin.serving.specs import EngineSpec, LengthSpec, LoadSpec
    from twin.workload.finetune import FinetuneSpec
    from twin.workload.plan import PlanRequest

# The training and serving specs (and the engines below them) are imported by the functions that build them,
# when first called: a training run or a plan search does not load the serving ones, nor a serving run the
# training ones.


def cluster_of(c: Cluster) -> ClusterSpec:
    """The cluster a scenario describes; defaults come from the node."""
    node = node_spec(c.node)
    fabric = FabricSpec(
        topology=c.fabric.topology,
        link_Bps=c.fabric.link or node.compute_nics.line_rate_Bps,
        nodes_per_su=c.fabric.nodes_per_su,
        oversubscription=c.fabric.oversubscription,
        ll128=c.fabric.ll128,
    )
    storage = (StorageSpec(c.storage.read, c.storage.write, c.storage.capacity) if c.storage is not None
               else nic_bound_storage(node, c.nodes))
    return ClusterSpec(
        node=node,
        nodes=c.nodes,
        spare_nodes=c.spare_nodes,
        nodes_per_rack=c.nodes_per_rack,
        rack_power_limit_w=c.rack_power_limit,
        gpu_power_cap_w=c.gpu_power_cap,
        fabric=fabric,
        storage=storage,
    )


def model_of(model: str | InlineModel) -> ModelSpec:
    """A catalog model by name, or the model written inline in the scenario."""
    if isinstance(model, str):
        return model_spec(model)
    return ModelSpec(
        name=model.name, layers=model.layers, hidden=model.hidden, heads=model.heads,
        kv_heads=model.kv_heads or model.heads, ffn_hidden=model.ffn_hidden or 4 * model.hidden,
        vocab=model.vocab, activation=model.activation, norm=model.norm,
        tied_embeddings=model.tied_embeddings, experts=model.experts, top_k=model.top_k,
        position=model.position, source="inline in the scenario",
    )


# LoRA as each method's recipe writes it when the scenario leaves a key out: the LoRA paper's
# adapters on the query and value projections (Hu et al. 2021, §4.2 and Table 4: r = 8 on q and v
# for GPT-3), QLoRA's on every linear layer with r = 64 (Dettmers et al. 2023, §5: "LoRA r = 64,
# alpha = 16", all linear layers). Alpha scales the update; it changes no cost.
LORA_RECIPES = {"lora": (8, 16.0, ("q", "v")), "qlora": (64, 16.0, "all-linear")}


def finetune_of(tr: Training, model: ModelSpec) -> FinetuneSpec:
    """The method, its adapters and the base's storage (unwritten: the training precision's 16 bits, fp32
    for fp32 training); QLoRA implies NF4 and paged optimizer states."""
    from twin.workload.finetune import FinetuneSpec, LoraSpec, matrix_shape, resolve_targets, weight_format

    if tr.method == "full":
        return FinetuneSpec("full", weight_format(tr.weights, tr.precision).name)
    rank, alpha, targets = LORA_RECIPES[tr.method]
    written = tr.lora
    if written is not None:
        rank = written.rank or rank
        alpha = written.alpha or alpha
        targets = written.targets if written.targets is not None else targets
    resolved = resolve_targets(model, targets, "training.lora.targets")
    narrowest = min(min(matrix_shape(model, t)) for t in resolved)
    if rank > narrowest:
        raise ScenarioError("training.lora.rank", f"{rank} is wider than the narrowest adapted projection of "
                            f"{model.name} ({narrowest}); allowed: 1 to {narrowest}")
    weights = "nf4" if tr.method == "qlora" else weight_format(tr.weights, tr.precision).name
    return FinetuneSpec(tr.method, weights, LoraSpec(rank, alpha, resolved), paged_optimizer=tr.method == "qlora")


def stack_of(tr: Training) -> StackProfile:
    """The software stack of a training scenario: its catalog profile with the scenario's own values over it."""
    from twin.engine.stack import stack_profile

    choice = tr.stack
    if isinstance(choice, str):
        profile, options = stack_profile(choice, "training.stack"), {}
    else:
        profile = stack_profile(choice.name, "training.stack.name")
        options = {key: getattr(choice, key) for key in choice.model_fields_set - {"name"}}
    stack = profile.with_overrides(attention=tr.attention, kernels=tr.kernels, autocast=tr.autocast,
                                   overlap_grad_reduce=tr.parallelism.overlap_grad_reduce, **options)
    if stack.autocast and tr.precision in ("fp32", "tf32"):
        where = "training.autocast" if tr.autocast is not None else "training.stack"
        raise ScenarioError(where, f"autocast casts fp32 weights to a lower precision, but precision is "
                            f"{tr.precision}; allowed with bf16, fp16 or fp8 (or set training.autocast: false)")
    return stack


def plan_request_of(p: Parallelism, stack: StackProfile) -> PlanRequest:
    """The plan the scenario asks for; the stack decides which data-parallel collectives overlap compute."""
    from twin.workload.plan import PlanRequest

    return PlanRequest(
        tensor=p.tensor, pipeline=p.pipeline, data=None if p.data == "auto" else p.data, expert=p.expert,
        microbatch=p.microbatch, virtual_stages=p.virtual_stages, schedule=p.schedule,
        sequence_parallel=p.sequence_parallel, recompute=p.recompute, zero=p.zero,
        overlap_grad_reduce=stack.overlap_grad_reduce, overlap_param_gather=stack.overlap_param_gather, order=p.order,
    )


def checkpoint_policy_of(ck: Checkpoint) -> CheckpointPolicy:
    from twin.jobs.checkpoint import CheckpointPolicy

    return CheckpointPolicy(interval_s=None if ck.interval == "auto" else ck.interval, asynchronous=ck.asynchronous)


def failure_policy_of(f: Failures, c: Cluster) -> FailurePolicy:
    from twin.jobs.failures import FailurePolicy

    return FailurePolicy(
        profile=f.profile, seed=f.seed, samples=f.samples, rate_scale=f.rate_scale,
        custom_rates=tuple(f.custom_rates.items()), detection_s=f.detection_time, relaunch_s=f.restart_time,
        repair_mean_s=f.repair_time, horizon_s=f.horizon, allow_shrink=c.allow_shrink,
    )


def pricing_of(s: Site) -> PricingRequest:
    """``site.pricing`` and its keys, before a node is chosen."""
    return PricingRequest(pricing=s.pricing, gpu_hour_price=s.gpu_hour_price, hardware_price=s.hardware_price,
                          hardware_life_years=s.hardware_life, maintenance_per_year=s.maintenance,
                          space_price_per_kw_month=s.space_price)


def site_of(s: Site, node: NodeSpec) -> SiteSpec:
    """The site, with the price of one GPU-hour of ``node`` resolved (rented or owned, power/pricing.py)."""
    e = s.embodied
    price = hour_price(pricing_of(s), NodeForPrice(node.name, node.gpu.name, node.gpus, node.max_power_w))
    return SiteSpec(
        country=s.country, pue=s.pue, compare=tuple(s.compare), carbon_intensity_g_per_kwh=s.carbon_intensity,
        electricity_price=s.electricity_price, price=price, accounting=s.accounting,
        price_warning=UNPRICED.format(gpu=node.gpu.name) if price is None else None,
        embodied=EmbodiedRequest(e.method, e.gpu_kg, e.server_kg, e.lifetime_years, e.utilization)
        if e.enabled else None,
    )


# ``max_tokens_in_flight: auto`` is the engine profile's token budget per iteration (catalog engines.yaml).
# Unwritten ``max`` of a length distribution that is not fixed: 8 × the mean (an exponential
# draw passes it with probability e^-8 = 0.03%).
DEFAULT_MAX_OVER_MEAN = 8


def lengths_of(x: Lengths) -> LengthSpec:
    """Token counts; an unwritten max is the mean (fixed) or ``DEFAULT_MAX_OVER_MEAN`` × the mean."""
    from twin.serving.specs import LengthSpec
    cap = x.max if x.max is not None else x.mean * (1 if x.distribution == "fixed" else DEFAULT_MAX_OVER_MEAN)
    return LengthSpec(mean=x.mean, distribution=x.distribution, max=int(cap), sigma=x.sigma)


def load_of(x: Load) -> LoadSpec:
    from twin.serving.specs import LoadSpec
    return LoadSpec(rate_per_s=None if x.rate == "offline" else x.rate, requests=x.requests,
                    input_tokens=lengths_of(x.input_tokens), output_tokens=lengths_of(x.output_tokens),
                    prefix_tokens=x.prefix_tokens, seed=x.seed)


def engine_of(e: Engine) -> EngineSpec:
    """The named engine profile (catalog engines.yaml) with the keys the scenario writes in its place."""
    from twin.serving.profiles import engine_profile
    base = engine_profile(e.profile, "serving.engine.profile")
    written = {k: getattr(e, k) for k in e.model_fields_set if k != "profile"}
    if written.get("max_tokens_in_flight") == "auto":
        del written["max_tokens_in_flight"]
    return replace(base, **written)


def _engine_with_offload(engine: EngineSpec, offload: str | None) -> EngineSpec:
    """An alternative's ``offload`` in place of the engine's."""
    return replace(engine, offload=offload) if offload else engine


def kv_precision_of(kv_cache: KVPrecision | Literal["auto"], precision: ServingPrecision) -> KVPrecision:
    """``auto``: the weights' precision, or bf16 under int4 weight-only quantisation."""
    if kv_cache != "auto":
        return kv_cache
    return "bf16" if precision == "int4" else precision


def serving_spec_of(s: Serving, alternative: Alternative | None = None) -> ServingSpec:
    """The first deployment of ``serving:``, or one of its ``compare`` alternatives (unwritten keys inherited)."""
    from twin.serving.deployment import ServingSpec
    from twin.serving.specs import SLOSpec
    chosen = {k: getattr(alternative, k) for k in alternative.model_fields_set} if alternative else {}
    precision = chosen.get("precision") or s.precision
    parallelism = chosen.get("parallelism") or s.parallelism
    replicas = chosen.get("replicas") or s.replicas
    return ServingSpec(
        model=model_of(s.model), precision=precision,
        kv_cache=kv_precision_of(chosen.get("kv_cache") or s.kv_cache, precision),
        tensor=parallelism.tensor, pipeline=parallelism.pipeline,
        replicas=None if replicas == "auto" else replicas,
        mig=chosen["mig"] if "mig" in chosen else s.mig,
        engine=_engine_with_offload(engine_of(s.engine), chosen.get("offload")),
        load=load_of(s.load),
        slo=SLOSpec(ttft_p99_s=s.slo.ttft_p99, tpot_p99_s=s.slo.tpot_p99),
    )


def alternative_cluster_of(c: Cluster, alternative: Alternative) -> ClusterSpec:
    """The cluster of a ``compare`` alternative: its node and node count, the rest as ``cluster:``."""
    update = {k: getattr(alternative, k) for k in ("node", "nodes") if getattr(alternative, k) is not None}
    return cluster_of(c.model_copy(update=update))
