"""The speed guard (benchmarks/speed_check.py) covers every shipped scenario and fails on a regression."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("speed_check", ROOT / "benchmarks" / "speed_check.py")
speed_check = sys.modules.setdefault("speed_check", importlib.util.module_from_spec(SPEC))
SPEC.loader.exec_module(speed_check)


def test_every_shipped_scenario_and_command_is_guarded_and_recorded():
    names = {c.name for c in speed_check.commands()}
    assert {f"run {p.stem}" for p in (ROOT / "scenarios").glob("*.yaml")} <= names
    assert {"--help", "catalog gpus"} <= names and any(n.startswith(("fit", "plan", "capacity")) for n in names)
    recorded = json.loads(speed_check.RECORD.read_text(encoding="utf-8"))
    assert set(recorded["ratios"]) == names and all(r > 0 for r in recorded["ratios"].values())


def test_a_command_past_its_limit_fails_and_one_within_passes(capsys):
    help_only = [c for c in speed_check.commands() if c.name == "--help"]
    found, cpu_s, _ = speed_check.ratio(help_only[0])
    assert found > 0 and cpu_s > 0
    assert speed_check.check(help_only, {"--help": 1e-6}, retries=0) == ["--help"]
    assert speed_check.check(help_only, {"--help": 1e6}, retries=0) == []
    assert "SLOWER" in capsys.readouterr().out


def test_a_failing_command_stops_the_check():
    broken = speed_check.Command("run missing", ("run", "scenarios/no-such-file.yaml"))
    with pytest.raises(SystemExit, match="run missing"):
        speed_check.measure(broken)
