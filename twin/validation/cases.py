"""Validation cases: published figures with the scenario that reproduces them.

A case file holds one source's cases::

    group: narayanan-2021                 # cases are summarised per group
    source: "Narayanan et al., SC'21, Table 1"
    defaults: {scenario: {...}}           # deep-merged under every case's scenario
    cases:
      - id: narayanan-2021-1.7b
        role: calibration                 # calibration | check
        metric: hardware_tflops_per_gpu   # see twin.validation.metrics.METRICS
        published: 137
        scenario: {...}                   # a scenario mapping (docs/scenario.md)
        note: why the unstated settings were chosen
        tolerance: 0.15                   # optional (or once for the file): |error| that counts as reproduced

A ``collective`` mapping instead of a training figure asks for a bus bandwidth
(``{op: all_reduce, ranks: 16, ranks_per_node: 8, size: 1 GiB}``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from twin.catalog import load_yaml
from twin.errors import ScenarioError
from twin.validation.metrics import METRICS

ROLES = ("calibration", "check")
CASE_KEYS = {"id", "role", "metric", "published", "scenario", "collective", "source", "note", "group", "tolerance"}


@dataclass(frozen=True)
class Case:
    id: str
    group: str
    role: str                      # calibration | check
    metric: str                    # key of METRICS
    published: float               # in the metric's unit
    source: str
    scenario: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    collective: dict[str, Any] | None = field(default=None, hash=False, compare=False)
    note: str = ""
    tolerance: float | None = None  # the |error| within which the case counts as reproduced (fraction)

    @property
    def throughput(self) -> bool:
        """True for training-speed figures (the accuracy targets apply to these)."""
        return METRICS[self.metric].throughput


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """A new mapping: ``over`` on top of ``base``, nested mappings merged key by key."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def parse_case_file(data: Any, where: str) -> list[Case]:
    """The cases of one parsed case file; malformed files raise ScenarioError naming the key."""
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise ScenarioError(where, "a case file is a mapping with 'group', 'source' and a list 'cases'")
    group = data.get("group")
    if not isinstance(group, str) or not group:
        raise ScenarioError(f"{where}: group", "is required")
    defaults = (data.get("defaults") or {}).get("scenario", {})
    cases = []
    for i, row in enumerate(data["cases"]):
        at = f"{where}: cases[{i}]"
        if not isinstance(row, dict):
            raise ScenarioError(at, "a case is a mapping")
        unknown = set(row) - CASE_KEYS
        if unknown:
            raise ScenarioError(f"{at}.{sorted(unknown)[0]}", f"unknown key; allowed: {', '.join(sorted(CASE_KEYS))}")
        for key in ("id", "role", "metric", "published"):
            if key not in row:
                raise ScenarioError(f"{at}.{key}", "is required")
        if row["role"] not in ROLES:
            raise ScenarioError(f"{at}.role", f"{row['role']!r} is not allowed; allowed: {', '.join(ROLES)}")
        if row["metric"] not in METRICS:
            raise ScenarioError(f"{at}.metric", f"{row['metric']!r} is unknown; allowed: {', '.join(METRICS)}")
        figure = row["published"]
        if isinstance(figure, bool) or not isinstance(figure, (int, float)) or figure <= 0:
            raise ScenarioError(f"{at}.published", f"{row['published']!r} is not a positive number")
        if METRICS[row["metric"]].kind == "collective" and not isinstance(row.get("collective"), dict):
            raise ScenarioError(f"{at}.collective", f"metric {row['metric']} needs a 'collective' mapping")
        tolerance = row.get("tolerance", data.get("tolerance"))
        if tolerance is not None and (isinstance(tolerance, bool) or not isinstance(tolerance, (int, float))
                                      or not 0 < tolerance < 1):
            raise ScenarioError(f"{at}.tolerance", f"{tolerance!r} is not a fraction in (0, 1)")
        source = row.get("source") or data.get("source")
        if not source:
            raise ScenarioError(f"{at}.source", "every case names its source")
        cases.append(Case(
            id=str(row["id"]), group=str(row.get("group", group)), role=row["role"], metric=row["metric"],
            published=float(row["published"]), source=str(source),
            scenario=deep_merge(defaults, row.get("scenario") or {}),
            collective=row.get("collective"), note=str(row.get("note", "")).strip(),
            tolerance=None if tolerance is None else float(tolerance),
        ))
    return cases


# A case file is a small YAML text (the shipped ones are under 20 kB).
MAX_CASE_BYTES = 1 << 20


def _case_text(path: Path) -> str:
    """The text of a case file given with --cases: a regular UTF-8 file of at most ``MAX_CASE_BYTES``."""
    try:
        if not path.is_file():
            raise ScenarioError("--cases", f"'{path}' is not a regular file")
        with path.open("rb") as handle:
            data = handle.read(MAX_CASE_BYTES + 1)
    except OSError as exc:
        raise ScenarioError("--cases", f"cannot read case file '{path}': {exc.strerror}") from None
    if len(data) > MAX_CASE_BYTES:
        raise ScenarioError("--cases", f"'{path}' is larger than {MAX_CASE_BYTES >> 20} MiB; a case file is small YAML")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioError("--cases", f"'{path}' is not UTF-8 text (a binary file?)") from None


def load_cases(paths: list[str | Path] | None = None) -> list[Case]:
    """The shipped cases (``twin/validation/cases/*.yaml``), or those of the given files."""
    texts: list[tuple[str, str]] = []
    if paths:
        for path in paths:
            texts.append((str(path), _case_text(Path(path))))
    else:
        folder = resources.files("twin.validation").joinpath("cases")
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".yaml"):
                texts.append((entry.name, entry.read_text(encoding="utf-8")))
    # The shipped files are the package's own data: the fastest safe loader (catalog.load_yaml, about ten times
    # faster); a user's file keeps the pure-Python loader, whose messages name where a malformed file breaks.
    parse = yaml.safe_load if paths else load_yaml
    cases: list[Case] = []
    for where, text in texts:
        try:
            data = parse(text)
        except yaml.YAMLError as exc:
            raise ScenarioError(where, f"malformed YAML: {exc}") from None
        except (ValueError, RecursionError) as exc:          # a 5,000-digit integer, a nesting bomb
            raise ScenarioError(where, f"not a case file: {str(exc)[:120]}") from None
        cases.extend(parse_case_file(data, where))
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise ScenarioError(case.id, "duplicate case id")
        seen.add(case.id)
    return cases
