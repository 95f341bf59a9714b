"""Job traces: the twin's CSV format, the Helios converter, and traces in a scenario."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml

from tests.conftest import cli
from twin.api import run_file
from twin.errors import ScenarioError
from twin.operations.traces import convert_helios, read_trace

ROOT = Path(__file__).resolve().parents[1]
HELIOS = ROOT / "tests" / "data" / "helios_cluster_log_sample.csv"


def test_the_helios_converter_keeps_gpu_jobs_that_ran_from_the_first_submit():
    text, jobs = convert_helios(HELIOS)
    with HELIOS.open() as f:
        source = [r for r in csv.DictReader(f) if int(r["gpu_num"]) > 0 and int(r["duration"]) > 0]
    assert jobs == len(source) > 0
    rows = list(csv.DictReader(text.splitlines()))
    assert [r["name"] for r in rows] == [r["job_id"] for r in sorted(source, key=lambda r: r["submit_time"])]
    assert rows[0]["submit_s"] == "0"
    assert [int(r["gpus"]) for r in rows] == [int(r["gpu_num"]) for r in source]
    assert {r["tenant"] for r in rows} <= {r["vc"] for r in source}


def test_a_converted_trace_runs_in_a_scenario_beside_it(tmp_path):
    text, _ = convert_helios(HELIOS)
    (tmp_path / "helios.csv").write_text(text)
    tiny = {"model": {"layers": 4, "hidden": 1024, "heads": 8, "vocab": 32000}, "tokens": "1B", "seq_len": 1024,
            "global_batch": 192}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"cluster": {"node": "dgx-h100", "nodes": 4},
                                    "jobs": {"templates": {"tiny": tiny}, "trace": "helios.csv"}}))
    r = run_file(path)
    assert len(r.jobs) == len(read_trace(tmp_path / "helios.csv"))
    assert all(j.origin == "trace" and j.status == "finished" for j in r.jobs)
    # A trace job's work is its measured duration, replayed at the packed step time.
    assert all(j.ideal_s == pytest.approx(float(row.duration_s)) for j, row in
               zip(sorted(r.jobs, key=lambda j: j.name), sorted(read_trace(tmp_path / "helios.csv"),
                                                               key=lambda row: row.name)))


@pytest.mark.parametrize("text, message", [
    ("submit_s,gpus\n0,1\n", "missing column 'duration_s'"),
    ("submit_s,gpus,duration_s,colour\n0,1,5,red\n", "unknown column 'colour'"),
    ("submit_s,gpus,duration_s\n0,1.5,60\n", "line 2, column gpus: '1.5' is not a whole number"),
    ("# a comment\nsubmit_s,gpus,duration_s\n0,1,60\n-5,1,60\n", "line 4, column submit_s: '-5' is not allowed"),
    ("submit_s,gpus,duration_s\n0,1,0\n", "column duration_s: '0' is not allowed: above 0"),
    ("submit_s,gpus,duration_s,deferrable\n0,1,60,yes\n", "column deferrable: 'yes' is not 0 or 1"),
    ("submit_s,gpus,duration_s\n0,1\n", "line 2: 2 cells for 3 columns"),
    ("submit_s,gpus,duration_s\n0,1,nan\n", "column duration_s: 'nan' is not a number"),
])
def test_a_bad_trace_is_refused_naming_its_line_and_column(tmp_path, text, message):
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(ScenarioError) as info:
        read_trace(path)
    assert str(info.value).startswith("jobs.trace: ") and message in str(info.value)


def test_a_missing_trace_is_refused(tmp_path):
    with pytest.raises(ScenarioError, match="no such file"):
        read_trace(tmp_path / "absent.csv")


def test_convert_trace_on_the_command_line(tmp_path):
    target = tmp_path / "out" / "trace.csv"
    code, _, err, _ = cli("convert-trace", "helios", str(HELIOS), str(target))
    assert code == 0, err
    assert target.read_text() == convert_helios(HELIOS)[0]
    code, _, err, _ = cli("convert-trace", "helios", str(target), str(target))
    assert code == 2 and err.startswith("twin: error: target: ") and "is the source file" in err
    before = target.read_bytes()
    code, _, err, _ = cli("convert-trace", "helios", str(target), str(tmp_path / "other.csv"))
    assert code == 2 and err.startswith("twin: error: source: ") and "not a Helios" in err
    assert target.read_bytes() == before and not (tmp_path / "other.csv").exists()
