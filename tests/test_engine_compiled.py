"""The replica engine's compiled loop against the Python one: every request's times, to the last bit.

``engine_compiled.play`` repeats ``engine._State`` step for step over arrays. Each case below runs the same
requests through both and compares every first-token and finish time, byte for byte, and every counter. The
cases reach each branch of the loop: both KV schedulers (with preemptions), chunked prefill and whole prompts
beyond the token budget, prompts run alone, a shared prefix, Grace offload, pipeline stages, iteration by
iteration without jumps, CUDA graphs, the overlap scheduler and multi-step scheduling (through the catalog's
engine profiles).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from twin.calibration import Efficiency, ServingEfficiency
from twin.hardware.specs import ClusterSpec, FabricSpec, StorageSpec, node_spec
from twin.serving import capacity as capacity_module
from twin.serving.capacity import capacity
from twin.serving.deployment import ServingSpec, replica
from twin.serving.engine import ReplicaEngine
from twin.serving.load import requests
from twin.serving.profiles import engine_profile
from twin.serving.specs import EngineSpec, LengthSpec, LoadSpec, SLOSpec
from twin.workload.model import model_spec

pytestmark = pytest.mark.xdist_group("compiled-engine")    # one worker compiles the loop once


def cluster(node: str) -> ClusterSpec:
    n = node_spec(node)
    fabric = FabricSpec("rail-optimized-fat-tree", n.compute_nics.line_rate_Bps, 32, 1.0)
    return ClusterSpec(n, 1, 0, 1, None, None, fabric, StorageSpec(1e10, 1e10, None))


def serving(engine: EngineSpec, rate=None, count=400, isl=512, osl=128, prefix=0, tensor=1, pipeline=1,
            precision="bf16", model="llama3-8b") -> ServingSpec:
    load = LoadSpec(rate, count, LengthSpec(isl, "exponential", 4 * isl), LengthSpec(osl, "exponential", 4 * osl),
                    prefix_tokens=prefix, seed=11)
    return ServingSpec(model_spec(model), precision, precision if precision != "int4" else "bf16", tensor, pipeline,
                       1, None, engine, load, SLOSpec())


def both(s: ServingSpec, node: str = "dgx-h100", jump: bool = True):
    rep = replica(s, cluster(node), ServingEfficiency.calibrated(), Efficiency.calibrated())
    reqs = requests(s.load, s.load.requests, s.load.rate_per_s)
    runs = [ReplicaEngine(rep.iteration, s.engine, rep.memory.kv_blocks, rep.memory.kv_hbm_tokens,
                          s.load.prefix_tokens, jump=jump, compiled=compiled).run(reqs) for compiled in (False, True)]
    return runs


def same(python, compiled) -> None:
    a, b = python.requests, compiled.requests
    assert a.first_token_s.tobytes() == b.first_token_s.tobytes()
    assert a.finish_s.tobytes() == b.finish_s.tobytes()
    for field in ("makespan_s", "iterations", "steps", "busy_s", "compute_s", "memory_s", "comm_s", "preemptions",
                  "max_running", "kv_peak_tokens"):
        assert getattr(python, field) == getattr(compiled, field), field


CASES = {
    # vLLM's scheduler with a quarter of the GPU for weights, reserve and KV cache: decode grows blocks and
    # preempts the newest
    "max_utilization, preempting": (serving(replace(engine_profile("vllm-0.10"), kv_memory_fraction=0.25), rate=40.0),
                                    "dgx-h100", True),
    # TensorRT-LLM 0.13: whole prompts, some beyond the 1,024-token budget, offline
    "no_evict, whole prompts beyond the budget": (
        serving(replace(engine_profile("tensorrt-llm-0.13"), max_tokens_in_flight=1024), isl=900), "dgx-h100", True),
    # vLLM 0.6: prompts run alone (no chunked prefill), CUDA graphs, ten decode steps per scheduling pass
    "prompts alone, multi-step": (serving(engine_profile("vllm-0.6"), rate=30.0), "dgx-h100", True),
    # SGLang: the overlap scheduler, prefill batches apart, a shared system prompt in the prefix cache
    "overlap scheduler, shared prefix": (serving(engine_profile("sglang-0.4"), rate=50.0, prefix=256), "dgx-h100",
                                         True),
    # TensorRT-LLM 1.0 on two pipeline stages
    "pipeline stages": (serving(engine_profile("tensorrt-llm-1.0"), rate=20.0, pipeline=2), "dgx-h100", True),
    # a GH200 whose KV cache spills into Grace memory
    "Grace offload": (serving(EngineSpec(max_batch=1024, offload="grace"), count=600, isl=4096, osl=256,
                              model="llama3-70b", precision="fp8"), "gh200-144gb-1", True),
    # one clock advance per iteration: the reference the jumps match
    "iteration by iteration": (serving(EngineSpec(), rate=25.0, count=200), "dgx-h100", False),
}


@pytest.mark.parametrize("name", CASES)
def test_the_compiled_loop_gives_every_request_the_same_times(name):
    s, node, jump = CASES[name]
    python, compiled = both(s, node, jump)
    same(python, compiled)
    if name.endswith("preempting"):
        assert python.preemptions > 10
    if name == "Grace offload":
        assert python.kv_peak_tokens > replica(s, cluster(node), ServingEfficiency.calibrated(),
                                               Efficiency.calibrated()).memory.kv_hbm_tokens


def test_a_capacity_search_finds_the_same_rate_with_its_trials_compiled_or_not(monkeypatch):
    s = replace(serving(engine_profile("vllm-0.10"), rate=10.0, count=500, osl=64),
                slo=SLOSpec(ttft_p99_s=0.5, tpot_p99_s=0.02))
    rep = replica(s, cluster("dgx-h100"), ServingEfficiency.calibrated(), Efficiency.calibrated())
    monkeypatch.setattr(capacity_module, "COMPILED_TRIAL_FROM_REQUESTS", 10**9)
    python = capacity(s, rep)
    monkeypatch.setattr(capacity_module, "COMPILED_TRIAL_FROM_REQUESTS", 0)
    compiled = capacity(s, rep)
    assert python.rate_per_s == compiled.rate_per_s and python.requests_per_trial == compiled.requests_per_trial
    assert [r.ttft_s for r in python.sweep] == [r.ttft_s for r in compiled.sweep]
