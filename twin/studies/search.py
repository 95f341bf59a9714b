"""Search over ways to run a job: enumerate, prune what cannot run or fit, rank the rest.

Three steps, reusable by any study that varies hardware, method or plan:

1. **enumerate** options (a node type, a GPU count, a fine-tuning method and the storage
   of the base) and, for each, the parallel plans worth trying (tensor and pipeline sizes
   that divide the model and the GPUs, ZeRO stages, recomputation);
2. **prune** before simulating anything: a plan the model or the batch cannot split
   (``InfeasibleError``) or whose memory does not fit the GPU is dropped, memory being
   closed-form and cheap; of the plans that fit, one that recomputes more, or gathers
   parameters (ZeRO-3) where another shards only gradients (ZeRO-2), than another fitting
   plan of the same shape is dominated and dropped;
3. **rank**: the survivors' step is played with the closed-form schedule, the fastest
   plan of each option is answered in full (time, energy, cost per country) and the
   options are ranked by time to train or by cost.

Each option is a variant of the user's scenario (``Scenario.model_copy``): the model,
the data, the batch, the site and the efficiencies stay as written. Failures are left
out (a search compares steady throughput).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from twin import catalog
from twin.api import Scenario, memory_of, simulate, step_of
from twin.api.specs import model_of
from twin.errors import InfeasibleError, ScenarioError
from twin.hardware.specs import node_spec
from twin.results import FitOption, FitReport, FitRow
from twin.scenario import Failures
from twin.workload.model import ModelSpec

RECOMPUTE_ORDER = ("none", "selective", "full")
ZERO_STAGES = (0, 1, 2, 3)
# Storage of the frozen base tried for each method (training.weights); full training keeps its own.
METHOD_WEIGHTS = {"lora": ("bf16", "fp8", "int8", "nf4"), "qlora": ("nf4",)}
BY = ("time", "cost")


@dataclass(frozen=True)
class PlanChoice:
    """One parallel plan of an option: what the search varies."""
    tensor: int
    pipeline: int
    data: int
    zero: int
    recompute: str

    def dominates(self, other: "PlanChoice") -> bool:
        """At least as fast for certain: the same shape, no more recomputation (it only adds work), and the
        same ZeRO stage, or ZeRO-2 against ZeRO-3 (the same per-micro-batch gradient reduce-scatters, with
        parameter gathers on top). Across ZeRO-0, 1 and 2 the trade depends on the stack: ZeRO-2 reduces
        gradients unit by unit beside the backward where a stack may leave ZeRO-1's once-per-step
        reduction exposed, so none of them dominates another."""
        if (self.tensor, self.pipeline) != (other.tensor, other.pipeline) or self == other:
            return False
        less_recompute = RECOMPUTE_ORDER.index(self.recompute) <= RECOMPUTE_ORDER.index(other.recompute)
        less_zero = self.zero == other.zero or (self.zero == 2 and other.zero == 3)
        return less_recompute and less_zero


def powers_of_two(limit: int) -> list[int]:
    out, n = [], 1
    while n <= limit:
        out.append(n)
        n *= 2
    return out


def gpu_counts(gpus_per_node: int, max_gpus: int) -> list[int]:
    """1, 2, 4, ... GPUs of one node, then whole nodes (1, 2, 4, ... nodes), up to ``max_gpus``."""
    inside = [g for g in powers_of_two(gpus_per_node) if g < gpus_per_node and g <= max_gpus]
    return inside + [gpus_per_node * n for n in powers_of_two(max_gpus // gpus_per_node)]


def plan_choices(model: ModelSpec, gpus: int, gpus_per_node: int,
                 recompute_levels: tuple[str, ...] = RECOMPUTE_ORDER) -> Iterator[PlanChoice]:
    """Plans worth trying on ``gpus`` GPUs: tensor parallelism inside a node dividing the heads,
    the KV heads and the FFN; pipeline stages no more than the layers; every ZeRO stage
    when there is data parallelism; every recomputation level asked for."""
    for t in powers_of_two(min(gpus, gpus_per_node)):
        if gpus % t or model.heads % t or model.ffn_hidden % t or (model.kv_heads % t and t % model.kv_heads):
            continue
        for p in powers_of_two(gpus // t):
            if (gpus // t) % p or p > model.layers:
                continue
            d = gpus // (t * p)
            for zero in ZERO_STAGES if d > 1 else (0,):
                for recompute in recompute_levels:
                    yield PlanChoice(t, p, d, zero, recompute)


def fit_options(scenario: Scenario, max_gpus: int, nodes: list[str] | None = None) -> list[FitOption]:
    """Every catalog node type (or ``nodes``) whose GPU runs the scenario's precision, every GPU count,
    every method and storage of the base."""
    tr = scenario.training
    methods = [("full", "fp32" if tr.precision in ("fp32", "tf32") else "bf16")]
    if tr.precision == "fp8":
        methods.append(("full", "fp8"))
    methods += [(m, w) for m, ws in METHOD_WEIGHTS.items() for w in ws]
    out = []
    for name in nodes or catalog.names("nodes"):
        node = node_spec(name, "--nodes")
        try:
            node.gpu.peak(tr.precision)
        except KeyError:                 # no tensor-core peak for the scenario's precision (fp8 on A100)
            continue
        for gpus in gpu_counts(node.gpus, max_gpus):
            out += [FitOption(name, gpus, -(-gpus // node.gpus), m, w) for m, w in methods]
    return out


def variant(scenario: Scenario, option: FitOption, choice: PlanChoice | None = None) -> Scenario:
    """The user's scenario run on ``option`` with plan ``choice`` (failures left out)."""
    tr, cl = scenario.training, scenario.cluster
    cluster = cl.model_copy(update={"node": option.node, "nodes": option.nodes, "spare_nodes": 0,
                                    "fabric": cl.fabric.model_copy(update={"link": None})})
    training = {"method": option.method, "weights": None if option.method == "qlora" else option.weights,
                "lora": tr.lora if option.method != "full" else None}
    if choice is not None:
        training["parallelism"] = tr.parallelism.model_copy(update={
            "tensor": choice.tensor, "pipeline": choice.pipeline, "data": choice.data, "zero": choice.zero,
            "recompute": choice.recompute, "virtual_stages": 1, "schedule": "1f1b", "expert": 1})
    return scenario.model_copy(update={"cluster": cluster, "training": tr.model_copy(update=training),
                                       "failures": Failures()})


def best_plan(scenario: Scenario, option: FitOption, model: ModelSpec, comms: dict | None = None) -> FitRow:
    """Prune the option's plans by memory and dominance, play the rest, answer the fastest in full.

    ``comms`` carries the communication models of plans already played on the same cluster
    (``twin.api.build``) from one option to the next."""
    node = node_spec(option.node)
    capacity = node.gpu.memory_bytes
    tried, least = 0, float("inf")
    fitting: list[tuple[PlanChoice, Scenario]] = []
    # Fused attention stores no scores and recomputes nothing under "selective": it is "none" again.
    levels = RECOMPUTE_ORDER if scenario.training.attention == "standard" else ("none", "full")
    for choice in plan_choices(model, option.gpus, node.gpus, levels):
        candidate = variant(scenario, option, choice)
        try:
            _, memory, capacity = memory_of(candidate)
        except InfeasibleError:
            continue
        tried += 1
        least = min(least, memory.required_bytes)
        if memory.required_bytes <= capacity:
            fitting.append((choice, candidate))
    kept = [(c, s) for c, s in fitting if not any(o.dominates(c) for o, _ in fitting)]
    if not kept:
        return FitRow(option, None, tried, 0, least, capacity)
    fastest = min(kept, key=lambda cs: step_of(cs[1], comms).step_s)[1]
    return FitRow(option, simulate(fastest, closed_form=True), tried, len(kept), least, capacity)


def _cost(row: FitRow, country: str) -> float:
    """Total cost at the site in EUR (energy, plus rental when the scenario prices GPU-hours); where the
    site's electricity has no price, its facility energy in kWh (the same for every option)."""
    pw = row.result.power
    total = pw.total_cost_eur().get(country)
    return total if total is not None else pw.energy_facility_kwh


def search(scenario: Scenario, options: list[FitOption], by: str = "time") -> FitReport:
    """Every option's best plan, the options that fit ranked by ``by`` (time or cost), then the others."""
    if by not in BY:
        raise ScenarioError("--by", f"{by!r} is not allowed; allowed: {', '.join(BY)}")
    model = model_of(scenario.training.model)
    comms: dict = {}
    rows = [best_plan(scenario, option, model, comms) for option in options]
    fits = [r for r in rows if r.result is not None]
    country = scenario.site.country
    if fits:
        country = fits[0].result.country
    if by == "time":
        fits.sort(key=lambda r: (r.result.time_to_train_s, r.option.gpus))
    else:
        fits.sort(key=lambda r: (_cost(r, country), r.result.time_to_train_s))
    others = sorted((r for r in rows if r.result is None), key=lambda r: r.least_bytes / r.capacity_bytes)
    notes = []
    if by == "cost":
        notes.append("the catalog holds no GPU-hour list prices: cost is the site's electricity"
                     + (" plus site.gpu_hour_price for every GPU type alike" if scenario.site.gpu_hour_price
                        else "; set site.gpu_hour_price to add rental"))
    return FitReport(scenario.name, by, country, tuple(fits + others), tuple(notes))


def fit(scenario: Scenario, by: str = "time", max_gpus: int | None = None, nodes: list[str] | None = None) -> FitReport:
    """``python -m twin fit``: the scenario's job on every node type and GPU count, method and storage,
    up to ``max_gpus`` (default: 8, or the scenario's cluster when larger)."""
    if scenario.training is None:
        raise ScenarioError("training", "fit searches training (and fine-tuning) scenarios; this one has none")
    if max_gpus is None:
        max_gpus = max(8, (scenario.cluster.nodes - scenario.cluster.spare_nodes)
                       * node_spec(scenario.cluster.node).gpus)
    if max_gpus < 1:
        raise ScenarioError("--max-gpus", f"{max_gpus} is not allowed: at least 1")
    return search(scenario, fit_options(scenario, max_gpus, nodes), by)
