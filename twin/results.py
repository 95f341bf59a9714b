"""The result record: what a run of the twin answers, and its JSON form.

The layers below return typed records (frozen dataclasses); this module alone
turns them into the JSON record. Its top-level keys are a user-facing contract
(docs/results.md); values are SI (seconds, bytes, watts) except where the key
names another unit (kWh, kg, EUR, TFLOP/s).
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any

from twin.bands import SERVING_KEYS, TRAINING_KEYS, Calibration, with_calibration
from twin.engine.iteration import Span
from twin.engine.job import Event, FailureSummary, Segment
from twin.engine.stack import StackProfile
from twin.engine.step import StepBreakdown
from twin.hardware.specs import ClusterSpec
from twin.network.collectives import FabricSummary
from twin.operations.accounting import Accounts, Charge
from twin.operations.cluster import ClusterRun, JobOutcome
from twin.operations.jobs import Service
from twin.operations.metrics import Completion, PowerUse, Quantiles, Timeline, Utilisation, Waits
from twin.power.assess import PowerAssessment
from twin.power.serving import ServingPower
from twin.serving.capacity import Capacity, Sizing
from twin.serving.deployment import Percentiles, ServingRun
from twin.serving.kv_cache import MemoryPlan
from twin.serving.specs import SLOSpec
from twin.workload.finetune import WEIGHT_FORMATS, FinetuneSpec
from twin.workload.memory import MemoryBreakdown
from twin.workload.plan import ParallelPlan

# 2: cluster.nodes counts spares (gpus_total and fabric.nodes are the whole cluster); failures.finished_samples.
SCHEMA_VERSION = 2


@dataclass(frozen=True)
class Result:
    """The answer for a training (or fine-tuning) scenario."""
    scenario: str
    gpus_total: int                  # every GPU of the cluster, spares included
    gpus_used: int
    step_time_s: float
    tokens_per_s: float
    model_tflops_per_gpu: float
    hardware_tflops_per_gpu: float
    mfu: float
    hfu: float                       # hardware FLOPs utilisation (counts recomputation)
    memory_per_gpu_bytes: float
    memory_capacity_bytes: float
    memory_fits: bool
    ideal_time_to_train_s: float
    time_to_train_s: float
    gpu_hours: float
    interruptions: float
    goodput: float
    finished: bool                   # False: the job simulation reached its horizon before the end
    tokens: float
    tokens_per_step: int
    country: str
    pue: float
    plan: ParallelPlan
    stack: StackProfile              # the software stack the step was priced for, overrides applied
    step: StepBreakdown
    memory: MemoryBreakdown
    memory_advice: list[str]
    finetune: FinetuneSpec           # its weights resolved to a storage format
    params: int                      # the model's parameters
    trainable_params: int            # parameters the optimizer updates: the model, or its adapters
    longest_seq_len: int             # the longest sequence one micro-batch could hold on this GPU, same plan
    power: PowerAssessment
    fabric: FabricSummary
    failures: FailureSummary | None = None
    segments: list[Segment] = field(default_factory=list)      # the median run's timeline
    events: list[Event] = field(default_factory=list)
    step_timeline: tuple[Span, ...] = ()
    warnings: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    calibration: Calibration | None = None     # error band and site profile (twin.bands), set by twin.api

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.tokens_per_s / self.gpus_used

    # The headline energy, carbon and cost figures, from the power assessment.
    @property
    def energy_it_kwh(self) -> float:
        return self.power.energy_it_kwh

    @property
    def energy_facility_kwh(self) -> float:
        return self.power.energy_facility_kwh

    @property
    def avg_power_it_w(self) -> float:
        return self.power.avg_power_it_w

    @property
    def peak_power_it_w(self) -> float:
        return self.power.peak_power_it_w

    @property
    def carbon_kg(self) -> dict[str, float]:
        return self.power.carbon_kg()

    @property
    def energy_cost_eur(self) -> dict[str, float | None]:
        return self.power.energy_cost_eur()

    @property
    def total_cost_eur(self) -> dict[str, float | None]:
        return self.power.total_cost_eur()

    @property
    def rental_cost_eur(self) -> float | None:
        return self.power.rental_cost_eur

    @property
    def embodied_carbon_kg(self) -> float | None:
        return self.power.embodied.total_kg if self.power.embodied else None

    def to_dict(self) -> dict[str, Any]:
        return with_calibration(_finite(training_record(self)), self.calibration, TRAINING_KEYS)

    def to_flat(self) -> dict[str, Any]:
        """The record's scalar fields, one level deep (``flatten``), without timelines or sources:
        a row of a study's table."""
        record = training_record(self, timelines=False)
        del record["sources"]
        return flatten(_finite(record))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)


@dataclass(frozen=True)
class PlanEstimate:
    """One parallel plan in closed form, without failures: a plan search's first pass."""
    plan: ParallelPlan
    step: StepBreakdown
    memory: MemoryBreakdown
    memory_capacity_bytes: float
    tokens_per_s: float
    mfu: float
    time_to_train_s: float           # the ideal run: tokens / throughput
    gpu_hours: float
    energy_facility_kwh: float
    peak_power_it_w: float
    country: str                     # the site's
    carbon_kg: float
    cost_eur: float | None           # the site's total: energy, plus rental when priced
    rental_cost_eur: float | None

    @property
    def memory_per_gpu_bytes(self) -> float:
        return self.memory.total_bytes

    @property
    def memory_fits(self) -> bool:
        """What a step cannot do without fits the GPU (paged optimizer states may live in host memory)."""
        return self.memory.required_bytes <= self.memory_capacity_bytes


@dataclass(frozen=True)
class RankedPlan:
    """A plan a search kept: its cluster option, its closed-form estimate and, when the top
    candidates were played in full (SimPy step, failure Monte Carlo), that result."""
    option: dict[str, Any]           # the varied keys of the cluster option ({} when the cluster is fixed)
    estimate: PlanEstimate
    result: Result | None = None

    def to_dict(self) -> dict[str, Any]:
        return _finite(plan_row(self))


@dataclass(frozen=True)
class PlanSearch:
    """What ``python -m twin plan`` found (``search_record``)."""
    scenario: str
    objective: str                   # time | cost | carbon | energy
    constraints: tuple[str, ...]     # as written (deadline=30d)
    options: int                     # cluster options searched
    option_errors: tuple[str, ...]   # options that are not valid scenarios, one line each
    plans_considered: int            # plans of the search space
    plans_infeasible: int            # the model, the batch or the cluster cannot split them
    plans_over_memory: int           # do not fit the GPU's memory
    plans_equivalent: int            # the same plan as one already evaluated (ZeRO stages without data parallelism)
    plans_evaluated: int             # timed in closed form
    plans_rejected: int              # evaluated, but break a constraint
    exhaustive: bool                 # every plan of the space evaluated or pruned
    seconds: float                   # the closed-form pass (not in the record: the record is deterministic)
    refined: int                     # top candidates played in full
    plans: tuple[RankedPlan, ...]    # best first
    baseline: RankedPlan | None      # the scenario's own plan
    notes: tuple[str, ...] = ()

    @property
    def plans_pruned(self) -> int:
        return self.plans_infeasible + self.plans_over_memory + self.plans_equivalent

    def to_dict(self) -> dict[str, Any]:
        return _finite(search_record(self))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def plan_row(p: RankedPlan) -> dict[str, Any]:
    """One plan of a search: parallel settings, then the result fields (the full run's when played)."""
    e, r = p.estimate, p.result
    plan = e.plan
    row: dict[str, Any] = {
        "option": dict(p.option),
        "tensor": plan.tensor, "pipeline": plan.pipeline, "data": plan.data, "expert": plan.expert,
        "microbatch": plan.microbatch, "virtual_stages": plan.virtual_stages, "schedule": plan.schedule,
        "recompute": plan.recompute, "zero": plan.zero, "sequence_parallel": plan.sequence_parallel,
        "description": plan.describe(), "gpus": plan.gpus,
        "engine": "simpy" if r is not None else "closed-form",
    }
    if r is None:
        row |= {"step_time_s": e.step.step_s, "time_to_train_s": e.time_to_train_s, "tokens_per_s": e.tokens_per_s,
                "mfu": e.mfu, "memory_per_gpu_bytes": e.memory_per_gpu_bytes, "memory_fits": e.memory_fits,
                "gpu_hours": e.gpu_hours, "energy_facility_kwh": e.energy_facility_kwh,
                "peak_power_it_w": e.peak_power_it_w, "country": e.country, "carbon_kg": e.carbon_kg,
                "cost_eur": e.cost_eur, "rental_cost_eur": e.rental_cost_eur}
    else:
        row |= {"step_time_s": r.step_time_s, "time_to_train_s": r.time_to_train_s, "tokens_per_s": r.tokens_per_s,
                "mfu": r.mfu, "memory_per_gpu_bytes": r.memory_per_gpu_bytes, "memory_fits": r.memory_fits,
                "gpu_hours": r.gpu_hours, "energy_facility_kwh": r.energy_facility_kwh,
                "peak_power_it_w": r.peak_power_it_w, "country": r.country, "carbon_kg": r.carbon_kg[r.country],
                "cost_eur": r.total_cost_eur[r.country], "rental_cost_eur": r.rental_cost_eur,
                "ideal_time_to_train_s": r.ideal_time_to_train_s, "goodput": r.goodput,
                "interruptions": r.interruptions, "finished": r.finished,
                "closed_form": {"step_time_s": e.step.step_s, "time_to_train_s": e.time_to_train_s}}
    return row


def search_record(s: PlanSearch) -> dict[str, Any]:
    """The JSON record of a plan search (docs/results.md, "Plan search")."""
    return {
        "scenario": s.scenario,
        "objective": s.objective,
        "constraints": list(s.constraints),
        "plans_evaluated": s.plans_evaluated,
        "plans_pruned": s.plans_pruned,
        "exhaustive": s.exhaustive,
        "plans": [plan_row(p) for p in s.plans],
        "plans_considered": s.plans_considered,
        "plans_infeasible": s.plans_infeasible,
        "plans_over_memory": s.plans_over_memory,
        "plans_equivalent": s.plans_equivalent,
        "plans_rejected": s.plans_rejected,
        "options": s.options,
        "option_errors": list(s.option_errors),
        "refined": s.refined,
        "scenario_plan": plan_row(s.baseline) if s.baseline is not None else None,
        "notes": list(s.notes),
        "schema_version": SCHEMA_VERSION,
    }


@dataclass(frozen=True)
class SweepReport:
    """What a sweep did and found (``python -m twin sweep``)."""
    points: int                              # rows of the study: every point, run now or before
    ran: int                                 # points run now
    reused: int                              # points found in the study directory
    dropped: int                             # rows of the directory that are not points of this study
    errors: int
    error_messages: dict[str, int]           # each distinct error and how many points raised it
    seconds: float
    where: str                               # the executor
    study: dict[str, Any]                    # what study.yaml says
    front: list[dict[str, Any]] = field(default_factory=list)   # point, varied keys and objectives
    objectives: tuple[str, ...] = ()         # the front's columns, all minimised
    directory: str | None = None
    table: Any = None                        # every row (a pyarrow table); not part of the record

    @property
    def points_per_s(self) -> float:
        return self.ran / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return _finite(sweep_record(self))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def sweep_record(s: SweepReport) -> dict[str, Any]:
    """The JSON summary of a sweep (docs/results.md, "Sweeps"): counts and the Pareto front."""
    return {
        "scenario": s.study.get("scenario_name"),
        "points": s.points,
        "ran": s.ran,
        "reused": s.reused,
        "dropped": s.dropped,
        "errors": s.errors,
        "directory": s.directory,
        "objectives": list(s.objectives),
        "front": list(s.front),
        "error_messages": dict(s.error_messages),
        "schema_version": SCHEMA_VERSION,
    }


@dataclass(frozen=True)
class FitOption:
    """One way to run a training job: a node type, a GPU count, a method and the base's storage."""
    node: str
    gpus: int
    nodes: int
    method: str                      # full | lora | qlora
    weights: str                     # storage of the base's linear weights


@dataclass(frozen=True)
class FitRow:
    """The best plan of one option that fits (``result``), or how far the option is from fitting."""
    option: FitOption
    result: Result | None            # closed-form step; None when no plan fits
    plans_tried: int                 # plans whose memory was computed
    plans_timed: int                 # plans that fit and were not dominated, whose step was played
    least_bytes: float               # the least memory per GPU any plan needs (HBM that must stay resident)
    capacity_bytes: float


@dataclass(frozen=True)
class FitReport:
    """``python -m twin fit``: every option that fits, ranked, and those that do not."""
    scenario: str
    by: str                          # time | cost
    country: str
    rows: tuple[FitRow, ...]         # options that fit, best first, then the others
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return _finite(fit_record(self))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)


def fit_record(report: FitReport) -> dict[str, Any]:
    """The JSON record of ``twin fit`` (docs/results.md)."""
    rows = []
    for row in report.rows:
        r = row.result
        out: dict[str, Any] = _plain(row.option) | {
            "fits": r is not None, "plans_tried": row.plans_tried, "plans_timed": row.plans_timed,
            "least_memory_per_gpu_bytes": row.least_bytes, "memory_capacity_bytes": row.capacity_bytes}
        if r is not None:
            pw = r.power
            out |= {
                "plan": r.plan.describe(),
                "memory_per_gpu_bytes": r.memory_per_gpu_bytes,
                "memory_required_bytes": r.memory.required_bytes,
                "memory_breakdown_bytes": r.memory.parts(),
                "trainable_params": r.trainable_params,
                "step_time_s": r.step_time_s,
                "tokens_per_s": r.tokens_per_s,
                "mfu": r.mfu,
                "time_to_train_s": r.time_to_train_s,
                "gpu_hours": r.gpu_hours,
                "energy_it_kwh": pw.energy_it_kwh,
                "energy_facility_kwh": pw.energy_facility_kwh,
                "carbon_kg": pw.carbon_kg(),
                "energy_cost_eur": pw.energy_cost_eur(),
                "total_cost_eur": pw.total_cost_eur(),
            }
        rows.append(out)
    return {"scenario": report.scenario, "by": report.by, "country": report.country, "options": rows,
            "notes": list(report.notes)}


def _plain(record: Any) -> Any:
    """A dataclass record (nested records, lists and maps of them) as plain JSON-able values."""
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return {f.name: _plain(getattr(record, f.name)) for f in dataclasses.fields(record)}
    if isinstance(record, dict):
        return {k: _plain(v) for k, v in record.items()}
    if isinstance(record, (list, tuple)):
        return [_plain(v) for v in record]
    return record


def training_record(r: Result, timelines: bool = True) -> dict[str, Any]:
    """The JSON record of a training result (docs/results.md); ``timelines`` False leaves out
    the job, step and power timelines (lists that a table row does not hold)."""
    pw = r.power
    record = {
        "scenario": r.scenario,
        "workload": "training",
        "gpus_total": r.gpus_total,
        "gpus_used": r.gpus_used,
        "step_time_s": r.step_time_s,
        "tokens_per_s": r.tokens_per_s,
        "model_tflops_per_gpu": r.model_tflops_per_gpu,
        "hardware_tflops_per_gpu": r.hardware_tflops_per_gpu,
        "mfu": r.mfu,
        "memory_per_gpu_bytes": r.memory_per_gpu_bytes,
        "memory_capacity_bytes": r.memory_capacity_bytes,
        "memory_fits": r.memory_fits,
        "ideal_time_to_train_s": r.ideal_time_to_train_s,
        "time_to_train_s": r.time_to_train_s,
        "gpu_hours": r.gpu_hours,
        "interruptions": r.interruptions,
        "goodput": r.goodput,
        "energy_it_kwh": pw.energy_it_kwh,
        "energy_facility_kwh": pw.energy_facility_kwh,
        "avg_power_it_w": pw.avg_power_it_w,
        "peak_power_it_w": pw.peak_power_it_w,
        "carbon_kg": pw.carbon_kg(),
        "energy_cost_eur": pw.energy_cost_eur(),
        "schema_version": SCHEMA_VERSION,
        "finished": r.finished,
        "country": r.country,
        "tokens": r.tokens,
        "tokens_per_step": r.tokens_per_step,
        "tokens_per_s_per_gpu": r.tokens_per_s_per_gpu,
        "hfu": r.hfu,
        "plan": _plain(r.plan) | {"microbatches": r.plan.microbatches, "description": r.plan.describe(),
                                  "gpus": r.gpus_used},
        "stack": _plain(r.stack),
        "step_breakdown_s": r.step.parts(),
        "bottleneck": r.step.bottleneck,
        "memory_breakdown_bytes": r.memory.parts(),
        "memory_advice": list(r.memory_advice),
        "memory_required_bytes": r.memory.required_bytes,
        "longest_seq_len": r.longest_seq_len,
        "params": r.params,
        "trainable_params": r.trainable_params,
        "finetune": finetune_record(r),
        "carbon_intensity_g_per_kwh": pw.intensity(),
        "electricity_price_eur_per_kwh": pw.price(),
        "pue": r.pue,
        "power": power_record(pw, timelines),
        "embodied_carbon_kg": pw.embodied.total_kg if pw.embodied else None,
        "total_cost_eur": pw.total_cost_eur(),
        "rental_cost_eur": pw.rental_cost_eur,
        "failures": _plain(r.failures) if r.failures else {},
        "timeline": {"segments": _plain(r.segments), "events": _plain(r.events)} if timelines else None,
        "fabric": _plain(r.fabric),
        "step_timeline": _plain(list(r.step_timeline)) if timelines else None,
        "warnings": list(r.warnings),
        "sources": dict(r.sources),
    }
    if not timelines:
        del record["timeline"], record["step_timeline"]
    return record


def finetune_record(r: Result) -> dict[str, Any]:
    """``Result.finetune``: the method, its adapters and the base's storage (docs/results.md)."""
    ft = r.finetune
    lora = ft.lora
    return {
        "method": ft.method,
        "weights": ft.weights,
        "weight_bits": WEIGHT_FORMATS[ft.weights].bits,
        "lora": None if lora is None else {"rank": lora.rank, "alpha": lora.alpha, "targets": list(lora.targets)},
        "paged_optimizer": ft.paged_optimizer,
        "trainable_fraction": r.trainable_params / r.params,
    }


def power_record(pw: PowerAssessment, timelines: bool = True) -> dict[str, Any]:
    """``Result.power``: device, node, rack, fabric and country figures of the run (docs/results.md)."""
    cluster, node, infra, racks = pw.cluster, pw.cluster.node, pw.infrastructure, pw.racks
    emb = pw.embodied

    def switches(counts) -> dict[str, Any]:
        return {"leaf": counts.leaf, "spine": counts.spine, "core": counts.core, "source": counts.source}

    record = {
        "accounting": pw.accounting,
        "gpu_avg_w": cluster.step.gpu_avg_w,
        "gpu_idle_w": node.gpu.idle_w,
        "gpu_limit_w": node.gpu.limit_w,
        "gpu_phase_w": {p: node.gpu.phase_w(p) for p in node.gpu.activity},
        "step_phases": _plain(cluster.step),
        "node_avg_w": cluster.busy_node_w("train"),
        "node_idle_w": node.idle_w,
        "node_peak_w": node.peak_w,
        "node_max_w": node.max_w,
        "host_components_w": node.host.components_w,
        "busy_nodes": cluster.busy_nodes,
        "idle_nodes": cluster.idle_nodes,
        "nodes_w": cluster.nodes_w,
        "infrastructure": {
            "compute_fabric": switches(infra.compute_switches),
            "storage_fabric": switches(infra.storage_switches),
            "switch_model": infra.switch.name,
            "switch_w": infra.switch.draw_w(),
            "switches_w": infra.switches_w,
            "storage_w": infra.storage_w,
            "storage_source": infra.storage_source,
        },
        "train_w": cluster.it_w("train"),
        "phase_it_w": {p: cluster.it_w(p) for p in ("train", "checkpoint", "restart", "repair_wait")},
        "energy_by_phase_kwh": pw.energy_by_phase_kwh,
        "racks": racks.racks,
        "nodes_per_rack": racks.nodes_per_rack,
        "rack_avg_w": racks.avg_w,
        "rack_peak_w": racks.peak_w,
        "rack_limit_w": racks.limit_w,
        "racks_over_limit": racks.over_limit,
        "rack_groups": _plain(racks.groups),
        "power_cap_w": pw.power_cap_w,
        "power_cap_clock_factor": pw.power_cap_clock_factor,
        "reserved_gpu_hours": pw.reserved_gpu_hours,
        "rental_cost_eur": pw.rental_cost_eur,
        "embodied": None if emb is None else {
            "gpu_kg": emb.gpu_kg, "server_kg": emb.server_kg, "total_kg": emb.total_kg,
            "per_gpu_kg": emb.spec.gpu_kg, "per_server_kg": emb.spec.server_kg,
            "lifetime_years": emb.spec.lifetime_years, "utilization": emb.spec.utilization,
            "source": emb.spec.source},
        "countries": _plain(pw.countries),
    }
    if timelines:
        record["timeline"] = [{"start_s": s.start_s, "end_s": s.end_s, "phase": s.phase, "it_w": s.it_w,
                               "checkpoint_s": s.checkpoint_s} for s in pw.timeline]
    return record


# Separator of the texts of a list field (warnings, memory_advice) in a flat record.
LIST_SEPARATOR = " | "


def flatten(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Scalar fields of a JSON record, nested keys joined with dots (``plan.tensor``, ``carbon_kg.FR``).

    A list of texts becomes one text joined with ``LIST_SEPARATOR``; other lists (timelines,
    per-country rows, scalable units) are left out: the nested mappings hold their totals.
    """
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}."))
        elif isinstance(value, (list, tuple)):
            if all(isinstance(v, str) for v in value):
                out[name] = LIST_SEPARATOR.join(value)
        else:
            out[name] = value
    return out


@dataclass(frozen=True)
class ServingResult:
    """The answer for a serving scenario: one deployment over the load, and the alternatives it is compared with.

    ``run`` and ``power`` are None when the deployment cannot hold the load (``memory_fits`` False):
    the warnings say by how much and what would fit.
    """
    scenario: str
    label: str                       # the deployment in words
    model: str
    node: str
    gpu: str
    mig: str | None
    precision: str
    kv_cache: str
    tensor: int
    pipeline: int
    replicas: int
    devices_per_replica: int         # GPUs, or MIG instances, of one replica
    gpus_total: int                  # every GPU of the cluster
    gpus_used: int                   # physical GPUs the replicas occupy
    instances_used: int              # GPUs, or MIG instances, the replicas run on
    memory: MemoryPlan               # one GPU (or instance) of a replica
    memory_fits: bool
    rate_per_s: float | None         # offered arrival rate, whole deployment (None: offline)
    slo: SLOSpec
    country: str
    pue: float
    run: ServingRun | None = None
    power: ServingPower | None = None
    alternatives: tuple["ServingResult", ...] = ()
    memory_advice: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    calibration: Calibration | None = None     # error band and site profile (twin.bands), set by twin.api

    def to_dict(self) -> dict[str, Any]:
        record = _finite(serving_record(self) | {"alternatives": [serving_record(a) for a in self.alternatives]})
        return with_calibration(record, self.calibration, SERVING_KEYS)

    def to_flat(self) -> dict[str, Any]:
        """The record's scalar fields, one level deep (``flatten``), without the compared deployments or
        sources: a row of a study's table."""
        record = serving_record(self)
        del record["sources"]
        return flatten(_finite(record))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)


def _percentiles(p: Percentiles | None) -> dict[str, float] | None:
    return None if p is None else {"p50": p.p50, "p90": p.p90, "p99": p.p99}


def serving_record(r: ServingResult) -> dict[str, Any]:
    """The JSON record of a serving result (docs/results.md, "Serving records")."""
    run, pw, mem = r.run, r.power, r.memory
    return {
        "scenario": r.scenario,
        "workload": "serving",
        "label": r.label,
        "requests_per_s": run.requests_per_s if run else None,
        "output_tokens_per_s": run.output_tokens_per_s if run else None,
        "tokens_per_s": run.tokens_per_s if run else None,
        "ttft_s": _percentiles(run.ttft_s if run else None),
        "tpot_s": _percentiles(run.tpot_s if run else None),
        "e2e_latency_s": _percentiles(run.e2e_latency_s if run else None),
        "kv_cache_capacity_tokens": mem.kv_capacity_tokens,
        "memory_per_gpu_bytes": mem.total_bytes,
        "memory_capacity_bytes": mem.hbm_bytes,
        "memory_fits": r.memory_fits,
        "gpus_total": r.gpus_total,
        "gpus_used": r.gpus_used,
        "energy_per_million_output_tokens_kwh": pw.facility_per_million_output_tokens_kwh if pw else None,
        "energy_per_million_output_tokens_it_kwh": pw.energy_per_million_output_tokens_kwh if pw else None,
        "cost_per_million_output_tokens_eur": pw.cost_eur() if pw else {},
        "carbon_per_million_output_tokens_kg": pw.carbon_kg() if pw else {},
        "avg_power_it_w": pw.avg_power_it_w if pw else None,
        "slo_met": bool(run.slo_met) if run else False,
        "schema_version": SCHEMA_VERSION,
        "slo": {"ttft_p99_s": r.slo.ttft_p99_s, "tpot_p99_s": r.slo.tpot_p99_s},
        "rate_per_s": r.rate_per_s,
        "deployment": {
            "model": r.model, "node": r.node, "gpu": r.gpu, "mig": r.mig, "precision": r.precision,
            "kv_cache": r.kv_cache, "tensor": r.tensor, "pipeline": r.pipeline, "replicas": r.replicas,
            "devices_per_replica": r.devices_per_replica, "instances_used": r.instances_used,
        },
        "memory_breakdown_bytes": {
            "weights": mem.weights_bytes - mem.weights_grace_bytes, "reserve": mem.reserve_bytes,
            "kv_cache": mem.kv_hbm_tokens * mem.kv_bytes_per_token,
            "weights_grace": mem.weights_grace_bytes, "kv_cache_grace": mem.kv_host_tokens * mem.kv_bytes_per_token,
        },
        "kv_bytes_per_token": mem.kv_bytes_per_token,
        "memory_advice": list(r.memory_advice),
        "engine": None if run is None else {
            "iterations": run.engine.iterations, "clock_advances": run.engine.steps,
            "busy_fraction": run.busy_fraction, "makespan_s": run.engine.makespan_s,
            "preemptions": run.engine.preemptions, "max_running": run.engine.max_running,
            "kv_peak_tokens": run.engine.kv_peak_tokens,
        },
        "country": r.country,
        "pue": r.pue,
        "power": None if pw is None else {
            "gpu_avg_w": pw.gpu_avg_w, "avg_power_it_w": pw.avg_power_it_w,
            "rental_per_million_output_tokens_eur": pw.rental_per_million_output_tokens_eur,
            "countries": _plain(pw.countries),
        },
        "warnings": list(r.warnings),
        "sources": dict(r.sources),
    }


@dataclass(frozen=True)
class CapacityResult:
    """The highest rate a serving deployment sustains within its SLO, and what a target rate needs."""
    scenario: str
    label: str
    capacity: Capacity | None        # None when the deployment cannot hold the load (``memory_fits``)
    replicas: int
    devices_per_replica: int         # GPUs, or MIG instances
    instances_per_gpu: int           # MIG instances of the profile on one GPU (1 without MIG)
    slo: SLOSpec
    sizing: Sizing | None = None
    alternatives: tuple["CapacityResult", ...] = ()
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return _finite(capacity_record(self) | {"alternatives": [capacity_record(a) for a in self.alternatives]})

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)


def capacity_record(r: CapacityResult) -> dict[str, Any]:
    """The JSON record of ``python -m twin capacity`` (docs/results.md, "Capacity records")."""
    cap = r.capacity
    per_replica = cap.per_replica_rate_per_s if cap else 0.0
    gpus_per_replica = r.devices_per_replica / r.instances_per_gpu
    return {
        "scenario": r.scenario,
        "workload": "serving",
        "label": r.label,
        "per_replica_rate_per_s": per_replica,
        "per_gpu_rate_per_s": per_replica / gpus_per_replica,
        "rate_per_s": cap.rate_per_s if cap else 0.0,
        "offline_requests_per_s": cap.offline_requests_per_s if cap else 0.0,
        "slo_bound": cap.slo_bound if cap else False,
        "memory_fits": cap is not None,
        "slo": {"ttft_p99_s": r.slo.ttft_p99_s, "tpot_p99_s": r.slo.tpot_p99_s},
        "replicas": r.replicas,
        "devices_per_replica": r.devices_per_replica,
        "instances_per_gpu": r.instances_per_gpu,
        "gpus_per_replica": gpus_per_replica,
        "target": _plain(r.sizing) if r.sizing else None,
        "sweep": [{"rate_per_s": run.rate_per_s, "requests_per_s": run.requests_per_s,
                   "output_tokens_per_s": run.output_tokens_per_s, "ttft_s": _percentiles(run.ttft_s),
                   "tpot_s": _percentiles(run.tpot_s), "slo_met": bool(run.slo_met)}
                  for run in (cap.sweep if cap else ())],
        "schema_version": SCHEMA_VERSION,
        "warnings": list(r.warnings),
    }


# ---------------------------------------------------------------------------
# Cluster operations (jobs: scenarios)


@dataclass(frozen=True)
class CarbonAware:
    """The carbon-aware policy against the same jobs played without it."""
    deferred_jobs: int
    mean_hold_s: float
    window_s: float                          # both runs counted over this span (the longer makespan)
    carbon_kg: dict[str, float]              # the whole cluster over the window, per country
    baseline_carbon_kg: dict[str, float]
    saved_kg: dict[str, float]
    mean_wait_s: float | None
    baseline_mean_wait_s: float | None
    makespan_s: float
    baseline_makespan_s: float


@dataclass(frozen=True)
class OperationsResult:
    """The answer for a ``jobs:`` scenario: many jobs on one cluster."""
    scenario: str
    cluster: ClusterSpec
    fabric: FabricSummary
    policy: str
    placement: str
    horizon_s: float
    seed: int
    run: ClusterRun
    accounts: Accounts
    waits: Waits
    completion: Completion
    utilisation: Utilisation
    power: PowerUse
    timeline: Timeline
    carbon_aware: CarbonAware | None
    failures_enabled: bool
    country: str
    services: dict[str, Service] = field(default_factory=dict)    # serving templates the jobs ran
    warnings: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def jobs(self) -> tuple[JobOutcome, ...]:
        return self.run.jobs

    def to_dict(self) -> dict[str, Any]:
        return _finite(operations_record(self))

    def to_flat(self) -> dict[str, Any]:
        """The record's scalar fields, one level deep (``flatten``), without sources: a row of a study's table."""
        record = operations_record(self)
        record.pop("sources", None)
        return flatten(_finite(record))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)


def _percentile_record(p: Quantiles) -> dict[str, Any]:
    return {"count": p.count, "mean": p.mean, "p50": p.p50, "p90": p.p90, "p99": p.p99}


def _charge(c: Charge) -> dict[str, Any]:
    return {"energy_it_kwh": c.energy_it_kwh, "energy_facility_kwh": c.energy_facility_kwh, "gpu_hours": c.gpu_hours,
            "carbon_kg": dict(c.carbon_kg), "energy_cost_eur": dict(c.energy_cost_eur),
            "rental_cost_eur": c.rental_cost_eur}


def _job(j: JobOutcome, c: Charge) -> dict[str, Any]:
    return {
        "name": j.name, "tenant": j.tenant, "template": j.template, "origin": j.origin, "status": j.status,
        "gpus": j.gpus, "gpus_used": j.gpus_used, "gpus_allocated": j.gpus_allocated,
        "submit_s": j.submit_s, "release_s": j.release_s, "carbon_hold_s": j.carbon_hold_s, "start_s": j.start_s,
        "end_s": j.end_s,
        "wait_s": j.wait_s, "turnaround_s": j.turnaround_s, "ideal_s": j.ideal_s,
        "slowdown": j.turnaround_s / j.ideal_s if j.turnaround_s is not None else None,
        "iterations": j.iterations, "iterations_done": j.iterations_done,
        "packed_step_s": j.packed_step_s, "mean_step_s": j.mean_step_s,
        "placement": list(j.placement), "scalable_units": j.scalable_units,
        "interruptions": j.interruptions, "lost_work_s": j.lost_work_s, "restart_s": j.restart_s,
        "repair_wait_s": j.repair_wait_s, "reserved_start_s": j.reserved_start_s,
        "nodes": [[s.node, s.start_s, s.end_s] for s in j.node_spans],
    } | _charge(c)


def operations_record(r: OperationsResult) -> dict[str, Any]:
    """The JSON record of a cluster-operations result (docs/results.md, "Operations records")."""
    run, u, w, c, p, t, a = r.run, r.utilisation, r.waits, r.completion, r.power, r.timeline, r.accounts
    aware = r.carbon_aware
    return {
        "scenario": r.scenario,
        "workload": "operations",
        "schema_version": SCHEMA_VERSION,
        "gpus_total": r.cluster.gpus,
        "nodes": r.cluster.nodes,
        "spare_nodes": r.cluster.spare_nodes,
        "gpus_per_node": r.cluster.node.gpus,
        "node": r.cluster.node.name,
        "scalable_units": r.fabric.scalable_units,
        "nodes_per_su": r.fabric.nodes_per_su,
        "oversubscription": r.fabric.oversubscription,
        "topology": r.fabric.topology,
        "node_su": list(run.node_su),
        "policy": r.policy,
        "placement": r.placement,
        "horizon_s": r.horizon_s,
        "seed": r.seed,
        "makespan_s": run.end_s,
        "jobs_submitted": len(run.jobs),
        "jobs_finished": c.finished,
        "jobs_timed_out": c.timed_out,
        "jobs_unfinished": c.unfinished,
        "utilisation": {"allocated": u.allocated, "busy": u.busy, "gpu_hours_allocated": u.gpu_hours_allocated,
                        "gpu_hours_jobs": u.gpu_hours_jobs, "fragmented_gpus": u.fragmented_gpus,
                        "fragmented": u.fragmented},
        "wait_s": {"all": _percentile_record(w.all),
                   "by_tenant": {k: _percentile_record(v) for k, v in w.by_tenant.items()},
                   "by_size": {k: _percentile_record(v) for k, v in w.by_size.items()},
                   "hold": _percentile_record(w.hold)},
        "turnaround_s": _percentile_record(c.turnaround_s),
        "slowdown": _percentile_record(c.slowdown),
        "step_slowdown": _percentile_record(c.step_slowdown),
        "spanning_jobs": c.spanning_jobs,
        "step_slowdown_spanning": _percentile_record(c.step_slowdown_spanning),
        "power": {"pue": p.pue, "mean_facility_w": p.mean_facility_w, "peak_facility_w": p.peak_facility_w,
                  "limit_w": p.limit_w, "hours_over_limit": p.hours_over_limit,
                  "share_over_limit": p.share_over_limit, "base_it_w": run.base_it_w,
                  "infrastructure_w": run.infrastructure_w, "node_idle_w": run.node_idle_w},
        "energy": {"cluster": _charge(a.cluster), "jobs": _charge(_sum(a.jobs, a.cluster)),
                   "overhead": _charge(a.overhead)},
        "tenants": {k: _charge(v) for k, v in a.tenants.items()},
        "countries": [{"code": g.code, "name": g.name, "intensity_g_per_kwh": g.annual_g_per_kwh,
                       "intensity_source": g.intensity_source, "hourly": g.hourly,
                       "price_eur_per_kwh": g.price_eur_per_kwh, "price_source": g.price_source}
                      for g in a.countries],
        "country": r.country,
        "carbon_aware": None if aware is None else {
            "deferred_jobs": aware.deferred_jobs, "mean_hold_s": aware.mean_hold_s, "window_s": aware.window_s,
            "carbon_kg": aware.carbon_kg,
            "baseline_carbon_kg": aware.baseline_carbon_kg, "saved_kg": aware.saved_kg,
            "mean_wait_s": aware.mean_wait_s, "baseline_mean_wait_s": aware.baseline_mean_wait_s,
            "makespan_s": aware.makespan_s, "baseline_makespan_s": aware.baseline_makespan_s},
        "failures": {"enabled": r.failures_enabled, "node_failures": run.failures,
                     "by_component": dict(run.failures_by_component), "replacements": run.replacements,
                     "spare_swaps": run.spare_swaps,
                     "interruptions": sum(j.interruptions for j in run.jobs),
                     "lost_work_s": sum(j.lost_work_s for j in run.jobs)},
        "timeline": {"bin_s": t.bin_s, "start_s": list(t.start_s), "gpus_allocated": list(t.gpus_allocated),
                     "gpus_busy": list(t.gpus_busy), "queued": list(t.queued), "running": list(t.running),
                     "fragmented_gpus": list(t.fragmented_gpus), "facility_w": list(t.facility_w),
                     "facility_peak_w": list(t.facility_peak_w)},
        "services": {name: _plain(svc) | {"devices": svc.devices, "gpus": svc.gpus}
                     for name, svc in r.services.items()},
        "simulation": {"events": run.events, "steps_priced": run.steps_priced},
        "jobs": [_job(j, ch) for j, ch in zip(run.jobs, a.jobs)],
        "warnings": list(r.warnings),
        "sources": dict(r.sources),
    }


def _sum(charges: tuple[Charge, ...], like: Charge) -> Charge:
    """The jobs' charges added up."""
    return Charge(
        energy_it_kwh=sum(c.energy_it_kwh for c in charges),
        energy_facility_kwh=sum(c.energy_facility_kwh for c in charges),
        gpu_hours=sum(c.gpu_hours for c in charges),
        carbon_kg={k: sum(c.carbon_kg[k] for c in charges) for k in like.carbon_kg},
        energy_cost_eur={k: None if like.energy_cost_eur[k] is None else sum(c.energy_cost_eur[k] for c in charges)
                         for k in like.energy_cost_eur},
        rental_cost_eur=None if like.rental_cost_eur is None else sum(c.rental_cost_eur for c in charges),
    )


def _finite(value: Any) -> Any:
    """JSON has no inf/nan: they become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
