"""Serving engine profiles (catalog ``engines.yaml``): an engine release's defaults and per-iteration costs.

``engine_profile(name)`` is the ``EngineSpec`` of a named release (``tensorrt-llm-0.13``,
``tensorrt-llm-1.0``, ``vllm-0.6``, ``vllm-0.10``, ``sglang-0.4``); the API replaces the keys a
scenario writes under ``serving.engine``. Every value carries its source in the data file.
"""

from __future__ import annotations

from dataclasses import fields

from twin import catalog
from twin.serving.specs import EngineSpec

DEFAULT_PROFILE = "tensorrt-llm-0.13"
_KEYS = {f.name for f in fields(EngineSpec)} - {"profile", "offload"}


def engine_family(profile: str) -> str:
    """The engine a profile is a release of, as the validation's error bands name it: trtllm (every
    tensorrt-llm release), vllm, sglang."""
    engine = profile.rsplit("-", 1)[0]
    return "trtllm" if engine == "tensorrt-llm" else engine


def profile_names() -> list[str]:
    return catalog.names("engines")


def engine_profile(name: str = DEFAULT_PROFILE, field: str = "serving.engine.profile") -> EngineSpec:
    """The settings of the engine release ``name``; an unknown name is one line naming ``field``."""
    row = catalog.entry("engines", name, field)
    values = {k: v for k, v in row.items() if k in _KEYS}
    values["quantised"] = tuple(values.get("quantised", ()))
    for key in ("kernels_per_layer", "kernels_per_iteration", "host_s", "kv_memory_fraction",
                "custom_all_reduce_max_bytes", "custom_all_reduce_max_bytes_two_gpus", "decoder_bytes_per_logit"):
        if key in values and values[key] != "calibrated":
            values[key] = float(values[key])
    if values.get("host_s") == "calibrated":
        values["host_s"] = None            # ServingEfficiency.iteration_overhead_s
    return EngineSpec(profile=name, **values)
