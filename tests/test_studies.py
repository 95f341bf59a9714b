"""Studies: the --vary grammar, sweeps (grid, zip, error rows, resume, Dask), Pareto fronts, plan search."""

from __future__ import annotations

import copy
import io
import json

import pyarrow.parquet as pq
import pytest

from tests.conftest import BASE, SCENARIOS
from twin.api import estimate, parse_scenario, prepare, scenario_data, simulate
from twin.cli import main
from twin.errors import ScenarioError
from twin.studies import store
from twin.studies.executor import InProcess, run_batches
from twin.studies.progress import Progress, wanted
from twin.studies.search import parse_constraint, pareto_front, search_plans
from twin.studies.space import expand_range, parse_value, space
from twin.studies.sweep import sweep


def base() -> dict:
    return copy.deepcopy(BASE)


# -- the --vary grammar -----------------------------------------------------------------------

@pytest.mark.parametrize("text, values", [
    ("32..256:32", [32, 64, 96, 128, 160, 192, 224, 256]),
    ("1..3", [1, 2, 3]),
    ("1.1..1.5:0.1", [1.1, 1.2, 1.3, 1.4, 1.5]),
    ("400W..700W:100W", ["400W", "500W", "600W", "700W"]),
    ("0.5..1.5:0.5 kW", ["0.5kW", "1kW", "1.5kW"]),
    ("10..15:10", [10]),
])
def test_ranges_expand_to_every_step_including_the_end(text, values):
    assert expand_range(text) == values


def test_values_keep_their_type_and_text_stays_text():
    assert [parse_value(v) for v in ("64", "1.2", "true", "null", "NO", "dgx-h100", "[DE, US]")] == \
        [64, 1.2, True, None, "NO", "dgx-h100", ["DE", "US"]]


@pytest.mark.parametrize("varies, mode, message", [
    (["cluster.node_s=1,2"], "grid", "no 'node_s' at cluster (did you mean 'nodes'?)"),
    (["cluster.nodes"], "grid", "write KEY=V1,V2"),
    (["cluster.nodes=1,,2"], "grid", "has an empty value"),
    (["cluster.nodes=8..4"], "grid", "below the start"),
    (["cluster.nodes=1..4:0"], "grid", "the step must be above 0"),
    (["cluster.gpu_power_cap=400W..700kW:100W"], "grid", "mixes units"),
    (["cluster.nodes=1,2", "cluster.nodes=4"], "grid", "varied twice"),
    (["cluster.nodes=1,2", "site.country=FR,DE,US"], "zip", "cluster.nodes 2, site.country 3"),
])
def test_bad_vary_is_refused_in_one_line_before_any_point_runs(varies, mode, message):
    with pytest.raises(ScenarioError) as err:
        space(varies, mode)
    assert message in str(err.value) and "\n" not in str(err.value)


# -- sweeps -----------------------------------------------------------------------------------

def test_a_two_by_three_grid_gives_six_rows_with_the_varied_keys(tmp_path):
    study = space(["cluster.nodes=1,2", "site.country=FR,DE,SE"])
    report = sweep(base(), "test", study, tmp_path, closed_form=True)
    table = pq.read_table(tmp_path / store.RESULTS)
    assert table.num_rows == 6 and report.ran == 6 and report.errors == 0
    rows = table.to_pylist()
    assert [(r["cluster.nodes"], r["site.country"]) for r in rows] == \
        [(1, "FR"), (1, "DE"), (1, "SE"), (2, "FR"), (2, "DE"), (2, "SE")]
    assert table.column_names[:5] == ["point", "cluster.nodes", "site.country", "scenario_hash", "error"]
    for r in rows:                              # each row is the run of its own scenario
        assert r["gpus_total"] == 8 * r["cluster.nodes"] and r["country"] == r["site.country"]
        assert r["site_carbon_kg"] == r[f"carbon_kg.{r['country']}"]
    assert (tmp_path / store.TABLE).read_text().count("\n") == 7
    assert store.read_study(tmp_path)["points"] == 6


def test_zip_pairs_the_values():
    report = sweep(base(), "test", space(["cluster.nodes=1,2,4", "site.country=FR,DE,SE"], "zip"), closed_form=True)
    assert [(r["cluster.nodes"], r["country"]) for r in report.table.to_pylist()] == [(1, "FR"), (2, "DE"), (4, "SE")]


def test_an_invalid_point_is_an_error_row_with_the_one_line_message(tmp_path):
    report = sweep(base(), "test", space(["training.parallelism.tensor=1,3", "site.pue=1.2,0.5"]), tmp_path,
                   closed_form=True)
    errors = {(r["training.parallelism.tensor"], r["site.pue"]): r["error"] for r in report.table.to_pylist()}
    assert errors[(1, 1.2)] is None
    assert errors[(3, 1.2)].startswith("training.parallelism.tensor: 3 does not divide the model's 32 attention heads")
    assert errors[(1, 0.5)].startswith("site.pue: 0.5 is not allowed")
    assert report.errors == 3
    failed = [r for r in pq.read_table(tmp_path / store.RESULTS).to_pylist() if r["error"]]
    assert len(failed) == 3 and all(r["time_to_train_s"] is None for r in failed)


def test_a_resumed_study_runs_no_point_twice(tmp_path):
    first = sweep(base(), "test", space(["cluster.nodes=1,2"]), tmp_path, closed_form=True)
    assert first.ran == 2
    grown = sweep(base(), "test", space(["cluster.nodes=1,2,4", "site.pue=1.2"]), tmp_path, closed_form=True)
    assert (grown.ran, grown.reused, grown.dropped) == (1, 2, 0)   # site.pue=1.2 is the base's: same scenarios
    again = sweep(base(), "test", space(["cluster.nodes=1,2,4", "site.pue=1.2"]), tmp_path, closed_form=True)
    assert again.ran == 0 and again.table.to_pylist() == grown.table.to_pylist()
    assert [r["point"] for r in pq.read_table(tmp_path / store.RESULTS).to_pylist()] == [0, 1, 2]


def test_the_same_points_give_the_same_rows_whatever_the_batching():
    study = space(["cluster.nodes=1,2,4", "site.country=FR,DE"])
    whole = sweep(base(), "test", study, closed_form=True).table.to_pylist()
    task_sizes = []

    def task(batch):
        task_sizes.append(len(batch))
        return [item * 2 for item in batch], 0.001 * len(batch)

    out = [x for answers in run_batches(InProcess(), task, range(100), target_s=0.01) for x in answers]
    assert sorted(out) == [2 * i for i in range(100)] and task_sizes[0] == 1 and max(task_sizes) == 10
    assert sweep(base(), "test", study, closed_form=True).table.to_pylist() == whole


def test_dask_results_equal_the_local_ones_bit_for_bit():
    distributed = pytest.importorskip("distributed")
    from twin.studies.executor import DaskCluster

    data = base()
    data["failures"] = {"enabled": True, "samples": 3, "seed": 5}
    study = space(["cluster.nodes=1,2", "site.country=FR,DE"])
    local = sweep(data, "test", study)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                  scheduler_port=0, dashboard_address=":0") as cluster:   # free ports, real sockets
        pool = DaskCluster(cluster.scheduler_address)
        try:
            remote = sweep(data, "test", study, pool=pool)
        finally:
            pool.close()
    assert remote.table.equals(local.table) and remote.table.num_rows == 4      # values, types and column order
    assert remote.where.startswith("the Dask cluster at tcp://")


def test_an_unreachable_scheduler_is_refused_in_one_line(monkeypatch):
    pytest.importorskip("distributed")
    from twin.studies import executor as module
    from twin.studies.executor import executor

    monkeypatch.setattr(module, "CONNECT_TIMEOUT_S", 0.5)
    with pytest.raises(ScenarioError, match=r"^--scheduler: cannot reach a Dask scheduler at 'tcp://127.0.0.1:9'"):
        executor("tcp://127.0.0.1:9")


def test_the_progress_bar_is_drawn_only_on_a_terminal_outside_ci(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("CI", raising=False)
    assert wanted(Tty(), json_output=False)
    assert not wanted(Tty(), json_output=True) and not wanted(io.StringIO(), json_output=False)
    monkeypatch.setenv("CI", "true")
    assert not wanted(Tty(), json_output=False)
    stream = Tty()
    bar = Progress(4, stream)
    bar.advance(4)
    bar.close()
    assert "4/4 points" in stream.getvalue() and "ETA" in stream.getvalue()


def test_sweep_command_writes_the_study_and_prints_the_pareto_front(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps(base()))
    code = main(["sweep", str(path), "--vary", "cluster.nodes=1,2", "--vary", "site.country=FR,SE",
                 "--out", str(tmp_path / "out"), "--workers", "1", "--closed-form", "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == 0 and record["points"] == 4 and record["ran"] == 4
    assert record["objectives"] == ["time_to_train_s", "site_total_cost_eur", "site_carbon_kg"]
    assert {r["site.country"] for r in record["front"]} == {"SE"}  # same times, Sweden's grid and prices are lower
    assert (tmp_path / "out" / "study.yaml").exists()
    assert main(["sweep", str(path), "--vary", "cluster.nodez=1"]) == 2
    error = capsys.readouterr().err
    assert "--vary: 'cluster.nodez' is not a scenario key: no 'nodez' at cluster (did you mean" in error


# -- Pareto fronts ------------------------------------------------------------------------------

def test_pareto_front_keeps_exactly_the_rows_nothing_beats():
    rows = [{"id": i, "t": t, "c": c} for i, (t, c) in enumerate([(1, 9), (2, 5), (3, 5), (4, 1), (2, 6), (5, 1),
                                                                  (1, 9)])]
    rows.append({"id": 7, "t": None, "c": 0})
    assert [r["id"] for r in pareto_front(rows, ("t", "c"))] == [0, 6, 1, 3]
    assert pareto_front(rows, ()) == []


# -- plan search ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, name, limit", [
    ("deadline=30d", "deadline", 30 * 86400.0), ("power=1.2MW", "power", 1.2e6), ("energy=5 GWh", "energy", 5e6),
    ("cost=2M EUR", "cost", 2e6), ("cost=500000", "cost", 5e5), ("carbon=500t", "carbon", 5e5),
])
def test_constraints_parse_to_si_limits(text, name, limit):
    c = parse_constraint(text)
    assert (c.name, c.limit) == (name, pytest.approx(limit))


def test_a_closed_form_estimate_is_the_closed_form_run_without_failures():
    scenario = parse_scenario(scenario_data(SCENARIOS / "superpod.yaml") | {"failures": {"enabled": False}})
    prepared = prepare(scenario)
    guess = estimate(prepared, prepared.request)
    run = simulate(scenario, closed_form=True)
    assert (guess.step, guess.memory, guess.time_to_train_s, guess.mfu) == (run.step, run.memory,
                                                                             run.time_to_train_s, run.mfu)
    assert (guess.energy_facility_kwh, guess.carbon_kg, guess.cost_eur, guess.peak_power_it_w) == \
        (run.energy_facility_kwh, run.carbon_kg["FR"], run.total_cost_eur["FR"], run.peak_power_it_w)


def test_plans_bounded_by_their_floor_change_only_the_counts(monkeypatch):
    """The time objective evaluates plans from the lowest floor up and bounds the rest: the plans found, their
    order and every number are those of evaluating every plan, with and without a constraint."""
    import twin.studies.search as search

    data = scenario_data(SCENARIOS / "superpod.yaml")
    counts = ("plans_evaluated", "plans_pruned", "plans_bounded", "plans_rejected")

    def searched(**kwargs) -> dict:
        return search_plans(data, "superpod", "time", top=12, refine=0, **kwargs).to_dict()

    bounded = [searched(), searched(constraints=["deadline=19d"])]
    monkeypatch.setattr(search._Bound, "limit_s", lambda self: float("inf"))
    every = [searched(), searched(constraints=["deadline=19d"])]
    for b, e in zip(bounded, every):
        assert b["plans_bounded"] > 1000 and e["plans_bounded"] == 0
        assert b["plans_evaluated"] + b["plans_bounded"] == e["plans_evaluated"]        # the same plans sized
        assert {k: v for k, v in b.items() if k not in counts} == {k: v for k, v in e.items() if k not in counts}


def test_plan_search_on_the_superpod_beats_the_hand_written_plan_and_every_plan_fits():
    found = search_plans(scenario_data(SCENARIOS / "superpod.yaml"), "superpod", "time", top=5, refine=2)
    assert found.exhaustive and found.plans_evaluated > 100 and found.plans_bounded > 1000
    assert found.plans_considered == found.plans_evaluated + found.plans_pruned
    best, own = found.plans[0], found.baseline
    assert best.result is not None and own.result is not None
    assert best.result.time_to_train_s <= own.result.time_to_train_s
    assert not found.notes                      # the scenario's plan is beaten: nothing to explain
    times = [p.result.time_to_train_s if p.result else p.estimate.time_to_train_s for p in found.plans[:2]]
    assert times == sorted(times)
    for p in found.plans:
        assert p.estimate.memory_fits and p.estimate.memory_per_gpu_bytes <= 80 * 2**30
    record = found.to_dict()
    assert {"plans_evaluated", "plans_pruned", "exhaustive", "plans"} <= set(record)
    assert {"tensor", "pipeline", "data", "microbatch", "virtual_stages", "recompute", "zero", "step_time_s",
            "time_to_train_s", "memory_per_gpu_bytes", "cost_eur", "energy_facility_kwh", "carbon_kg"} <= \
        set(record["plans"][0])


def test_a_scenario_plan_the_search_cannot_find_is_explained():
    """Llama 3 405B as published (16 stages of 4 uneven chunks) outruns every plan of the space, which interleaves
    even splits only: the search says so rather than leave the user to wonder."""
    data = scenario_data(SCENARIOS / "llama3-405b-16k.yaml") | {"failures": {"enabled": False}}
    found = search_plans(data, "llama3", "time", top=1, refine=1, max_plans=60)     # a part of the space
    assert found.baseline.result.time_to_train_s < found.plans[0].result.time_to_train_s
    assert found.notes == ("the scenario's own plan trains faster than every plan found: its 4 virtual stages split "
                           "the 126 layers unevenly over 64 chunks, and the search interleaves even splits only, as "
                           "Megatron-LM requires",)


def test_constraints_reject_plans_and_cluster_options_are_searched():
    data = base()
    found = search_plans(data, "test", "cost", top=3, constraints=["deadline=3d"], refine=0,
                   space=space(["cluster.nodes=1,2"]))
    assert found.options == 2 and found.plans_rejected > 0
    assert all(p.estimate.time_to_train_s <= 3 * 86400 for p in found.plans)
    assert all(p.option["cluster.nodes"] in (1, 2) for p in found.plans)
    # the site rents at the median list price by default: every plan's cost holds its GPU time
    assert all(p.estimate.cost_parts.includes == ("gpu", "electricity") for p in found.plans)
    costs = [p.estimate.cost_eur for p in found.plans]
    assert costs == sorted(costs)
    with pytest.raises(ScenarioError, match="^--vary: training.parallelism is what the search varies"):
        search_plans(data, "test", space=space(["training.parallelism.tensor=1,2"]))


def test_a_serving_sweep_has_the_same_shape_and_its_own_front():
    from tests.test_serving_scenario import SERVING

    data = copy.deepcopy(SERVING)
    data["serving"]["load"]["requests"] = 60
    report = sweep(data, "serving", space(["serving.precision=fp8,bf16", "serving.parallelism.tensor=1,3"]))
    assert report.points == 4 and report.errors == 2           # 3 does not divide the heads: error rows
    ok = [r for r in report.table.to_pylist() if r["error"] is None]
    assert {r["workload"] for r in ok} == {"serving"}
    assert all(r["site_cost_per_million_output_tokens_eur"] == r["cost_per_million_output_tokens_eur.FR"] for r in ok)
    assert report.objectives == ("ttft_s.p99", "site_cost_per_million_output_tokens_eur",
                                 "site_carbon_per_million_output_tokens_kg")
    assert report.front


def test_the_documented_duckdb_query_reads_a_study(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    import re

    from tests.conftest import ROOT

    sweep(base(), "test", space(["cluster.nodes=1,2", "site.country=FR,SE"]), tmp_path / "runs" / "nodes",
          closed_form=True)
    text = (ROOT / "docs" / "studies.md").read_text(encoding="utf-8")
    query = re.search(r'duckdb\.sql\("""(.*?)"""\)', text, re.S).group(1)
    rows = duckdb.sql(query.replace("runs/nodes/results.parquet", str(tmp_path / "runs/nodes/results.parquet")))
    found = rows.fetchall()
    assert len(found) == 4 and found[0][3] <= found[-1][3]          # cheapest first
    assert {r[1] for r in found} == {"FR", "SE"}
