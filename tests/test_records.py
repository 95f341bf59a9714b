"""Every shipped scenario's ``--json`` record, field for field, against the record it gave when it was written down.

A change of structure (a module moved, a record split) must not change an answer. Fields may be added; every
field of the stored record must still be there with the same value, numbers to the last digit. A change that
is meant to move a number replaces the stored record in the same commit and says why
(``python tests/test_records.py`` writes them anew).
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STORED = ROOT / "tests" / "data" / "records"
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))


def record_of(path: Path) -> dict:
    from twin.api import run_file

    return json.loads(run_file(path).to_json())


def differences(stored, now, where: str = "") -> list[str]:
    """Every path at which ``now`` lacks or changes a value of ``stored`` (keys ``now`` adds are allowed)."""
    if isinstance(stored, dict):
        if not isinstance(now, dict):
            return [f"{where or '.'}: was an object, now {type(now).__name__}"]
        out = []
        for key, value in stored.items():
            if key not in now:
                out.append(f"{where}.{key}: missing")
            else:
                out += differences(value, now[key], f"{where}.{key}")
        return out
    if isinstance(stored, list):
        if not isinstance(now, list) or len(now) != len(stored):
            return [f"{where}: list of {len(stored)} now {len(now) if isinstance(now, list) else type(now).__name__}"]
        out = []
        for i, (a, b) in enumerate(zip(stored, now)):
            out += differences(a, b, f"{where}[{i}]")
        return out
    if stored != now or type(stored) is not type(now):
        return [f"{where}: {stored!r} now {now!r}"]
    return []


def test_differences_sees_a_change_and_allows_an_addition():
    assert differences({"a": 1, "b": [1, {"c": 2.0}]}, {"a": 1, "b": [1, {"c": 2.0, "d": 3}], "e": 4}) == []
    assert differences({"a": 1.0}, {"a": 1.0000000001}) == [".a: 1.0 now 1.0000000001"]
    assert differences({"a": [1, 2]}, {"a": [1]}) == [".a: list of 2 now 1"]
    assert differences({"a": 1}, {}) == [".a: missing"]


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_a_shipped_scenario_gives_its_stored_record(path):
    stored_file = STORED / f"{path.stem}.json.gz"
    assert stored_file.exists(), f"no stored record for {path.name}: run python tests/test_records.py"
    stored = json.loads(gzip.decompress(stored_file.read_bytes()))
    found = differences(stored, record_of(path))
    assert not found, f"{len(found)} fields changed, first: " + "; ".join(found[:10])


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    STORED.mkdir(parents=True, exist_ok=True)
    for path in SCENARIOS:
        text = json.dumps(record_of(path), sort_keys=True).encode()
        (STORED / f"{path.stem}.json.gz").write_bytes(gzip.compress(text, 9, mtime=0))
        print(path.stem)
