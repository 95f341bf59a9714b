"""``python -m twin fit``: node types, GPU counts and fine-tuning methods.

Each option (a node type, a GPU count, a method and the storage of the base) is a variant of the
user's scenario (``Scenario.model_copy``: the model, the data, the batch, the site and the
efficiencies stay as written; failures are left out, a search compares steady throughput), prepared
once. Its plans (``plans.FIT_RULES``: tensor and pipeline sizes that divide the model and the GPUs,
every GPU used; ZeRO stages; recomputation) are pruned by divisibility and memory, then by dominance
(a plan that recomputes more, or gathers parameters under ZeRO-3 where another shards only gradients
under ZeRO-2, than another fitting plan of the same shape); the fastest of the rest in closed form is
answered in full, and the options are ranked by time to train or by cost. The plans are drawn from the
generator ``python -m twin plan`` uses (``plans.plan_choices``, ``twin.studies.search``).

Asked for its ``top`` rows by time (the table), a fit asks each option only whether a plan fits and its
floor from its GEMMs (``_sifted``), then sizes, prunes and answers options from the lowest floor up until
none left can show among those rows (``_ranked_first``).
"""

from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass, field, fields, replace
from functools import partial
from operator import attrgetter

from twin import collector
from twin.api import (
    Prepared,
    Scenario,
    catalog_names,
    gemm_floor_s,
    plan_memory,
    plan_passes_floor_s,
    plan_step_floor_s,
    plan_step_s,
    prepare,
    simulate,
)
from twin.api.specs import site_of
from twin.cores import balanced_halves, split_map
from twin.errors import InfeasibleError, ScenarioError
from twin.hardware.specs import node_spec
from twin.hardware.topology import node_wiring
from twin.options import FIT_RANKINGS, WEIGHT_STORAGES, FitRanking, recompute_levels
from twin.power.pricing import owned_nodes
from twin.studies.plans import PlanChoice, gpu_counts, plan_choices, undominated
from twin.studies.records import FitOption, FitReport, FitRow
from twin.workload.plan import ParallelPlan

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


@dataclass(frozen=True)
class _Pruned:
    """An option's plans left by memory and dominance (``kept``: as ``_sized_plans``'s), each one's
    ``plan_passes_floor_s`` (``passes``), and what the option's row says of its memory."""
    option: FitOption
    kept: list[tuple]
    passes: list[float]
    tried: int
    least_bytes: float
    capacity_bytes: float
    floor_s: float          # no time to train of the option is shorter (``_time_floor_s``); inf when none is kept


def _pruned(option: FitOption, prepared: Prepared, sized: dict) -> _Pruned:
    """The option's plans (on ``prepared``, ``variant(scenario, option)`` prepared) that fit and are not dominated,
    with their passes floors (one per shape but the ZeRO stage, ``_but_zero``); ``sized``: as ``_sized_plans``'s
    memo."""
    capacity = prepared.cluster.node.gpu.memory_bytes
    sized_plans = _sized_plans(prepared, option.gpus, sized)
    least = min((planned[1].required_bytes for _, _, planned, _ in sized_plans), default=float("inf"))
    fitting = [plan for plan in sized_plans if plan[2][1].required_bytes <= capacity]
    free = undominated([plan[0] for plan in fitting])
    kept = [f for f in fitting if f[0] in free]
    passes, by_shape = [], {}
    for _, request, planned, shape in kept:
        floor = by_shape.get(shape)
        if floor is None:
            floor = by_shape[shape] = plan_passes_floor_s(prepared, request, planned)
        passes.append(floor)
    return _Pruned(option, kept, passes, len(sized_plans), least, capacity,
                   _time_floor_s(prepared.scenario.training.tokens, kept, passes))


def _time_floor_s(tokens: float, kept: list[tuple], passes: list[float]) -> float:
    """A lower bound on the time to train of the option's best plan: with failures left out a run takes
    ``tokens / tokens_per_step`` steps of at least the plan's step (longer where it waits for data), and no
    step is shorter than its passes floor (``plan_passes_floor_s``)."""
    return min((tokens / planned[0].tokens_per_step * floor for (_, _, planned, _), floor in zip(kept, passes)),
               default=math.inf)


def _answered(scenario: Scenario, pruned: _Pruned, prepared: Prepared) -> FitRow:
    """The option's row: its fastest kept plan answered in full, or how far it is from fitting."""
    option = pruned.option
    if not pruned.kept:
        return FitRow(option, None, pruned.tried, 0, pruned.least_bytes, pruned.capacity_bytes)
    fastest = pruned.kept[_fastest(prepared, pruned.kept, pruned.passes)][0]
    return FitRow(option, simulate(variant(scenario, option, fastest), closed_form=True, like=prepared),
                  pruned.tried, len(pruned.kept), pruned.least_bytes, pruned.capacity_bytes)


@dataclass
class _Plans:
    """The plans of one model, method and GPU count (``plan_choices``) and what is known of each: its
    ``_sized`` entry, once sized (None: it does not split), and the list of every entry that splits, once all are."""
    choices: list[PlanChoice]
    sized: dict = field(default_factory=dict)
    every: list[tuple] | None = None


def _sized_plans(prepared: Prepared, gpus: int, memo: dict) -> list[tuple]:
    """(choice, request, its ``plan_memory``, its plan's ``_but_zero``) of every plan of the prepared model on
    ``gpus`` GPUs of the prepared cluster that splits (``plan_choices``), in their order."""
    plans = _plans(prepared, gpus, memo)
    if plans.every is None:
        plans.every = [entry for entry in (_sized(prepared, choice, plans, memo) for choice in plans.choices)
                       if entry is not None]
    return plans.every


def _fits(prepared: Prepared, gpus: int, memo: dict) -> bool:
    """Whether a plan of ``_sized_plans`` fits the GPU's memory, sizing first the plans that split the most
    (the reverse of their order: most tensor and pipeline ranks, most recomputation, highest ZeRO stage),
    which need least memory, up to the first that fits."""
    capacity = prepared.cluster.node.gpu.memory_bytes
    plans = _plans(prepared, gpus, memo)
    for choice in reversed(plans.choices):
        entry = _sized(prepared, choice, plans, memo)
        if entry is not None and entry[2][1].required_bytes <= capacity:
            return True
    return False


def _plans(prepared: Prepared, gpus: int, memo: dict) -> _Plans:
    """The ``_Plans`` of the prepared model on ``gpus`` GPUs, kept in ``memo`` by what they depend on: not the
    node type (memory per GPU is the plan's, only the capacity is the node's), so plans are sized once for
    every node type alike."""
    cluster, model = prepared.cluster, prepared.model
    levels = recompute_levels(prepared.scenario.training.attention)
    key = (model, prepared.section.finetune, prepared.request, gpus, cluster.work_gpus, cluster.node.gpus, levels)
    found = memo.get(key)
    if found is None:
        found = memo[key] = _Plans(list(plan_choices(model, gpus, cluster.node.gpus, levels)))
    return found


def _sized(prepared: Prepared, choice: PlanChoice, plans: _Plans, memo: dict) -> tuple | None:
    """``choice``'s entry of ``_sized_plans``, or None when it does not split; kept in ``plans``. Each choice's
    request is made once per fit (kept in ``memo``)."""
    if choice in plans.sized:
        return plans.sized[choice]
    requests = memo.setdefault(("requests", prepared.request), {})
    request = requests.get(choice)
    if request is None:
        request = requests[choice] = choice.request(prepared.request)
    try:
        planned = plan_memory(prepared, request)
        entry = (choice, request, planned, _but_zero(planned[0]))
    except InfeasibleError:
        entry = None
    plans.sized[choice] = entry
    return entry


def _fastest(prepared: Prepared, plans: list[tuple], passes: list[float]) -> int:
    """Index of the first of the fastest plans (``min`` by ``plan_step_s``), pricing only those whose floors do
    not exceed the fastest step found: from the lowest ``plan_passes_floor_s`` (``passes``) up to the first above
    it, less those whose ``plan_step_floor_s`` is above it; the plan ``min`` keeps (ties to the first) is kept."""
    best, best_s = 0, math.inf
    for i in sorted(range(len(plans)), key=passes.__getitem__):
        if passes[i] > best_s:
            break
        _, request, planned, _ = plans[i]
        if best_s < math.inf and plan_step_floor_s(prepared, request, planned) > best_s:
            continue
        step_s = plan_step_s(prepared, request, planned)
        if step_s < best_s or (step_s == best_s and i < best):
            best, best_s = i, step_s
    return best


# The plan's settings but its ZeRO stage, as one tuple: what its ``plan_passes_floor_s`` depends on of it.
_but_zero = attrgetter(*(f.name for f in fields(ParallelPlan) if f.name != "zero"))


def _cost(row: FitRow, country: str) -> tuple[bool, float]:
    """Total cost at the site in EUR (GPU time as the site pays for it, plus electricity), options whose GPU
    has no price after the others; where the site's electricity has no price, its facility energy in kWh."""
    pw = row.result.power
    total = pw.total_cost_eur().get(country)
    return pw.hour_price is None, total if total is not None else pw.energy_facility_kwh


def _by_fabric(options: list[FitOption]) -> list[int]:
    """The order ``options`` are searched in: at each GPU count the node types wired alike (``topology.node_wiring``)
    one after the other, as their clusters share one fabric's links and routes while it is cached
    (``network.fabric_cache.cluster_fabric``); otherwise as listed, so the methods of one cluster follow each
    other and share its collectives."""
    shapes: dict[tuple, int] = {}
    group = {name: shapes.setdefault(node_wiring(node_spec(name)), len(shapes))
             for name in dict.fromkeys(option.node for option in options)}
    return sorted(range(len(options)), key=lambda i: (group[options[i].node], options[i].gpus))


# Nodes of an option's cluster that cost its search about as much as a doubling of its GPUs: past a few
# thousand nodes its fabric and routing grow with them (the 405B fit on one core: 4.5 ms an option at 8 GPUs,
# 29 ms at 2,048, 41 ms at 4,096, 70 ms at 8,192 and 123 ms at 16,384 GPUs, 630,144 nodes over its 90 options).
NODES_PER_DOUBLING = 150


def _halves(options: list[FitOption], order: list[int]) -> list[list[int]]:
    """``order`` in two parts of about equal work, each in its order, to be searched (or sifted) on two cores
    (``twin/cores.py``): the options of one GPU count stay together (they share sized plans, and their node
    types built alike one fabric), the counts dealt heaviest first to the lighter part. An option's work grows
    about as the logarithm of its GPU count (the SuperPOD's fit: 4.4 ms an option at 1 GPU, 17 ms at 512), and
    with its nodes where they are thousands (``NODES_PER_DOUBLING``). The 405B fit's parts: 19.4 and 15.2 s of
    one core's work by the logarithm alone, 17.8 and 16.9 s with the nodes."""
    options_at: dict[int, int] = {}
    nodes_at: dict[int, int] = {}
    for option in options:
        options_at[option.gpus] = options_at.get(option.gpus, 0) + 1
        nodes_at[option.gpus] = nodes_at.get(option.gpus, 0) + option.nodes
    counts = sorted(options_at)
    work = [options_at[g] * (1 + math.log2(g)) + nodes_at[g] / NODES_PER_DOUBLING for g in counts]
    parts = [{counts[k] for k in part} for part in balanced_halves(work)]
    return [[i for i in order if options[i].gpus in part] for part in parts]


def _searched(scenario: Scenario, options: list[FitOption], indices: list[int]) -> list[tuple[int, FitRow]]:
    """(index, row) of the options ``indices``, each answered, searched in that order (each prepared from the last)."""
    out, last, sized = [], None, {}
    for i in indices:
        last = prepare(variant(scenario, options[i]), last)
        out.append((i, _answered(scenario, _pruned(options[i], last, sized), last)))
    return out


def _sifted(scenario: Scenario, options: list[FitOption],
            indices: list[int]) -> tuple[list[tuple[int, FitRow]], list[tuple[float, int]]]:
    """The options ``indices`` searched no further than their ranking needs, in that order (each prepared from the
    last): (index, row) of those no plan fits (``_fits``), and (``gemm_floor_s``, index) of the others."""
    rows, fitting, last, sized = [], [], None, {}
    for i in indices:
        option = options[i]
        last = prepare(variant(scenario, option), last)
        if _fits(last, option.gpus, sized):
            fitting.append((gemm_floor_s(last, option.gpus), i))
        else:
            rows.append((i, _answered(scenario, _pruned(option, last, sized), last)))
    return rows, fitting


def _dealt(options: list[FitOption], fitting: list[tuple[float, int]]) -> list[list[tuple[float, int]]]:
    """``fitting`` (``_sifted``'s) in two parts to be ranked on two cores (``_ranked_first`` each): every other
    fabric from the lowest ``gemm_floor_s`` up, the options of one fabric together: those of node types wired
    alike (``topology.node_wiring``) on as many nodes, whose clusters share one compiled fabric's links and routes
    (``network/fabric_cache.py``; the 405B fit's 2,048-node DGX B200, H100 and H200 clusters: one fabric built and
    compiled in about 0.3 s, the others rerated from it). Each part's ``top`` best rows are then about as fast as the whole fit's, so
    neither answers much beyond its share; together they answer every option the whole fit's ranking would."""
    clusters: dict[tuple, list] = {}
    for floor, i in sorted(fitting):
        clusters.setdefault((node_wiring(node_spec(options[i].node)), options[i].nodes), []).append((floor, i))
    parts: list[list[tuple[float, int]]] = [[], []]
    for k, members in enumerate(clusters.values()):
        parts[k % 2] += members
    return parts


def _ranked_first(scenario: Scenario, options: list[FitOption], fitting: list[tuple[float, int]], order: list[int],
                  top: int) -> tuple[list[tuple[int, FitRow]], list[int]]:
    """The fitting options (``fitting``: ``_sifted``'s) that may show among the ``top`` best rows, answered, and
    the indices of the others.

    Options are answered in the order of their floors (``_Pruned.floor_s``), found lazily: a heap holds each
    option first by its ``gemm_floor_s``, known before its plans are sized, and once it comes first, sized, pruned
    and floored (``_pruned``), by its ``floor_s``, which is never lower. The table merges only rows of one node
    type and GPU count with exactly the same time to train (``report/fit.py``), so once ``top`` such
    (node, GPUs, time) are answered, the ``top``-th best row is no slower than the ``top``-th of their times; an
    option whose floor is above it is slower than every row shown, so it neither shows nor merges into one,
    and neither does any option after it. Ties go in ``order``."""
    position = {i: k for k, i in enumerate(order)}
    heap = [(floor, position[i], i, None) for floor, i in fitting]
    heapq.heapify(heap)
    out, bests, seen, last, sized = [], [], set(), None, {}
    while heap:
        floor, k, i, found = heapq.heappop(heap)
        if len(bests) >= top and floor > bests[top - 1]:
            return out, [i] + [entry[2] for entry in heap]
        option = options[i]
        if found is None:
            last = prepare(variant(scenario, option), last)
            pruned = _pruned(option, last, sized)
            heapq.heappush(heap, (pruned.floor_s, k, i, (pruned, last)))
            continue
        pruned, prepared = found
        row = _answered(scenario, pruned, prepared)
        out.append((i, row))
        time_s = row.result.time_to_train_s
        if (option.node, option.gpus, time_s) not in seen:
            seen.add((option.node, option.gpus, time_s))
            bisect.insort(bests, time_s)
    return out, []


def search(scenario: Scenario, options: list[FitOption], by: FitRanking = "time",
           top: int | None = None) -> FitReport:
    """Every option's best plan, the options that fit ranked by ``by`` (time or cost), then the others.

    ``top``: ranked by time, only the options that may hold one of the ``top`` best rows are answered in full
    (``_ranked_first``); the other fitting options are counted (``FitReport.unranked``). None: every option."""
    if by not in FIT_RANKINGS:
        raise ScenarioError("--by", f"{by!r} is not allowed; allowed: {', '.join(FIT_RANKINGS)}")
    rows: list = [None] * len(options)
    order = _by_fabric(options)
    halves = _halves(options, order)
    unranked: list[int] = []
    if by == "time" and top is not None:
        found, fitting = [], []
        for half_rows, half_fitting in split_map(partial(_sifted, scenario, options), halves, worth=all(halves)):
            found += half_rows
            fitting += half_fitting
        parts = _dealt(options, fitting)
        for first, left in split_map(partial(_ranked_first, scenario, options, order=order, top=top), parts,
                                     worth=all(parts)):
            found += first
            unranked += left
    else:
        found = [pair for half in split_map(partial(_searched, scenario, options), halves, worth=all(halves))
                 for pair in half]
    for i, row in found:
        rows[i] = row
    rows = [r for r in rows if r is not None]
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
    unpriced = sorted({name for name in {r.option.node for r in fits} | {options[i].node for i in unranked}
                       if site_of(scenario.site, node_spec(name)).price is None})
    if unpriced:
        ranked = " and they are ranked after the others" if by == "cost" else ""
        notes.append(f"the price list has no on-demand price for the GPUs of {', '.join(unpriced)}: their cost is "
                     f"electricity only{ranked} (write site.gpu_hour_price to price them)")
    return FitReport(scenario.name, by, country, tuple(fits + others), tuple(notes), len(unranked))


def fit(scenario: Scenario, by: FitRanking = "time", max_gpus: int | None = None,
        nodes: list[str] | None = None, top: int | None = None) -> FitReport:
    """``python -m twin fit``: the scenario's job on every node type and GPU count, method and storage,
    up to ``max_gpus`` (default: 8, or the scenario's cluster when larger); ``top``: as ``search``'s."""
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
        report = search(scenario, fit_options(scenario, max_gpus, nodes), by, top)
    return replace(report, notes=tuple(notes) + report.notes)
