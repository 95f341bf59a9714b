"""Imports point down the data flow, never back up (docs/architecture.md)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "twin"

# Lower number = lower layer. A module may import only from its own layer or below.
LAYERS = {
    "twin.units": 0, "twin.errors": 0,
    "twin.catalog": 1, "twin.calibration": 1,
    "twin.scenario": 2,
    "twin.hardware": 3,
    "twin.workload": 4,
    "twin.network": 5,
    "twin.engine": 6,
    "twin.power": 7,
    "twin.results": 8,
    "twin.report": 9, "twin.figures": 9,
    "twin.api": 10,
    "twin.validation": 11,
    "twin.cli": 12, "twin.__main__": 12, "twin": 12,
}


def layer_of(module: str) -> int:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        key = ".".join(parts[:n])
        if key in LAYERS:
            return LAYERS[key]
    raise KeyError(module)


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == "twin" and node.level == 0:
            found.update(f"twin.{alias.name}" for alias in node.names if alias.name != "__version__")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return {name for name in found if name == "twin" or name.startswith("twin.")}


def test_imports_point_down_the_flow():
    violations = []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = module_name(path)
        for target in imports(path):
            if layer_of(target) > layer_of(here):
                violations.append(f"{here} imports {target}")
    assert not violations, "upward imports:\n" + "\n".join(violations)


DASHBOARD_VIEWS = PACKAGE.parent / "dashboard" / "views"
VIEW_MAY_IMPORT = {"twin.api", "twin.report", "twin.figures", "twin.units", "twin.errors"}


def test_dashboard_views_import_only_the_twin_entry_points():
    violations = []
    for path in sorted(DASHBOARD_VIEWS.glob("*.py")):
        for target in imports(path):
            if not any(target == allowed or target.startswith(allowed + ".") for allowed in VIEW_MAY_IMPORT):
                violations.append(f"dashboard/views/{path.name} imports {target}")
    assert not violations, "\n".join(violations)
