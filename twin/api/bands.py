"""The calibration of an answer: its error band (twin.bands) and the site profile it was priced with."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from twin import catalog
from twin.bands import Calibration, nearest_band, profile_band
from twin.scenario import Scenario

if TYPE_CHECKING:
    from twin.results import ServingResult, TrainingResult

R = TypeVar("R", "TrainingResult", "ServingResult")


def calibration_of(scenario: Scenario, kind: str, gpu: str, system: str, tensor: int | None = None) -> Calibration:
    """The band of an answer of ``kind`` (training | serving) on ``gpu`` with ``system`` (its stack or
    serving engine; ``tensor``: a serving replica's tensor-parallel size): the site profile's when the
    scenario names one, else the nearest validation cases'."""
    if scenario.site.profile is not None:
        from twin.profile import load_profile   # only for a scenario with a site profile

        profile = load_profile(scenario.site.profile)
        return Calibration(profile_band(profile.band_fraction, profile.name), profile.name, profile.path,
                           profile.sha256)
    return Calibration(nearest_band(kind, gpu, system, tensor=tensor))


def node_gpu(node: str) -> str:
    """The catalog name of a node's GPU, as the validation cases name it."""
    return str(catalog.entry("nodes", node, "cluster.node")["gpu"])


def scenario_calibration(scenario: Scenario) -> Calibration:
    """The band of the scenario's training or serving answer (its node's GPU, its stack or its serving engine)."""
    gpu = node_gpu(scenario.cluster.node)
    if scenario.training is not None:
        return calibration_of(scenario, "training", gpu, scenario.training.stack_name)
    from twin.serving.profiles import engine_family     # the serving twin's catalog: only for a serving answer

    serving = scenario.serving
    return calibration_of(scenario, "serving", gpu, engine_family(serving.engine.profile), serving.parallelism.tensor)


def calibrated(result: R, scenario: Scenario) -> R:
    """``result`` with its band and profile, and a warning when the profile was fitted on another GPU."""
    gpu = node_gpu(scenario.cluster.node)
    calibration = scenario_calibration(scenario)
    if scenario.site.profile is not None:
        from twin.profile import load_profile   # only for a scenario with a site profile

        profile = load_profile(scenario.site.profile)
        warnings = list(result.warnings)
        if profile.gpu and profile.gpu != gpu:
            warnings.append(f"site profile '{profile.name}' was fitted on {profile.gpu}, this cluster runs {gpu}: "
                            "its efficiencies are fractions of each GPU's peak and may not carry over")
        return replace(result, calibration=calibration, warnings=warnings)
    return replace(result, calibration=calibration)
