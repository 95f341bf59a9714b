"""Search: enumerate the ways to run a job, prune what cannot run, rank the rest; Pareto fronts.

One machinery serves every search: plans priced on one prepared scenario
(``twin.api.prepare``, ``plan_memory``, ``estimate``), pruned by divisibility and memory
before their step is timed, ranked by an objective, the best answered in full.
``python -m twin plan`` (``search_plans``) searches parallel plans and cluster options;
``python -m twin fit`` (``fit``) searches node types, GPU counts and fine-tuning methods;
sweeps (``sweep.py``) draw their Pareto front with ``pareto_front``.

``python -m twin plan`` searches, for each cluster option (the scenario's cluster, or each
point of ``--vary`` over cluster keys), the plans of ``plans.PLAN_RULES``; ``python -m twin fit``
those of ``plans.FIT_RULES`` on each of its options. Both draw them from one generator,
``plans.plan_choices`` (its docstring lists the sizes each dimension takes).

Each plan is checked (``InfeasibleError``: it cannot split), its memory per GPU computed
(closed form, cheap) and dropped when it does not fit; the rest are timed in closed form
(``twin.api.estimate``) on one prepared scenario, so no scenario is validated per plan.
Plans that break a constraint are rejected. The best ``refine`` are then played in full,
SimPy step and failure Monte Carlo (``twin.api.simulate``), and ranked again. The search
is exhaustive when every plan of the space was evaluated or pruned.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from twin import collector
from twin.api import (
    Prepared,
    Scenario,
    catalog_names,
    estimate,
    parse_scenario,
    plan_memory,
    plan_passes_floor_s,
    plan_step_floor_s,
    plan_step_s,
    prepare,
    scenario_calibration,
    simulate,
    with_overrides,
)
from twin.errors import InfeasibleError, ScenarioError
from twin.hardware.specs import node_spec
from twin.hardware.topology import node_shape
from twin.options import (FIT_RANKINGS, OBJECTIVES, WEIGHT_STORAGES, ConstraintName, FitRanking, Objective,
                          recompute_levels)
from twin.power.pricing import owned_nodes
from twin.results import PlanEstimate, Result
from twin.studies.records import FitOption, FitReport, FitRow, PlanSearch, RankedPlan
from twin.studies.plans import PlanChoice, gpu_counts, plan_choices, plan_space, undominated
from twin.studies.space import Space
from twin.units import parse_energy_kwh, parse_mass_kg, parse_money_eur, parse_quantity
from twin.workload.model import ModelSpec
from twin.workload.plan import ParallelPlan


# The columns of a sweep's table its Pareto front is drawn over (all minimised), by workload:
# a training run's time, cost and carbon; a serving deployment's p99 time to first token and
# its cost and carbon per million output tokens; a shared cluster's p90 wait and the energy
# cost and carbon of the whole cluster.
SWEEP_OBJECTIVES = {
    "training": ("time_to_train_s", "site_total_cost_eur", "site_carbon_kg"),
    "serving": ("ttft_s.p99", "site_cost_per_million_output_tokens_eur", "site_carbon_per_million_output_tokens_kg"),
    "operations": ("wait_s.all.p90", "site_energy.cluster.energy_cost_eur", "site_energy.cluster.carbon_kg"),
}
# Plans one search evaluates at most; past it the search says it was not exhaustive.
MAX_PLANS = 1_000_000
# Plans played in full after the closed-form pass, at least.
MIN_REFINED = 10
SEARCHED_KEYS = "training.parallelism"


# -- objectives and constraints -------------------------------------------------------------

def objective_of(value: PlanEstimate | Result, objective: Objective) -> float | None:
    """The quantity an objective minimises, for a closed-form estimate or a full result."""
    if isinstance(value, PlanEstimate):
        return {"time": value.time_to_train_s, "cost": value.cost_eur, "carbon": value.carbon_kg,
                "energy": value.energy_facility_kwh}[objective]
    return {"time": value.time_to_train_s, "cost": value.total_cost_eur[value.country],
            "carbon": value.carbon_kg[value.country], "energy": value.energy_facility_kwh}[objective]


@dataclass(frozen=True)
class Constraint:
    """An upper bound: ``deadline=30d``, ``power=1.2MW``, ``energy=5GWh``, ``cost=2M EUR``, ``carbon=500t``."""
    name: ConstraintName
    limit: float                     # SI (s, W), or kWh, or EUR, or kg
    text: str

    def value(self, of: PlanEstimate | Result) -> float | None:
        if self.name == "deadline":
            return of.time_to_train_s
        if self.name == "power":
            return of.peak_power_it_w
        if self.name == "energy":
            return of.energy_facility_kwh
        return objective_of(of, "cost" if self.name == "cost" else "carbon")

    def met(self, of: PlanEstimate | Result) -> bool:
        value = self.value(of)
        return value is not None and value <= self.limit


# Each constraint's limit in the unit it is compared in: s, W, kWh, EUR, kg.
_LIMITS: dict[ConstraintName, Callable[[str, str], float]] = {
    "deadline": lambda text, field: parse_quantity(text, "time", field),
    "power": lambda text, field: parse_quantity(text, "power", field),
    "energy": parse_energy_kwh, "cost": parse_money_eur, "carbon": parse_mass_kg,
}


# A constraint's limit needs its unit: a bare number would be read in SI (a deadline of 30 seconds).
_UNIT_NEEDED = {"deadline": "30d", "power": "1.2MW", "energy": "5GWh", "carbon": "500t"}


def checked_constraint(constraint: Constraint, limit: str) -> Constraint:
    """A parsed constraint whose limit is a finite amount above zero, written with its unit (cost may be a
    bare amount in euros); refused in one line otherwise."""
    field = "--constraint"
    if constraint.name in _UNIT_NEEDED and _FLOAT_ONLY.match(limit):
        raise ScenarioError(field, f"'{constraint.text}' is not allowed: write the unit, e.g. "
                            f"{constraint.name}={_UNIT_NEEDED[constraint.name]}")
    if not 0 < constraint.limit < math.inf:
        raise ScenarioError(field, f"'{constraint.text}' is not allowed: the limit must be a finite amount above 0")
    return constraint


_FLOAT_ONLY = re.compile(r"^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$")


def parse_constraint(text: str) -> Constraint:
    """``NAME=LIMIT``, checked (``checked_constraint``)."""
    _, _, limit = text.partition("=")
    return checked_constraint(_parse_constraint(text), limit.strip())


def _parse_constraint(text: str) -> Constraint:
    """``NAME=LIMIT``: deadline (a duration), power (IT power at its peak), energy (facility energy),
    cost (euros at the site: energy and rental) or carbon (operational, at the site)."""
    name, sep, limit = text.partition("=")
    name, limit = name.strip(), limit.strip()
    field = "--constraint"
    allowed = "deadline=30d, power=1.2MW, energy=5GWh, cost=2M EUR or carbon=500t"
    if not sep or not limit:
        raise ScenarioError(field, f"'{text}' is not allowed: write NAME=LIMIT, e.g. {allowed}")
    if name not in _LIMITS:
        raise ScenarioError(field, f"unknown constraint '{name}'; allowed: {allowed}")
    return Constraint(name, _LIMITS[name](limit, field), text)


# -- Pareto fronts ----------------------------------------------------------------------------

def pareto_front(rows: list[dict[str, Any]], objectives: tuple[str, ...] | list[str]) -> list[dict[str, Any]]:
    """Rows that no other row beats on every objective (all minimised), by the first objective.

    Rows without a value for an objective are left out. A row is beaten when another is no
    worse on every objective and better on one; rows with equal values all stay.
    """
    if not objectives:
        return []
    scored = [(tuple(r.get(o) for o in objectives), r) for r in rows]
    scored = [(v, r) for v, r in scored if all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                               and math.isfinite(x) for x in v)]
    scored.sort(key=lambda vr: vr[0])
    front: list[tuple[tuple, dict]] = []
    for values, row in scored:
        beaten = any(all(a <= b for a, b in zip(kept, values)) and kept != values for kept, _ in front)
        if not beaten:
            front.append((values, row))
    return [row for _, row in front]


def sweep_objectives(table) -> tuple[str, ...]:
    """The objectives of a sweep's Pareto front (a pyarrow table of its rows): its workload's, those
    some row has a value for."""
    names = table.column_names
    kinds = set(table.column("workload").to_pylist()) if "workload" in names else set()
    workload = next((w for w in ("serving", "operations") if w in kinds), "training")
    return tuple(o for o in SWEEP_OBJECTIVES[workload] if o in names and table.column(o).null_count < table.num_rows)


# -- the search -------------------------------------------------------------------------------

@dataclass
class _Tally:
    """What became of the plans of a search (``PlanSearch``'s counts)."""
    considered: int = 0
    infeasible: int = 0
    over_memory: int = 0
    equivalent: int = 0
    evaluated: int = 0
    rejected: int = 0
    exhaustive: bool = True


def _closed_form_pass(prepared: Prepared, option: dict[str, Any], constraints: list[Constraint], tally: _Tally,
                      budget: int) -> list[RankedPlan]:
    """Every plan of one option: pruned, or evaluated in closed form; those that meet the constraints."""
    kept: list[RankedPlan] = []
    seen: set = set()
    for request in plan_space(prepared):
        if tally.evaluated >= budget:
            tally.exhaustive = False
            break
        tally.considered += 1
        try:
            planned = plan, memory = plan_memory(prepared, request)
        except InfeasibleError:
            tally.infeasible += 1
            continue
        if plan.data == 1:                        # without data parallelism every ZeRO stage is one plan
            key = replace(plan, zero=0)
            if key in seen:
                tally.equivalent += 1
                continue
            seen.add(key)
        if memory.required_bytes > prepared.cluster.node.gpu.memory_bytes:
            tally.over_memory += 1
            continue
        tally.evaluated += 1
        guess = estimate(prepared, request, planned)
        if not all(c.met(guess) for c in constraints):
            tally.rejected += 1
            continue
        kept.append(RankedPlan(option, guess))
    return kept


def _variant(data: dict[str, Any], plan: RankedPlan) -> dict[str, Any]:
    """The scenario data of one plan of one option: what ``twin run`` would be given (the rank order,
    sequence parallelism and the stack stay as written)."""
    p = plan.estimate.plan
    settings = {"tensor": p.tensor, "pipeline": p.pipeline, "data": p.data, "expert": p.expert,
                "microbatch": p.microbatch, "virtual_stages": p.virtual_stages, "schedule": p.schedule,
                "recompute": p.recompute, "zero": p.zero}
    return with_overrides(data, plan.option | {f"{SEARCHED_KEYS}.{k}": v for k, v in settings.items()})


def search_plans(data: dict[str, Any], source: str, objective: Objective = "time", top: int = 10,
                 constraints: list[str] | None = None, space: Space | None = None, refine: int | None = None,
                 max_plans: int = MAX_PLANS) -> PlanSearch:
    """Search the plans of a training scenario (``data`` as written) and its cluster options."""
    if objective not in OBJECTIVES:
        raise ScenarioError("--objective", f"'{objective}' is not allowed; allowed: {', '.join(OBJECTIVES)}")
    if top < 1:
        raise ScenarioError("--top", f"{top} is not allowed: at least 1")
    bounds = [parse_constraint(c) for c in constraints or []]
    notes: list[str] = []
    if space is not None and any(k.startswith(SEARCHED_KEYS) for k in space.keys):
        raise ScenarioError("--vary", f"{SEARCHED_KEYS} is what the search varies; vary cluster or site keys")
    points = list(space.points()) if space is not None else []
    options = [(p.values, with_overrides(data, p.values)) for p in points] or [({}, data)]

    tally, start = _Tally(), time.perf_counter()
    kept, errors = _search_options(options, source, bounds, tally, max_plans)
    seconds = time.perf_counter() - start
    valued = [p for p in kept if objective_of(p.estimate, objective) is not None]
    if kept and not valued:
        raise ScenarioError("--objective", f"{objective} needs a price: the site has no electricity price; set "
                            "site.electricity_price (and site.gpu_hour_price for rental)")
    valued.sort(key=lambda p: objective_of(p.estimate, objective))
    count = max(top, MIN_REFINED) if refine is None else refine
    refined = [_played(data, p, source) for p in valued[:count]]
    refined = [p for p in refined if all(c.met(p.result) for c in bounds)]
    refined.sort(key=lambda p: objective_of(p.result, objective))
    best = (refined + valued[count:])[:top]
    if count and len(refined) < min(count, len(valued)):
        notes.append(f"{min(count, len(valued)) - len(refined)} of the top plans met the constraints in closed form "
                     "but not once failures were simulated")
    baseline = _baseline(data, source)
    return PlanSearch(
        scenario=str(data.get("name", "unnamed scenario")), objective=objective,
        constraints=tuple(c.text for c in bounds), options=len(options), option_errors=tuple(errors),
        plans_considered=tally.considered, plans_infeasible=tally.infeasible, plans_over_memory=tally.over_memory,
        plans_equivalent=tally.equivalent, plans_evaluated=tally.evaluated, plans_rejected=tally.rejected,
        exhaustive=tally.exhaustive, seconds=seconds, refined=len(valued[:count]), plans=tuple(best),
        baseline=baseline, notes=tuple(notes))


def _search_options(options: list[tuple[dict[str, Any], dict[str, Any]]], source: str, bounds: list[Constraint],
                    tally: _Tally, max_plans: int) -> tuple[list[RankedPlan], list[str]]:
    """The plans of every cluster option (its varied values, its scenario data) that meet the constraints in
    closed form, and the options that are no valid scenario, one line each."""
    kept: list[RankedPlan] = []
    errors: list[str] = []
    for values, option_data in options:
        try:
            scenario = parse_scenario(option_data, source)
            if scenario.training is None:
                raise ScenarioError("training", "plan searches training (and fine-tuning) scenarios; this one has "
                                    "none")
            prepared = prepare(scenario)
        except ScenarioError as exc:
            if not values:
                raise
            errors.append(f"{_label(values)}: {exc}")
            continue
        band = scenario_calibration(scenario)
        kept += [replace(p, calibration=band) for p in _closed_form_pass(prepared, values, bounds, tally, max_plans)]
    if not kept and errors and len(errors) == len(options):
        raise ScenarioError("--vary", f"no cluster option is a valid scenario; first: {errors[0]}")
    return kept, errors


def _played(data: dict[str, Any], plan: RankedPlan, source: str) -> RankedPlan:
    """The plan played in full: the SimPy step and, when the scenario enables them, failures."""
    return replace(plan, result=simulate(parse_scenario(_variant(data, plan), source)))


def _baseline(data: dict[str, Any], source: str) -> RankedPlan | None:
    """The scenario's own plan on its own cluster, estimated and played in full (None when it cannot run)."""
    try:
        scenario = parse_scenario(data, source)
        prepared = prepare(scenario)
        guess = estimate(prepared, prepared.request)
    except ScenarioError:
        return None
    return RankedPlan({}, guess, simulate(scenario))


def _label(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())



# -- python -m twin fit: node types, GPU counts and fine-tuning methods ---------------------------
#
# Each option (a node type, a GPU count, a method and the storage of the base) is a variant of
# the user's scenario (``Scenario.model_copy``: the model, the data, the batch, the site and the
# efficiencies stay as written; failures are left out, a search compares steady throughput),
# prepared once. Its plans (``plans.FIT_RULES``: tensor and pipeline sizes that divide the model and the GPUs, every
# GPU used; ZeRO stages; recomputation) are pruned by divisibility and memory, then by dominance
# (a plan that recomputes more, or gathers parameters under ZeRO-3 where another shards only
# gradients under ZeRO-2, than another fitting plan of the same shape); the fastest of the rest
# in closed form is answered in full, and the options are ranked by time to train or by cost.

# Storage of the frozen base tried for each method (training.weights); full training keeps its own.
METHOD_WEIGHTS = {"lora": WEIGHT_STORAGES, "qlora": ("nf4",)}


def fit_options(scenario: Scenario, max_gpus: int, nodes: list[str] | None = None) -> list[FitOption]:
    """Every catalog node type (or ``nodes``) whose GPU runs the scenario's precision, every GPU count,
    every method and storage of the base."""
    tr = scenario.training
    methods = [("full", "fp32" if tr.precision in ("fp32", "tf32") else "bf16")]
    if tr.precision == "fp8":
        methods.append(("full", "fp8"))
    methods += [(m, w) for m, ws in METHOD_WEIGHTS.items() for w in ws]
    out = []
    for name in nodes or catalog_names("nodes"):
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
        training["parallelism"] = tr.parallelism.model_copy(update=choice.settings())
    return scenario.model_copy(update={"cluster": cluster, "training": tr.model_copy(update=training),
                                       "failures": scenario.failures.model_copy(update={"enabled": False})})


def best_plan(scenario: Scenario, option: FitOption, model: ModelSpec | None = None,
              prepared: Prepared | None = None, sized: dict | None = None) -> FitRow:
    """Prune the option's plans by memory and dominance, time the rest in closed form on the prepared
    option (``prepared``: ``variant(scenario, option)`` prepared, default here), answer the fastest in
    full (``model``: the scenario's, default the prepared one; ``sized``: as ``_sized_plans``'s memo)."""
    prepared = prepared or prepare(variant(scenario, option))
    model = model or prepared.model
    capacity = prepared.cluster.node.gpu.memory_bytes
    sized_plans = _sized_plans(prepared, model, option.gpus, recompute_levels(scenario.training.attention),
                               {} if sized is None else sized)
    least = min((planned[1].required_bytes for _, _, planned in sized_plans), default=float("inf"))
    fitting = [plan for plan in sized_plans if plan[2][1].required_bytes <= capacity]
    free = undominated([choice for choice, _, _ in fitting])
    kept = [f for f in fitting if f[0] in free]
    if not kept:
        return FitRow(option, None, len(sized_plans), 0, least, capacity)
    fastest = kept[_fastest(prepared, kept)][0]
    return FitRow(option, simulate(variant(scenario, option, fastest), closed_form=True, like=prepared),
                  len(sized_plans), len(kept), least, capacity)


def _sized_plans(prepared: Prepared, model: ModelSpec, gpus: int, levels: tuple, memo: dict) -> list[tuple]:
    """(choice, request, its ``plan_memory``) of every plan of ``model`` on ``gpus`` GPUs of the prepared cluster
    that splits (``plan_choices``), kept in ``memo`` by what they depend on: not the node type (memory per GPU
    is the plan's, only the capacity is the node's), so plans are sized once for every node type alike."""
    cluster = prepared.cluster
    key = (model, prepared.section.finetune, prepared.request, gpus, cluster.work_gpus, cluster.node.gpus, levels)
    found = memo.get(key)
    if found is not None:
        return found
    found = memo[key] = []
    for choice in plan_choices(model, gpus, cluster.node.gpus, levels):
        request = choice.request(prepared.request)
        try:
            found.append((choice, request, plan_memory(prepared, request)))
        except InfeasibleError:
            continue
    return found


def _fastest(prepared: Prepared, plans: list[tuple]) -> int:
    """Index of the first of the fastest plans (``min`` by ``plan_step_s``), pricing only those whose floors do
    not exceed the fastest step found: from the lowest ``plan_passes_floor_s`` up to the first above it, less
    those whose ``plan_step_floor_s`` is above it; the plan ``min`` keeps (ties to the first) is kept."""
    passes, by_shape = [], {}
    for _, request, planned in plans:
        shape = _but_zero(planned[0])
        floor = by_shape.get(shape)
        if floor is None:
            floor = by_shape[shape] = plan_passes_floor_s(prepared, request, planned)
        passes.append(floor)
    best, best_s = 0, math.inf
    for i in sorted(range(len(plans)), key=passes.__getitem__):
        if passes[i] > best_s:
            break
        _, request, planned = plans[i]
        if best_s < math.inf and plan_step_floor_s(prepared, request, planned) > best_s:
            continue
        step_s = plan_step_s(prepared, request, planned)
        if step_s < best_s or (step_s == best_s and i < best):
            best, best_s = i, step_s
    return best


def _but_zero(plan: ParallelPlan) -> tuple:
    """The plan's settings but its ZeRO stage: what its ``plan_passes_floor_s`` depends on of it."""
    return tuple(value for name, value in vars(plan).items() if name != "zero")


def _cost(row: FitRow, country: str) -> tuple[bool, float]:
    """Total cost at the site in EUR (GPU time as the site pays for it, plus electricity), options whose GPU
    has no price after the others; where the site's electricity has no price, its facility energy in kWh."""
    pw = row.result.power
    total = pw.total_cost_eur().get(country)
    return pw.hour_price is None, total if total is not None else pw.energy_facility_kwh


def _by_fabric(options: list[FitOption]) -> list[int]:
    """The order ``options`` are searched in: at each GPU count the node types built alike (``topology.node_shape``)
    one after the other, as their clusters share one fabric while it is cached (``network.fabric.cluster_fabric``);
    otherwise as listed, so the methods of one cluster follow each other and share its collectives."""
    shapes: dict[tuple, int] = {}
    group = {name: shapes.setdefault(node_shape(node_spec(name)), len(shapes))
             for name in dict.fromkeys(option.node for option in options)}
    return sorted(range(len(options)), key=lambda i: (group[options[i].node], options[i].gpus))


def search(scenario: Scenario, options: list[FitOption], by: FitRanking = "time") -> FitReport:
    """Every option's best plan, the options that fit ranked by ``by`` (time or cost), then the others."""
    if by not in FIT_RANKINGS:
        raise ScenarioError("--by", f"{by!r} is not allowed; allowed: {', '.join(FIT_RANKINGS)}")
    rows, last, sized = [None] * len(options), None, {}
    for i in _by_fabric(options):
        last = prepare(variant(scenario, options[i]), last)
        rows[i] = best_plan(scenario, options[i], prepared=last, sized=sized)
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
    unpriced = sorted({r.option.node for r in fits if r.result.power.hour_price is None})
    if by == "cost" and unpriced:
        notes.append(f"the price list has no on-demand price for the GPUs of {', '.join(unpriced)}: their cost is "
                     "electricity only and they are ranked after the others (write site.gpu_hour_price to price them)")
    return FitReport(scenario.name, by, country, tuple(fits + others), tuple(notes))


def fit(scenario: Scenario, by: FitRanking = "time", max_gpus: int | None = None,
        nodes: list[str] | None = None) -> FitReport:
    """``python -m twin fit``: the scenario's job on every node type and GPU count, method and storage,
    up to ``max_gpus`` (default: 8, or the scenario's cluster when larger)."""
    if scenario.training is None:
        raise ScenarioError("training", "fit searches training (and fine-tuning) scenarios; this one has none")
    if max_gpus is None:
        max_gpus = max(8, (scenario.cluster.nodes - scenario.cluster.spare_nodes)
                       * node_spec(scenario.cluster.node).gpus)
    if max_gpus < 1:
        raise ScenarioError("--max-gpus", f"{max_gpus} is not allowed: at least 1")
    site, notes = scenario.site, []
    if site.pricing == "owned" and site.hardware_price is None:
        priced = owned_nodes()
        left = [n for n in nodes or catalog_names("nodes") if n not in priced]
        nodes = [n for n in nodes or catalog_names("nodes") if n in priced]
        if not nodes:
            raise ScenarioError("site.hardware_price", f"owned hardware needs a purchase price: the catalog has one "
                                f"for {', '.join(priced)}; write site.hardware_price or search those nodes")
        if left:
            notes.append(f"owned hardware: only nodes with a catalog purchase price are searched ({', '.join(nodes)}); "
                         "write site.hardware_price to price one node of the others")
    with collector.paused():           # its fabrics, memos and plans live on to its end (twin/collector.py)
        report = search(scenario, fit_options(scenario, max_gpus, nodes), by)
    return replace(report, notes=tuple(notes) + report.notes)
