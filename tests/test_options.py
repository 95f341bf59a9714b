"""Options are defined once: the scenario accepts exactly what the specs below the boundary are typed with."""

from __future__ import annotations

import types
import typing

import pytest

from twin import options
from twin.api.training import Section
from twin.engine.stack import StackProfile
from twin.hardware.specs import FabricSpec
from twin.operations.scheduler import Policy
from twin.power.site import EmbodiedRequest, SiteSpec
from twin.scenario import Scenario, parse_scenario
from twin.scenario.cluster import Fabric
from twin.scenario.jobs import Scheduler
from twin.scenario.serving import Engine, Lengths, Serving
from twin.scenario.site import Embodied, Site
from twin.scenario.training import InlineModel, Parallelism, StackOptions, Training
from twin.serving.deployment import ServingSpec
from twin.serving.specs import EngineSpec, LengthSpec
from twin.workload.finetune import FinetuneSpec
from twin.workload.model import ModelSpec
from twin.workload.plan import ParallelPlan, PlanRequest


def _choices(annotation) -> tuple:
    """The values of a Literal, an optional Literal, or a union of Literals."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return tuple(v for a in typing.get_args(annotation) if a is not type(None) for v in _choices(a))
    assert typing.get_origin(annotation) is typing.Literal, annotation
    return typing.get_args(annotation)


def _scenario(model, key: str) -> tuple:
    return _choices(model.model_fields[key].annotation)


def _spec(cls, key: str) -> tuple:
    return _choices(typing.get_type_hints(cls)[key])


# (scenario model, key, spec dataclass, field, values the scenario adds as a sentinel)
PAIRS = [
    (Parallelism, "schedule", PlanRequest, "schedule", ()),
    (Parallelism, "schedule", ParallelPlan, "schedule", ()),
    (Parallelism, "recompute", PlanRequest, "recompute", ()),
    (Parallelism, "recompute", ParallelPlan, "recompute", ()),
    (Parallelism, "order", PlanRequest, "order", ()),
    (InlineModel, "activation", ModelSpec, "activation", ()),
    (InlineModel, "norm", ModelSpec, "norm", ()),
    (InlineModel, "position", ModelSpec, "position", ()),
    (Training, "method", FinetuneSpec, "method", ()),
    (Training, "fp8_recipe", Section, "fp8_recipe", ()),
    (Training, "attention", StackProfile, "attention", ()),
    (Training, "kernels", StackProfile, "kernels", ()),
    (StackOptions, "grad_reduce", StackProfile, "grad_reduce", ()),
    (StackOptions, "zero1_reduce", StackProfile, "zero1_reduce", ()),
    (StackOptions, "cross_entropy", StackProfile, "cross_entropy", ()),
    (StackOptions, "pipeline_sends", StackProfile, "pipeline_sends", ()),
    (StackOptions, "sharded_gather", StackProfile, "sharded_gather", ()),
    (StackOptions, "backward_prefetch", StackProfile, "backward_prefetch", ()),
    (Fabric, "topology", FabricSpec, "topology", ()),
    (Serving, "precision", ServingSpec, "precision", ()),
    (Serving, "kv_cache", ServingSpec, "kv_cache", ("auto",)),
    (Engine, "scheduler", EngineSpec, "scheduler", ()),
    (Engine, "offload", EngineSpec, "offload", ()),
    (Lengths, "distribution", LengthSpec, "distribution", ()),
    (Site, "accounting", SiteSpec, "accounting", ()),
    (Embodied, "method", EmbodiedRequest, "method", ()),
    (Scheduler, "policy", Policy, "name", ()),
    (Scheduler, "placement", Policy, "placement", ()),
]


@pytest.mark.parametrize("model, key, spec, field, sentinels", PAIRS,
                         ids=[f"{m.__name__}.{k}-{s.__name__}.{f}" for m, k, s, f, _ in PAIRS])
def test_each_scenario_option_is_the_spec_option(model, key, spec, field, sentinels):
    written = _scenario(model, key)
    assert written == sentinels + _spec(spec, field)
    assert len(set(written)) == len(written)


def test_a_frozen_base_is_stored_as_written_or_as_fp32_training_keeps_it():
    assert set(_scenario(Training, "weights")) == set(_spec(FinetuneSpec, "weights")) - {"fp32"}


def test_the_tuples_are_the_literals_values_in_order():
    assert options.PRECISIONS == ("bf16", "fp16", "fp8", "tf32", "fp32")
    assert options.RECOMPUTES == ("none", "selective", "full")
    assert options.ZERO_STAGES == (0, 1, 2, 3)
    assert _scenario(Training, "precision") == options.PRECISIONS
    assert _scenario(Serving, "precision") == options.SERVING_PRECISIONS


def test_fused_attention_searches_no_selective_recomputation():
    assert options.recompute_levels("standard") == ("none", "selective", "full")
    assert options.recompute_levels("flash") == ("none", "full")
    assert options.recompute_levels(None) == ("none", "full")


def test_a_wrong_option_is_one_line_naming_the_key_the_value_and_what_is_allowed():
    data = {"cluster": {"node": "dgx-h100", "nodes": 1},
            "training": {"model": "llama2-7b", "tokens": "1B", "seq_len": 4096, "global_batch": 8,
                         "parallelism": {"schedule": "zigzag"}}}
    with pytest.raises(Exception) as caught:
        parse_scenario(data)
    message = str(caught.value)
    assert "\n" not in message
    assert "training.parallelism.schedule" in message and "zigzag" in message
    assert all(s in message for s in options.SCHEDULES)
    assert isinstance(parse_scenario(data | {"training": data["training"] | {"parallelism": {}}}), Scenario)
