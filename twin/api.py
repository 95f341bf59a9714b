"""The one entry point: scenario → hardware → workload & plan → engine → metrics → Result.

The CLI, the dashboard, the validation cases and sweeps all call ``simulate``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from twin.calibration import Efficiency
from twin.engine.operators import OperatorModel
from twin.engine.stage_costs import StepCosts, step_costs
from twin.engine.step import StepBreakdown, step_time
from twin.errors import ScenarioError
from twin.hardware.specs import ClusterSpec, cluster_spec
from twin.network.collectives import CommModel
from twin.power.country import carbon_intensity, country, electricity_price
from twin.power.energy import power_draw
from twin.results import Result
from twin.scenario import Scenario, load_scenario, parse_scenario
from twin.units import JOULES_PER_KWH, SECONDS_PER_HOUR, fmt_bytes
from twin.workload.memory import MemoryBreakdown, fitting_alternatives, memory_per_gpu
from twin.workload.model import ModelSpec, model_spec
from twin.workload.placement import Placement, place
from twin.workload.plan import ParallelPlan, resolve_plan


@dataclass(frozen=True)
class Built:
    """Everything derived from a scenario before the clock runs."""
    scenario: Scenario
    cluster: ClusterSpec
    model: ModelSpec
    plan: ParallelPlan
    placement: Placement
    efficiency: Efficiency
    ops: OperatorModel
    comm: CommModel
    costs: StepCosts
    memory: MemoryBreakdown


def build(scenario: Scenario) -> Built:
    """Hardware, model, plan, placement and per-stage costs of a scenario."""
    cluster = cluster_spec(scenario.cluster)
    model = model_spec(scenario.training.model)
    tr = scenario.training
    gpu = cluster.node.gpu
    try:
        gpu.peak(tr.precision)
    except KeyError:
        supported = ", ".join(p for p in ("bf16", "fp16", "fp8", "tf32", "fp32") if p in gpu.peak_flops or p == "fp32")
        raise ScenarioError("training.precision", f"{tr.precision} has no tensor-core peak on {gpu.name}; "
                            f"supported: {supported}") from None
    plan = resolve_plan(tr.parallelism, model, cluster, tr.global_batch, tr.seq_len)
    placement = place(plan, cluster.node.gpus)
    efficiency = Efficiency.calibrated(scenario.efficiency)
    ops = OperatorModel(gpu, tr.precision, efficiency)
    comm = CommModel(cluster, efficiency)
    costs = step_costs(model, plan, ops, comm, placement, tr.attention, tr.precision)
    memory = memory_per_gpu(model, plan, tr.precision, tr.attention)
    return Built(scenario, cluster, model, plan, placement, efficiency, ops, comm, costs, memory)


def simulate(scenario: Scenario) -> Result:
    """Answer a scenario."""
    built = build(scenario)
    step = step_time(built.costs, built.plan)
    return _result(built, step)


def run_file(path: str | Path) -> Result:
    return simulate(load_scenario(path))


def run_dict(data: dict) -> Result:
    return simulate(parse_scenario(data))


def _result(b: Built, step: StepBreakdown) -> Result:
    sc, tr, plan, model, cluster = b.scenario, b.scenario.training, b.plan, b.model, b.cluster
    gpu = cluster.node.gpu
    gpus_used = plan.gpus
    tokens_per_s = plan.tokens_per_step / step.step_s
    model_flops = model.model_flops_per_token(tr.seq_len) * plan.tokens_per_step
    hardware_flops = model.hardware_flops_per_token(tr.seq_len, plan.recompute) * plan.tokens_per_step
    peak = gpu.peak(tr.precision)
    model_tflops = model_flops / step.step_s / gpus_used / 1e12
    hardware_tflops = hardware_flops / step.step_s / gpus_used / 1e12
    ideal_s = tr.tokens / tokens_per_s
    time_s = ideal_s

    warnings: list[str] = []
    capacity = gpu.memory_bytes
    fits = b.memory.total_bytes <= capacity
    advice: list[str] = []
    if not fits:
        over = b.memory.total_bytes - capacity
        options = fitting_alternatives(model, plan, tr.precision, tr.attention, capacity, cluster.node.gpus)
        advice = [f"{label} would fit ({fmt_bytes(total)})" for label, total in options]
        warnings.append(f"does not fit: needs {fmt_bytes(b.memory.total_bytes)} per GPU, has {fmt_bytes(capacity)} "
                        f"({fmt_bytes(over)} over); " + ("; ".join(advice) if advice else
                                                         "no single change of ZeRO, recompute, pipeline or tensor fits"))
    if gpus_used < cluster.gpus:
        warnings.append(f"{cluster.gpus - gpus_used} of {cluster.gpus} GPUs idle: data parallelism {plan.data} is the "
                        f"largest that divides global_batch {tr.global_batch} / microbatch {plan.microbatch}")
    if plan.tensor > cluster.node.gpus:
        warnings.append(f"tensor parallelism {plan.tensor} spans nodes ({cluster.node.gpus} GPUs per node): "
                        "its all-reduces run over the network")

    power = power_draw(cluster, step, gpus_used)
    energy_it_kwh = power.cluster_avg_w * time_s / JOULES_PER_KWH
    energy_facility_kwh = energy_it_kwh * sc.site.pue
    rack_peak_w = cluster.nodes_per_rack * (power.cluster_peak_w / max(1, cluster.nodes + cluster.spare_nodes))
    if cluster.rack_power_limit_w and rack_peak_w > cluster.rack_power_limit_w:
        warnings.append(f"a rack of {cluster.nodes_per_rack} nodes peaks at {rack_peak_w / 1e3:.1f} kW, above "
                        f"rack_power_limit {cluster.rack_power_limit_w / 1e3:.1f} kW")

    carbon, cost, intensity, price = {}, {}, {}, {}
    sources = {"gpu": gpu.source, "node": cluster.node.source, "model": model.source}
    codes = [sc.site.country] + [c for c in sc.site.compare if c != sc.site.country]
    for i, code in enumerate(codes):
        field = "site.country" if i == 0 else f"site.compare[{i - 1}]"
        place_ = country(code, field)
        is_site = i == 0
        ci = carbon_intensity(place_, sc.site.carbon_intensity if is_site else None)
        pr = electricity_price(place_, sc.site.electricity_price if is_site else None)
        key = place_.alpha2
        intensity[key] = ci.g_per_kwh
        carbon[key] = energy_facility_kwh * ci.g_per_kwh / 1000.0
        price[key] = pr.eur_per_kwh if pr else None
        cost[key] = energy_facility_kwh * pr.eur_per_kwh if pr else None
        sources[f"carbon_intensity.{key}"] = ci.source + (f", {ci.year}" if ci.year else "")
        sources[f"electricity_price.{key}"] = pr.source if pr else "no price known; set site.electricity_price"

    plan_dict = asdict(plan) | {"microbatches": plan.microbatches, "description": plan.describe(),
                                "gpus": gpus_used}
    return Result(
        scenario=sc.name,
        gpus_total=cluster.gpus,
        gpus_used=gpus_used,
        step_time_s=step.step_s,
        tokens_per_s=tokens_per_s,
        model_tflops_per_gpu=model_tflops,
        hardware_tflops_per_gpu=hardware_tflops,
        mfu=model_tflops * 1e12 / peak,
        memory_per_gpu_bytes=b.memory.total_bytes,
        memory_capacity_bytes=capacity,
        memory_fits=fits,
        ideal_time_to_train_s=ideal_s,
        time_to_train_s=time_s,
        gpu_hours=gpus_used * time_s / SECONDS_PER_HOUR,
        interruptions=0,
        goodput=1.0,
        energy_it_kwh=energy_it_kwh,
        energy_facility_kwh=energy_facility_kwh,
        avg_power_it_w=power.cluster_avg_w,
        peak_power_it_w=power.cluster_peak_w,
        carbon_kg=carbon,
        energy_cost_eur=cost,
        country=country(sc.site.country, "site.country").alpha2,
        tokens=tr.tokens,
        tokens_per_step=plan.tokens_per_step,
        tokens_per_s_per_gpu=tokens_per_s / gpus_used,
        hfu=hardware_tflops * 1e12 / peak,
        plan=plan_dict,
        step_breakdown_s=step.as_dict(),
        bottleneck=step.bottleneck,
        memory_breakdown_bytes=b.memory.as_dict(),
        memory_advice=advice,
        carbon_intensity_g_per_kwh=intensity,
        electricity_price_eur_per_kwh=price,
        pue=sc.site.pue,
        power={"gpu_avg_w": power.gpu_w, "node_avg_w": power.node_w, "rack_peak_w": rack_peak_w,
               "racks": cluster.racks},
        warnings=warnings,
        sources=sources,
    )
