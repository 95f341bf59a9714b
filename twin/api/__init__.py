"""The one entry point: scenario → hardware → workload & plan → engine → metrics → Result.

The CLI, the dashboard, the validation cases and studies call these functions.
Reading and validating a scenario happens here too, so callers need nothing
below ``twin.api`` to go from a file (or an upload, or a dict) to an answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from twin import catalog
from twin.api.bands import calibrated, scenario_calibration
from twin.api.specs import cluster_of
from twin.network.collectives import CommModel
from twin.network.records import FabricSummary
from twin.options import (METHODS, OBJECTIVES, PRECISIONS, RECOMPUTES, SCHEDULES, SERVING_PRECISIONS,
                          WEIGHT_STORAGES)
from twin.results import Result
from twin.scenario import (
    Scenario,
    check_key,
    decode,
    load_scenario,
    parse_scenario,
    parse_yaml,
    read_text,
    resolve_profile_path,
    with_overrides,
    with_profile,
)
from twin.calibration import Efficiency
from twin.errors import ScenarioError

if TYPE_CHECKING:
    from twin.api.training import Prepared
    from twin.results import CapacityResult, OperationsResult, ServingResult, TrainingResult

__all__ = ["Built", "Prepared", "Result", "ServingResult", "CapacityResult", "OperationsResult", "Scenario", "build",
           "prepare", "estimate", "plan_memory", "plan_step_s", "plan_passes_floor_s", "plan_step_floor_s",
           "gemm_floor_s", "memory_of", "step_of", "job_of", "play_ahead", "simulate", "run_file", "run_dict",
           "run_text", "capacity", "capacity_file", "gpus_for_rate", "fabric_file", "catalog_names", "load_scenario",
           "parse_scenario", "parse_yaml", "decode", "scenario_from_text", "scenario_data", "with_overrides",
           "check_key", "TrainingResult", "scenario_calibration",
           # the option tuples callers offer as choices (defined once in twin.options)
           "METHODS", "OBJECTIVES", "PRECISIONS", "RECOMPUTES", "SCHEDULES", "SERVING_PRECISIONS", "WEIGHT_STORAGES"]

# Training, serving and operations (their engines, records and the modules below them) load when first
# asked for, so that a training run or a plan search does not import serving and operations, nor a serving
# run the training engine (PEP 562 module __getattr__).
_TRAINING = ("Built", "Prepared", "build", "estimate", "job_of", "memory_of", "plan_memory", "plan_step_s",
             "play_ahead", "prepare", "simulate_training", "step_of")
_FLOORS = ("gemm_floor_s", "plan_passes_floor_s", "plan_step_floor_s")
_SERVING = ("capacity", "gpus_for_rate", "simulate_serving")
_RECORDS = ("CapacityResult", "OperationsResult", "ServingResult", "TrainingResult")


def __getattr__(name: str) -> Any:
    if name in _TRAINING:
        from twin.api import training as module
    elif name in _FLOORS:
        from twin.api import floors as module
    elif name in _SERVING:
        from twin.api import serving as module
    elif name == "simulate_operations":
        from twin.api import operations as module
    elif name in _RECORDS:
        from twin import results as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)


def simulate(scenario: Scenario, closed_form: bool = False,
             like: Prepared | None = None) -> TrainingResult | ServingResult | OperationsResult:
    """Answer a scenario, training, serving or many jobs on the cluster as its workload section says;
    ``closed_form`` plays a training step with the analytic schedule instead of SimPy; ``like``: a
    training scenario prepared on the same cluster, whose communication models the answer shares
    (``prepare``)."""
    if scenario.workload == "serving":
        from twin.api.serving import simulate_serving
        return calibrated(simulate_serving(scenario), scenario)
    if scenario.workload == "jobs":
        from twin.api.operations import simulate_operations
        return simulate_operations(scenario)
    from twin.api.training import simulate_training
    return calibrated(simulate_training(scenario, closed_form, like), scenario)


def run_file(path: str | Path, profile: str | None = None) -> TrainingResult | ServingResult | OperationsResult:
    """Answer a scenario file; ``profile`` (a site profile file) replaces its ``site.profile``."""
    return simulate(load_scenario(path, profile))


def run_dict(data: dict[str, Any]) -> TrainingResult | ServingResult | OperationsResult:
    return simulate(parse_scenario(data))


def scenario_data(path: str | Path, profile: str | None = None) -> dict[str, Any]:
    """A scenario file's keys as written, not yet validated (studies vary them point by point); its
    ``site.profile`` made absolute, or set to ``profile``."""
    data = resolve_profile_path(parse_yaml(read_text(path), str(path)), Path(path).parent, profile)
    with_profile(data)                           # a profile that does not read stops the study before its points
    if not isinstance(data, dict):
        parse_scenario(data, str(path))          # raises the file's one-line error
    return data


def capacity_file(path: str | Path, target_rate_per_s: float | None = None,
                  profile: str | None = None) -> CapacityResult:
    """``python -m twin capacity``: the highest rate a serving scenario's deployment sustains within its
    SLO, and the GPUs ``target_rate_per_s`` needs (``profile``: a site profile file)."""
    scenario = load_scenario(path, profile)
    if scenario.workload != "serving":
        raise ScenarioError(scenario.workload, "capacity answers serving scenarios; this one describes "
                            f"{scenario.workload} (write a serving: section, docs/serving.md)")
    from twin.api.serving import capacity
    return capacity(scenario, target_rate_per_s)


def scenario_from_text(text: str, source: str = "scenario") -> Scenario:
    """A scenario from YAML text (an upload, an editor), with the file's guarantees."""
    return parse_scenario(parse_yaml(text, source), source)


def run_text(text: str, source: str = "scenario") -> TrainingResult | ServingResult | OperationsResult:
    return simulate(scenario_from_text(text, source))


def fabric_file(path: str | Path, profile: str | None = None) -> FabricSummary:
    """The fabric of a scenario file and where its parallel groups land, without simulating."""
    scenario = load_scenario(path, profile)
    if scenario.training is not None:
        from twin.api.training import build
        return build(scenario).comm.summary()
    return CommModel(cluster_of(scenario.cluster), Efficiency.calibrated(scenario.efficiency)).summary()


def catalog_names(kind: str) -> list[str]:
    """Entry names of one catalog ('nodes', 'models', 'failure_profiles', ...)."""
    return catalog.names(kind)
