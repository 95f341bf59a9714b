"""Start-up: what a command imports and reads, and that the faster paths give the same data."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
import yaml

from twin import catalog
from twin.engine.stack import stack_profile

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("networkx", "numpy", "plotly", "narwhals", "simpy", "pydantic", "dask", "pyarrow", "codecarbon", "psutil")


def loaded_after(code: str) -> set[str]:
    """Top-level packages among HEAVY that a fresh interpreter has imported after running ``code``."""
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True,
                         timeout=60).stdout
    return set(json.loads(out.splitlines()[-1])) & set(HEAVY)


@pytest.mark.skipif(not hasattr(yaml, "CSafeLoader"), reason="PyYAML built without libyaml")
@pytest.mark.parametrize("kind", catalog.KINDS)
def test_the_c_loader_reads_every_catalog_file_as_the_python_loader_does(kind):
    assert catalog.SAFE_LOADER is yaml.CSafeLoader
    text = resources.files("twin.catalog").joinpath("data", f"{kind}.yaml").read_text(encoding="utf-8")
    fast, reference = yaml.load(text, Loader=yaml.CSafeLoader), yaml.load(text, Loader=yaml.SafeLoader)
    assert fast == reference
    assert repr(fast) == repr(reference)            # same types and key order, not only equal values


@pytest.mark.skipif(not hasattr(yaml, "CSafeLoader"), reason="PyYAML built without libyaml")
def test_the_c_loader_reads_every_shipped_validation_case_file_as_the_python_loader_does():
    folder = resources.files("twin.validation").joinpath("cases")
    files = [e for e in folder.iterdir() if e.name.endswith(".yaml")]
    files += [e for e in folder.joinpath("serving").iterdir() if e.name.endswith(".yaml")]
    assert len(files) >= 10
    for entry in files:
        text = entry.read_text(encoding="utf-8")
        fast, reference = catalog.load_yaml(text), yaml.load(text, Loader=yaml.SafeLoader)
        assert repr(fast) == repr(reference), entry.name


def test_the_catalog_is_read_once_per_process():
    first = catalog.table("gpus")
    hits = catalog.table.cache_info().hits
    assert catalog.table("gpus") is first
    assert catalog.table.cache_info().hits == hits + 1


def test_a_stack_profile_is_built_once():
    assert stack_profile("megatron-core-2024") is stack_profile("megatron-core-2024")


def test_listing_the_catalog_loads_no_engine():
    assert loaded_after("from twin.cli import main; main(['catalog', 'gpus']); main(['catalog', 'stacks'])") == set()


def test_help_loads_nothing_heavy():
    assert loaded_after("import twin.cli; twin.cli.parser().format_help()") == set()


def test_a_run_and_its_summary_leave_figures_trackers_and_studies_unloaded():
    loaded = loaded_after("from twin.api import run_file; from twin.report import summary\n"
                          "summary(run_file('scenarios/dgx-finetune.yaml').to_dict())")
    assert not loaded & {"narwhals", "dask", "pyarrow", "codecarbon", "psutil"}


def test_the_api_loads_networkx_only_with_the_first_fabric():
    assert "networkx" not in loaded_after("import twin.api, twin.report")
    assert "networkx" in loaded_after("from twin.api import fabric_file; fabric_file('scenarios/superpod.yaml')")


def test_a_refused_file_is_refused_before_the_simulator_is_imported(tmp_path):
    """Malformed YAML, or no file at all: one line and exit status 2, with nothing heavy imported."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("x: [\n", encoding="utf-8")
    for command in (["run", str(bad)], ["fit", str(tmp_path / "missing.yaml")]):
        code = (f"import contextlib, io\nfrom twin.cli import main\nerr = io.StringIO()\n"
                f"with contextlib.redirect_stderr(err):\n    assert main({command!r}) == 2\n"
                f"assert err.getvalue().count('\\n') == 1, err.getvalue()")
        assert loaded_after(code) == set()


def twin_modules_after(code: str) -> set[str]:
    """The twin's modules that a fresh interpreter has imported after running ``code``."""
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('twin'))))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True,
                         timeout=120).stdout
    return set(json.loads(out.splitlines()[-1]))


def run_code(scenario: str) -> str:
    return f"from twin.api import run_file\nrun_file('scenarios/{scenario}.yaml').to_dict()"


def test_a_training_run_loads_the_models_of_what_it_asks_for_only():
    """No failures, training.data, site.cooling, site.profile, embodied carbon or DeepSpeed pipeline: none of
    their models; nor the serving engine."""
    loaded = twin_modules_after(run_code("dgx-finetune"))
    assert "twin.api.training" in loaded
    assert not loaded & {"twin.engine.job", "twin.engine.job_loop", "twin.jobs.failures", "twin.api.storage", "twin.storage.assess",
                         "twin.api.building", "twin.power.cooling", "twin.profile", "twin.power.embodied",
                         "twin.engine.deepspeed_pipe", "twin.serving.engine", "twin.results.serving"}


def test_a_serving_run_loads_no_training_engine():
    loaded = twin_modules_after(run_code("serve-8b-l4-vs-mig"))
    assert "twin.serving.engine" in loaded
    assert not loaded & {"twin.api.training", "twin.results.training", "twin.engine.step", "twin.engine.stack",
                         "twin.engine.iteration", "twin.jobs.failures", "twin.workload.memory"}
