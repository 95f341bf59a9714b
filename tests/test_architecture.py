"""The shape of the code: imports point down the data flow, and the scenario stops at the API.

docs/architecture.md draws the flow. ``violations`` checks a source tree against it;
it runs on the real package and dashboard, and on small trees written here that break
each rule once, to show that every rule bites.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Lower number = lower layer. A module may import only from its own layer or below.
LAYERS = {
    "twin.units": 0, "twin.errors": 0, "twin.outputs": 0, "twin.formatting": 0, "twin.options": 0, "twin.text": 0,
    "twin.yamlfile": 0, "twin.ticker": 0,
    "twin.catalog": 10, "twin.calibration": 10,
    "twin.hardware": 20, "twin.storage": 25,
    "twin.workload": 30,
    "twin.operators": 35,
    "twin.network": 40,
    "twin.jobs": 45,
    "twin.engine": 50, "twin.serving": 50,
    "twin.power": 60,
    "twin.operations": 65,
    "twin.results": 70,
    "twin.report": 80, "twin.figures": 80,
    "twin.scenario": 85,
    "twin.api": 90,
    "twin.studies": 95,
    "twin.validation": 100,
    "twin.cli": 110, "twin.__main__": 110, "twin": 110,
}
# Only the scenario layer validates input with pydantic; below the API nothing sees the YAML schema.
PYDANTIC_ALLOWED = ("twin.scenario",)
# What the dashboard may use of the twin: the API and the presentation helpers.
DASHBOARD_ALLOWED = ("twin.api", "twin.report", "twin.figures", "twin.units", "twin.errors", "twin.formatting")


def layer_of(module: str) -> int:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        key = ".".join(parts[:n])
        if key in LAYERS:
            return LAYERS[key]
    raise KeyError(f"{module} is in no layer: add its package to LAYERS and to docs/architecture.md")


def module_name(path: Path, top: Path) -> str:
    parts = list(path.relative_to(top).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports(path: Path) -> tuple[set[str], list[int]]:
    """Absolute modules a file imports (``from twin import x`` counts as ``twin.x``), and relative-import lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    relative: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                relative.append(node.lineno)
            elif node.module == "twin":
                found.update(f"twin.{alias.name}" for alias in node.names if alias.name != "__version__")
            elif node.module:
                found.add(node.module)
    return found, relative


def violations(top: Path) -> list[str]:
    """Every broken rule in ``top/twin`` and ``top/dashboard``, one line each."""
    out = []
    for path in sorted((top / "twin").rglob("*.py")):
        here = module_name(path, top)
        found, relative = imports(path)
        out += [f"{here}:{line} uses a relative import" for line in relative]
        for target in sorted(found):
            if target.split(".")[0] == "pydantic" and not here.startswith(PYDANTIC_ALLOWED):
                out.append(f"{here} imports pydantic (only {', '.join(PYDANTIC_ALLOWED)} validates input)")
            if target.split(".")[0] != "twin":
                continue
            if layer_of(target) > layer_of(here):
                out.append(f"{here} imports {target} (upward)")
    for path in sorted((top / "dashboard").rglob("*.py")):
        here = module_name(path, top)
        found, relative = imports(path)
        out += [f"{here}:{line} uses a relative import" for line in relative]
        for target in sorted(t for t in found if t.split(".")[0] == "twin"):
            if not target.startswith(DASHBOARD_ALLOWED) and target != "twin":
                out.append(f"{here} imports {target} (the dashboard uses only {', '.join(DASHBOARD_ALLOWED)})")
    return out


def test_the_code_follows_the_data_flow():
    found = violations(ROOT)
    assert not found, "\n".join(found)


def test_every_package_is_in_a_layer():
    for path in sorted((ROOT / "twin").rglob("*.py")):
        layer_of(module_name(path, ROOT))


# -- each rule bites: small trees that break one rule each ---------------------------------

def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    base = {"twin/__init__.py": "", "twin/units.py": "", "twin/engine/__init__.py": "",
            "twin/engine/job.py": "from twin.units import x\n", "twin/scenario/__init__.py": "import pydantic\n",
            "twin/api/__init__.py": "from twin.scenario import Scenario\n", "dashboard/__init__.py": "",
            "dashboard/views/__init__.py": "", "dashboard/views/page.py": "from twin.api import simulate\n"}
    for name, text in (base | files).items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_a_clean_tree_passes(tmp_path):
    assert violations(_tree(tmp_path, {})) == []


@pytest.mark.parametrize("files, expected", [
    ({"twin/engine/job.py": "from twin.api import simulate\n"}, "twin.engine.job imports twin.api (upward)"),
    ({"twin/engine/job.py": "from . import failures\n"}, "twin.engine.job:1 uses a relative import"),
    ({"dashboard/views/page.py": "from twin.engine.job import simulate_job\n"},
     "dashboard.views.page imports twin.engine.job (the dashboard uses only"),
    ({"twin/engine/job.py": "from twin.scenario import Failures\n"},
     "twin.engine.job imports twin.scenario (upward)"),
    ({"twin/engine/job.py": "from pydantic import BaseModel\n"}, "twin.engine.job imports pydantic"),
    ({"dashboard/views/page.py": "from .. import core\n"}, "dashboard.views.page:1 uses a relative import"),
])
def test_each_rule_bites(tmp_path, files, expected):
    found = violations(_tree(tmp_path, files))
    assert any(line.startswith(expected) for line in found), found


def test_record_types_below_the_results_layer_have_no_json_methods():
    """Lower layers return typed records; only the twin.results package (and the layers above) shapes JSON."""
    offenders = []
    for path in sorted((ROOT / "twin").rglob("*.py")):
        here = module_name(path, ROOT)
        if layer_of(here) >= LAYERS["twin.results"]:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name in {"as_dict", "to_dict", "to_json"}:
                offenders.append(f"{here}.{node.name}")
    assert not offenders, offenders
