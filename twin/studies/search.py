"""Plan search: enumerate the ways to run a job, prune what cannot run, rank the rest; Pareto fronts.

``python -m twin plan`` searches, for each cluster option (the scenario's cluster, or each
point of ``--vary`` over cluster keys):

- **tensor** parallelism: divisors of the node's GPU count that split the heads, the KV
  heads and the FFN (a tensor group inside one node, as Megatron-LM places it);
- **pipeline** stages: divisors of the layer count and powers of two, up to the layers;
- **virtual stages** (interleaved 1F1B): 2-8 chunks per stage when they split the layers
  evenly, as Megatron-LM requires; GPipe is left out (1F1B has its bubble with less memory);
- **micro-batch** sizes 1, 2, 4, 8, 16 dividing the global batch;
- **recomputation** none, selective, full (selective only with standard attention: with a
  fused kernel it is "none" again); **ZeRO** 0-3 (one stage when there is no data parallelism);
- **expert** parallelism for mixture-of-experts models: divisors of the experts;
- **data** parallelism: the largest that fits the cluster and divides the batch (a smaller
  one only leaves GPUs idle); the rank order and sequence parallelism stay the scenario's.

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
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from twin.api import Prepared, estimate, parse_scenario, plan_memory, prepare, simulate, with_overrides
from twin.errors import InfeasibleError, ScenarioError
from twin.results import PlanEstimate, PlanSearch, RankedPlan, Result
from twin.studies.space import Space
from twin.units import parse_quantity

# What each objective minimises, on a closed-form estimate and on a full result.
OBJECTIVES = ("time", "cost", "carbon", "energy")
# The columns of a sweep's table its Pareto front is drawn over (all minimised), by workload:
# a training run's time, cost and carbon; a serving deployment's p99 time to first token and
# its cost and carbon per million output tokens.
SWEEP_OBJECTIVES = {
    "training": ("time_to_train_s", "site_total_cost_eur", "site_carbon_kg"),
    "serving": ("ttft_s.p99", "site_cost_per_million_output_tokens_eur", "site_carbon_per_million_output_tokens_kg"),
}
MICROBATCHES = (1, 2, 4, 8, 16)
MAX_VIRTUAL_STAGES = 8
# Plans one search evaluates at most; past it the search says it was not exhaustive.
MAX_PLANS = 1_000_000
# Plans played in full after the closed-form pass, at least.
MIN_REFINED = 10
SEARCHED_KEYS = "training.parallelism"


# -- objectives and constraints -------------------------------------------------------------

def objective_of(value: PlanEstimate | Result, objective: str) -> float | None:
    """The quantity an objective minimises, for a closed-form estimate or a full result."""
    if isinstance(value, PlanEstimate):
        return {"time": value.time_to_train_s, "cost": value.cost_eur, "carbon": value.carbon_kg,
                "energy": value.energy_facility_kwh}[objective]
    return {"time": value.time_to_train_s, "cost": value.total_cost_eur[value.country],
            "carbon": value.carbon_kg[value.country], "energy": value.energy_facility_kwh}[objective]


@dataclass(frozen=True)
class Constraint:
    """An upper bound: ``deadline=30d``, ``power=1.2MW``, ``energy=5GWh``, ``cost=2M EUR``, ``carbon=500t``."""
    name: str
    limit: float                     # SI (s, W, kWh), or EUR, or kg
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


_MONEY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?\d+)?)\s*([kKMB]?)\s*(EUR|€)?\s*$")
_MASS = {"kg": 1.0, "t": 1000.0, "kt": 1e6}


def parse_constraint(text: str) -> Constraint:
    """``NAME=LIMIT``: deadline (a duration), power (IT power at its peak), energy (facility energy),
    cost (euros at the site: energy and rental) or carbon (operational, at the site)."""
    name, sep, limit = text.partition("=")
    name, limit = name.strip(), limit.strip()
    field = "--constraint"
    allowed = "deadline=30d, power=1.2MW, energy=5GWh, cost=2M EUR or carbon=500t"
    if not sep or not limit:
        raise ScenarioError(field, f"'{text}' is not allowed: write NAME=LIMIT, e.g. {allowed}")
    if name == "deadline":
        return Constraint(name, parse_quantity(limit, "time", field), text)
    if name == "power":
        return Constraint(name, parse_quantity(limit, "power", field), text)
    if name == "energy":
        return Constraint(name, parse_quantity(limit, "energy", field) / 3.6e6, text)
    if name == "cost":
        match = _MONEY.match(limit)
        if not match:
            raise ScenarioError(field, f"'{limit}' is not an amount in euros (write e.g. '2M EUR' or '500000')")
        factor = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9}[match.group(2)]
        return Constraint(name, float(match.group(1)) * factor, text)
    if name == "carbon":
        match = re.match(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?\d+)?)\s*(kg|t|kt)\s*$", limit)
        if not match:
            raise ScenarioError(field, f"'{limit}' is not a mass of CO2e (write e.g. '500t' or '20000 kg')")
        return Constraint(name, float(match.group(1)) * _MASS[match.group(2)], text)
    raise ScenarioError(field, f"unknown constraint '{name}'; allowed: {allowed}")


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
    workload = "serving" if "workload" in names and "serving" in table.column("workload").to_pylist() else "training"
    return tuple(o for o in SWEEP_OBJECTIVES[workload] if o in names and table.column(o).null_count < table.num_rows)


# -- the space of plans -----------------------------------------------------------------------

def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def plan_space(prepared: Prepared) -> Iterator:
    """Every plan request of the search space of one prepared scenario (see the module's docstring)."""
    model, cluster = prepared.model, prepared.cluster
    tr = prepared.scenario.training
    base = prepared.request
    gpn, gpus = cluster.node.gpus, cluster.work_gpus
    tensors = [t for t in _divisors(gpn) if model.heads % t == 0 and model.ffn_hidden % t == 0
               and (model.kv_heads % t == 0 or t % model.kv_heads == 0)]
    powers = [2**k for k in range(int(math.log2(model.layers)) + 1)]
    pipelines = sorted(set(_divisors(model.layers)) | set(powers))
    micro = [b for b in MICROBATCHES if tr.global_batch % b == 0]
    recomputes = ("none", "selective", "full") if tr.attention == "standard" else ("none", "full")
    experts = _divisors(model.experts) if model.is_moe else [1]
    for t in tensors:
        for p in (p for p in pipelines if t * p <= gpus):
            virtual = [1] + [v for v in range(2, MAX_VIRTUAL_STAGES + 1) if p > 1 and model.layers % (p * v) == 0]
            for v in virtual:
                schedule = "interleaved" if v > 1 else "1f1b"
                for ep in experts:
                    for mb in micro:
                        for recompute in recomputes:
                            for zero in (0, 1, 2, 3):
                                yield replace(base, tensor=t, pipeline=p, data=None, expert=ep, microbatch=mb,
                                              virtual_stages=v, schedule=schedule, recompute=recompute, zero=zero)


# -- the search -------------------------------------------------------------------------------

@dataclass
class _Tally:
    considered: int = 0
    infeasible: int = 0
    over_memory: int = 0
    equivalent: int = 0
    evaluated: int = 0
    rejected: int = 0
    exhaustive: bool = True


def _closed_form_pass(prepared: Prepared, option: dict[str, Any], constraints: list[Constraint], tally: _Tally,
                      budget: int) -> list[RankedPlan]:
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
        if memory.total_bytes > prepared.cluster.node.gpu.memory_bytes:
            tally.over_memory += 1
            continue
        tally.evaluated += 1
        guess = estimate(prepared, request, planned)
        if not all(c.met(guess) for c in constraints):
            tally.rejected += 1
            continue
        kept.append(RankedPlan(option, guess))
    return kept


def _variant(data: dict[str, Any], plan: RankedPlan, order: str) -> dict[str, Any]:
    """The scenario data of one plan of one option: what ``twin run`` would be given."""
    p = plan.estimate.plan
    settings = {"tensor": p.tensor, "pipeline": p.pipeline, "data": p.data, "expert": p.expert,
                "microbatch": p.microbatch, "virtual_stages": p.virtual_stages, "schedule": p.schedule,
                "recompute": p.recompute, "zero": p.zero, "order": order}
    return with_overrides(data, plan.option | {f"{SEARCHED_KEYS}.{k}": v for k, v in settings.items()})


def search(data: dict[str, Any], source: str, objective: str = "time", top: int = 10,
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
    site = data.get("site") if isinstance(data.get("site"), dict) else {}
    if objective == "cost" and site.get("gpu_hour_price") is None:
        data = with_overrides(data, {"site.gpu_hour_price": "list"})
        notes.append("cost counts rental at the median on-demand list price of the cluster's GPU (catalog "
                     "prices.yaml), as the scenario sets no site.gpu_hour_price")
    points = list(space.points()) if space is not None else []
    options = [(p.values, with_overrides(data, p.values)) for p in points] or [({}, data)]

    tally, kept, errors = _Tally(), [], []
    start = time.perf_counter()
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
        kept += _closed_form_pass(prepared, values, bounds, tally, max_plans)
    seconds = time.perf_counter() - start
    if not kept and errors and len(errors) == len(options):
        raise ScenarioError("--vary", f"no cluster option is a valid scenario; first: {errors[0]}")

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
        plans_equivalent=tally.equivalent, plans_evaluated=tally.evaluated, plans_rejected=tally.rejected, exhaustive=tally.exhaustive,
        seconds=seconds, refined=len(valued[:count]), plans=tuple(best), baseline=baseline, notes=tuple(notes))


def _played(data: dict[str, Any], plan: RankedPlan, source: str) -> RankedPlan:
    scenario = parse_scenario(_variant(data, plan, _order(data)), source)
    return replace(plan, result=simulate(scenario))


def _order(data: dict[str, Any]) -> str:
    par = data.get("training", {}).get("parallelism", {}) if isinstance(data.get("training"), dict) else {}
    return par.get("order", "tp-dp-pp") if isinstance(par, dict) else "tp-dp-pp"


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

