"""Search: enumerate the ways to run a job, prune what cannot run, rank the rest; Pareto fronts.

One machinery serves every search: plans priced on one prepared scenario
(``twin.api.prepare``, ``plan_memory``, ``estimate``), pruned by divisibility and memory
before their step is timed, ranked by an objective, the best answered in full.
``python -m twin plan`` (``search_plans``) searches parallel plans and cluster options;
``python -m twin fit`` (``twin.studies.fit``) searches node types, GPU counts and fine-tuning methods;
sweeps (``sweep.py``) draw their Pareto front with ``pareto_front``.

``python -m twin plan`` searches, for each cluster option (the scenario's cluster, or each
point of ``--vary`` over cluster keys), the plans of ``plans.PLAN_RULES``; ``python -m twin fit``
those of ``plans.FIT_RULES`` on each of its options. Both draw them from one generator,
``plans.plan_choices`` (its docstring lists the sizes each dimension takes).

Each plan is checked (``InfeasibleError``: it cannot split), its memory per GPU computed
(closed form, cheap) and dropped when it does not fit; the rest are timed in closed form
(``twin.api.estimate``) on one prepared scenario, so no scenario is validated per plan.
Plans that break a constraint are rejected. The best ``refine`` are then played in full,
SimPy step and failure Monte Carlo (``twin.api.simulate``), with the scenario's own plan, on two
cores where a second is free, each taking the next plan, the longest to train first
(``twin/cores.py``), and ranked again. The search
is exhaustive when every plan of the space was evaluated or pruned.
"""

from __future__ import annotations

import heapq
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import chain
from typing import Any

from twin import collector
from twin.cores import can_split, shared_map, shared_then, split_map
from twin.api import (
    Prepared,
    Scenario,
    estimate,
    job_of,
    parse_scenario,
    plan_memory,
    play_ahead,
    prepare,
    scenario_calibration,
    simulate,
    with_overrides,
)
from twin.api.floors import plan_passes_floor_s
from twin.api.training import ideal_run_s
from twin.network.fabric_cache import cluster_fabric
from twin.errors import InfeasibleError, ScenarioError
from twin.options import OBJECTIVES, ConstraintName, Objective, recompute_levels
from twin.results import PlanEstimate, Result
from twin.studies.records import PlanSearch, RankedPlan
from twin.studies.plans import PLAN_RULES, outside_space, plan_space
from twin.studies.space import Space
from twin.units import parse_energy_kwh, parse_mass_kg, parse_money_eur, parse_quantity
from twin.workload.placement import place
from twin.workload.plan import ParallelPlan, PlanRequest


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
# Plans of one option past which its closed-form pass is split over two cores (twin/cores.py): a plan costs
# about 0.5 ms in closed form, a fork and the child's estimates sent back a few tens of milliseconds.
SPLIT_PLANS = 100
# Plans sized at a time by whichever core is free (``cores.shared_map``): the core that builds the cluster's
# fabric meanwhile (0.2-0.4 s on 16,384 GPUs) takes fewer of them.
SIZED_BATCH = 64
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
    bounded: int = 0
    evaluated: int = 0
    rejected: int = 0
    exhaustive: bool = True


@dataclass
class _Bound:
    """The times to train of the ``keep`` fastest plans kept so far (the plans a search plays in full and those
    that may stand in for them; 0: no bound, for objectives other than time). A plan whose time floor is
    above all of them (``_sized``) cannot be among them: it is bounded, never evaluated."""
    keep: int
    times: list[float] = field(default_factory=list)     # negated: a max-heap of the ``keep`` shortest

    def limit_s(self) -> float:
        return -self.times[0] if self.keep and len(self.times) >= self.keep else math.inf

    def add(self, time_s: float) -> None:
        if len(self.times) < self.keep:
            heapq.heappush(self.times, -time_s)
        elif self.keep and time_s < -self.times[0]:
            heapq.heapreplace(self.times, -time_s)


def _closed_form_pass(prepared: Prepared, option: dict[str, Any], constraints: list[Constraint], tally: _Tally,
                      budget: int, bound: _Bound) -> list[RankedPlan]:
    """Every plan of one option: pruned, bounded, or evaluated in closed form; those that meet the constraints,
    in the space's order. The plans are sized in batches taken by whichever core is free where a second is
    (``twin/cores.py``), this one building the cluster's fabric first, and counted here in the space's order;
    the sized ones are then evaluated from the lowest time floor up, until a floor is above the times of the
    plans the search keeps (``_Bound``), on two cores where a second is free (the plans of one placement in
    one share, ``_dealt``), each share bounded by what it keeps (never tighter than the whole), and counted
    here in the floors' order, as one pass would."""
    requests = list(plan_space(prepared))
    batches = [requests[i:i + SIZED_BATCH] for i in range(0, len(requests), SIZED_BATCH)]
    sized = shared_map(partial(_sized, prepared, bound.keep > 0), batches, worth=len(requests) >= SPLIT_PLANS,
                       here_first=partial(_fabric_first, prepared))
    order: list[tuple] = []
    seen: set = set()
    for index, (request, (outcome, key, planned, floor_s)) in enumerate(zip(requests, chain.from_iterable(sized))):
        tally.considered += 1
        if outcome == "infeasible":
            tally.infeasible += 1
            continue
        if key is not None:                       # without data parallelism every ZeRO stage is one plan
            if key in seen:
                tally.equivalent += 1
                continue
            seen.add(key)
        if outcome == "over memory":
            tally.over_memory += 1
            continue
        order.append((floor_s, index, request, planned))
    order.sort(key=lambda sized_plan: sized_plan[:2])
    shares = _dealt(prepared, order) if len(order) >= SPLIT_PLANS and can_split() else [list(range(len(order)))]
    if len(shares) == 2:
        _fabric_first(prepared)
    answers = split_map(partial(_evaluated, prepared, constraints, bound),
                        [[order[j] for j in share] for share in shares], worth=len(shares) == 2)
    guesses = dict(zip(chain.from_iterable(shares), chain.from_iterable(answers)))
    kept: list[tuple[int, RankedPlan]] = []
    for j, (floor_s, index, _, _) in enumerate(order):
        if floor_s > bound.limit_s():
            tally.bounded += len(order) - j
            break
        if tally.evaluated >= budget:
            tally.exhaustive = False
            break
        guess = guesses[j]
        tally.evaluated += 1
        if not all(c.met(guess) for c in constraints):
            tally.rejected += 1
            continue
        bound.add(guess.time_to_train_s)
        kept.append((index, RankedPlan(option, guess)))
    return [plan for _, plan in sorted(kept, key=lambda k: k[0])]


def _fabric_first(prepared: Prepared) -> None:
    """The cluster's fabric built in this process, where the plans' evaluation forks: once, and shared by
    both cores (built while the child sizes plans, or else before that fork)."""
    if prepared.cluster.nodes > 1:
        cluster_fabric(prepared.cluster, prepared.efficiency)


def _dealt(prepared: Prepared, order: list[tuple]) -> list[list[int]]:
    """The positions of ``order`` in two shares, each in that order: the plans placed alike (which share their
    collectives' routes, ``Prepared.comm``) in one, the placements dealt in turn as they first come."""
    gpus_per_node = prepared.cluster.node.gpus
    share_of: dict = {}
    shares: list[list[int]] = [[], []]
    for j, (_, _, request, (plan, _)) in enumerate(order):
        placement = place(plan, gpus_per_node, request.order)
        shares[share_of.setdefault(placement, len(share_of) % 2)].append(j)
    return shares


def _sized(prepared: Prepared, floored: bool,
           requests: list[PlanRequest]) -> list[tuple[str, ParallelPlan | None, tuple | None, float]]:
    """(outcome, the plan's key among its ZeRO stages when it has no data parallelism, (plan, memory), a floor
    on its time to train) of each request: infeasible, over memory or sized. The floor is the run at the
    plan's passes floor (``plan_passes_floor_s``), worked out as ``estimate`` works out the time
    (``ideal_run_s``), so never above it; 0 when not ``floored`` or for a plan the floor does not describe."""
    capacity = prepared.cluster.node.gpu.memory_bytes
    tokens = prepared.scenario.training.tokens
    out: list[tuple[str, ParallelPlan | None, tuple | None, float]] = []
    for request in requests:
        try:
            planned = plan, memory = plan_memory(prepared, request)
        except InfeasibleError:
            out.append(("infeasible", None, None, 0.0))
            continue
        key = replace(plan, zero=0) if plan.data == 1 else None
        if memory.required_bytes > capacity:
            out.append(("over memory", key, None, 0.0))
            continue
        step_floor_s = plan_passes_floor_s(prepared, request, planned) if floored else 0.0
        out.append(("sized", key, planned, ideal_run_s(tokens, plan, step_floor_s) if step_floor_s else 0.0))
    return out


def _evaluated(prepared: Prepared, constraints: list[Constraint], bound: _Bound,
               share: list[tuple]) -> list[PlanEstimate | None]:
    """The closed-form estimate of each sized plan of ``share`` (from the lowest floor up), None past the first
    whose floor is above the times ``bound`` holds with the plans of the share kept so far."""
    own = _Bound(bound.keep, list(bound.times))
    out: list[PlanEstimate | None] = []
    for floor_s, _, request, planned in share:
        if floor_s > own.limit_s():
            break
        guess = estimate(prepared, request, planned)
        if all(c.met(guess) for c in constraints):
            own.add(guess.time_to_train_s)
        out.append(guess)
    return out + [None] * (len(share) - len(out))


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

    count = max(top, MIN_REFINED) if refine is None else refine
    with collector.paused():           # its memos, plans and samples live on to its end (twin/collector.py)
        tally, start = _Tally(), time.perf_counter()
        # the plans played in full and those that may stand in for them, the fastest in closed form
        bound = _Bound(count + top if objective == "time" else 0)
        kept, errors = _search_options(options, source, bounds, tally, max_plans, bound)
        seconds = time.perf_counter() - start
        valued = [p for p in kept if objective_of(p.estimate, objective) is not None]
        if kept and not valued:
            raise ScenarioError("--objective", f"{objective} needs a price: the site has no electricity price; set "
                                "site.electricity_price (and site.gpu_hour_price for rental)")
        valued.sort(key=lambda p: objective_of(p.estimate, objective))
        refined, baseline, prepared = _played_all(data, source, valued[:count])
        refined = [p for p in refined if all(c.met(p.result) for c in bounds)]
        refined.sort(key=lambda p: objective_of(p.result, objective))
        best = (refined + valued[count:])[:top]
        if count and len(refined) < min(count, len(valued)):
            notes.append(f"{min(count, len(valued)) - len(refined)} of the top plans met the constraints in closed "
                         "form but not once failures were simulated")
        notes += _baseline_note(prepared, baseline, best, objective, count)
    return PlanSearch(
        scenario=str(data.get("name", "unnamed scenario")), objective=objective,
        constraints=tuple(c.text for c in bounds), options=len(options), option_errors=tuple(errors),
        plans_considered=tally.considered, plans_infeasible=tally.infeasible, plans_over_memory=tally.over_memory,
        plans_equivalent=tally.equivalent, plans_bounded=tally.bounded, plans_evaluated=tally.evaluated,
        plans_rejected=tally.rejected,
        exhaustive=tally.exhaustive, seconds=seconds, refined=len(valued[:count]), plans=tuple(best),
        baseline=baseline, notes=tuple(notes))


def _search_options(options: list[tuple[dict[str, Any], dict[str, Any]]], source: str, bounds: list[Constraint],
                    tally: _Tally, max_plans: int, bound: _Bound) -> tuple[list[RankedPlan], list[str]]:
    """The plans of every cluster option (its varied values, its scenario data) that meet the constraints in
    closed form, and the options that are no valid scenario, one line each."""
    kept: list[RankedPlan] = []
    errors: list[str] = []
    for values, option_data in options:
        try:
            scenario = parse_scenario(option_data, source)
            if scenario.training is None:
                raise ScenarioError("training", "plan searches training (and fine-tuning) scenarios; this one has none")
            prepared = prepare(scenario)
        except ScenarioError as exc:
            if not values:
                raise
            errors.append(f"{_label(values)}: {exc}")
            continue
        band = scenario_calibration(scenario)
        kept += [replace(p, calibration=band) for p in _closed_form_pass(prepared, values, bounds, tally, max_plans,
                                                                             bound)]
    if not kept and errors and len(errors) == len(options):
        raise ScenarioError("--vary", f"no cluster option is a valid scenario; first: {errors[0]}")
    return kept, errors


def _played_all(data: dict[str, Any], source: str,
                chosen: list[RankedPlan]) -> tuple[list[RankedPlan], RankedPlan | None, Prepared | None]:
    """The ``chosen`` plans and the scenario's own plan played in full (the SimPy step and, when the scenario
    enables them, failures), on two cores, each core taking the next plan's step when it is free, the longest
    to train first, then playing the Monte Carlos of the plans it took side by side (``cores.shared_then``): a
    plan's failure Monte Carlo grows with its time to train. (The plans played, in order; the scenario's own,
    None when it cannot run; the scenario prepared.)"""
    try:
        scenario = parse_scenario(data, source)
        prepared = prepare(scenario)
        own = RankedPlan({}, estimate(prepared, prepared.request))
    except ScenarioError:
        scenario = prepared = own = None
    plays: list[tuple[Scenario | None, RankedPlan]] = [(None, plan) for plan in chosen]
    if own is not None:
        plays.append((scenario, own))
    seconds = [p.estimate.time_to_train_s for p in chosen] + ([own.estimate.time_to_train_s] if own else [])
    longest_first = sorted(range(len(plays)), key=lambda i: (-seconds[i] if math.isfinite(seconds[i]) else 0.0, i))
    done: list[Any] = [None] * len(plays)
    played = shared_then(partial(_stepped, data, source), _finished, [plays[i] for i in longest_first],
                         worth=len(plays) > 1)
    for i, result in zip(longest_first, played):
        done[i] = result
    return done[:len(chosen)], (done[-1] if own is not None else None), prepared


def _stepped(data: dict[str, Any], source: str, play: tuple[Scenario | None, RankedPlan]
             ) -> tuple[Scenario, RankedPlan, tuple | None]:
    """A play's scenario (the scenario with the plan written in, where none is given), its plan, and the failure
    Monte Carlo its run plays (``job_of``: its step played on the way), None without failures."""
    scenario, plan = play
    if scenario is None:
        scenario = parse_scenario(_variant(data, plan), source)
    return scenario, plan, job_of(scenario)


def _finished(taken: list[tuple[Any, tuple[Scenario, RankedPlan, tuple | None]]]) -> list[RankedPlan]:
    """The plans one process took, played in full, their Monte Carlos first played side by side in one array
    (``play_ahead``): a step of the array costs about as much for a thousand samples as for a hundred."""
    play_ahead([job for _, (_, _, job) in taken if job is not None])
    return [_played_as_written(scenario, plan) for _, (scenario, plan, _) in taken]


def _played_as_written(scenario: Scenario, plan: RankedPlan) -> RankedPlan:
    """The plan played in full, without the timelines a plan row does not show (the step's spans, the median
    run's segments and events): a child that plays it sends less back (the spans of the 405B scenario's
    126-stage plan alone pickle to 3 MB)."""
    return replace(plan, result=replace(simulate(scenario), step_timeline=(), segments=[], events=[]))


# How the scenario's own plan beats the plans found, by objective.
_BETTER = {"time": "trains faster", "cost": "costs less", "carbon": "emits less", "energy": "uses less energy"}


def _baseline_note(prepared: Prepared | None, baseline: RankedPlan | None, best: list[RankedPlan],
                   objective: Objective, refined: int) -> list[str]:
    """A note when the scenario's own plan beats every plan found, saying why the search missed it: the plan is
    outside the space (``plans.outside_space``), or inside it but ranked below the ``refined`` best in closed
    form."""
    if baseline is None or prepared is None or not best:
        return []
    played = best[0].result is not None          # compared as played in full, or both in closed form
    own = objective_of(baseline.result if played else baseline.estimate, objective)
    found = objective_of(best[0].result if played else best[0].estimate, objective)
    if own is None or found is None or own >= found:
        return []
    tr, cluster = prepared.scenario.training, prepared.cluster
    why = outside_space(prepared.model, baseline.estimate.plan, cluster.work_gpus, cluster.node.gpus,
                        recompute_levels(tr.attention), PLAN_RULES, tr.global_batch)
    if why is None:
        why = (f"it is in the search space, but its closed-form estimate ranked it below the {refined} plans "
               "played in full (--refine plays more)")
    return [f"the scenario's own plan {_BETTER[objective]} than every plan found: {why}"]


def _label(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())
