"""One plan-space generator: the plan search's and fit's spaces are two sets of rules on it."""

from __future__ import annotations

from twin.studies.plans import FIT_RULES, PLAN_RULES, PlanChoice, plan_choices, undominated
from twin.workload.model import model_spec

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
