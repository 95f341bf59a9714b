"""Shared fixtures: small scenarios built as dicts."""

from __future__ import annotations

import contextlib
import copy
import io
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"

BASE = {
    "name": "test",
    "cluster": {"node": "dgx-h100", "nodes": 2},
    "site": {"country": "FR", "pue": 1.2, "compare": ["DE"]},
    "training": {"model": "llama2-7b", "tokens": "10B", "seq_len": 4096, "global_batch": 64,
                 "parallelism": {"tensor": 1, "pipeline": 1}},
}


@pytest.fixture
def base_scenario() -> dict:
    return copy.deepcopy(BASE)


def with_(data: dict, **changes) -> dict:
    """A deep copy of ``data`` with keys replaced, written ``section__key=value``."""
    out = copy.deepcopy(data)
    for dotted, value in changes.items():
        node = out
        *parents, last = dotted.split("__")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return out


# Knob-change times measured in the browser (tests/test_browser_what_ifs.py), carried from whichever worker ran
# the test in its report's user properties: scenario → [(knob, seconds until the headline shows it, seconds
# until the page is done)], printed at the end of the run.
KNOB_TIMINGS: dict[str, list[tuple[str, float, float]]] = {}


def pytest_runtest_logreport(report) -> None:
    if report.when == "call":
        for name, value in report.user_properties:
            if name == "knob_timings":
                scenario, timings = value
                KNOB_TIMINGS[scenario] = [tuple(t) for t in timings]


def pytest_terminal_summary(terminalreporter, config) -> None:
    if KNOB_TIMINGS:
        terminalreporter.section("dashboard knob changes (browser)")
        for scenario, seconds in KNOB_TIMINGS.items():
            terminalreporter.write_line(f"{scenario}: " + "; ".join(
                f"{knob} {shown:.2f} s (page done {done:.2f} s)" for knob, shown, done in seconds))


def cli(*argv: str) -> tuple[int, str, str, float]:
    """``python -m twin ARGV`` run in this process: (exit status, stdout, stderr, seconds)."""
    from twin.cli import main

    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:           # argparse usage errors
            code = exc.code
    return code, out.getvalue(), err.getvalue(), time.perf_counter() - start


def twin(*argv: str) -> SimpleNamespace:
    """``cli`` read as a finished process: ``returncode``, ``stdout``, ``stderr``."""
    code, out, err, _ = cli(*argv)
    return SimpleNamespace(returncode=code, stdout=out, stderr=err)


# The browser's tests (each file on one worker, with its own server and browser) use little of their
# worker's core while the page draws: the page test starts first, the short tests fill the other core
# beside it, and the what-if test comes once the page test is done, so that two browsers seldom draw at
# once, but before the last files' 60-70 s of tests (studies, study faults, validation), so that the other
# core has them to do meanwhile (as the last scope, it ran alone for its 45-65 s while the other core
# idled). xdist keeps this order (--no-loadscope-reorder in pyproject.toml); the other files keep theirs.
PLACED_AS = {"tests/test_browser_pages.py": "", "tests/test_browser_what_ifs.py": "tests/test_studies.py"}


def pytest_collection_modifyitems(config, items) -> None:
    items.sort(key=lambda item: PLACED_AS.get(path := item.nodeid.split("::")[0], path))
