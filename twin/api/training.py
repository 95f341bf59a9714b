"""Training (and fine-tuning) scenarios: hardware → workload & plan → step → job → power → Result."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

from twin.api.specs import (
    checkpoint_policy_of,
    cluster_of,
    failure_policy_of,
    finetune_of,
    model_of,
    plan_request_of,
    site_of,
    stack_of,
)
from twin.calibration import Efficiency
from twin.engine.iteration import IterationResult, simulate_iteration
from twin.operators.roofline import OperatorModel
from twin.engine.stack import StackProfile
from twin.engine.stage_costs import StepCosts, step_costs
from twin.engine.stragglers import PER_GPU_SPREAD
from twin.engine.step import StepBreakdown, step_time
from twin.errors import ScenarioError
from twin.hardware.specs import ClusterSpec
from twin.jobs.model import Event, Segment
from twin.network.collectives import CommModel
from twin.options import PRECISIONS, Fp8Recipe
from twin.power.assess import Facility, assess, assess_at, facility
from twin.power.capping import power_cap_factor
from twin.results import PlanEstimate, TrainingResult
from twin.scenario import Scenario, Training
from twin.units import SECONDS_PER_HOUR, fmt_bytes, fmt_duration, fmt_si
from twin.workload.finetune import FinetuneSpec, hardware_flops_per_token, model_flops_per_token, trainable_params
from twin.workload.memory import (MAX_GPU_DOUBLINGS, MemoryBreakdown, combined_fit, fitting_alternatives,
                                  longest_sequence, memory_per_gpu)
from twin.workload.model import ModelSpec
from twin.workload.placement import Placement, place
from twin.workload.plan import ParallelPlan, PlanRequest, resolve_plan

if TYPE_CHECKING:
    from twin.engine.job import FailureSummary, JobSpec
    from twin.jobs.failures import FailurePolicy


@dataclass(frozen=True)
class Built:
    """Everything derived from a scenario before the clock runs."""
    scenario: Scenario
    cluster: ClusterSpec
    model: ModelSpec
    plan: ParallelPlan
    placement: Placement
    efficiency: Efficiency
    stack: StackProfile
    ops: OperatorModel
    comm: CommModel
    costs: StepCosts
    memory: MemoryBreakdown
    finetune: FinetuneSpec
    fp8_recipe: Fp8Recipe


@dataclass(frozen=True)
class Section:
    """What a training section fixes on a cluster before its plan: model, stack, operator model, method."""
    model: ModelSpec
    stack: StackProfile
    ops: OperatorModel
    finetune: FinetuneSpec
    fp8_recipe: Fp8Recipe
    straggler_spread: float = 0.0     # σ of a GPU's kernel time (engine/stragglers.py); 0: off


def section_of(tr: Training, cluster: ClusterSpec, efficiency: Efficiency, where: str = "training") -> Section:
    """The model, stack, operator model and fine-tuning method of a training section on a cluster's GPU."""
    model = model_of(tr.model)
    gpu = cluster.node.gpu
    try:
        gpu.peak(tr.precision)
    except KeyError:
        supported = ", ".join(p for p in PRECISIONS if p in gpu.peak_flops or p == "fp32")
        raise ScenarioError(f"{where}.precision", f"{tr.precision} has no tensor-core peak on {gpu.name}; "
                            f"supported: {supported}") from None
    stack = stack_of(tr)
    fp8_recipe = tr.fp8_recipe or "hybrid"
    ops = OperatorModel(gpu, tr.precision, efficiency, power_cap_factor=power_cap_factor(gpu, cluster.gpu_power_cap_w),
                        attention_kernel=stack.attention, fp8_recipe=fp8_recipe)
    finetune = replace(finetune_of(tr, model), quantised_inputs_kept=stack.quantised_inputs_kept)
    return Section(model, stack, ops, finetune, fp8_recipe,
                   PER_GPU_SPREAD if tr.stragglers else 0.0)


@dataclass(frozen=True)
class Compiled:
    """A training section compiled for a set of GPUs: model, plan, stack, operator model and memory.

    Where its groups land is the caller's: ``costs`` prices the step on any placement.
    """
    training: Training
    model: ModelSpec
    plan: ParallelPlan
    stack: StackProfile
    ops: OperatorModel
    memory: MemoryBreakdown
    finetune: FinetuneSpec
    fp8_recipe: Fp8Recipe
    straggler_spread: float = 0.0

    def costs(self, comm: CommModel, placement: Placement) -> StepCosts:
        """Per-stage costs of the step with its groups where ``placement`` puts them on ``comm``'s fabric."""
        return step_costs(self.model, self.plan, self.ops, comm, placement, self.stack, self.finetune,
                          self.straggler_spread)


def compile_training(tr: Training, cluster: ClusterSpec, efficiency: Efficiency, where: str = "training") -> Compiled:
    """Model, plan over the cluster's working GPUs, stack, operator model and memory of a training section."""
    s = section_of(tr, cluster, efficiency, where)
    plan = resolve_plan(plan_request_of(tr.parallelism, s.stack), s.model, cluster, tr.global_batch, tr.seq_len)
    memory = memory_per_gpu(s.model, plan, tr.precision, s.stack.attention, s.finetune, s.fp8_recipe,
                            s.stack.loss_bytes_per_logit)
    return Compiled(tr, s.model, plan, s.stack, s.ops, memory, s.finetune, s.fp8_recipe, s.straggler_spread)


@dataclass(frozen=True)
class Prepared:
    """A training scenario before its parallel plan is chosen: built once, priced for many plans."""
    scenario: Scenario
    cluster: ClusterSpec
    efficiency: Efficiency
    section: Section

    @property
    def model(self) -> ModelSpec:
        return self.section.model

    @cached_property
    def request(self) -> PlanRequest:
        """The parallel plan the scenario itself asks for (a search asks for it at every plan it sizes)."""
        return plan_request_of(self.scenario.training.parallelism, self.section.stack)

    # One communication model per placement (``comm``); scenarios prepared on the same cluster share them.
    comms: dict = field(default_factory=dict, repr=False, compare=False)
    # What one plan's pricing found that the next plan of this scenario can use (``stage_costs._passes``).
    memo: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def comm(self, placement: Placement) -> CommModel:
        """The communication model of one placement, shared by the plans placed alike (they differ in batch,
        recomputation or ZeRO stage): the collectives one plan priced are answered to the next."""
        model = self.comms.get(placement)
        if model is None:
            model = self.comms[placement] = CommModel(self.cluster, self.efficiency, placement)
        return model

    @cached_property
    def facility(self) -> Facility:
        """The cluster at its site, its own country only: what ``estimate`` charges a run."""
        site = replace(site_of(self.scenario.site, self.cluster.node), compare=())
        return facility(self.cluster, site, CommModel(self.cluster, self.efficiency).summary())


def prepare(scenario: Scenario, like: Prepared | None = None) -> Prepared:
    """Hardware, model, stack, operator model and site of a training scenario, for any parallel plan.

    ``like``: a scenario prepared before; when its cluster and efficiency sections equal this one's,
    its cluster, efficiencies and communication models are shared (they depend on nothing else), so
    collectives one priced are answered to the other (a fit's methods on one cluster)."""
    if like is not None and like.scenario.cluster == scenario.cluster \
            and like.scenario.efficiency == scenario.efficiency:
        return Prepared(scenario, like.cluster, like.efficiency,
                        section_of(scenario.training, like.cluster, like.efficiency), like.comms)
    cluster = cluster_of(scenario.cluster)
    efficiency = Efficiency.calibrated(scenario.efficiency)
    return Prepared(scenario, cluster, efficiency, section_of(scenario.training, cluster, efficiency))


def plan_memory(prepared: Prepared, request: PlanRequest) -> tuple[ParallelPlan, MemoryBreakdown]:
    """The plan and its memory per GPU, without pricing its step: what a search prunes on first."""
    s, tr = prepared.section, prepared.scenario.training
    plan = resolve_plan(request, s.model, prepared.cluster, tr.global_batch, tr.seq_len)
    return plan, memory_per_gpu(s.model, plan, tr.precision, s.stack.attention, s.finetune, s.fp8_recipe,
                                s.stack.loss_bytes_per_logit)


def build_plan(prepared: Prepared, request: PlanRequest,
               planned: tuple[ParallelPlan, MemoryBreakdown] | None = None, latency_split: bool = True) -> Built:
    """Plan, placement, per-stage costs and memory of one parallel plan on a prepared scenario.

    ``planned``: the request's ``plan_memory``, when already known. ``latency_split``: as
    ``step_costs``'s. Raises ``InfeasibleError`` for a plan the model, the batch or the cluster
    cannot split.
    """
    p, s = prepared, prepared.section
    plan, memory = planned or plan_memory(prepared, request)
    placement = place(plan, p.cluster.node.gpus, request.order)
    comm = p.comm(placement)
    costs = step_costs(s.model, plan, s.ops, comm, placement, s.stack, s.finetune, s.straggler_spread,
                       latency_split, p.memo)
    return Built(p.scenario, p.cluster, s.model, plan, placement, p.efficiency, s.stack, s.ops, comm, costs, memory,
                 s.finetune, s.fp8_recipe)


def build(scenario: Scenario, like: Prepared | None = None) -> Built:
    """Hardware, model, plan, placement and per-stage costs of a training scenario (``like``: as ``prepare``'s)."""
    prepared = prepare(scenario, like)
    return build_plan(prepared, prepared.request)


def memory_of(scenario: Scenario) -> tuple[ParallelPlan, MemoryBreakdown, float]:
    """The plan, memory per GPU and GPU capacity of a training scenario, without building its step."""
    prepared = prepare(scenario)
    plan, memory = plan_memory(prepared, prepared.request)
    return plan, memory, prepared.cluster.node.gpu.memory_bytes


def step_of(scenario: Scenario) -> StepBreakdown:
    """One step of a training scenario, played with the closed-form schedule."""
    built = build(scenario)
    return step_time(built.costs, built.plan)


def plan_step_s(prepared: Prepared, request: PlanRequest,
                planned: tuple[ParallelPlan, MemoryBreakdown] | None = None) -> float:
    """Seconds per step of one plan in closed form (``estimate``'s ``step.step_s``), without the site's
    power, energy and cost: what a search ranks plans of one option by (the latency share of ZeRO-2/3
    traffic, a part of the breakdown, is not worked out)."""
    built = build_plan(prepared, request, planned, latency_split=False)
    return step_time(built.costs, built.plan).step_s


def estimate(prepared: Prepared, request: PlanRequest,
             planned: tuple[ParallelPlan, MemoryBreakdown] | None = None) -> PlanEstimate:
    """One plan in closed form, without failures: the fast first pass of a plan search.

    The step is the analytic schedule (``engine.step``) and the run its ideal length
    (tokens ÷ throughput); power, energy, carbon and cost are the site's for that run.
    The same figures as ``simulate`` with ``closed_form`` when failures are off.
    """
    built = build_plan(prepared, request, planned)
    step = step_time(built.costs, built.plan)
    tr, plan, cluster = prepared.scenario.training, built.plan, prepared.cluster
    ideal_s = ideal_run_s(tr.tokens, plan, step.step_s)
    pw = assess_at(prepared.facility, step, plan.gpus, ideal_s, None)
    site = pw.site
    return PlanEstimate(
        plan=plan, step=step, memory=built.memory, memory_capacity_bytes=cluster.node.gpu.memory_bytes,
        tokens_per_s=plan.tokens_per_step / step.step_s,
        mfu=_model_flops(built) / step.step_s / plan.gpus / 1e12 * 1e12 / cluster.node.gpu.peak(tr.precision),
        time_to_train_s=ideal_s, gpu_hours=plan.gpus * ideal_s / SECONDS_PER_HOUR,
        energy_facility_kwh=pw.energy_facility_kwh, peak_power_it_w=pw.peak_power_it_w,
        country=site.code, carbon_kg=site.carbon_kg, cost_eur=site.total_cost_eur,
        rental_cost_eur=pw.rental_cost_eur, cost_parts=pw.cost())


def ideal_run_s(tokens: float, plan: ParallelPlan, step_s: float) -> float:
    """The run without failures: ``tokens`` at the throughput of a ``step_s`` step."""
    return tokens / (plan.tokens_per_step / step_s)


def _model_flops(b: Built) -> float:
    """Model FLOPs of one step (no recomputation counted)."""
    return model_flops_per_token(b.model, b.finetune, b.scenario.training.seq_len) * b.plan.tokens_per_step


def simulate_training(scenario: Scenario, closed_form: bool = False, like: Prepared | None = None) -> TrainingResult:
    """Answer a training scenario; ``closed_form`` plays the step with the analytic schedule instead of SimPy.

    With ``training.data`` the GPUs also wait for the data loader (``api/storage.py``); with
    ``site.cooling`` the result carries the building's year (``api/building.py``). ``like``: a
    scenario prepared on the same cluster (``prepare``), whose collectives are answered again."""
    built = build(scenario, like)
    iteration = None if closed_form else simulate_iteration(built.costs, built.plan)
    step = step_time(built.costs, built.plan) if iteration is None else iteration.breakdown
    if scenario.training.data is None and scenario.site.cooling is None:
        return _result(built, step, iteration)
    return _with_data_and_building(scenario, built, step, iteration)


def _with_data_and_building(scenario: Scenario, built: Built, step: StepBreakdown,
                            iteration: IterationResult | None) -> TrainingResult:
    """The result of a scenario with ``training.data`` (the step waits for its loader; the storage record)
    or ``site.cooling`` (the building's year); their models load only for such a scenario."""
    from twin.api.building import building_of
    from twin.api.storage import storage_of, storage_warnings

    result = _result(built, _fed(scenario, built, step), iteration)
    storage = storage_of(scenario, built.cluster, result, step.step_s)
    if storage is None and scenario.site.cooling is None:
        return result
    return replace(result, storage=storage, building=building_of(scenario),
                   warnings=list(result.warnings) + (storage_warnings(storage) if storage else []))


def _fed(scenario: Scenario, built: Built, step: StepBreakdown) -> StepBreakdown:
    """The step waiting for its data loader (``training.data``; the step itself without one)."""
    if scenario.training.data is None:
        return step
    from twin.api.storage import data_feed_of, with_data_wait

    return with_data_wait(step, data_feed_of(scenario, built.cluster, built.plan.gpus, step))


def job_of(scenario: Scenario) -> tuple[JobSpec, int, int] | None:
    """The failure Monte Carlo ``simulate_training`` plays for ``scenario`` (``monte_carlo``'s arguments: the job,
    its seed, its samples), None where it plays none: for a study to play several scenarios' Monte Carlos at
    once (``engine.job.play_ahead``). The step is played on the way, and kept as ``simulate_training`` keeps it."""
    if not scenario.failures.enabled:
        return None
    built = build(scenario)
    step = _fed(scenario, built, simulate_iteration(built.costs, built.plan).breakdown)
    policy = failure_policy_of(scenario.failures, scenario.cluster)
    if ideal_run_s(scenario.training.tokens, built.plan, step.step_s) > policy.horizon_s:
        return None                     # beyond the horizon even without failures: ``_job_run`` plays none
    return _job_spec(built, step, policy), policy.seed, policy.samples


def play_ahead(jobs: list[tuple[JobSpec, int, int]]) -> None:
    """Several scenarios' failure Monte Carlos (``job_of``'s) played at once, their samples side by side where
    they may, for ``simulate_training`` to answer each from (``engine.job.play_ahead``)."""
    from twin.engine.job import play_ahead as played_ahead

    played_ahead(jobs)


def _idle_reason(plan: ParallelPlan, tr: Training, cluster: ClusterSpec) -> str:
    """Why a plan leaves GPUs idle: spares, the cluster does not divide, the batch does not, or the scenario said so."""
    gpus = cluster.work_gpus
    model_parallel = plan.tensor * plan.pipeline
    largest = gpus // model_parallel
    spares = (f"{cluster.spare_nodes} spare nodes ({cluster.spare_nodes * cluster.node.gpus} GPUs) are held back"
              if cluster.spare_nodes else "")
    if tr.parallelism.data != "auto":
        reason = f"data parallelism {plan.data} is set in the scenario (at most {largest} would fit)"
    elif plan.data == largest:
        reason = (f"{gpus} GPUs are not a multiple of tensor {plan.tensor} × pipeline {plan.pipeline} = "
                  f"{model_parallel}, so at most {largest} data-parallel replicas fit")
    else:
        rule = (f" with a multiple of pipeline {plan.pipeline} micro-batches per replica"
                if plan.virtual_stages > 1 else "")
        reason = (f"data parallelism {plan.data} is the largest up to {largest} that divides "
                  f"global_batch {tr.global_batch} / microbatch {plan.microbatch}{rule}")
    return "; ".join(filter(None, [spares, reason]))


@dataclass(frozen=True)
class _JobRun:
    """The job over the clock: its time, interruptions and timeline (the median run's when failures are on)."""
    time_s: float
    interruptions: float = 0.0
    goodput: float = 1.0
    finished: bool = True
    failures: FailureSummary | None = None
    segments: list[Segment] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


def _job_run(b: Built, step: StepBreakdown, ideal_s: float, warnings: list[str]) -> _JobRun:
    """The job with failures (a Monte Carlo over samples), or the ideal run when failures are off."""
    sc = b.scenario
    if not sc.failures.enabled:
        return _JobRun(ideal_s, segments=[Segment(0.0, ideal_s, "train")])
    policy = failure_policy_of(sc.failures, sc.cluster)
    if ideal_s > policy.horizon_s:
        warnings.append(f"did not finish: even without failures the run takes {fmt_duration(ideal_s)}, beyond "
                        f"the {fmt_duration(policy.horizon_s)} horizon (failures.horizon); not simulated")
        return _JobRun(policy.horizon_s, finished=False, segments=[Segment(0.0, policy.horizon_s, "train")])
    from twin.engine.job import job_summary, monte_carlo   # the job simulation: only with failures on

    spec = _job_spec(b, step, policy)
    stats = monte_carlo(spec, policy.seed, policy.samples)
    failures = job_summary(spec, stats, policy.seed)
    time_s = failures.time_to_train_s.p50
    if failures.finished_samples < failures.samples:
        why = [f"{failures.stopped_at_horizon} reached the {fmt_duration(policy.horizon_s)} horizon "
               "(failures.horizon)" if failures.stopped_at_horizon else "",
               f"{failures.stopped_by_interruptions} stopped after {spec.max_interruptions:,} interruptions "
               "(the simulation's bound on failures)" if failures.stopped_by_interruptions else ""]
        warnings.append(f"did not finish: of {failures.samples} samples, " + " and ".join(filter(None, why))
                        + "; the times are lower bounds")
    return _JobRun(time_s, failures.interruptions.p50, ideal_s / time_s, stats.median.finished, failures,
                   stats.median.segments, stats.median.events)


def _job_spec(b: Built, step: StepBreakdown, policy: FailurePolicy) -> JobSpec:
    """The job whose failures are simulated: the scenario's tokens at its step on the plan's GPUs."""
    from twin.engine.job import job_spec

    tr, plan = b.scenario.training, b.plan
    return job_spec(policy, checkpoint_policy_of(tr.checkpoint), b.cluster, trainable_params(b.model, b.finetune),
                    tr.precision, tr.tokens, plan.gpus, plan.data, plan.tokens_per_step, step.step_s,
                    b.finetune.frozen)


def _memory_advice(b: Built, warnings: list[str]) -> list[str]:
    """Whether the plan fits the GPU's memory; when it does not, the changes that would fit."""
    tr, plan, cluster = b.scenario.training, b.plan, b.cluster
    capacity = cluster.node.gpu.memory_bytes
    needed = b.memory.required_bytes
    if needed > capacity:
        options = fitting_alternatives(b.model, plan, tr.precision, b.stack.attention, capacity, cluster.node.gpus,
                                       b.finetune, b.fp8_recipe, b.stack.loss_bytes_per_logit)
        advice = [f"{label} would fit ({fmt_bytes(total)})" for label, total in options]
        fixes = "; ".join(advice)
        if not options:
            together = combined_fit(b.model, plan, tr.precision, b.stack.attention, capacity, cluster.node.gpus,
                                    b.finetune, b.fp8_recipe, b.stack.loss_bytes_per_logit)
            advice = [f"{together[0]} ({fmt_bytes(together[1])})"] if together else []
            fixes = "no single change of ZeRO, recompute, pipeline or tensor fits" + (
                f"; {advice[0]}" if advice else f", nor any plan on up to {2 ** MAX_GPU_DOUBLINGS} times the GPUs")
        warnings.append(f"does not fit: needs {fmt_bytes(needed)} per GPU, has {fmt_bytes(capacity)} "
                        f"({fmt_bytes(needed - capacity)} over); " + fixes)
        return advice
    if b.memory.total_bytes > capacity:
        warnings.append(f"paged optimizer: {fmt_bytes(b.memory.total_bytes - capacity)} of optimizer states live in "
                        "host memory and are paged in for the optimizer step")
    return []


def _plan_warnings(b: Built, trained: int) -> list[str]:
    """Idle GPUs, tensor parallelism across nodes, an interleaved schedule that is not, a checkpoint too large."""
    tr, plan, cluster = b.scenario.training, b.plan, b.cluster
    warnings = []
    if plan.gpus < cluster.work_gpus:
        warnings.append(f"{cluster.gpus - plan.gpus} of {cluster.gpus} GPUs idle: " + _idle_reason(plan, tr, cluster))
    if plan.tensor > cluster.node.gpus:
        warnings.append(f"tensor parallelism {plan.tensor} spans nodes ({cluster.node.gpus} GPUs per node): "
                        "its all-reduces run over the network")
    if tr.parallelism.schedule == "interleaved" and plan.virtual_stages == 1:
        warnings.append("schedule interleaved with virtual_stages 1 runs as plain 1F1B; set "
                        "training.parallelism.virtual_stages above 1 to interleave")
    capacity_bytes = cluster.storage.capacity_bytes
    if capacity_bytes is not None:
        from twin.jobs.checkpoint import checkpoint_bytes_per_param

        checkpoint_bytes = trained * checkpoint_bytes_per_param(tr.precision, b.finetune.frozen)
        if checkpoint_bytes > capacity_bytes:
            warnings.append(f"storage: one checkpoint ({fmt_si(checkpoint_bytes, 'B')}) exceeds the storage capacity "
                            f"({fmt_si(capacity_bytes, 'B')}, cluster.storage.capacity)")
    return warnings


def _rates(b: Built, step: StepBreakdown) -> dict[str, float]:
    """Throughput and FLOP rates of the step: tokens/s, model and hardware TFLOP/s per GPU, MFU and HFU."""
    tr, plan = b.scenario.training, b.plan
    hardware_flops = hardware_flops_per_token(b.model, b.finetune, tr.seq_len, plan.recompute) * plan.tokens_per_step
    peak = b.cluster.node.gpu.peak(tr.precision)
    model_tflops = _model_flops(b) / step.step_s / plan.gpus / 1e12
    hardware_tflops = hardware_flops / step.step_s / plan.gpus / 1e12
    return {"tokens_per_s": plan.tokens_per_step / step.step_s, "model_tflops_per_gpu": model_tflops,
            "hardware_tflops_per_gpu": hardware_tflops, "mfu": model_tflops * 1e12 / peak,
            "hfu": hardware_tflops * 1e12 / peak, "peak_tflops_per_gpu": peak / 1e12}


def _result(b: Built, step: StepBreakdown, iteration: IterationResult | None = None) -> TrainingResult:
    sc, tr, plan, model, cluster = b.scenario, b.scenario.training, b.plan, b.model, b.cluster
    gpu = cluster.node.gpu
    rates = _rates(b, step)
    trained = trainable_params(model, b.finetune)
    ideal_s = ideal_run_s(tr.tokens, plan, step.step_s)
    warnings: list[str] = []
    job = _job_run(b, step, ideal_s, warnings)
    advice = _memory_advice(b, warnings)
    warnings += _plan_warnings(b, trained)
    fabric = b.comm.summary()
    pw = assess(cluster, step, plan.gpus, site_of(sc.site, cluster.node), job.time_s, job.segments, fabric)
    warnings.extend(pw.warnings)
    return TrainingResult(
        scenario=sc.name, gpus_total=cluster.gpus, gpus_used=plan.gpus, step_time_s=step.step_s, **rates,
        precision=tr.precision,
        memory_per_gpu_bytes=b.memory.total_bytes, memory_capacity_bytes=gpu.memory_bytes,
        memory_fits=b.memory.required_bytes <= gpu.memory_bytes, ideal_time_to_train_s=ideal_s,
        time_to_train_s=job.time_s, gpu_hours=plan.gpus * job.time_s / SECONDS_PER_HOUR,
        interruptions=job.interruptions, goodput=job.goodput, finished=job.finished, tokens=tr.tokens,
        tokens_per_step=plan.tokens_per_step, country=pw.site.code, pue=sc.site.pue, plan=plan, stack=b.stack,
        step=step, memory=b.memory, memory_advice=advice, finetune=b.finetune, params=model.params,
        trainable_params=trained,
        longest_seq_len=longest_sequence(model, plan, tr.precision, b.stack.attention, gpu.memory_bytes, b.finetune,
                                         b.fp8_recipe, loss_bytes_per_logit=b.stack.loss_bytes_per_logit),
        power=pw, fabric=fabric, failures=job.failures, segments=job.segments, events=job.events,
        step_timeline=iteration.timeline if iteration else (), warnings=warnings,
        sources={"gpu": gpu.source, "node": cluster.node.source, "model": model.source} | pw.sources())
