"""The one entry point: scenario → hardware → workload & plan → engine → metrics → Result.

The CLI, the dashboard, the validation cases and sweeps all call ``simulate``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from twin import catalog
from twin.calibration import Efficiency
from twin.engine.operators import OperatorModel
from twin.engine.stage_costs import Implementation, StepCosts, step_costs
from twin.engine.iteration import IterationResult, simulate_iteration
from twin.engine.job import job_spec, job_summary, monte_carlo
from twin.engine.step import StepBreakdown, step_time
from twin.errors import ScenarioError
from twin.hardware.specs import ClusterSpec, cluster_spec
from twin.network.collectives import CommModel
from twin.power.assess import assess
from twin.power.capping import power_cap_factor
from twin.results import Result
from twin.scenario import Scenario, Training, load_scenario, parse_scenario
from twin.units import SECONDS_PER_HOUR, fmt_bytes
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
    if tr.autocast and tr.precision in ("fp32", "tf32"):
        raise ScenarioError("training.autocast", f"true casts fp32 weights to a lower precision, but precision is "
                            f"{tr.precision}; allowed with bf16, fp16 or fp8")
    plan = resolve_plan(tr.parallelism, model, cluster, tr.global_batch, tr.seq_len)
    placement = place(plan, cluster.node.gpus, tr.parallelism.order)
    efficiency = Efficiency.calibrated(scenario.efficiency)
    ops = OperatorModel(gpu, tr.precision, efficiency,
                        power_cap_factor=power_cap_factor(gpu, cluster.gpu_power_cap_w), attention_kernel=tr.attention)
    comm = CommModel(cluster, efficiency, placement)
    costs = step_costs(model, plan, ops, comm, placement,
                       Implementation(tr.kernels, tr.autocast))
    memory = memory_per_gpu(model, plan, tr.precision, tr.attention)
    return Built(scenario, cluster, model, plan, placement, efficiency, ops, comm, costs, memory)


def simulate(scenario: Scenario, closed_form: bool = False) -> Result:
    """Answer a scenario; ``closed_form`` plays the step with the analytic schedule instead of SimPy."""
    built = build(scenario)
    if closed_form:
        return _result(built, step_time(built.costs, built.plan))
    iteration = simulate_iteration(built.costs, built.plan)
    return _result(built, iteration.breakdown, iteration)


def run_file(path: str | Path) -> Result:
    return simulate(load_scenario(path))


def run_dict(data: dict) -> Result:
    return simulate(parse_scenario(data))


def fabric_file(path: str | Path) -> dict:
    """The fabric of a scenario file and where its parallel groups land (``Result.fabric``), without simulating."""
    return build(load_scenario(path)).comm.summary()


def catalog_names(kind: str) -> list[str]:
    """Entry names of one catalog ('nodes', 'models', 'failure_profiles', ...)."""
    return catalog.names(kind)


def _idle_reason(plan: ParallelPlan, tr: Training, gpus: int) -> str:
    """Why a plan leaves GPUs idle: the cluster does not divide, the batch does not, or the scenario said so."""
    model_parallel = plan.tensor * plan.pipeline
    largest = gpus // model_parallel
    if tr.parallelism.data != "auto":
        return f"data parallelism {plan.data} is set in the scenario (at most {largest} would fit)"
    if plan.data == largest:
        return (f"{gpus} GPUs are not a multiple of tensor {plan.tensor} × pipeline {plan.pipeline} = "
                f"{model_parallel}, so at most {largest} data-parallel replicas fit")
    return (f"data parallelism {plan.data} is the largest up to {largest} that divides "
            f"global_batch {tr.global_batch} / microbatch {plan.microbatch}")


def _result(b: Built, step: StepBreakdown, iteration: IterationResult | None = None) -> Result:
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
    failures: dict = {}
    timeline = {"segments": [{"start_s": 0.0, "end_s": ideal_s, "phase": "train"}], "events": []}
    interruptions, goodput = 0.0, 1.0
    if sc.failures.enabled:
        spec = job_spec(sc, cluster, model.params, gpus_used, plan.data, plan.tokens_per_step, step.step_s)
        stats = monte_carlo(spec, sc.failures.seed, sc.failures.samples)
        failures = job_summary(spec, stats, sc.failures.seed)
        time_s = failures["time_to_train_s"]["p50"]
        interruptions = failures["interruptions"]["p50"]
        goodput = ideal_s / time_s
        timeline = {"segments": stats.median.segments, "events": stats.median.events}

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
        warnings.append(f"{cluster.gpus - gpus_used} of {cluster.gpus} GPUs idle: " + _idle_reason(plan, tr, cluster.gpus))
    if plan.tensor > cluster.node.gpus:
        warnings.append(f"tensor parallelism {plan.tensor} spans nodes ({cluster.node.gpus} GPUs per node): "
                        "its all-reduces run over the network")

    # Power, energy, carbon and cost (twin.power): over the job's timeline when it has one.
    fabric = b.comm.summary()
    pw = assess(cluster, step, gpus_used, sc.site, time_s, timeline.get("segments"), fabric,
                storage_named=sc.cluster.storage is not None)
    warnings.extend(pw.warnings)
    sources = {"gpu": gpu.source, "node": cluster.node.source, "model": model.source} | pw.sources()

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
        interruptions=interruptions,
        goodput=goodput,
        energy_it_kwh=pw.energy_it_kwh,
        energy_facility_kwh=pw.energy_facility_kwh,
        avg_power_it_w=pw.avg_power_it_w,
        peak_power_it_w=pw.peak_power_it_w,
        carbon_kg=pw.carbon_kg(),
        energy_cost_eur=pw.energy_cost_eur(),
        country=pw.site.code,
        tokens=tr.tokens,
        tokens_per_step=plan.tokens_per_step,
        tokens_per_s_per_gpu=tokens_per_s / gpus_used,
        hfu=hardware_tflops * 1e12 / peak,
        plan=plan_dict,
        step_breakdown_s=step.as_dict(),
        bottleneck=step.bottleneck,
        memory_breakdown_bytes=b.memory.as_dict(),
        memory_advice=advice,
        carbon_intensity_g_per_kwh=pw.intensity(),
        electricity_price_eur_per_kwh=pw.price(),
        pue=sc.site.pue,
        power=pw.power,
        embodied_carbon_kg=pw.embodied.total_kg if pw.embodied else None,
        total_cost_eur=pw.total_cost_eur(),
        rental_cost_eur=pw.rental_cost_eur,
        failures=failures,
        timeline=timeline,
        fabric=fabric,
        step_timeline=iteration.timeline_dicts() if iteration else [],
        warnings=warnings,
        sources=sources,
    )
