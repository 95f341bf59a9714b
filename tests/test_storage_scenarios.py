"""Data, storage and the building through whole scenarios, checked against hand arithmetic."""

import math

import pytest

from twin.api import parse_scenario, scenario_data, simulate, with_overrides

VIDEO = "scenarios/jeroboam-video.yaml"
DC5 = "scenarios/superpod-dc5.yaml"


def _run(path, changes=None):
    return simulate(parse_scenario(with_overrides(scenario_data(path), changes or {})), closed_form=True)


def test_video_waits_on_jeroboam_and_not_on_the_superpod_file_system():
    """256 clips of 150 MB = 38.4 GB a step: 0.96 s at Jeroboam's 40 GB/s, 0.192 s through the two
    nodes' storage NICs (2 x 100 GB/s) to the SuperPOD's 2.7 TB/s file system."""
    r = _run(VIDEO)
    compute_step = r.step.step_s - r.step.data_s
    assert r.storage.feed.read_s == pytest.approx(38.4e9 / 40e9)
    assert compute_step < 0.96 and r.step.data_s == pytest.approx(0.96 - compute_step)
    assert r.step.parts()["data"] == r.step.data_s and "starves the GPUs" in r.storage.verdict
    assert any(w.startswith("data: ddn-jeroboam read throughput") for w in r.warnings)
    same = _run(VIDEO, {"training.data.tier": "ddn-nabuchodonosor"})
    assert same.storage.feed.read_s == pytest.approx(38.4e9 / 200e9)
    assert same.step.data_s == 0.0 and same.step.step_s == pytest.approx(compute_step)
    assert r.tokens_per_s == pytest.approx(same.tokens_per_s * compute_step / r.step.step_s)


def test_405b_checkpoints_beside_100_tb_on_the_superpod():
    """A 405B checkpoint: params x (2 bf16 + 12 fp32 Adam) bytes = 5.67 TB; (1.8 PB - 100 TB) / 5.67 TB -> 299."""
    r = _run(DC5, {"training.model": "llama3-405b", "failures.enabled": False, "training.parallelism.pipeline": 8})
    assert r.params == pytest.approx(405e9, rel=0.01)
    assert r.storage.checkpoint_bytes == pytest.approx(r.params * 14)
    assert r.storage.use.fit == math.floor((1.8e15 - 100e12) / (r.params * 14)) == 299


def test_dc5_pue_is_a_result_of_its_climate():
    r = _run(DC5, {"failures.enabled": False})
    assert r.building is not None and r.pue == pytest.approx(r.building.pue) and r.pue < 1.2
    assert r.energy_facility_kwh == pytest.approx(r.energy_it_kwh * r.pue, rel=1e-6)
    chillers = _run(DC5, {"failures.enabled": False, "site.cooling.design": "air-economizer"})
    spain = _run(DC5, {"failures.enabled": False, "site.cooling.design": "air-economizer", "site.country": "ES"})
    assert r.pue < chillers.pue < spain.pue


def test_scenarios_without_the_sections_are_untouched():
    r = _run("scenarios/jeroboam.yaml")
    assert r.storage is None and r.building is None and r.step.data_s == 0.0
