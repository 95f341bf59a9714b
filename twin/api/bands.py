"""The calibration of an answer: its error band (twin.bands) and the site profile it was priced with."""

from __future__ import annotations

from twin import catalog
from twin.bands import Calibration, nearest_band, profile_band
from twin.profile import load_profile
from twin.scenario import Scenario

# The serving engine the serving twin is validated on (twin/validation/cases/serving: trtllm-bench rows).
SERVING_ENGINE = "trtllm"


def calibration_of(scenario: Scenario) -> Calibration | None:
    """The band and profile of a training or serving scenario's answer (None for many jobs on a cluster)."""
    if scenario.workload == "jobs":
        return None
    if scenario.site.profile is not None:
        profile = load_profile(scenario.site.profile)
        return Calibration(profile_band(profile.band_fraction, profile.name), profile.name, profile.path,
                           profile.sha256)
    gpu = str(catalog.entry("nodes", scenario.cluster.node, "cluster.node")["gpu"])
    if scenario.training is not None:
        stack = scenario.training.stack
        return Calibration(nearest_band("training", gpu, stack if isinstance(stack, str) else stack.name))
    return Calibration(nearest_band("serving", gpu, SERVING_ENGINE))
