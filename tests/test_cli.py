"""The command line as a user meets it: exit codes, one-line errors, JSON on stdout only."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import BASE, ROOT, twin


def real_process(*args):
    return subprocess.run([sys.executable, "-m", "twin", *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


def write(tmp_path: Path, data, name="s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data), encoding="utf-8")
    return path


def test_run_superpod_prints_a_summary_with_units():
    out = real_process("run", "scenarios/superpod.yaml")
    assert out.returncode == 0, out.stderr
    for needle in ("GiB", "tokens/s", "TFLOP/s", "MFU", "days", "MWh", "t CO2e", "EUR"):
        assert needle in out.stdout
    # counts as scenarios write them, parts of the step in words, GPU-hours used and reserved
    for needle in ("for 2T tokens", "tensor-parallel communication", "pipeline bubble", "used,", "reserved",
                   "g CO2e/kWh"):
        assert needle in out.stdout
    assert "e+" not in out.stdout and "tp_comm" not in out.stdout


def test_json_is_the_only_output_and_holds_the_contract(tmp_path):
    out = twin("run", str(write(tmp_path, BASE)), "--json")
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    for key in ("scenario", "gpus_total", "gpus_used", "step_time_s", "tokens_per_s", "model_tflops_per_gpu",
                "hardware_tflops_per_gpu", "mfu", "memory_per_gpu_bytes", "memory_capacity_bytes", "memory_fits",
                "ideal_time_to_train_s", "time_to_train_s", "gpu_hours", "interruptions", "goodput",
                "energy_it_kwh", "energy_facility_kwh", "avg_power_it_w", "peak_power_it_w", "carbon_kg",
                "energy_cost_eur"):
        assert key in record, key
    assert set(record["carbon_kg"]) == {"FR", "DE"}
    assert record["time_to_train_s"] == record["ideal_time_to_train_s"]
    assert record["interruptions"] == 0


def test_out_writes_results_json(tmp_path):
    out = twin("run", str(write(tmp_path, BASE)), "--out", str(tmp_path / "res"))
    assert out.returncode == 0
    assert json.loads((tmp_path / "res" / "results.json").read_text())["gpus_used"] == 16


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d["cluster"].update(node="dgx-h1000"), "cluster.node: unknown node 'dgx-h1000' (did you mean 'dgx-h100'?)"),
    (lambda d: d["training"].update(model="lama2-7b"), "training.model: unknown model 'lama2-7b' (did you mean"),
    (lambda d: d["cluster"].update(nodes=-2), "cluster.nodes: -2 is not allowed"),
    (lambda d: d["cluster"].update(fabric={"link": "400 Gb"}), "cluster.fabric.link: unknown unit 'Gb'"),
    (lambda d: d["training"]["parallelism"].update(tensor=3), "training.parallelism.tensor: 3 does not divide"),
    (lambda d: d["training"].update(token="1T"), "training.token: unknown key (did you mean 'tokens'?)"),
    (lambda d: d["site"].update(country="FRN"), "site.country: unknown country code 'FRN'"),
])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path, mutate, field):
    import copy

    data = copy.deepcopy(BASE)
    mutate(data)
    out = twin("run", str(write(tmp_path, data)), "--out", str(tmp_path / "res"))
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr
    assert field in lines[0]
    assert not (tmp_path / "res").exists()


@pytest.mark.skipif(not (shutil.which("chromium") or shutil.which("chromium-browser")),
                    reason="figures are drawn with Chromium (apt-get install chromium)")
def test_report_writes_markdown_with_its_figures_beside_it(tmp_path):
    out = twin("run", str(ROOT / "scenarios" / "jeroboam.yaml"), "--report", str(tmp_path / "plan.md"))
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "plan.md").read_text()
    assert text.startswith("# Jeroboam") and "| Time to train (P50) |" in text and "### Parallel plan" in text
    linked = [line.split("](")[1].rstrip(")") for line in text.splitlines() if line.startswith("![")]
    assert linked == ["plan-figures/memory.png", "plan-figures/countries.png"]
    assert all((tmp_path / name).read_bytes()[:4] == b"\x89PNG" for name in linked)
    assert f"wrote {tmp_path / 'plan.md'} and 2 figures" in out.stdout


def test_report_must_be_a_markdown_file_and_is_checked_before_simulating(tmp_path):
    out = twin("run", str(ROOT / "scenarios" / "jeroboam.yaml"), "--report", str(tmp_path / "plan.txt"))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == f"twin: error: --report: '{tmp_path / 'plan.txt'}' is not a Markdown file name " \
                                 "(write e.g. report.md)"


def test_malformed_yaml_exits_2(tmp_path):
    out = twin("run", str(write(tmp_path, "cluster: {node: dgx-h100, nodes: 2\ntraining: [")))
    assert out.returncode == 2
    assert "malformed YAML at line" in out.stderr and "Traceback" not in out.stderr


def test_missing_file_exits_2(tmp_path):
    out = twin("run", str(tmp_path / "nope.yaml"))
    assert out.returncode == 2 and "cannot read scenario file" in out.stderr


@pytest.mark.parametrize("kind, needle", [("gpus", "h100-sxm"), ("nodes", "dgx-b200"), ("models", "mixtral-8x7b"),
                                         ("stacks", "deepspeed-megatron-pipeline")])
def test_catalog_lists(kind, needle):
    out = twin("catalog", kind)
    assert out.returncode == 0 and needle in out.stdout


def test_catalog_lists_the_serving_engines_with_their_defaults():
    """One row per profile of engines.yaml, with the profile's own values (tensorrt-llm-0.13: batch 256, 8,192
    tokens an iteration, prompts batched with decodes, no CUDA graphs, 8 B of sampler buffers per batch slot and
    vocabulary entry; vllm-0.6 runs prompts apart unless chunked)."""
    from twin.serving.profiles import profile_names

    out = twin("catalog", "engines")
    rows = {line.split()[0]: line.split() for line in out.stdout.splitlines()[2:]}
    assert out.returncode == 0 and sorted(rows) == sorted(profile_names())
    assert rows["tensorrt-llm-0.13"][1:10] == ["256", "8192", "no", "always", "no", "no_evict", "no", "calibrated",
                                               "8"]
    assert rows["vllm-0.6"][4] == "chunked" and rows["sglang-0.4"][4] == "never"


def test_the_hand_over_probes_every_runtime_dependency_of_pyproject():
    import re
    import tomllib

    from twin.checkout import RUNTIME_IMPORTS

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    names = set()
    for spec in declared:
        name, extras = re.match(r"([A-Za-z0-9_.-]+)(?:\[([^\]]*)\])?", spec).groups()
        names.add({"pyyaml": "yaml"}.get(name.lower(), name.lower()))
        names.update(e.strip() for e in (extras or "").split(",") if e.strip())
    assert set(RUNTIME_IMPORTS) == names


def test_the_checkout_python_is_taken_only_where_it_helps(tmp_path):
    from twin.checkout import checkout_python

    python = tmp_path / ".venv" / "bin" / "python"
    assert checkout_python(tmp_path, "/usr", ["pycountry"]) is None          # no environment in the checkout
    python.parent.mkdir(parents=True)
    python.write_text("")
    assert checkout_python(tmp_path, "/usr", ["pycountry"]) == python       # another Python, a package missing
    assert checkout_python(tmp_path, "/usr", []) is None                    # nothing missing: run here
    assert checkout_python(tmp_path, str(tmp_path / ".venv"), ["pycountry"]) is None   # already that environment


def test_python_without_the_environment_runs_the_scenario_from_the_checkout():
    """A new terminal: the interpreter the checkout's .venv was made from, not activated, runs the README's
    scenario (handed to the .venv's Python when it lacks a dependency)."""
    if not (ROOT / ".venv" / "bin" / "python").exists() or sys.prefix == sys.base_prefix:
        pytest.skip("the twin is not installed in the checkout's .venv")
    base = Path(sys.base_prefix) / "bin" / "python3"
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    out = subprocess.run([str(base), "-m", "twin", "run", "scenarios/superpod.yaml"], capture_output=True,
                         text=True, cwd=ROOT, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert "tokens/s" in out.stdout
