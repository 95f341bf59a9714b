"""The record of a training (or fine-tuning) scenario, and a plan's closed-form estimate.

``TrainingResult``'s fields are its record's keys, in order; ``LAYOUT`` names the rest: the plan,
fine-tuning and power blocks, and the keys derived from the step, the memory and the power assessment
(docs/results.md, "Contract keys" and "Further keys").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from twin.bands import TRAINING_KEYS, Calibration, with_calibration
from twin.engine.iteration import Span
from twin.jobs.model import Event, Segment
from twin.engine.stack import StackProfile
from twin.engine.step import StepBreakdown
from twin.network.records import FabricSummary
from twin.power.assess import PowerAssessment
from twin.power.pricing import Cost
from twin.results.core import SCHEMA_VERSION, Layout, Result, finite, plain, site_costs
from twin.results.power import power_record, site_cost_record
from twin.workload.finetune import WEIGHT_FORMATS, FinetuneSpec
from twin.workload.memory import MemoryBreakdown
from twin.workload.plan import ParallelPlan

if TYPE_CHECKING:      # the failures, storage and building models load only for a scenario that asks for them
    from twin.engine.job import FailureSummary
    from twin.power.cooling import BuildingYear
    from twin.storage.assess import StorageReport


def _headline(r: TrainingResult) -> dict[str, Any]:
    pw = r.power
    return {"energy_it_kwh": pw.energy_it_kwh, "energy_facility_kwh": pw.energy_facility_kwh,
            "avg_power_it_w": pw.avg_power_it_w, "peak_power_it_w": pw.peak_power_it_w} | site_costs(pw) | {
        "schema_version": SCHEMA_VERSION}


def _plan(r: TrainingResult) -> dict[str, Any]:
    return plain(r.plan) | {"microbatches": r.plan.microbatches, "description": r.plan.describe(), "gpus": r.gpus_used}


def finetune_record(r: TrainingResult) -> dict[str, Any]:
    """``finetune``: the method, its adapters and the base's storage (docs/results.md)."""
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


def storage_record(r: TrainingResult) -> dict[str, Any] | None:
    """``storage`` (docs/results.md): the dataset, the feed of a step, staging and checkpoints."""
    s = r.storage
    if s is None:
        return None
    return plain(s) | {"starved": s.feed.starved, "feed_s": s.feed.feed_s, "demand_Bps": s.feed.demand_Bps}


def _site(r: TrainingResult) -> dict[str, Any]:
    return {"carbon_intensity_g_per_kwh": r.power.intensity(), "electricity_price_eur_per_kwh": r.power.price()}


def _totals(r: TrainingResult) -> dict[str, Any]:
    return {"embodied_carbon_kg": r.embodied_carbon_kg, "total_cost_eur": r.total_cost_eur,
            "rental_cost_eur": r.rental_cost_eur, "cost_eur": site_cost_record(r.power)}


LAYOUT = Layout(
    convert={"plan": _plan, "finetune": finetune_record, "power": lambda r: power_record(r.power),
             "failures": lambda r: plain(r.failures) if r.failures else {}, "storage": storage_record},
    after={"goodput": _headline,
           "tokens_per_step": lambda r: {"tokens_per_s_per_gpu": r.tokens_per_s_per_gpu},
           "step": lambda r: {"step_breakdown_s": r.step.parts(), "bottleneck": r.step.bottleneck},
           "memory": lambda r: {"memory_breakdown_bytes": r.memory.parts()},
           "memory_advice": lambda r: {"memory_required_bytes": r.memory.required_bytes},
           "finetune": _site, "power": _totals,
           "events": lambda r: {"timeline": {"segments": plain(r.segments), "events": plain(r.events)}}},
    omit=frozenset({"step", "memory", "segments", "events", "calibration"}),
)
# The same without the job, step and power timelines, which a summary or a table row does not read: they are
# not worked out at all (the 16,384-GPU run's step timeline alone is half a megabyte of JSON).
LAYOUT_WITHOUT_TIMELINES = Layout(
    convert={**LAYOUT.convert, "power": lambda r: power_record(r.power, timelines=False)},
    after={name: derive for name, derive in LAYOUT.after.items() if name != "events"},
    omit=LAYOUT.omit | {"step_timeline"},
)


@dataclass(frozen=True, kw_only=True)
class TrainingResult(Result):
    """The answer for a training (or fine-tuning) scenario."""
    workload: ClassVar[str] = "training"
    layout: ClassVar[Layout] = LAYOUT
    gpus_total: int                  # every GPU of the cluster, spares included
    gpus_used: int
    step_time_s: float
    tokens_per_s: float
    model_tflops_per_gpu: float
    hardware_tflops_per_gpu: float
    mfu: float
    precision: str                   # the training precision, whose dense peak MFU is measured against
    peak_tflops_per_gpu: float       # that dense peak, TFLOP/s (fp32 training: the TF32 tensor peak)
    memory_per_gpu_bytes: float
    memory_capacity_bytes: float
    memory_fits: bool
    ideal_time_to_train_s: float
    time_to_train_s: float
    gpu_hours: float
    interruptions: float
    goodput: float
    finished: bool                   # False: the job simulation reached its horizon before the end
    country: str
    tokens: float
    tokens_per_step: int
    hfu: float                       # hardware FLOPs utilisation (counts recomputation)
    plan: ParallelPlan
    stack: StackProfile              # the software stack the step was priced for, overrides applied
    step: StepBreakdown
    memory: MemoryBreakdown
    memory_advice: list[str]
    longest_seq_len: int             # the longest sequence one micro-batch could hold on this GPU, same plan
    params: int                      # the model's parameters
    trainable_params: int            # parameters the optimizer updates: the model, or its adapters
    finetune: FinetuneSpec           # its weights resolved to a storage format
    pue: float
    power: PowerAssessment
    failures: FailureSummary | None = None
    segments: list[Segment] = field(default_factory=list)      # the median run's timeline
    events: list[Event] = field(default_factory=list)
    fabric: FabricSummary
    step_timeline: tuple[Span, ...] = ()
    storage: StorageReport | None = None           # training.data: the data path and the file system
    building: BuildingYear | None = None           # site.cooling: PUE per hour and per year
    calibration: Calibration | None = None         # error band and site profile (twin.bands), set by twin.api

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

    def banded(self, record: dict[str, Any]) -> dict[str, Any]:
        """``record`` with the error band's ``KEY_low``/``KEY_high`` beside each headline number."""
        return with_calibration(record, self.calibration, TRAINING_KEYS)

    def record(self, timelines: bool = True) -> dict[str, Any]:
        """The JSON record (docs/results.md); ``timelines`` False leaves out the job, step and power
        timelines (lists that a table row does not hold)."""
        record = super().record(timelines)
        if not timelines and record["building"] is not None:          # its 8,760 hourly values
            del record["building"]["hourly_pue"], record["building"]["hourly_outdoor_c"]
        return record

    def layout_of(self, timelines: bool) -> Layout:
        return LAYOUT if timelines else LAYOUT_WITHOUT_TIMELINES

    def described(self) -> dict[str, Any]:
        """The record without its timelines: what the text summary reads (it prints none of them)."""
        return finite(self.banded(self.record(timelines=False)))


def training_record(r: TrainingResult, timelines: bool = True) -> dict[str, Any]:
    """The JSON record of a training result (docs/results.md)."""
    return r.record(timelines)


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
    cost_parts: Cost | None = None   # the site's total by part (power/pricing.py); None when GPUs are not priced

    @property
    def step_time_s(self) -> float:
        return self.step.step_s

    @property
    def memory_per_gpu_bytes(self) -> float:
        return self.memory.total_bytes

    @property
    def memory_fits(self) -> bool:
        """What a step cannot do without fits the GPU (paged optimizer states may live in host memory)."""
        return self.memory.required_bytes <= self.memory_capacity_bytes
