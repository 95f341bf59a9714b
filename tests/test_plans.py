"""One plan-space generator: the plan search's and fit's spaces are two sets of rules on it."""

from __future__ import annotations

from twin.studies.plans import FIT_RULES, PLAN_RULES, PlanChoice, outside_space, plan_choices, undominated
from twin.workload.model import model_spec
from twin.workload.plan import ParallelPlan

LLAMA2_70B = model_spec("llama2-70b")           # 64 heads, 8 KV heads, 80 layers


def test_the_plan_search_space_by_hand():
    plans = list(plan_choices(LLAMA2_70B, 16, 8, ("none", "full"), PLAN_RULES, global_batch=8))
    # every divisor of 8 GPUs a node splits the heads; pipeline: divisors of 80 and powers of two, t × p ≤ 16
    assert {(c.tensor, c.pipeline) for c in plans} == {
        (1, 1), (1, 2), (1, 4), (1, 5), (1, 8), (1, 10), (1, 16), (2, 1), (2, 2), (2, 4), (2, 5), (2, 8),
        (4, 1), (4, 2), (4, 4), (8, 1), (8, 2)}
    assert {c.data for c in plans} == {None}                         # data parallelism: auto
    assert {c.microbatch for c in plans} == {1, 2, 4, 8}             # 16 does not divide the batch of 8
    assert {c.zero for c in plans} == {0, 1, 2, 3}
    # interleaving: 80 layers split evenly over 2 stages × v chunks for v = 2, 4, 5, 8
    assert sorted({c.virtual_stages for c in plans if (c.tensor, c.pipeline) == (8, 2)}) == [1, 2, 4, 5, 8]
    assert all((c.schedule == "interleaved") == (c.virtual_stages > 1) for c in plans)
    shapes = {(c.tensor, c.pipeline, c.virtual_stages) for c in plans}
    assert len(plans) == len(shapes) * 4 * 2 * 4                    # micro-batches × recompute × ZeRO


def test_fit_uses_every_gpu_with_powers_of_two_and_keeps_the_scenarios_micro_batch():
    plans = list(plan_choices(LLAMA2_70B, 16, 8, rules=FIT_RULES))
    assert {(c.tensor, c.pipeline, c.data) for c in plans} == {
        (t, p, 16 // (t * p)) for t in (1, 2, 4, 8) for p in (1, 2, 4, 8, 16) if t * p <= 16}
    assert {c.microbatch for c in plans} == {None} and {c.virtual_stages for c in plans} == {1}
    assert all(c.zero == 0 for c in plans if c.data == 1)
    assert "microbatch" not in plans[0].settings()


def test_both_spaces_split_the_heads():
    odd = model_spec("llama-33b")               # 52 heads: no tensor 8
    for rules in (PLAN_RULES, FIT_RULES):
        assert max(c.tensor for c in plan_choices(odd, 8, 8, rules=rules, global_batch=8)) == 4


def test_dominance_needs_the_same_shape():
    a = PlanChoice(2, 1, None, 1, "selective", microbatch=1)
    assert a.dominates(PlanChoice(2, 1, None, 1, "full", microbatch=1))
    assert not a.dominates(PlanChoice(2, 1, None, 1, "full", microbatch=2))


def test_undominated_by_hand_and_as_every_pair_compared():
    # ZeRO-2 without recomputation dominates ZeRO-2 and ZeRO-3 that recompute; ZeRO-1 is its own trade
    shape = dict(tensor=2, pipeline=1, data=None, microbatch=1)
    best, zero3, zero1 = (PlanChoice(**shape, zero=2, recompute="none"), PlanChoice(**shape, zero=3, recompute="full"),
                          PlanChoice(**shape, zero=1, recompute="full"))
    other = PlanChoice(tensor=4, pipeline=1, data=None, microbatch=1, zero=3, recompute="full")
    assert undominated([best, zero3, zero1, other]) == {best, zero1, other}
    plans = list(plan_choices(LLAMA2_70B, 16, 8, ("none", "selective", "full"), PLAN_RULES, global_batch=8))
    pairwise = {c for c in plans if not any(o.dominates(c) for o in plans)}
    assert undominated(plans) == pairwise and 0 < len(pairwise) < len(plans)


def _plan(tensor: int, pipeline: int, data: int, virtual: int = 1, microbatch: int = 1, zero: int = 1,
          recompute: str = "none") -> ParallelPlan:
    return ParallelPlan(tensor, pipeline, data, 1, microbatch, virtual, "interleaved" if virtual > 1 else "1f1b",
                        tensor > 1, recompute, zero, True, True, 8, 4096)


def test_a_plan_outside_the_space_is_told_why():
    """Llama 3's published layout (126 layers, 16 stages × 4 chunks) splits the layers unevenly: the search, which
    interleaves even splits only, cannot find it, and says so; a plan drawn from the space is inside it."""
    llama3 = model_spec("llama3-405b")               # 126 layers
    assert outside_space(LLAMA2_70B, _plan(8, 2, 1, virtual=4, zero=2), 16, 8, ("none", "full"),
                         global_batch=8) is None
    uneven = outside_space(llama3, _plan(8, 16, 128, virtual=4), 16384, 8, global_batch=2048)
    assert uneven == ("its 4 virtual stages split the 126 layers unevenly over 64 chunks, and the search "
                      "interleaves even splits only, as Megatron-LM requires")
    assert "more than the search's 8" in outside_space(LLAMA2_70B, _plan(8, 2, 1, virtual=10), 16, 8, global_batch=8)
    assert "outside the search space" in outside_space(LLAMA2_70B, _plan(8, 2, 1, microbatch=3), 16, 8,
                                                       global_batch=24)
