"""Studies under kills and concurrency, with real processes: a study killed at random points resumes to
exactly the rows of an uninterrupted run, leaves no worker behind and no temporary file after the resume;
two studies into one ``--out`` never lose rows."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests import bad_inputs
from tests.conftest import ROOT, cli
from twin.studies import store

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kills and /proc are Linux's")

VARY = ["--vary", "cluster.nodes=1,2,4,8", "--vary", "site.pue=1.1..2.5:0.1"]      # 60 points, a few seconds
# Where a kill lands: at a random moment of the start, while the workers run, or during a write.
MOMENTS = ("start", "workers", "write")
# Seconds to wait for a moment at most (a machine under load starts slowly).
MOMENT_S = 60.0
# The study saves its rows this often in the killed runs, so that kills land during writes too.
SAVE_EVERY_S = 0.05
# A killed study's processes must all be gone within this (the acceptance bound).
GONE_S = 5.0


def _sweep(tmp_path: Path, out: Path, mark: str, *extra: str) -> subprocess.Popen:
    scenario = tmp_path / "base.yaml"
    if not scenario.exists():
        scenario.write_bytes(bad_inputs.dump(bad_inputs.BASE))
    code = ("import sys; import twin.studies.sweep as s; s.SAVE_EVERY_S = %r; from twin.cli import main; "
            "sys.exit(main(sys.argv[1:]))" % SAVE_EVERY_S)
    argv = ["sweep", str(scenario), *VARY, "--out", str(out), "--closed-form", "--json", *extra]
    return subprocess.Popen([sys.executable, "-c", code, *argv], cwd=ROOT, env={**os.environ, "TWIN_TEST_MARK": mark},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _marked(mark: str) -> list[int]:
    """Processes whose environment holds ``TWIN_TEST_MARK=mark`` (the study and its workers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if f"TWIN_TEST_MARK={mark}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _wait_for_a_moment(study: subprocess.Popen, mark: str, moment: str, rng: random.Random) -> None:
    """Return at the moment a kill should land: a random time into the start, a random time after the
    workers appear, or as soon as a temporary file of the study is being written."""
    if moment == "start":
        time.sleep(rng.uniform(0.1, 2.0))
        return
    deadline = time.monotonic() + MOMENT_S
    while study.poll() is None and time.monotonic() < deadline:
        if moment == "workers" and len(_marked(mark)) > 1:
            time.sleep(rng.uniform(0.0, 1.0))
            return
        if moment == "write" and any(p.name.endswith(".tmp") for p in _out_files(study)):
            return
        time.sleep(0.01)


def _out_files(study: subprocess.Popen) -> list[Path]:
    out = Path(study.args[study.args.index("--out") + 1])
    try:
        return list(out.iterdir())
    except OSError:
        return []


def _rows(out: Path) -> list[dict]:
    table = pq.read_table(out / store.RESULTS)
    return [{k: v for k, v in r.items() if k != store.FRONT} for r in table.to_pylist()]


def test_a_study_killed_ten_times_resumes_to_the_rows_of_an_uninterrupted_run(tmp_path):
    (tmp_path / "base.yaml").write_bytes(bad_inputs.dump(bad_inputs.BASE))
    whole = tmp_path / "whole"
    code, _, err, _ = cli("sweep", str(tmp_path / "base.yaml"), *VARY, "--out", str(whole), "--closed-form",
                          "--workers", "1")
    assert code == 0, err
    rng = random.Random(7)
    out = tmp_path / "killed"
    seen_workers = 0
    for kill in range(10):
        mark = uuid.uuid4().hex
        study = _sweep(tmp_path, out, mark, "--workers", "2")
        _wait_for_a_moment(study, mark, "workers" if kill == 0 else rng.choice(MOMENTS), rng)
        seen_workers = max(seen_workers, len(_marked(mark)) - 1)
        study.send_signal(signal.SIGKILL)
        study.wait()
        deadline = time.monotonic() + GONE_S
        while _marked(mark) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _marked(mark), f"left behind after a kill: {_marked(mark)}"
    assert seen_workers == 2                       # a kill landed while the workers ran
    final = _sweep(tmp_path, out, uuid.uuid4().hex, "--workers", "1")
    assert final.wait(120) == 0, final.stderr.read()
    assert _rows(out) == _rows(whole)
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]


def test_two_studies_into_one_directory_never_lose_rows(tmp_path):
    out = tmp_path / "out"
    scenario = tmp_path / "base.yaml"
    scenario.write_bytes(bad_inputs.dump(bad_inputs.BASE))
    first = {"scenario_sha256": "a", "mode": "grid", "vary": ["x=1"], "scenario": "first.yaml"}
    with store.locked(out, first):                                  # a study is writing the directory
        code, stdout, err, _ = cli("sweep", str(scenario), "--vary", "site.pue=1.1,1.2", "--out", str(out),
                                   "--workers", "1", "--closed-form")
    assert code == 2 and not stdout and err.count("\n") == 1
    assert err.startswith(f"twin: error: --out: '{out}' is being written by another study (process {os.getpid()}: "
                          "first.yaml with --vary x=1)")
    assert not (out / store.RESULTS).exists()
    # Two identical studies at once: one waits for the other, then reuses its rows.
    twins = [_sweep(tmp_path, out, uuid.uuid4().hex, "--workers", "1") for _ in range(2)]
    assert [p.wait(120) for p in twins] == [0, 0], [p.stderr.read() for p in twins]
    rows = _rows(out)
    assert sorted(r["point"] for r in rows) == list(range(60))
    # Then a study of another scenario: refused, the directory keeps the first study's rows.
    other = tmp_path / "other.yaml"
    other.write_bytes(bad_inputs.dump(bad_inputs.with_value("cluster.node", "dgx-a100-80gb")))
    code, _, err, _ = cli("sweep", str(other), "--vary", "site.pue=1.1,1.2", "--out", str(out), "--workers", "1",
                          "--closed-form")
    assert code == 2 and "holds the study of another scenario" in err and _rows(out) == rows


def test_stale_temporary_files_are_removed_on_resume(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    stale = [out / ".results.csv.abc123.tmp", out / ".results.parquet.x.tmp", out / ".study.yaml.y.tmp"]
    for path in stale:
        path.write_text("half")
    keep = out / "notes.txt"
    keep.write_text("mine")
    scenario = tmp_path / "base.yaml"
    scenario.write_bytes(bad_inputs.dump(bad_inputs.BASE))
    code, _, err, _ = cli("sweep", str(scenario), "--vary", "site.pue=1.1,1.2", "--out", str(out), "--workers", "1",
                          "--closed-form")
    assert code == 0, err
    assert not any(p.exists() for p in stale) and keep.read_text() == "mine"


def test_a_directory_holding_something_else_is_refused_and_left_alone(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / store.RESULTS).write_text("not parquet")
    scenario = tmp_path / "base.yaml"
    scenario.write_bytes(bad_inputs.dump(bad_inputs.BASE))
    code, stdout, err, _ = cli("sweep", str(scenario), "--vary", "site.pue=1.1,1.2", "--out", str(out),
                               "--workers", "1", "--closed-form")
    assert code == 2 and not stdout and err.startswith("twin: error: --out: ") and err.count("\n") == 1
    assert (out / store.RESULTS).read_text() == "not parquet"
