"""The records of studies: a plan search (``PlanSearch``, its ``RankedPlan``s), a sweep (``SweepReport``)
and ``twin fit`` (``FitReport``, its ``FitRow``s and ``FitOption``s), and their JSON form
(docs/results.md, "Plan search", "Sweeps" and "Fit").

Each record's keys are its dataclass fields, in order, through ``twin.results``' ``serialise``; its
``Layout`` names the keys derived from them. A search's estimates (``PlanEstimate``) and full runs
(``TrainingResult``) are ``twin.api``'s answers and stay in ``twin.results``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from twin.bands import FIT_KEYS, PLAN_KEYS, Calibration, banded_row
from twin.results import PlanEstimate, TrainingResult
from twin.power.pricing import cost_parts
from twin.results.core import SCHEMA_VERSION, Layout, Record, plain, site_costs
from twin.results.power import site_cost_record

# The parallel settings a plan row shows, in its order.
PLAN_COLUMNS = ("tensor", "pipeline", "data", "expert", "microbatch", "virtual_stages", "schedule", "recompute",
                "zero", "sequence_parallel")
# What a plan row shows of a closed-form estimate or a full run, both by these names.
SHARED_METRICS = ("step_time_s", "time_to_train_s", "tokens_per_s", "mfu", "memory_per_gpu_bytes", "memory_fits",
                  "gpu_hours", "energy_facility_kwh", "peak_power_it_w", "country")
# What a plan row adds for a full run.
RUN_METRICS = ("ideal_time_to_train_s", "goodput", "interruptions", "finished")


@dataclass(frozen=True)
class RankedPlan(Record):
    """A plan a search kept: its cluster option, its closed-form estimate and, when the top
    candidates were played in full (SimPy step, failure Monte Carlo), that result, without its
    timelines (``twin run`` on the plan's scenario shows them)."""
    option: dict[str, Any]           # the varied keys of the cluster option ({} when the cluster is fixed)
    estimate: PlanEstimate
    result: TrainingResult | None = None
    calibration: Calibration | None = None     # the option's training band (twin.bands), for the estimate

    @property
    def band(self) -> Calibration | None:
        """The band of what the row shows: the full run's when played, else the estimate's."""
        return self.result.calibration if self.result is not None else self.calibration

    def record(self) -> dict[str, Any]:
        return plan_row(self)


def _metrics(p: RankedPlan) -> dict[str, Any]:
    e, r = p.estimate, p.result
    if r is None:
        return {k: getattr(e, k) for k in SHARED_METRICS} | {
            "carbon_kg": e.carbon_kg, "cost_eur": e.cost_eur, "rental_cost_eur": e.rental_cost_eur,
            "cost_parts_eur": None if e.cost_parts is None else cost_parts(e.cost_parts)}
    return {k: getattr(r, k) for k in SHARED_METRICS} | {
        "carbon_kg": r.carbon_kg[r.country], "cost_eur": r.total_cost_eur[r.country],
        "rental_cost_eur": r.rental_cost_eur, "cost_parts_eur": site_cost_record(r.power)} | {
            k: getattr(r, k) for k in RUN_METRICS} | {
        "closed_form": {"step_time_s": e.step_time_s, "time_to_train_s": e.time_to_train_s}}


def plan_row(p: RankedPlan) -> dict[str, Any]:
    """One plan of a search: parallel settings, then the result fields (the full run's when played)."""
    plan = p.estimate.plan
    return banded_row({"option": dict(p.option)} | {k: getattr(plan, k) for k in PLAN_COLUMNS} | {
        "description": plan.describe(), "gpus": plan.gpus,
        "engine": "simpy" if p.result is not None else "closed-form"} | _metrics(p), p.band, PLAN_KEYS)


def _scenario_plan(s: PlanSearch) -> dict[str, Any]:
    return {"scenario_plan": plan_row(s.baseline) if s.baseline is not None else None}


def _plans(s: PlanSearch) -> dict[str, Any]:
    return {"plans_evaluated": s.plans_evaluated, "plans_pruned": s.plans_pruned, "exhaustive": s.exhaustive,
            "plans": [plan_row(p) for p in s.plans]}


@dataclass(frozen=True)
class PlanSearch(Record):
    """What ``python -m twin plan`` found (``search_record``)."""
    layout: ClassVar[Layout] = Layout(
        after={"constraints": _plans, "refined": _scenario_plan, "notes": lambda s: {"schema_version": SCHEMA_VERSION}},
        omit=frozenset({"plans_evaluated", "exhaustive", "plans", "seconds", "baseline"}))
    scenario: str
    objective: str                   # time | cost | carbon | energy
    constraints: tuple[str, ...]     # as written (deadline=30d)
    plans_evaluated: int             # timed in closed form
    exhaustive: bool                 # every plan of the space evaluated or pruned
    plans: tuple[RankedPlan, ...]    # best first
    plans_considered: int            # plans of the search space
    plans_infeasible: int            # the model, the batch or the cluster cannot split them
    plans_over_memory: int           # do not fit the GPU's memory
    plans_equivalent: int            # the same plan as one already evaluated (ZeRO stages without data parallelism)
    plans_bounded: int               # slower, even at their floor, than the plans kept (objective time)
    plans_rejected: int              # evaluated, but break a constraint
    options: int                     # cluster options searched
    option_errors: tuple[str, ...]   # options that are not valid scenarios, one line each
    seconds: float                   # the closed-form pass (not in the record: the record is deterministic)
    refined: int                     # top candidates played in full
    baseline: RankedPlan | None      # the scenario's own plan (``scenario_plan`` in the record)
    notes: tuple[str, ...] = ()

    @property
    def plans_pruned(self) -> int:
        return self.plans_infeasible + self.plans_over_memory + self.plans_equivalent + self.plans_bounded


def search_record(s: PlanSearch) -> dict[str, Any]:
    """The JSON record of a plan search (docs/results.md, "Plan search")."""
    return s.record()


@dataclass(frozen=True, kw_only=True)
class SweepReport(Record):
    """What a sweep did and found (``python -m twin sweep``)."""
    layout: ClassVar[Layout] = Layout(after={"error_messages": lambda s: {"schema_version": SCHEMA_VERSION}},
                    omit=frozenset({"seconds", "where", "study", "table"}))
    points: int                              # rows of the study: every point, run now or before
    ran: int                                 # points run now
    reused: int                              # points found in the study directory
    dropped: int                             # rows of the directory that are not points of this study
    errors: int
    directory: str | None = None
    objectives: tuple[str, ...] = ()         # the front's columns, all minimised
    front: list[dict[str, Any]] = field(default_factory=list)   # point, varied keys and objectives
    error_messages: dict[str, int]           # each distinct error and how many points raised it
    seconds: float
    where: str                               # the executor
    study: dict[str, Any]                    # what study.yaml says
    table: Any = None                        # every row (a pyarrow table); not part of the record

    @property
    def points_per_s(self) -> float:
        return self.ran / self.seconds if self.seconds > 0 else 0.0

    def record(self) -> dict[str, Any]:
        return {"scenario": self.study.get("scenario_name")} | super().record()


def sweep_record(s: SweepReport) -> dict[str, Any]:
    """The JSON summary of a sweep (docs/results.md, "Sweeps"): counts and the Pareto front."""
    return s.record()


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
    result: TrainingResult | None    # closed-form step; None when no plan fits
    plans_tried: int                 # plans whose memory was computed
    plans_timed: int                 # plans that fit and were not dominated, whose step was played
    least_bytes: float               # the least memory per GPU any plan needs (HBM that must stay resident)
    capacity_bytes: float


def _fit_result(r: TrainingResult) -> dict[str, Any]:
    """What a fit row shows of the option's best plan."""
    pw = r.power
    return {
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
    } | site_costs(pw) | {"total_cost_eur": pw.total_cost_eur(), "cost_parts_eur": site_cost_record(pw)}


def fit_row(row: FitRow) -> dict[str, Any]:
    """One option of ``twin fit``: the option, whether and how it fits."""
    out = plain(row.option) | {
        "fits": row.result is not None, "plans_tried": row.plans_tried, "plans_timed": row.plans_timed,
        "least_memory_per_gpu_bytes": row.least_bytes, "memory_capacity_bytes": row.capacity_bytes}
    return out if row.result is None else banded_row(out | _fit_result(row.result), row.result.calibration, FIT_KEYS)


def _options(r: FitReport) -> dict[str, Any]:
    """The options' rows, and the count of those that fit but were left unanswered where there are any."""
    return {"options": [fit_row(row) for row in r.rows]} | ({"options_unranked": r.unranked} if r.unranked else {})


@dataclass(frozen=True)
class FitReport(Record):
    """``python -m twin fit``: every option that fits, ranked, and those that do not."""
    layout: ClassVar[Layout] = Layout(
        after={"country": _options, "notes": lambda r: {"schema_version": SCHEMA_VERSION}},
        omit=frozenset({"rows", "unranked"}))
    scenario: str
    by: str                          # time | cost
    country: str
    rows: tuple[FitRow, ...]         # options answered that fit, best first, then the others (``options``)
    notes: tuple[str, ...] = ()
    unranked: int = 0                # options that fit, left unanswered: slower than the best rows asked for


def fit_record(report: FitReport) -> dict[str, Any]:
    """The JSON record of ``twin fit`` (docs/results.md)."""
    return report.record()
