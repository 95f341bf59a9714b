"""The boundary: scenario sections (validated pydantic models) → the frozen specs the layers below take.

This is the only place that reads a ``Scenario`` field by field. Every spec it
returns is a frozen dataclass in SI units; nothing below ``twin.api`` sees the
YAML schema.
"""

from __future__ import annotations

from twin.engine.failures import FailurePolicy
from twin.engine.storage import CheckpointPolicy
from twin.hardware.specs import ClusterSpec, FabricSpec, StorageSpec, nic_bound_storage, node_spec
from twin.power.site import EmbodiedRequest, SiteSpec
from twin.scenario import Checkpoint, Cluster, Failures, InlineModel, Parallelism, Site
from twin.workload.model import ModelSpec, model_spec
from twin.workload.plan import PlanRequest


def cluster_of(c: Cluster) -> ClusterSpec:
    """The cluster a scenario describes; defaults come from the node."""
    node = node_spec(c.node)
    fabric = FabricSpec(
        topology=c.fabric.topology,
        link_Bps=c.fabric.link or node.compute_nics.line_rate_Bps,
        nodes_per_su=c.fabric.nodes_per_su,
        oversubscription=c.fabric.oversubscription,
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
        source="inline in the scenario",
    )


def plan_request_of(p: Parallelism) -> PlanRequest:
    return PlanRequest(
        tensor=p.tensor, pipeline=p.pipeline, data=None if p.data == "auto" else p.data, expert=p.expert,
        microbatch=p.microbatch, virtual_stages=p.virtual_stages, schedule=p.schedule,
        sequence_parallel=p.sequence_parallel, recompute=p.recompute, zero=p.zero,
        overlap_grad_reduce=p.overlap_grad_reduce, order=p.order,
    )


def checkpoint_policy_of(ck: Checkpoint) -> CheckpointPolicy:
    return CheckpointPolicy(interval_s=None if ck.interval == "auto" else ck.interval, asynchronous=ck.asynchronous)


def failure_policy_of(f: Failures, c: Cluster) -> FailurePolicy:
    return FailurePolicy(
        profile=f.profile, seed=f.seed, samples=f.samples, rate_scale=f.rate_scale,
        custom_rates=tuple(f.custom_rates.items()), detection_s=f.detection_time, relaunch_s=f.restart_time,
        repair_mean_s=f.repair_time, horizon_s=f.horizon, allow_shrink=c.allow_shrink,
    )


def site_of(s: Site) -> SiteSpec:
    e = s.embodied
    return SiteSpec(
        country=s.country, pue=s.pue, compare=tuple(s.compare), carbon_intensity_g_per_kwh=s.carbon_intensity,
        electricity_price=s.electricity_price, gpu_hour_price=s.gpu_hour_price, accounting=s.accounting,
        embodied=EmbodiedRequest(e.method, e.gpu_kg, e.server_kg, e.lifetime_years, e.utilization)
        if e.enabled else None,
    )
