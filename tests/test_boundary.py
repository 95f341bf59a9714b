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
