"""The catalog: data files of hardware, models and profiles, each row with its source.

Entries are returned as plain dicts exactly as written in ``data/<kind>.yaml``;
the layers above turn them into typed specs and parse their units.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import yaml

from twin.errors import ScenarioError, did_you_mean

KINDS = ("gpus", "nodes", "models", "failure_profiles", "electricity_prices", "currencies", "calibration", "power",
         "mig", "stacks", "grid_hourly", "prices", "ownership", "api_prices",
         "storage_tiers", "datasets", "climates", "cooling_designs", "gemm", "engines", "tp_all_reduce",
         "error_bands")
# Entries that were renamed: the old name is an error that names the new one.
RENAMED = {"nodes": {"l4-server": "l4-8", "l40s-server": "l40s-8", "gh200-node": "gh200-1"}}
# libyaml's safe loader where PyYAML was built with it (about ten times faster), the pure-Python one
# otherwise; both build the same data from the same text (tests/test_startup.py).
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str):
    """Trusted YAML text (the package's own data files) → plain data, with the fastest safe loader."""
    return yaml.load(text, Loader=SAFE_LOADER)  # noqa: S506 - a safe loader


@lru_cache(maxsize=None)
def table(kind: str) -> dict[str, dict]:
    """Every entry of one catalog file, by name; each file is read once per process (treat it as read-only)."""
    if kind not in KINDS:
        raise ValueError(f"unknown catalog kind {kind!r}; known: {', '.join(KINDS)}")
    text = resources.files("twin.catalog").joinpath("data", f"{kind}.yaml").read_text(encoding="utf-8")
    return load_yaml(text) or {}


def names(kind: str) -> list[str]:
    """Entry names of one catalog, in file order."""
    return list(table(kind))


def entry(kind: str, name: str, field: str) -> dict:
    """One entry; an unknown name is a ScenarioError naming ``field`` with a suggestion."""
    entries = table(kind)
    if name in entries:
        return entries[name]
    lowered = {k.lower(): k for k in entries}
    if isinstance(name, str) and name.lower() in lowered:
        return entries[lowered[name.lower()]]
    known = ", ".join(entries)
    renamed = RENAMED.get(kind, {}).get(str(name).lower())
    if renamed:
        raise ScenarioError(field, f"{kind[:-1].replace('_', ' ')} '{name}' was renamed (did you mean '{renamed}'?); "
                                   f"known: {known}")
    raise ScenarioError(field, f"unknown {kind[:-1].replace('_', ' ')} '{name}'{did_you_mean(name, entries)}; known: {known}")
