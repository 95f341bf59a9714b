"""`twin fit`: the search over node types, GPU counts, methods and plans, and its command line."""

import json
import re
import statistics

import pytest

from tests.test_cli import twin
from twin.api import memory_of, parse_scenario, step_of
from twin.errors import InfeasibleError
from twin.studies.fit import search, variant
from twin.studies.plans import PlanChoice, gpu_counts, plan_choices
from twin.studies.records import FitOption
from twin.workload.model import model_spec

SCENARIO = {"name": "7B fine-tune", "cluster": {"node": "l4-1", "nodes": 1}, "site": {"country": "FR", "compare": ["DE"]},
            "training": {"model": "llama2-7b", "tokens": "5M", "seq_len": 1024, "global_batch": 8,
                         "method": "qlora"}}


@pytest.mark.parametrize("per_node, max_gpus, counts", [
    (8, 8, [1, 2, 4, 8]),            # slices of one node, then the node
    (1, 8, [1, 2, 4, 8]),            # one-GPU instances: whole instances
    (2, 8, [1, 2, 4, 8]),
    (8, 32, [1, 2, 4, 8, 16, 32]),
    (8, 2, [1, 2]),                  # no whole node beyond the limit
])
def test_gpu_counts_are_powers_of_two_then_whole_nodes(per_node, max_gpus, counts):
    assert gpu_counts(per_node, max_gpus) == counts


def test_plans_split_the_model_and_the_gpus_exactly():
    m = model_spec("llama2-70b")                # 64 heads, 8 KV heads, 80 layers
    plans = list(plan_choices(m, 8, 8))
    assert all(p.tensor * p.pipeline * p.data == 8 for p in plans)
    assert {p.tensor for p in plans} == {1, 2, 4, 8}
    assert all(p.zero == 0 for p in plans if p.data == 1)            # no ZeRO without data parallelism
    assert {p.recompute for p in plans} == {"none", "selective", "full"}
    # a model whose heads 8 does not divide never gets tensor 8
    odd = model_spec("llama-33b")               # 52 heads
    assert max(p.tensor for p in plan_choices(odd, 8, 8)) == 4


def test_dominance_is_more_recomputation_or_gathering_parameters_too():
    a = PlanChoice(2, 1, 4, 1, "selective")
    assert a.dominates(PlanChoice(2, 1, 4, 1, "full"))
    assert PlanChoice(2, 1, 4, 2, "selective").dominates(PlanChoice(2, 1, 4, 3, "full"))
    assert not a.dominates(PlanChoice(2, 1, 4, 2, "selective"))     # ZeRO-2 may overlap what ZeRO-1 exposes
    assert not a.dominates(PlanChoice(2, 1, 4, 0, "full"))          # ZeRO-0 against 1: a trade-off
    assert not PlanChoice(2, 1, 4, 0, "none").dominates(a)
    assert not a.dominates(PlanChoice(1, 2, 4, 1, "full"))          # another shape
    assert not a.dominates(a) and not a.dominates(PlanChoice(2, 1, 4, 1, "none"))


@pytest.mark.parametrize("option, model", [
    (FitOption("h100-pcie-2", 2, 1, "lora", "bf16"), "llama2-7b"),
    (FitOption("dgx-h100", 8, 1, "full", "bf16"), "llama2-13b"),
    (FitOption("l40s-8", 8, 1, "qlora", "nf4"), "llama2-70b"),
])
def test_the_best_plan_is_the_fastest_of_every_plan_that_fits(option, model):
    # brute force over every plan of the option against the search's pruned answer
    scenario = parse_scenario(SCENARIO | {"training": SCENARIO["training"] | {"model": model}})
    [row] = search(scenario, [option]).rows
    assert row.result is not None and row.plans_timed < row.plans_tried
    fastest = float("inf")
    for choice in plan_choices(model_spec(model), option.gpus, option.gpus):
        candidate = variant(scenario, option, choice)
        try:
            _, memory, capacity = memory_of(candidate)
        except InfeasibleError:
            continue
        if memory.required_bytes <= capacity:
            fastest = min(fastest, step_of(candidate).step_s)
    assert row.result.step_time_s == pytest.approx(fastest, rel=1e-12)


def test_search_ranks_what_fits_and_says_how_far_the_rest_is():
    scenario = parse_scenario(SCENARIO)
    options = [FitOption(node, 1, 1, method, weights) for node in ("l4-1", "h100-pcie-1")
               for method, weights in (("full", "bf16"), ("lora", "bf16"), ("qlora", "nf4"))]
    report = search(scenario, options)
    fits = [r for r in report.rows if r.result is not None]
    misses = [r for r in report.rows if r.result is None]
    assert report.rows[:len(fits)] == tuple(fits)                    # every fit before every miss
    times = [r.result.time_to_train_s for r in fits]
    assert times == sorted(times)
    for r in fits:
        assert r.result.memory.required_bytes <= r.capacity_bytes and r.result.memory_fits
    # full fine-tuning of 7B (16+ B/param) fits neither a 24 GB L4 nor an 80 GB H100 on one GPU
    assert {(r.option.node, r.option.method) for r in misses} == {("l4-1", "full"), ("h100-pcie-1", "full")}
    assert all(r.least_bytes > r.capacity_bytes for r in misses)
    by_cost = search(scenario, options, "cost")
    costs = [r.result.power.total_cost_eur()["FR"] for r in by_cost.rows if r.result is not None]
    assert costs == sorted(costs) and not by_cost.notes               # l4 and h100-pcie have list prices
    assert all(r.result.power.cost().includes == ("gpu", "electricity") for r in by_cost.rows if r.result)


def test_fit_prints_a_table_and_json():
    out = twin("fit", "scenarios/finetune-70b-qlora.yaml", "--nodes", "l40s-1,h100-pcie-1,gh200-1", "--max-gpus", "1")
    assert out.returncode == 0, out.stderr
    assert "QLoRA" in out.stdout and "l40s-1" in out.stdout and "cost FR" in out.stdout and "cost DE" in out.stdout
    js = twin("fit", "scenarios/finetune-70b-qlora.yaml", "--nodes", "l40s-1", "--max-gpus", "1", "--json")
    record = json.loads(js.stdout)
    qlora = [o for o in record["options"] if o["method"] == "qlora"]
    assert qlora and qlora[0]["fits"] and qlora[0]["memory_required_bytes"] <= qlora[0]["memory_capacity_bytes"]


@pytest.mark.parametrize("args, message", [
    (["--nodes", "l40s-server"], "--nodes: node 'l40s-server' was renamed (did you mean 'l40s-8'?)"),
    (["--max-gpus", "0"], "--max-gpus: 0 is not allowed"),
])
def test_fit_bad_arguments_exit_2_with_one_line(args, message):
    out = twin("fit", "scenarios/finetune-70b-qlora.yaml", *args)
    assert out.returncode == 2 and out.stderr.strip().startswith(f"twin: error: {message}"), out.stderr


def test_a_plan_step_floor_never_exceeds_the_step():
    """``plan_step_floor_s`` lets a fit skip plans whose compute alone outlasts the fastest step found;
    it must stay below every plan's step (1F1B, interleaved, recomputation, ZeRO, several pipelines), and
    ``plan_passes_floor_s`` below it. With the wait for the slowest of 2,048 GPUs counted (4.2% of the
    compute), half the floors come within 2% of their steps (4.4% without it)."""
    from twin.api import load_scenario, plan_memory, plan_step_floor_s, plan_step_s, prepare
    from twin.api.floors import plan_passes_floor_s
    from twin.studies.plans import plan_space

    prepared = prepare(load_scenario("scenarios/llama-65b-a100.yaml"))
    floors, schedules = [], set()
    for request in plan_space(prepared):
        try:
            planned = plan_memory(prepared, request)
        except InfeasibleError:
            continue
        schedules.add(planned[0].schedule)
        floors.append((plan_passes_floor_s(prepared, request, planned), plan_step_floor_s(prepared, request, planned),
                       plan_step_s(prepared, request, planned)))
    assert len(floors) > 100 and schedules >= {"1f1b", "interleaved"}
    assert all(0 < passes <= floor <= step for passes, floor, step in floors)
    assert statistics.median(floor / step for _, floor, step in floors) > 0.98


def _shown(report, top: int) -> list[str]:
    """The table rows ``twin fit --top top`` prints, with their ranks."""
    from twin.report import fit_table

    return [line for line in fit_table(report.to_dict(), top).splitlines() if re.match(r"\d+ {2,}", line)]


def test_a_fit_asked_for_its_best_rows_times_only_what_may_show_among_them():
    """With ``top``, the options slower than the rows shown are left untimed: the rows shown are those of the
    fit that times every option, and each option left is slower than all of them (checked on that fit)."""
    from twin.api import load_scenario
    from twin.studies.fit import fit_options

    scenario = load_scenario("scenarios/dgx-finetune.yaml")
    options = fit_options(scenario, 64, ["dgx-h100", "dgx-a100-80gb", "l40s-8"])
    full = search(scenario, options)
    assert full.unranked == 0 and "options_unranked" not in full.to_dict()
    times = {r.option: r.result.time_to_train_s for r in full.rows if r.result is not None}
    for top in (1, 4, 10):
        lazy = search(scenario, options, top=top)
        answered = [r for r in lazy.rows if r.result is not None]
        assert 0 < lazy.unranked and len(answered) + lazy.unranked == len(times)     # every fitting option counted
        assert _shown(lazy, top) == _shown(full, top)
        assert all(r.result.time_to_train_s == times[r.option] for r in answered)   # the same answers
        slowest_shown = max(times[r.option] for r in answered[:top])
        left = set(times) - {r.option for r in answered}
        assert all(times[option] > slowest_shown for option in left)
        assert lazy.to_dict()["options_unranked"] == lazy.unranked
    assert len(_shown(full, 0)) > 40                                                 # a fit worth pruning


def test_a_fits_two_parts_keep_the_options_of_one_fabric_together():
    """Node types built alike (DGX H100 and H200) on as many nodes share one fabric: their options go to one part,
    so that only one process builds it; every option goes to exactly one part."""
    from twin.studies.fit import _dealt

    options = [FitOption(node, gpus, gpus // 8, method, "bf16") for node in ("dgx-h100", "dgx-h200", "dgx-b200")
               for gpus in (8, 64, 512) for method in ("full", "lora")]
    fitting = [(float(k % 7), k) for k in range(len(options))]
    parts = _dealt(options, fitting)
    assert sorted(parts[0] + parts[1]) == sorted(fitting)
    part_of = {i: p for p, part in enumerate(parts) for _, i in part}
    for i, a in enumerate(options):
        for j, b in enumerate(options):
            if a.nodes == b.nodes and {a.node, b.node} <= {"dgx-h100", "dgx-h200"}:
                assert part_of[i] == part_of[j]
    assert parts[0] and parts[1]


@pytest.mark.parametrize("model", ["llama2-70b", "mixtral-8x7b"])
def test_an_options_floors_are_below_its_time_to_train(model):
    """An option's floors bound what its best plan takes, for every option that fits: full fine-tuning, LoRA and
    QLoRA, one GPU to several nodes, a dense model and a mixture of experts. ``gemm_floor_s``, known before any
    plan is sized, is below ``_Pruned.floor_s`` (its plans' passes floors over the run's steps), which is below
    the time to train; ``_fits``, which stops at the first plan that fits, agrees with the plans kept."""
    from twin.api import gemm_floor_s, load_scenario, prepare
    from twin.studies.fit import _answered, _fits, _pruned, fit_options

    scenario = load_scenario("scenarios/finetune-70b-qlora.yaml")
    scenario = scenario.model_copy(update={"training": scenario.training.model_copy(update={"model": model})})
    checked, ratios = set(), []
    for option in fit_options(scenario, 32, ["dgx-h100", "l40s-8", "h100-pcie-2"]):
        prepared = prepare(variant(scenario, option))
        pruned = _pruned(option, prepared, {})
        assert _fits(prepared, option.gpus, {}) == bool(pruned.kept)
        if pruned.kept:
            time_s = _answered(scenario, pruned, prepared).result.time_to_train_s
            assert 0 < gemm_floor_s(prepared, option.gpus) <= pruned.floor_s <= time_s
            ratios.append(gemm_floor_s(prepared, option.gpus) / time_s)
            checked.add(option.method)
        else:
            assert pruned.floor_s == float("inf")
    assert checked == {"full", "lora", "qlora"}
    assert max(ratios) > 0.5                     # a floor that ranks, not zero


def test_fit_prints_how_many_options_it_left_untimed():
    out = twin("fit", "scenarios/dgx-finetune.yaml", "--nodes", "dgx-h100,l40s-8", "--max-gpus", "16", "--top", "2")
    assert out.returncode == 0, out.stderr
    head, *rest = out.stdout.splitlines()
    fits, total = (int(n) for n in re.search(r"(\d+) of (\d+) options fit", head).groups())
    ranked = [line for line in rest if re.match(r"\d+ {2,}", line)]
    more = re.search(r"\.\.\. (\d+) more options that fit, none faster than these", out.stdout)
    assert len(ranked) == 2 and more and "distinct rows" not in head
    full = json.loads(twin("fit", "scenarios/dgx-finetune.yaml", "--nodes", "dgx-h100,l40s-8", "--max-gpus", "16",
                           "--json").stdout)
    assert (fits, total) == (sum(o["fits"] for o in full["options"]), len(full["options"]))
    assert "options_unranked" not in full
    assert int(more.group(1)) == fits - 2          # no merged rows among the two shown here
