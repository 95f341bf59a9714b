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
    "twin.yamlfile": 0, "twin.ticker": 0, "twin.collector": 0, "twin.cores": 0, "twin.quantiles": 0,
    "twin.catalog": 10, "twin.calibration": 10, "twin.profile": 10,
    "twin.hardware": 20, "twin.storage": 25,
    "twin.workload": 30,
    "twin.operators": 35,
    "twin.network": 40,
    "twin.jobs": 45,
    "twin.engine": 50, "twin.serving": 50,
    "twin.power": 60,
    "twin.operations": 65,
    "twin.results": 70, "twin.bands": 70,
    "twin.report": 80, "twin.figures": 80,
    "twin.scenario": 85,
    "twin.api": 90,
    "twin.studies": 95, "twin.calibrate": 95,
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


# The wings stand side by side on the shared base and meet only in ``twin.api``, which wires them together.
WINGS = ("twin.engine", "twin.serving", "twin.operations", "twin.studies")
# Calls that import a module named by a string.
DYNAMIC_IMPORTS = {"import_module", "__import__"}


def package_of(module: str) -> str:
    """``twin.engine.job`` → ``twin.engine``; a top-level module (``twin.units``) is its own package."""
    return ".".join(module.split(".")[:2])


def wing_of(module: str) -> str | None:
    return next((w for w in WINGS if module == w or module.startswith(w + ".")), None)


def _call_name(node: ast.Call) -> str | None:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def imports(path: Path) -> tuple[dict[str, set[str]], list[int], list[int]]:
    """What a file imports: absolute module → names taken from it (``from twin import x`` counts as
    ``twin.x``; a string given to ``importlib.import_module`` or ``__import__`` counts as an import),
    the lines of relative imports, and the lines of dynamic imports whose module name is computed."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: dict[str, set[str]] = {}
    relative: list[int] = []
    computed: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.setdefault(alias.name, set())
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                relative.append(node.lineno)
            elif node.module == "twin":
                for alias in node.names:
                    if alias.name != "__version__":
                        found.setdefault(f"twin.{alias.name}", set())
            elif node.module:
                found.setdefault(node.module, set()).update(alias.name for alias in node.names)
        elif isinstance(node, ast.Call) and _call_name(node) in DYNAMIC_IMPORTS and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.setdefault(first.value, set())
            else:
                computed.append(node.lineno)
    return found, relative, computed


def _twin_rules(here: str, target: str, names: set[str]) -> list[str]:
    """The rules one import of a ``twin`` module by a module of ``twin`` must keep."""
    out = []
    if layer_of(target) > layer_of(here):
        out.append(f"{here} imports {target} (upward)")
    mine, theirs = wing_of(here), wing_of(target)
    if mine and theirs and mine != theirs:
        out.append(f"{here} imports {target} (the wings {', '.join(WINGS)} meet only through twin.api)")
    if package_of(target) != package_of(here):
        private = sorted(n for n in names if n.startswith("_") and not n.startswith("__"))
        private += [p for p in target.split(".") if p.startswith("_") and not p.startswith("__")]
        if private:
            out.append(f"{here} imports the private {', '.join(private)} of {target} (private names stay in "
                       "their package)")
    return out


def violations(top: Path) -> list[str]:
    """Every broken rule in ``top/twin`` and ``top/dashboard``, one line each."""
    out = []
    for path in sorted((top / "twin").rglob("*.py")):
        here = module_name(path, top)
        found, relative, computed = imports(path)
        out += [f"{here}:{line} uses a relative import" for line in relative]
        out += [f"{here}:{line} imports a module by a computed name (write it out)" for line in computed]
        for target, names in sorted(found.items()):
            if target.split(".")[0] == "pydantic" and not here.startswith(PYDANTIC_ALLOWED):
                out.append(f"{here} imports pydantic (only {', '.join(PYDANTIC_ALLOWED)} validates input)")
            if target.split(".")[0] == "twin":
                out += _twin_rules(here, target, names)
    for path in sorted((top / "dashboard").rglob("*.py")):
        here = module_name(path, top)
        found, relative, computed = imports(path)
        out += [f"{here}:{line} uses a relative import" for line in relative]
        out += [f"{here}:{line} imports a module by a computed name (write it out)" for line in computed]
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
    ({"twin/serving/engine.py": "from twin.engine.job import simulate_job\n"},
     "twin.serving.engine imports twin.engine.job (the wings"),
    ({"twin/operations/cluster.py": "from twin.serving.engine import ReplicaEngine\n"},
     "twin.operations.cluster imports twin.serving.engine (the wings"),
    ({"twin/studies/sweep.py": "import twin.engine.job\n"}, "twin.studies.sweep imports twin.engine.job (the wings"),
    ({"twin/api/__init__.py": "from twin.engine.job import _Run\n"},
     "twin.api imports the private _Run of twin.engine.job"),
    ({"twin/api/__init__.py": "from twin.engine._impl import simulate\n"},
     "twin.api imports the private _impl of twin.engine._impl"),
    ({"twin/engine/job.py": "import importlib\nimportlib.import_module('twin.api')\n"},
     "twin.engine.job imports twin.api (upward)"),
    ({"twin/engine/job.py": "x = __import__('twin.scenario')\n"}, "twin.engine.job imports twin.scenario (upward)"),
    ({"twin/engine/job.py": "from importlib import import_module\nm = import_module('twin.' + name)\n"},
     "twin.engine.job:2 imports a module by a computed name"),
    ({"dashboard/views/page.py": "import importlib\nimportlib.import_module('twin.engine.job')\n"},
     "dashboard.views.page imports twin.engine.job (the dashboard uses only"),
])
def test_each_rule_bites(tmp_path, files, expected):
    found = violations(_tree(tmp_path, files))
    assert any(line.startswith(expected) for line in found), found


@pytest.mark.parametrize("files", [
    {"twin/engine/job.py": "from twin.engine.failures import _draw\n"},         # private within its own package
    {"twin/api/__init__.py": "from twin.engine.job import simulate_job\nfrom twin.serving.engine import run\n"},
    {"twin/engine/job.py": "from twin.units import __version__\n"},           # dunder names are not private
])
def test_what_the_rules_allow(tmp_path, files):
    assert violations(_tree(tmp_path, files)) == []


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


# A reader takes in a module and a function whole: past these sizes, split by responsibility.
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60


def sources(top: Path) -> list[tuple[str, str]]:
    """(module name, source text) of every module of ``top/twin``."""
    return [(module_name(path, top), path.read_text(encoding="utf-8")) for path in sorted((top / "twin").rglob("*.py"))]


def oversized(top: Path) -> list[str]:
    """Modules of ``top/twin`` over ``MAX_MODULE_LINES`` and functions over ``MAX_FUNCTION_LINES``."""
    out = []
    for here, text in sources(top):
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES:
            out.append(f"{here}: {lines} lines (at most {MAX_MODULE_LINES})")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    out.append(f"{here}.{node.name}: {length} lines (at most {MAX_FUNCTION_LINES})")
    return out


def test_modules_and_functions_stay_small():
    found = oversized(ROOT)
    assert not found, "\n".join(found)


def test_the_size_rule_bites(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    tree = _tree(tmp_path, {"twin/engine/job.py": "def long():\n" + body,
                            "twin/engine/big.py": "x = 1\n" * (MAX_MODULE_LINES + 1)})
    assert oversized(tree) == [f"twin.engine.big: {MAX_MODULE_LINES + 1} lines (at most {MAX_MODULE_LINES})",
                               f"twin.engine.job.long: {MAX_FUNCTION_LINES + 1} lines (at most {MAX_FUNCTION_LINES})"]


# numpy's vectorised transcendental functions take CPU-specific paths (AVX-512 kernels on CPUs that have it,
# the C library elsewhere) whose results differ in the last bit: the same scenario would give other numbers on
# another machine. The twin calls the C library's (math.exp, math.cos, ...) one value at a time instead.
MACHINE_DEPENDENT = {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "power", "float_power", "cbrt",
                     "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh"}


def machine_dependent_calls(top: Path) -> list[str]:
    """Calls ``np.<f>(...)`` / ``numpy.<f>(...)`` of a function of ``MACHINE_DEPENDENT`` in ``top/twin``."""
    return [f"{here}:{node.lineno}: np.{node.func.attr}"
            for here, text in sources(top) for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id in {"np", "numpy"}
            and node.func.attr in MACHINE_DEPENDENT]


def test_no_number_depends_on_the_cpu():
    found = machine_dependent_calls(ROOT)
    assert not found, "\n".join(found)


def test_the_cpu_rule_bites(tmp_path):
    tree = _tree(tmp_path, {"twin/engine/job.py": "import numpy as np\nx = np.exp(np.arange(3))\ny = np.cumsum([1])\n"})
    assert machine_dependent_calls(tree) == ["twin.engine.job:2: np.exp"]
