"""The checkout's own environment, for a Python that lacks the twin's dependencies.

From a source checkout whose ``.venv`` holds the dependencies (README, Set-up), ``python -m
twin`` run by a Python that lacks them (a new terminal where the environment is not
activated) hands the command, unchanged, to that environment's Python instead of failing
on the first missing import. Imports nothing beyond the standard library.
"""

import importlib.util
import os
import sys
from pathlib import Path

# Import names of the runtime dependencies in pyproject.toml (tests/test_cli.py keeps them in step).
RUNTIME_IMPORTS = ("simpy", "networkx", "numpy", "yaml", "pydantic", "codecarbon", "pycountry", "streamlit",
                   "plotly", "kaleido", "pyarrow", "dask", "distributed", "numba")
# Set in the handed-over process: it never hands over again.
HANDED_OVER = "TWIN_CHECKOUT_PYTHON"


def checkout_python(root: Path, prefix: str, missing: list[str]) -> Path | None:
    """The checkout's environment Python to hand the command to, or None: when some dependency is
    ``missing`` here and ``root/.venv`` is another environment than this one (``prefix``)."""
    venv = root / ".venv"
    python = next((p for p in (venv / "bin" / "python", venv / "Scripts" / "python.exe") if p.exists()), None)
    if not missing or python is None or Path(prefix).resolve() == venv.resolve():
        return None
    return python


def hand_over() -> None:
    """Run this command with the checkout's environment Python when this one lacks a dependency."""
    if os.environ.get(HANDED_OVER):
        return
    missing = [name for name in RUNTIME_IMPORTS if importlib.util.find_spec(name) is None]
    python = checkout_python(Path(__file__).resolve().parent.parent, sys.prefix, missing)
    if python is not None:
        os.environ[HANDED_OVER] = "1"
        os.execv(python, [str(python), "-m", "twin", *sys.argv[1:]])
