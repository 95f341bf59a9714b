"""Samples split over two cores (twin/cores.py): the same list, in order, as one process plays it.

A process with threads never forks (a pytest-xdist worker may have some), so each check runs in a fresh
interpreter, as a user's ``python -m twin run`` does."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2,
                                reason="splitting needs Linux and two cores")


def _run(script: str) -> None:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_second_half_is_played_by_a_child_and_comes_back_in_order():
    _run("""
        import os
        from twin.cores import can_split, split_map
        assert can_split()
        parent = os.getpid()
        got = split_map(lambda i: (i * i, os.getpid() != parent), list(range(11)), True)
        assert [square for square, _ in got] == [i * i for i in range(11)]
        assert [in_child for _, in_child in got] == [False] * 5 + [True] * 6
        assert split_map(lambda i: os.getpid() != parent, list(range(11)), False) == [False] * 11
    """)


def test_a_child_that_fails_costs_only_time():
    _run("""
        import os
        from twin.cores import split_map
        parent = os.getpid()
        def fails_in_a_child(i):
            if os.getpid() != parent:
                raise RuntimeError("lost")
            return i
        def dies_in_a_child(i):
            if os.getpid() != parent:
                os.kill(os.getpid(), 9)
            return i
        assert split_map(fails_in_a_child, list(range(8)), True) == list(range(8))
        assert split_map(dies_in_a_child, list(range(8)), True) == list(range(8))
    """)


def test_a_process_with_threads_plays_every_sample_itself():
    _run("""
        import os, threading
        from twin.cores import can_split, split_map
        stop = threading.Event()
        worker = threading.Thread(target=stop.wait)
        worker.start()
        try:
            parent = os.getpid()
            assert not can_split()
            assert split_map(lambda i: os.getpid() == parent, list(range(6)), True) == [True] * 6
        finally:
            stop.set()
            worker.join()
    """)


def test_the_terminal_ticker_does_not_stop_a_split():
    _run("""
        import io, os
        from twin.cores import can_split, split_map
        from twin.ticker import ticking
        parent = os.getpid()
        with ticking("run", io.StringIO(), True):
            assert can_split()
            assert split_map(lambda i: os.getpid() == parent, list(range(4)), True) == [True, True, False, False]
    """)


def test_a_split_monte_carlo_gives_the_samples_of_one_process():
    _run("""
        import math, sys
        sys.path.insert(0, "tests")
        import twin.engine.job as job
        from test_job import spec_16k
        spec = spec_16k(days=6.0, spares=1)
        job.SPLIT_FAILURES = 0
        split = job.monte_carlo(spec, 11, 12)
        job.SPLIT_FAILURES = math.inf
        job.monte_carlo.cache_clear()                  # identical jobs are simulated once per process
        alone = job.monte_carlo(spec, 11, 12)
        assert alone is not split
        assert sum(s.interruptions for s in alone.samples) > 50
        assert split.samples == alone.samples and split.median == alone.median
    """)


def test_a_split_fit_gives_the_rows_of_one_process():
    _run("""
        import twin.studies.fit as fit
        from twin.api import load_scenario
        scenario = load_scenario("scenarios/dgx-finetune.yaml")
        nodes = ["dgx-h100", "dgx-a100-80gb", "l40s-8"]
        split = fit.fit(scenario, max_gpus=32, nodes=nodes)
        options = fit.fit_options(scenario, 32, nodes)
        assert all(fit._halves(options, list(range(len(options)))))
        fit.split_map = lambda play, items, worth: [play(item) for item in items]
        alone = fit.fit(scenario, max_gpus=32, nodes=nodes)
        assert len(split.rows) > 20 and split == alone
    """)


def test_a_child_of_a_split_splits_no_further():
    _run("""
        import os
        from twin.cores import can_split, split_map
        parent = os.getpid()
        def inner(i):
            return [can_split(), split_map(lambda j: os.getpid(), [0, 1], True)]
        (parent_can, parent_pids), (child_can, child_pids) = split_map(inner, [0, 1], True)
        assert parent_can and not child_can
        assert parent_pids[0] == parent and parent_pids[1] != parent
        assert child_pids[0] == child_pids[1] != parent
    """)


def test_a_split_capacity_search_gives_the_answers_of_one_process():
    _run("""
        import twin.api.serving as serving
        from twin.api import load_scenario
        scenario = load_scenario("scenarios/serve-8b-l4-vs-mig.yaml")
        split = serving.capacity(scenario)
        serving.split_map = lambda play, items, worth: [play(item) for item in items]
        alone = serving.capacity(scenario)
        assert len(split.alternatives) == 2 and split.to_json() == alone.to_json()
    """)


def test_a_pool_worker_splits_nothing():
    _run("""
        from concurrent.futures import ProcessPoolExecutor
        from twin.cores import can_split, one_core
        from twin.studies.executor import start_worker
        import os
        with ProcessPoolExecutor(1, initializer=one_core) as pool:
            assert pool.submit(can_split).result() is False
        with ProcessPoolExecutor(1, initializer=start_worker, initargs=(os.getpid(),)) as pool:
            assert pool.submit(can_split).result() is False
    """)


def test_a_split_plan_search_counts_and_keeps_what_one_pass_does():
    """Both halves of the space in order, then the plans' estimates in two shares: the same tallies (equivalent
    ZeRO stages across the halves, plans rejected by a constraint or bounded by their floor, the budget's stop)
    and the same plans."""
    _run("""
        import json
        import twin.studies.search as search
        from twin.api import scenario_data
        data = scenario_data("scenarios/superpod.yaml")
        def record(**kwargs):
            found = search.search_plans(data, "superpod", "time", top=5, refine=0, **kwargs)
            return json.dumps(found.to_dict(), sort_keys=True)
        split = [record(), record(constraints=["deadline=40d"]), record(max_plans=60)]
        search.split_map = lambda play, items, worth: [play(item) for item in items]
        alone = [record(), record(constraints=["deadline=40d"]), record(max_plans=60)]
        assert split == alone
        counts = [json.loads(r) for r in alone]
        assert counts[0]["plans_equivalent"] > 0 and counts[1]["plans_rejected"] > 0
        assert counts[0]["plans_bounded"] > 0 and counts[0]["exhaustive"] is True
        assert counts[2]["exhaustive"] is False and counts[2]["plans_evaluated"] == 60
    """)


def test_the_plans_a_search_plays_in_full_come_back_in_order_from_two_cores():
    """The refined plans and the scenario's own, their steps taken by two cores as each is free, the longest to
    train first, then each core's Monte Carlos played side by side: the same plans, results and scenario plan as
    one process plays them one by one, each Monte Carlo alone."""
    _run("""
        import json
        import twin.studies.search as search
        from twin.api import scenario_data, with_overrides
        from twin.engine.job import monte_carlo
        data = with_overrides(scenario_data("scenarios/superpod.yaml"), {"failures.samples": 40})
        def record():
            return json.dumps(search.search_plans(data, "superpod", "time", top=3, refine=3).to_dict(), sort_keys=True)
        split = record()
        monte_carlo.cache_clear()
        search.shared_then = lambda first, then, items, worth: [then([(item, first(item))])[0] for item in items]
        search.play_ahead = lambda jobs: None
        assert split == record()
        assert json.loads(split)["scenario_plan"] is not None and len(json.loads(split)["plans"]) == 3
    """)


def test_items_shared_then_finished_together_come_back_in_order():
    """``shared_then``: each item's first part worked out once, by the parent or the child, then each process
    finishes what it took in one call; neither takes more than half the items, however quick its first parts;
    the answers in the items' order; a child that fails costs only time."""
    _run("""
        import os, time
        from twin.cores import shared_then
        parent = os.getpid()
        def first(i):
            if i == 0:
                time.sleep(0.5)
            return i * i
        calls = []
        def then(taken):
            calls.append(len(taken))
            return [(square, i, os.getpid()) for i, square in taken]
        got = shared_then(first, then, list(range(12)), True)
        assert [(square, i) for square, i, _ in got] == [(i * i, i) for i in range(12)]
        by_parent = [i for square, i, pid in got if pid == parent]
        assert len(by_parent) == 6 and calls == [6]     # half each, though one core was slow; the parent finished once
        assert shared_then(first, then, list(range(1, 5)), False) == [(i * i, i, parent) for i in range(1, 5)]
        def fails_in_a_child(taken):
            if os.getpid() != parent:
                raise RuntimeError("lost")
            return [i for i, _ in taken]
        assert shared_then(lambda i: time.sleep(0.01), fails_in_a_child, list(range(8)), True) == list(range(8))
    """)


def test_shared_items_are_taken_by_whichever_core_is_free_and_come_back_in_order():
    """``shared_map``: each item played once, by the parent or the child, the answers in the items' order; a long
    first item leaves the other core to take the rest; a child that fails or dies costs only time; more items
    than the queue holds are split in halves."""
    _run("""
        import os, time
        from twin.cores import shared_map
        parent = os.getpid()
        def played(i):
            if i == 0:
                time.sleep(0.5)
            return i * i, os.getpid()
        got = shared_map(played, list(range(12)), True)
        assert [square for square, _ in got] == [i * i for i in range(12)]
        by_parent = [i for i, (_, pid) in enumerate(got) if pid == parent]
        assert by_parent and len(by_parent) < 12        # both took items, and the one with the long item few
        assert (0 in by_parent) != (len(by_parent) > 6)
        assert {pid for _, pid in shared_map(played, list(range(1, 5)), False)} == {parent}
        def fails_in_a_child(i):
            if os.getpid() != parent:
                raise RuntimeError("lost")
            time.sleep(0.01)
            return i
        def dies_in_a_child(i):
            if os.getpid() != parent:
                os.kill(os.getpid(), 9)
            time.sleep(0.01)
            return i
        assert shared_map(fails_in_a_child, list(range(8)), True) == list(range(8))
        assert shared_map(dies_in_a_child, list(range(8)), True) == list(range(8))
        many = shared_map(lambda i: (i, os.getpid() == parent), list(range(2000)), True)
        assert [i for i, _ in many] == list(range(2000))
        assert [mine for _, mine in many] == [True] * 1000 + [False] * 1000
    """)


def test_work_done_here_first_leaves_the_child_the_items_meanwhile():
    """``shared_map``'s ``here_first``: the parent does it before taking items, while the child takes them, and
    keeps what it made (as a plan search keeps the fabric it built for the fork after); nothing run without a
    fork."""
    _run("""
        import os, time
        from twin.cores import shared_map
        parent, kept = os.getpid(), []
        def first():
            time.sleep(0.5)
            kept.append(os.getpid())
        def played(i):
            time.sleep(0.02)
            return i * i, os.getpid()
        got = shared_map(played, list(range(12)), True, here_first=first)
        assert [square for square, _ in got] == [i * i for i in range(12)]
        assert kept == [parent]
        assert sum(pid == parent for _, pid in got) <= 2        # the child took the items during the half second
        assert shared_map(played, list(range(3)), False, here_first=first) == [(i * i, parent) for i in range(3)]
        assert kept == [parent]
    """)


def test_balanced_halves_by_hand():
    """The heaviest first, each to the lighter part; each part in index order."""
    from twin.cores import balanced_halves

    assert balanced_halves([5.0, 1.0, 4.0, 2.0, 2.0]) == [[0, 4], [1, 2, 3]]    # 5 | 4; 5 | 4+2; 5+2 | 6; 7 | 6+1
    assert balanced_halves([1.0]) == [[0], []] and balanced_halves([]) == [[], []]
    assert balanced_halves([3.0, 3.0]) == [[0], [1]]


def test_a_shared_cluster_plays_its_baseline_on_a_second_core_to_the_same_record():
    """Each of a shared cluster's splits, its listed service beside the fabric, its baseline beside the
    carbon-aware play and its band's slow edge beside the fast one, gives the record of one process."""
    _run("""
        import twin.api.operations as operations
        import twin.api.operations_bands as operations_bands
        from twin.api import run_file
        split = run_file("scenarios/superpod-shared.yaml").to_json()
        one = lambda play, items, worth: [play(item) for item in items]
        operations.split_map = operations_bands.split_map = one
        alone = run_file("scenarios/superpod-shared.yaml").to_json()
        assert '"carbon_aware"' in split and '"makespan_s_high"' in split and split == alone
    """)


def test_a_child_dies_with_its_killed_parent(tmp_path):
    """A command killed mid-way (``kill -9``) leaves no child working on its half."""
    mark = tmp_path / "child.pid"
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import os, time
        from twin.cores import split_map
        parent = os.getpid()
        def work(i):
            if os.getpid() != parent:                     # the child: say who it is, then work for long
                open({str(mark)!r} + ".tmp", "w").write(str(os.getpid()))
                os.rename({str(mark)!r} + ".tmp", {str(mark)!r})
                time.sleep(60)
            else:                                         # the parent: killed once the child works
                while not os.path.exists({str(mark)!r}):
                    time.sleep(0.01)
                os.kill(parent, 9)
        split_map(work, [0, 1], True)
    """)], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert done.returncode == -9
    child = int(mark.read_text())
    for _ in range(500):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        with open(f"/proc/{child}/stat") as stat:          # reaped by init: gone, or a zombie for a moment
            if stat.read().split()[2] == "Z":
                return
        time.sleep(0.01)
    pytest.fail(f"child {child} still runs 5 s after its parent was killed")
