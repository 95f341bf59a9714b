"""The result records: each serialised from its dataclass fields by one mechanism, with a shared core.

Hand-written small records show what ``serialise`` does with plain fields, converted and derived keys,
omitted and grouped fields; the record classes are checked for layouts that name only fields they have
(a renamed field must not drop its derived keys unseen); the study records are built by hand and
compared key for key with what docs/results.md lists.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from typing import ClassVar

import pytest

from twin.results import (
    SCHEMA_VERSION,
    CapacityResult,
    Layout,
    OperationsResult,
    Result,
    ServingResult,
    TrainingResult,
    serialise,
)
from twin.results.core import GROUP, grouped
from twin.studies.records import FitOption, FitReport, FitRow, PlanSearch, SweepReport


@dataclass(frozen=True)
class Point:
    x: float
    y: float


@dataclass(frozen=True)
class Toy:
    name: str
    where: Point
    size_bytes: int
    hidden: int
    left: int = grouped("box")
    right: int = grouped("box")
    tags: tuple[str, ...] = ()


def test_serialise_takes_fields_in_order_and_applies_the_layout():
    toy = Toy("a", Point(1.0, 2.0), 1024, 7, 3, 4, ("u", "v"))
    plain = serialise(toy, Layout())
    assert list(plain) == ["name", "where", "size_bytes", "hidden", "box", "tags"]
    assert plain == {"name": "a", "where": {"x": 1.0, "y": 2.0}, "size_bytes": 1024, "hidden": 7,
                     "box": {"left": 3, "right": 4}, "tags": ["u", "v"]}
    layout = Layout(convert={"size_bytes": lambda t: t.size_bytes / 2**10},
                    after={"hidden": lambda t: {"twice_hidden": 2 * t.hidden}}, omit=frozenset({"hidden"}))
    shaped = serialise(toy, layout)
    assert list(shaped) == ["name", "where", "size_bytes", "twice_hidden", "box", "tags"]
    assert shaped["size_bytes"] == 1.0 and shaped["twice_hidden"] == 14


@dataclass(frozen=True, kw_only=True)
class Tiny(Result):
    workload: ClassVar[str] = "tiny"
    layout: ClassVar[Layout] = Layout(after={"speed": lambda r: {"schema_version": SCHEMA_VERSION}})
    speed: float
    trace: tuple[float, ...] = ()


def test_the_core_opens_and_closes_every_record_and_json_has_no_infinity():
    r = Tiny(scenario="s", speed=math.inf, trace=(1.0, 2.0), warnings=["w1", "w2"], sources={"gpu": "datasheet"})
    record = r.to_dict()
    assert list(record) == ["scenario", "workload", "speed", "schema_version", "trace", "warnings", "sources"]
    assert record["workload"] == "tiny" and record["speed"] is None
    assert json.loads(r.to_json()) == record
    flat = r.to_flat()
    assert "sources" not in flat and "trace" not in flat          # lists of numbers do not fit a table cell
    assert flat["warnings"] == "w1 | w2"


def test_a_field_added_to_a_record_appears_in_its_json():
    @dataclass(frozen=True, kw_only=True)
    class Grown(Tiny):
        new_metric_s: float = 1.5

    assert Grown(scenario="s", speed=1.0).to_dict()["new_metric_s"] == 1.5


LAYOUTS = [TrainingResult, ServingResult, CapacityResult, OperationsResult, PlanSearch, SweepReport, FitReport]


@pytest.mark.parametrize("kind", LAYOUTS, ids=[k.__name__ for k in LAYOUTS])
def test_a_layout_names_only_fields_of_its_record(kind):
    names = {f.name for f in dataclasses.fields(kind)}
    layout = kind.layout
    for part in (set(layout.convert), set(layout.after), set(layout.omit)):
        assert part <= names, part - names
    assert not set(layout.convert) & set(layout.omit)             # a converted field is shown, not omitted
    for f in dataclasses.fields(kind):
        assert GROUP not in f.metadata or f.name not in layout.omit


def test_a_training_summary_reads_the_record_without_working_out_its_timelines():
    """What ``twin run`` prints from (``described``) is the JSON record less the job, step and power timelines,
    key for key and in order; the layout that leaves them out names only fields of the record, as the full one."""
    from twin.api import run_file
    from twin.results.training import LAYOUT_WITHOUT_TIMELINES

    result = run_file("scenarios/superpod.yaml")
    full = json.loads(result.to_json())
    del full["timeline"], full["step_timeline"], full["power"]["timeline"]
    assert json.loads(json.dumps(result.described())) == full
    assert list(result.described()) == list(full) and result.step_timeline and result.segments
    names = {f.name for f in dataclasses.fields(TrainingResult)}
    assert set(LAYOUT_WITHOUT_TIMELINES.convert) | set(LAYOUT_WITHOUT_TIMELINES.after) <= names


def test_run_records_share_the_core():
    core = {f.name for f in dataclasses.fields(Result)}
    for kind in (TrainingResult, ServingResult, CapacityResult, OperationsResult):
        assert issubclass(kind, Result) and core <= {f.name for f in dataclasses.fields(kind)}
        assert kind.workload in {"training", "serving", "operations"}


def test_a_fit_record_has_its_keys_in_order_and_a_schema_version():
    option = FitOption("dgx-h100", 8, 1, "lora", "bf16")
    report = FitReport("job", "time", "FR", (FitRow(option, None, 12, 0, 90e9, 80e9),), ("a note",))
    assert report.to_dict() == {
        "scenario": "job", "by": "time", "country": "FR",
        "options": [{"node": "dgx-h100", "gpus": 8, "nodes": 1, "method": "lora", "weights": "bf16", "fits": False,
                     "plans_tried": 12, "plans_timed": 0, "least_memory_per_gpu_bytes": 90e9,
                     "memory_capacity_bytes": 80e9}],
        "notes": ["a note"], "schema_version": SCHEMA_VERSION}
    assert list(report.to_dict()) == ["scenario", "by", "country", "options", "notes", "schema_version"]


def test_a_sweep_record_lists_counts_front_and_errors_without_the_table():
    report = SweepReport(points=4, ran=3, reused=1, dropped=0, errors=1, error_messages={"bad": 1}, seconds=2.0,
                         where="1 process", study={"scenario_name": "s"}, front=[{"point": 0, "t_s": 1.0}],
                         objectives=("t_s",), table=object())
    assert list(report.to_dict()) == ["scenario", "points", "ran", "reused", "dropped", "errors", "directory",
                                      "objectives", "front", "error_messages", "schema_version"]
    assert report.to_dict()["scenario"] == "s" and report.points_per_s == 1.5


def test_a_plan_search_record_counts_the_pruned_plans():
    search = PlanSearch(scenario="s", objective="time", constraints=("deadline=30d",), plans_evaluated=5,
                        exhaustive=True, plans=(), plans_considered=20, plans_infeasible=6, plans_over_memory=7,
                        plans_equivalent=2, plans_bounded=3, plans_rejected=1, options=1, option_errors=(),
                        seconds=0.5, refined=0, baseline=None)
    record = search.to_dict()
    assert list(record) == ["scenario", "objective", "constraints", "plans_evaluated", "plans_pruned", "exhaustive",
                            "plans", "plans_considered", "plans_infeasible", "plans_over_memory", "plans_equivalent",
                            "plans_bounded", "plans_rejected", "options", "option_errors", "refined", "scenario_plan",
                            "notes", "schema_version"]
    assert record["plans_pruned"] == 6 + 7 + 2 + 3 and "seconds" not in record    # the record is deterministic


def test_an_operations_summary_reads_each_job_as_its_tenant_alone():
    """What ``twin run`` prints from for a ``jobs:`` scenario is the record with each job's row reduced to its
    tenant (the summary counts jobs by tenant), every other key as the record has it; the summary is the same."""
    from twin.api import run_dict
    from twin.bands import edges_record
    from twin.report import summary
    from twin.results.core import finite

    jobs = [{"name": f"j{i}", "tenant": "ab"[i % 2], "template": "t", "gpus": 8 * (1 + i % 2), "submit": 600.0 * i,
             "duration": 3600.0} for i in range(6)]
    result = run_dict({"cluster": {"node": "dgx-h100", "nodes": 2},
                       "jobs": {"templates": {"t": {"model": "llama2-7b", "tokens": "1B", "seq_len": 2048,
                                                    "global_batch": 64}}, "list": jobs}})
    full, described = finite(result.record()), result.described()
    assert [job["tenant"] for job in full["jobs"]] == list("ababab")
    assert described["jobs"] == [{"tenant": job["tenant"]} for job in full["jobs"]]
    assert {k: described[k] for k in full if k != "jobs"} == {k: v for k, v in full.items() if k != "jobs"}
    assert set(described) - set(full) == set(edges_record(result.band))      # where the bands come from
    assert [k for k in described if k in full] == list(full) and summary(described) == summary(full)
