"""The result records: what a run of the twin answers, and their JSON form.

The layers below return typed records (frozen dataclasses); this package alone turns them into JSON.
``core`` holds what every record shares (``Result``: scenario, workload, schema version, warnings,
sources; the serialiser and the JSON helpers); ``training``, ``serving`` (serving and capacity) and
``operations`` hold one record per workload. Top-level keys are a user-facing contract
(docs/results.md); values are SI (seconds, bytes, watts) except where the key names another unit
(kWh, kg, EUR, TFLOP/s). Study records (plan search, sweep, fit) live in ``twin.studies.records``.
"""

from typing import Any

from twin.results.core import LIST_SEPARATOR, SCHEMA_VERSION, Layout, Record, Result, finite, flatten, plain, serialise

# The records of each workload (and the engines they import) load when first asked for, so that a training
# run or a plan search does not import the serving and operations ones, nor a serving run the training
# one (PEP 562 module __getattr__).
_TRAINING = ("PlanEstimate", "TrainingResult", "finetune_record", "training_record")
_POWER = ("power_record",)
_OPERATIONS = ("CarbonAware", "OperationsResult", "operations_record")
_SERVING = ("CapacityResult", "ServingResult", "capacity_record", "serving_record")


def __getattr__(name: str) -> Any:
    if name in _TRAINING:
        from twin.results import training as module
    elif name in _POWER:
        from twin.results import power as module
    elif name in _OPERATIONS:
        from twin.results import operations as module
    elif name in _SERVING:
        from twin.results import serving as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)


__all__ = [
    "LIST_SEPARATOR", "SCHEMA_VERSION", "CapacityResult", "CarbonAware", "Layout", "OperationsResult", "PlanEstimate",
    "Record", "Result", "ServingResult", "TrainingResult", "capacity_record", "finetune_record", "finite", "flatten",
    "operations_record", "plain", "power_record", "serialise", "serving_record", "training_record",
]
