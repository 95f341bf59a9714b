"""Scheduling policies over a small cluster state: placement, FIFO blocking, EASY backfill, fair share, holds."""

from __future__ import annotations

import math

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from twin.operations.pool import node_mask
from twin.operations.scheduler import (FairShare, Hold, Need, Partitions, Policy, Pool, Queue, Running, Waiting, order,
                                       place_service, release_slot, schedule)

GPN = 8


def pool(sus: list[int], busy: dict[int, int] | None = None) -> Pool:
    """A pool of nodes in the given SUs, with ``busy[node]`` GPUs taken."""
    p = Pool(GPN, sus)
    for node, gpus in (busy or {}).items():
        p.take([node], gpus)
    return p


def job(index: int, nodes: int = 1, gpus: int = GPN, estimate: float = 3600.0, release: float = 0.0,
        tenant: str = "a", priority: float = 0.0) -> Waiting:
    return Waiting(index, Need(nodes, gpus), estimate, priority, tenant, release)


def test_topology_placement_packs_a_job_in_the_unit_that_fits_it_most_tightly():
    p = pool([0, 0, 0, 0, 1, 1, 1, 1], busy={0: GPN, 4: GPN, 5: GPN})
    assert p.choose(Need(2, GPN), "topology") == [6, 7]          # SU 1 has 2 free: the tightest fit
    assert p.choose(Need(3, GPN), "topology") == [1, 2, 3]       # only SU 0 holds 3
    assert p.choose(Need(2, GPN), "first-fit") == [1, 2]


def test_topology_placement_spans_the_fewest_adjacent_units_filling_the_fullest_first():
    p = pool([0, 0, 1, 1, 1, 2, 2, 2], busy={0: GPN, 2: GPN, 5: GPN})
    # Free: SU 0 {1}, SU 1 {3, 4}, SU 2 {6, 7}: four nodes need two adjacent SUs, 1 and 2.
    assert p.choose(Need(4, GPN), "topology") == [3, 4, 6, 7]
    assert p.choose(Need(4, GPN), "first-fit") == [1, 3, 4, 6]


def test_a_small_job_goes_to_the_busiest_node_it_fits_or_the_first_under_first_fit():
    p = pool([0, 0, 0], busy={0: 2, 1: 6})
    assert p.choose(Need(2, 2), "topology") == [1]
    assert p.choose(Need(2, 2), "first-fit") == [0]
    assert p.choose(Need(1, 7), "topology") == [2]
    assert p.choose(Need(1, 7), "topology", avoid_mask=node_mask({2})) is None


def test_the_quick_fit_test_agrees_with_choosing():
    p = pool([0, 0, 1, 1], busy={0: 3, 1: GPN, 2: 5})
    for need in [Need(1, 3), Need(1, 5), Need(1, 6), Need(1, GPN), Need(2, GPN)]:
        assert p.fits(need) == (p.choose(need, "first-fit") is not None)


def test_fifo_blocks_behind_a_head_that_does_not_fit_and_backfill_does_not():
    p = pool([0, 0, 0, 0], busy={0: GPN, 1: GPN})
    running = [Running(7200.0, (0, 1), GPN)]
    queue = [job(0, nodes=3), job(1, nodes=1, estimate=1800.0, release=1.0)]
    assert schedule(Policy("fifo"), p, queue, lambda: running, 0.0).starts == []
    decision = schedule(Policy("backfill"), p, queue, lambda: running, 0.0)
    assert [index for index, _ in decision.starts] == [1]
    assert decision.head == 0 and decision.head_start_s == 7200.0


def test_backfill_keeps_a_long_job_off_the_heads_reserved_nodes():
    p = pool([0, 0, 0, 0], busy={0: GPN, 1: GPN})
    running = [Running(7200.0, (0, 1), GPN)]
    # The head needs 3 nodes at 7200 s: nodes 0, 1 and one of 2, 3. A long job may take the other.
    queue = [job(0, nodes=3), job(1, nodes=1, estimate=1e6, release=1.0), job(2, nodes=1, estimate=1e6, release=2.0)]
    decision = schedule(Policy("backfill"), p, queue, lambda: running, 0.0)
    assert len(decision.starts) == 1
    assert decision.starts[0][1][0] in (2, 3)


def test_a_hold_keeps_other_jobs_off_the_held_nodes_when_they_would_still_run_at_its_start():
    p = pool([0, 0, 0, 0])
    hold = Hold(9, 3600.0, frozenset({0, 1}))
    short, long = job(1, nodes=2, estimate=1800.0), job(2, nodes=2, estimate=7200.0, release=1.0)
    starts = schedule(Policy("backfill"), p, [short, long], lambda: [], 0.0, hold=hold).starts
    assert dict(starts) == {1: [0, 1], 2: [2, 3]}
    long_alone = schedule(Policy("backfill"), p, [long], lambda: [], 0.0, hold=hold).starts
    assert long_alone == [(2, [2, 3])]


def test_fair_share_orders_the_tenant_that_used_less_first():
    fair = FairShare({"a": 0.5, "b": 0.5}, half_life_s=7 * 86400.0)
    fair.advance(3600.0, {"a": 64})
    assert fair.factor("b") == 1.0 and fair.factor("a") == pytest.approx(0.25)     # 2^-(1/0.5)
    queue = [job(0, tenant="a"), job(1, tenant="b", release=10.0)]
    assert [w.index for w in order(Policy("priority"), queue, fair)] == [1, 0]
    assert [w.index for w in order(Policy("backfill"), queue, fair)] == [0, 1]
    assert [w.index for w in order(Policy("priority"), [queue[0], job(2, priority=5, release=20.0)], fair)] == [2, 0]


def test_usage_decays_with_its_half_life():
    fair = FairShare({}, half_life_s=100.0)
    fair.advance(1.0, {"a": 1})
    first = fair.usage["a"]
    fair.advance(101.0, {})
    assert fair.usage["a"] == pytest.approx(first / 2)
    assert math.isclose(fair.factor("a"), 0.5)          # alone, it used everything of an equal share


def test_mig_instances_fill_split_gpus_of_their_profile_before_splitting_new_ones():
    p, parts = pool([0, 0]), Partitions()
    first = place_service(p, parts, 5, 1, "2g.20gb", 3, "topology")
    assert sum(s.count for s in first) == 5 and len({s.gpu for s in first}) == 2       # 3 + 2 on two GPUs
    second = place_service(p, parts, 1, 1, "2g.20gb", 3, "topology")
    assert len(second) == 1 and second[0].gpu in {s.gpu for s in first}               # the free third instance
    other = place_service(p, parts, 1, 1, "1g.10gb", 7, "topology")
    assert other[0].gpu not in {s.gpu for s in first}                                # another profile, another GPU
    assert sum(p.free) == 2 * GPN - 3
    for slot in first + second + other:
        release_slot(p, parts, slot)
    assert p.free == [GPN, GPN] and not parts.gpus


def test_a_service_takes_all_its_replicas_or_nothing():
    p, parts = pool([0, 0], busy={0: 6, 1: 6}), Partitions()
    assert place_service(p, parts, 6, 2, None, 1, "topology") is None                 # three replicas of 2 GPUs
    assert p.free == [2, 2]
    slots = place_service(p, parts, 4, 2, None, 1, "topology")
    assert sorted(s.node for s in slots) == [0, 1] and p.free == [0, 0]


def _sorted_as_written(policy: Policy, queue: list[Waiting], fair: FairShare) -> list[int]:
    """The policies' order as their definitions say it, sorting the whole queue (the reference for ``Queue``)."""
    if policy.name == "priority":
        return [w.index for w in sorted(queue, key=lambda w: (-w.priority, -fair.factor(w.tenant), w.release_s,
                                                               w.index))]
    return [w.index for w in sorted(queue, key=lambda w: (-w.priority if math.isinf(w.priority) else 0.0,
                                                          w.release_s, w.index))]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from([0.0, 1.0, 5.0, math.inf]),
                          st.integers(0, 20), st.booleans()), min_size=1, max_size=40),
       st.dictionaries(st.sampled_from("abc"), st.integers(0, 64), max_size=3))
def test_the_kept_queue_reads_in_the_order_a_full_sort_gives(ops, held):
    """Jobs come and go in any order; the queue read lazily is the queue sorted by the policy's key, for every policy
    and any fair-share state."""
    fair = FairShare({"a": 0.5, "b": 0.3, "c": 0.2}, half_life_s=86400.0)
    fair.advance(7200.0, held)
    kept, alive = Queue(), {}
    for i, (tenant, priority, release, leave) in enumerate(ops):
        w = job(i, tenant=tenant, priority=priority, release=float(release))
        kept[i] = alive[i] = w
        if leave and len(alive) > 1:
            gone = min(alive)
            del kept[gone], alive[gone]
    for name in ("fifo", "backfill", "priority"):
        expected = _sorted_as_written(Policy(name), list(alive.values()), fair)
        assert [w.index for w in kept.ordered(Policy(name), fair)] == expected
    assert len(kept) == len(alive)


def test_a_pass_reads_only_the_head_of_a_long_queue():
    """A pass over 10,000 waiting jobs on a full cluster reads the blocked head and ``depth`` jobs behind it."""
    read = []

    class Counting(Queue):
        def ordered(self, policy, fair):
            for w in super().ordered(policy, fair):
                read.append(w.index)
                yield w

    queue = Counting([job(i, release=float(i)) for i in range(10_000)])
    full = pool([0, 0], busy={0: GPN, 1: GPN})
    decision = schedule(Policy("backfill", depth=100), full, queue, lambda: [Running(3600.0, (0, 1), GPN)], 0.0)
    assert decision.starts == []
    assert len(read) == 1 + 100


def test_the_work_bound_counts_the_jobs_a_pass_reads():
    """The bound on a jobs scenario charges each arrival the queued jobs a pass reads: the queue while it is
    short, the head and the backfill depth once it is long; its closed form for a generator agrees with the
    fluid sum over the same arrivals."""
    from twin.api.bounds import SCAN_JOBS, generator_work, queue_work

    assert SCAN_JOBS == 101
    light = [(i * 3600.0, 1800.0) for i in range(100)]            # half an hour of one GPU an hour: no queue,
    assert queue_work(light, 1) == 200.0                            # each arrival's pass reads only itself
    heavy = [(i * 60.0, 3600.0) for i in range(1000)]              # 1 GPU-hour a minute on 32 GPUs: load 1.875
    growth = 1 - 1 / 1.875
    short = int(SCAN_JOBS // growth)                                # arrivals before a pass reads its full depth
    expected = 1000 + growth * short * (short + 1) / 2 + SCAN_JOBS * (1000 - short)
    assert generator_work(1000, 1 / 60, 3600.0, 32) == pytest.approx(expected)
    assert queue_work(heavy, 32) == pytest.approx(expected, rel=0.01)


def _choice_as_written(free: list[int], usable: list[int], su: list[int], gpn: int, need: Need, placement: str,
                       avoid: frozenset[int]) -> list[int] | None:
    """Placement as the policies define it, over lists of nodes (the reference for the pool's bit masks)."""
    if need.gpus < gpn or need.nodes == 1 and placement == "first-fit":
        fit = [n for n in range(len(free)) if usable[n] and free[n] >= need.gpus and n not in avoid]
        if not fit:
            return None
        return [fit[0]] if placement == "first-fit" else [min(fit, key=lambda n: (free[n], n))]
    whole = [n for n in range(len(free)) if usable[n] and free[n] == gpn and n not in avoid]
    if len(whole) < need.nodes:
        return None
    if placement == "first-fit":
        return whole[:need.nodes]
    by_su: dict[int, list[int]] = {}
    for n in whole:
        by_su.setdefault(su[n], []).append(n)
    fitting = [s for s, nodes in by_su.items() if len(nodes) >= need.nodes]
    if fitting:
        return by_su[min(fitting, key=lambda s: (len(by_su[s]), s))][:need.nodes]
    units, best = sorted(by_su), None
    for width in range(2, len(units) + 1):
        for start in range(len(units) - width + 1):
            total = sum(len(by_su[s]) for s in units[start:start + width])
            if total >= need.nodes and (best is None or total < best[0]):
                best = (total, units[start:start + width])
        if best:
            break
    chosen: list[int] = []
    for s in sorted(best[1], key=lambda s: (-len(by_su[s]), s)):
        chosen += by_su[s][:need.nodes - len(chosen)]
    return sorted(chosen)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=24),
       st.lists(st.tuples(st.sampled_from(["take", "give", "down", "up"]), st.integers(0, 23), st.integers(1, GPN)),
                max_size=40),
       st.lists(st.tuples(st.integers(1, 6), st.sampled_from([1, 2, 3, 5, GPN])), min_size=1, max_size=6),
       st.frozensets(st.integers(0, 23), max_size=6))
def test_the_pool_chooses_the_nodes_its_policies_define(units, changes, needs, avoid):
    """Whatever GPUs were taken, given back or sent to repair, the pool's choice (kept as bit masks per free
    count) is the one the placement rules give over plain lists of nodes, with and without nodes to avoid."""
    su = sorted(units)
    p = Pool(GPN, su)
    for change, node, gpus in changes:
        node %= len(su)
        if change == "take":
            if p.free[node] >= gpus:
                p.take([node], gpus)
        elif change == "give":
            if p.free[node] + gpus <= GPN:
                p.give([node], gpus)
        else:
            p.set_usable(node, change == "up")
    trial = p.copy()
    for nodes, gpus in needs:
        need = Need(nodes if gpus == GPN else 1, gpus)
        for placement in ("topology", "first-fit"):
            for skip in (frozenset(), avoid):
                expected = _choice_as_written(p.free, p.usable, su, GPN, need, placement, skip)
                assert p.choose(need, placement, node_mask(skip)) == expected
                assert p.fits(need) == (_choice_as_written(p.free, p.usable, su, GPN, need, placement,
                                                           frozenset()) is not None)
    assert p.by_free == [sum(1 for n in range(len(su)) if p.usable[n] and p.free[n] == f) for f in range(GPN + 1)]
    assert trial.masks == p.masks and trial.free == p.free


def test_fair_share_factors_together_equal_each_alone():
    fair = FairShare({"a": 0.5, "b": 0.3, "c": 0.2}, half_life_s=86400.0)
    fair.advance(3600.0, {"a": 16, "b": 3})
    fair.advance(7200.0, {"a": 16, "c": 8})
    assert fair.factors(["a", "b", "c", "d"]) == [fair.factor(t) for t in "abcd"]
