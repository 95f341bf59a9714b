"""The scenario boundary as a user meets it: every bad input ends in one line and exit 2, never a crash.

Cases come from ``tests/bad_inputs.py`` (files that are not UTF-8 YAML, repeated keys,
alias bombs, NaN and absurd magnitudes on every numeric key, inline models that do not
hold together, values that make no sense together) and from random mutations of the
shipped scenarios. Each runs through the command line in this process.
"""

from __future__ import annotations

import copy
import os
import stat
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import bad_inputs
from tests.conftest import SCENARIOS, cli

# No run of a bounded scenario may take longer than this (a guard against runaway work, not a benchmark).
TIME_BOUND_S = 60.0


def run_bytes(tmp_path: Path, data: bytes) -> tuple[int, str, str, float]:
    path = tmp_path / "scenario.yaml"
    path.write_bytes(data)
    return cli("run", str(path))


def clean_refusal(code: int, out: str, err: str, key: str | None) -> str | None:
    """Why a refusal is not clean, or None: exit 2, nothing on stdout, one short line naming the key."""
    lines = err.strip().splitlines()
    if code != 2:
        return f"exit {code}"
    if out:
        return "wrote to stdout"
    if len(lines) != 1 or not lines[0].startswith("twin: error: "):
        return f"not one error line: {err[:200]!r}"
    if key is not None and not lines[0].startswith(f"twin: error: {key}"):
        return f"does not name {key}: {lines[0][:200]!r}"
    if len(lines[0]) > 400:
        return f"line of {len(lines[0])} characters"
    return None


@pytest.mark.parametrize("group", ["file", "number", "inline model", "meaning"])
def test_every_bad_input_is_refused_in_one_line_naming_the_key(tmp_path, group):
    cases = {"file": bad_inputs.file_cases, "number": bad_inputs.bad_number_cases,
             "inline model": bad_inputs.inline_model_cases, "meaning": bad_inputs.meaning_cases}[group]()
    problems = []
    for case_id, data, key in cases:
        code, out, err, _ = run_bytes(tmp_path, data)
        why = clean_refusal(code, out, err, key)
        if why:
            problems.append(f"{case_id[:60]}: {why}")
    assert not problems, f"{len(problems)} of {len(cases)} not clean:\n" + "\n".join(problems)


def test_the_corpus_is_large():
    assert len(bad_inputs.all_cases()) >= 190


@pytest.mark.parametrize("case_id, data", bad_inputs.valid_extremes(), ids=lambda x: x if isinstance(x, str) else "")
def test_values_at_the_limits_get_an_answer_quickly(tmp_path, case_id, data):
    code, out, err, elapsed = run_bytes(tmp_path, bad_inputs.dump(data))
    assert code == 0, err
    assert out.startswith("twin — ") and elapsed < TIME_BOUND_S


def test_a_job_beyond_the_horizon_says_it_did_not_finish(tmp_path):
    data = bad_inputs.with_value("failures", {"enabled": True, "horizon": "2 h"})
    code, out, err, _ = run_bytes(tmp_path, bad_inputs.dump(data))
    assert code == 0 and "DID NOT FINISH" in out and "failures.horizon" in out


def test_a_job_that_never_progresses_stops_at_the_failure_bound(tmp_path):
    data = bad_inputs.with_value("failures", {"enabled": True, "samples": 2, "rate_scale": 100,
                                              "restart_time": "7 d", "repair_time": "365 d"})
    data["cluster"]["nodes"] = 64
    data["training"]["tokens"] = "10T"
    code, out, err, _ = cli("run", "--json", str(_write(tmp_path, data)))
    record = yaml.safe_load(out)
    assert code == 0 and record["finished"] is False
    assert record["failures"]["finished_samples"] < record["failures"]["samples"]
    assert any("did not finish" in w for w in record["warnings"])


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "s.yaml"
    path.write_bytes(bad_inputs.dump(data))
    return path


# -- outputs ---------------------------------------------------------------------------------

@pytest.mark.parametrize("target", ["", "file", "/dev/null", "unwritable/sub", "results.json-is-a-dir"])
def test_bad_out_paths_are_refused_before_the_run(tmp_path, target):
    (tmp_path / "file").write_text("x")
    locked = tmp_path / "unwritable"
    locked.mkdir()
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    (tmp_path / "results.json-is-a-dir" / "results.json").mkdir(parents=True)
    out_arg = target if target in ("", "/dev/null") else str(tmp_path / target)
    if os.geteuid() == 0 and target == "unwritable/sub":
        pytest.skip("root writes into read-only directories")
    code, out, err, _ = cli("run", str(_write(tmp_path, bad_inputs.BASE)), "--out", out_arg)
    assert clean_refusal(code, out, err, "--out") is None, (code, err)


def test_results_are_written_whole_with_normal_permissions(tmp_path):
    out_dir = tmp_path / "out" / "run1"
    code, out, err, _ = cli("run", str(_write(tmp_path, bad_inputs.BASE)), "--out", str(out_dir), "--json")
    written = out_dir / "results.json"
    assert code == 0 and yaml.safe_load(written.read_text()) == yaml.safe_load(out)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(written.stat().st_mode) == 0o666 & ~umask
    assert [p.name for p in out_dir.iterdir()] == ["results.json"]          # no temporary file left


def test_a_failed_run_writes_nothing(tmp_path):
    out_dir = tmp_path / "out"
    bad = bad_inputs.with_value("training.parallelism.tensor", 6)
    code, out, err, _ = cli("run", str(_write(tmp_path, bad)), "--out", str(out_dir))
    assert code == 2 and not out and not out_dir.exists()


# -- fuzz: random mutations of the shipped scenarios ---------------------------------------------

SHIPPED = {p.name: yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted(SCENARIOS.glob("*.yaml"))}


def _paths(node, prefix=()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, prefix + (k,))
    return out


ODD_VALUES = st.one_of(
    st.integers(min_value=-2**70, max_value=2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30), st.booleans(), st.none(), st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    st.sampled_from(["1e999", "-0", "2T", "400 Gb/s", "25 kW", "1 b/s", "nan", "auto", "0.5 EUR/kWh", "10 min"]))


@st.composite
def mutations(draw):
    name = draw(st.sampled_from(sorted(SHIPPED)))
    data = copy.deepcopy(SHIPPED[name])
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from(_paths(data)))
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(ODD_VALUES)
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=12))] = draw(ODD_VALUES)
    return name, data


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(mutations())
def test_mutated_scenarios_end_in_exit_0_or_2(tmp_path_factory, mutation):
    name, data = mutation
    path = tmp_path_factory.mktemp("fuzz") / "s.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    code, out, err, elapsed = cli("run", str(path))
    assert code in (0, 2), f"{name}: exit {code}: {err[:300]}"
    assert elapsed < TIME_BOUND_S
    if code == 2:
        assert clean_refusal(code, out, err, None) is None


# -- every section and every command: one line, exit 2, quickly -----------------------------------

# Each refusal of a flag, a trace or a section must come within this (the acceptance bound is 5 s on a
# quiet machine; the suite runs beside other work).
REFUSAL_S = 15.0


def test_serving_and_jobs_sections_are_refused_in_one_line(tmp_path):
    problems = []
    for case_id, data, key in bad_inputs.section_cases():
        code, out, err, elapsed = run_bytes(tmp_path, data)
        why = clean_refusal(code, out, err, key) or (f"took {elapsed:.1f} s" if elapsed > REFUSAL_S else None)
        if why:
            problems.append(f"{case_id}: {why}")
    assert not problems, "\n".join(problems)


def _jobs_with_trace(tmp_path: Path, trace: str) -> Path:
    data = bad_inputs.with_value("jobs", {"templates": {"t": bad_inputs.TEMPLATE}, "trace": trace}, bad_inputs.JOBS)
    return _write(tmp_path, data)


def test_bad_traces_are_refused_in_one_line_naming_jobs_trace(tmp_path):
    problems = []
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    cases = [(i, tmp_path / f"t{n}.csv", data) for n, (i, data) in enumerate(bad_inputs.trace_cases())]
    for _, path, data in cases:
        path.write_bytes(data)
    for case_id, path in [(i, p) for i, p, _ in cases] + [("/dev/zero", "/dev/zero"), ("a FIFO", fifo),
                                                          ("a directory", tmp_path)]:
        code, out, err, elapsed = cli("run", str(_jobs_with_trace(tmp_path, str(path))))
        why = clean_refusal(code, out, err, "jobs.trace") or (f"took {elapsed:.1f} s" if elapsed > REFUSAL_S else None)
        if why:
            problems.append(f"{case_id}: {why}")
    assert not problems, "\n".join(problems)


def test_bad_helios_sources_are_refused_and_nothing_is_written(tmp_path):
    problems = []
    for n, (case_id, data) in enumerate(bad_inputs.helios_cases()):
        source, target = tmp_path / f"h{n}.csv", tmp_path / f"out{n}.csv"
        source.write_bytes(data)
        code, out, err, _ = cli("convert-trace", "helios", str(source), str(target))
        why = clean_refusal(code, out, err, "source") or ("wrote the target" if target.exists() else None)
        if why:
            problems.append(f"{case_id}: {why}")
    assert not problems, "\n".join(problems)


def test_bad_flags_of_every_command_are_refused_in_one_line(tmp_path):
    (tmp_path / "base.yaml").write_bytes(bad_inputs.dump(bad_inputs.BASE))
    (tmp_path / "serve.yaml").write_bytes(bad_inputs.dump(bad_inputs.SERVE))
    (tmp_path / "trace.csv").write_text(f"{bad_inputs.TRACE_HEADER}\n0,8,3600\n")
    problems = []
    for case_id, argv, flag in bad_inputs.flag_cases(str(tmp_path)):
        code, out, err, elapsed = cli(*argv)
        lines = err.strip().splitlines()
        why = clean_refusal(code, out, err, None)
        if not why and flag not in lines[0]:
            why = f"does not name {flag}: {lines[0][:200]}"
        if not why and elapsed > REFUSAL_S:
            why = f"took {elapsed:.1f} s"
        if why:
            problems.append(f"{case_id}: {why}")
    assert not problems, "\n".join(problems)
    assert (tmp_path / "trace.csv").read_text().startswith(bad_inputs.TRACE_HEADER)   # never overwritten


def test_report_without_a_browser_keeps_the_result_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("TWIN_CHROMIUM", str(tmp_path / "no-browser"))
    report = tmp_path / "r.md"
    code, out, err, _ = cli("run", str(_write(tmp_path, bad_inputs.BASE)), "--report", str(report))
    assert code == 0 and out.startswith("twin — ") and "(without figures)" in out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "TWIN_CHROMIUM" in lines[0] and "no-browser" in lines[0]
    text = report.read_text()
    assert "Figure left out: Memory per GPU" in text and "![" not in text
    assert not (tmp_path / "r-figures").exists()


def test_a_figure_the_browser_did_not_write_is_left_out(tmp_path, monkeypatch):
    import plotly.graph_objects as go
    import plotly.io as pio

    from twin.figures import images
    from twin.report import MarkdownReport, write_markdown

    calls = []

    def flaky(figures, paths, **_):             # fails once, then writes A alone; B is never written
        calls.append(len(paths))
        if len(calls) == 1:
            raise RuntimeError("the browser closed")
        if len(paths) == 2:
            paths[0].write_bytes(b"\x89PNG fake")

    monkeypatch.setattr(pio, "write_images", flaky)
    monkeypatch.delenv("TWIN_CHROMIUM", raising=False)
    report = MarkdownReport("# r\n\n![A](f/a.png)\n\n![B](f/b.png)\n", {"f/a.png": go.Figure(), "f/b.png": go.Figure()})
    left_out: list[str] = []
    written = write_markdown(report, tmp_path / "r.md", left_out)
    assert calls == [2, 2] + [1] * (images.ATTEMPTS - 2)      # B alone is tried again until the tries run out
    assert [p.name for p in written] == ["a.png", "r.md"] and left_out == ["1 of 2 figures could not be drawn"]
    assert (tmp_path / "r.md").read_text() == "# r\n\n![A](f/a.png)\n\n*Figure left out: B (not drawn).*\n"


# -- fuzz: the front ends' own grammars (--vary, --constraint, traces) end in a value or one line ------------

VARY_TEXT = st.one_of(
    st.text(max_size=40),
    st.builds(lambda a, b, s, u: f"{a}..{b}:{s}{u}", st.sampled_from(["0", "1", "-5", "1e308", "1e400", "9" * 30, "nan"]),
              st.sampled_from(["2", "1e309", "0", "1e6", "inf", "9" * 200]),
              st.sampled_from(["1", "0", "1e-400", "-1", "0.5", "1e300"]), st.sampled_from(["", "W", " GB/s", "x"])),
    st.lists(st.sampled_from(["1", "2.5", "[1,2]", "{a: 1}", "true", "null", "9" * 5000, "[", "}", ""]),
             min_size=1, max_size=4).map(",".join))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.sampled_from(["cluster.nodes", "site.pue", "failures.seed", "training.tokens"]),
                          VARY_TEXT), min_size=1, max_size=4), st.booleans())
def test_any_vary_is_a_bounded_study_or_one_line(varies, zipped):
    from twin.errors import ScenarioError
    from twin.studies.space import MAX_POINTS, space

    try:
        study = space([f"{k}={v}" for k, v in varies], "zip" if zipped else "grid")
    except ScenarioError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(("--vary", "--zip")) and len(str(exc)) < 400
        return
    assert 1 <= len(study) <= MAX_POINTS


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.sampled_from(["deadline", "power", "energy", "cost", "carbon", "speed"]),
       st.one_of(st.text(max_size=20), st.sampled_from(["30", "-5d", "0W", "1e400 EUR", "nan t", "30d", "2M EUR",
                                                         "1.2MW", "9" * 5000 + "d", "inf GWh"])))
def test_any_constraint_is_a_finite_positive_limit_or_one_line(name, limit):
    import math

    from twin.errors import ScenarioError
    from twin.studies.search import parse_constraint

    try:
        c = parse_constraint(f"{name}={limit}")
    except ScenarioError as exc:
        assert str(exc).startswith("--constraint") and "\n" not in str(exc)
        return
    assert 0 < c.limit < math.inf


CELLS = st.one_of(st.sampled_from(["0", "8", "3600", "1e300", "-1", "nan", "", "9" * 5000, "x,y", '"q', "1.5"]),
                  st.text(max_size=12))


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["submit_s", "gpus", "duration_s", "priority", "name", "deferrable", "colour"]),
                min_size=1, max_size=5, unique=True),
       st.lists(st.lists(CELLS, min_size=0, max_size=6), max_size=5))
def test_any_trace_is_rows_within_the_limits_or_one_line(tmp_path, header, rows):
    from twin.errors import ScenarioError
    from twin.operations import traces

    path = tmp_path / "t.csv"
    path.write_text("\n".join([",".join(header), *(",".join(r) for r in rows)]) + "\n", encoding="utf-8",
                    errors="surrogatepass")
    try:
        read = traces.read_trace(path)
    except ScenarioError as exc:
        assert str(exc).startswith("jobs.trace") and "\n" not in str(exc)
        return
    for row in read:
        assert 0 <= row.submit_s <= traces.MAX_TIME_S and 0 < row.duration_s <= traces.MAX_TIME_S
        assert 1 <= row.gpus <= traces.MAX_GPUS and 0 <= row.priority <= traces.MAX_PRIORITY
