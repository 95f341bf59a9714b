"""The serving twin against hand calculations, invariants and the issue's acceptance checks."""

from __future__ import annotations

from dataclasses import fields, replace

import numpy as np
import pytest
import simpy

from twin.calibration import Efficiency, ServingEfficiency
from twin.errors import ScenarioError
from twin.hardware.mig import mig_profile, slice_gpu
from twin.hardware.specs import ClusterSpec, FabricSpec, StorageSpec, gpu_spec, node_spec
from twin.serving.batching import Batch
from twin.serving.capacity import capacity, sizing
from twin.serving.deployment import ServingSpec, replica, simulate
from twin.serving.engine import ReplicaEngine, _Seq, _State
from twin.serving.kv_cache import RUNTIME_CONTEXT_BYTES, workspace_bytes
from twin.serving.load import Requests, requests
from twin.serving.specs import EngineSpec, LengthSpec, LoadSpec, SLOSpec
from twin.workload.model import model_spec

SERVING = ServingEfficiency.calibrated()
TRAINING = Efficiency.calibrated()


def cluster(node: str, nodes: int = 1) -> ClusterSpec:
    n = node_spec(node)
    fabric = FabricSpec("rail-optimized-fat-tree", n.compute_nics.line_rate_Bps, 32, 1.0)
    return ClusterSpec(n, nodes, 0, 1, None, None, fabric, StorageSpec(1e10, 1e10, None))


def spec(model="llama3-8b", precision="bf16", kv="bf16", tensor=1, pipeline=1, mig=None, rate=None, count=400,
         isl=512, osl=128, engine=None, slo=None, replicas=1, dist="fixed") -> ServingSpec:
    load = LoadSpec(rate, count, LengthSpec(isl, dist, 4 * isl), LengthSpec(osl, dist, 4 * osl), seed=7)
    return ServingSpec(model_spec(model), precision, kv, tensor, pipeline, replicas, mig, engine or EngineSpec(),
                       load, slo or SLOSpec())


def build(s: ServingSpec, node="dgx-h100", nodes=1):
    return replica(s, cluster(node, nodes), SERVING, TRAINING)


def test_decode_at_batch_one_reads_the_weights_once():
    rep = build(spec())
    it = rep.iteration
    t = it.time_s(Batch(decode_seqs=1, decode_context=1)) - it.overhead_s
    streamed = rep.memory.weights_bytes - 2 * rep.iteration.model.embedding_params   # the embedding is looked up
    hand = streamed / (rep.gpu.memory_Bps * SERVING.memory)
    assert t == pytest.approx(hand, rel=0.03)


def test_kv_capacity_is_free_memory_over_kv_bytes_per_token():
    s = spec(engine=EngineSpec(kv_memory_fraction=1.0, block_tokens=1))
    rep = build(s)
    m = s.model                         # llama3-8b: 32 layers, 8 KV heads of 128
    per_token = 2 * 32 * 8 * 128 * 2
    reserve = RUNTIME_CONTEXT_BYTES + workspace_bytes(m, 8192, 1)
    hand = (80 * 2**30 - rep.memory.weights_bytes - reserve) // per_token
    assert rep.memory.kv_bytes_per_token == per_token
    assert rep.memory.kv_capacity_tokens == hand


def test_kv_heads_are_replicated_when_tensor_ranks_outnumber_them():
    rep = build(spec(model="llama3-70b", precision="fp8", kv="fp8", tensor=8))
    assert rep.memory.kv_bytes_per_token == 2 * 80 * 1 * 128 * 1


def test_every_request_completes_with_its_tokens():
    s = spec(rate=20.0, dist="exponential")
    run = simulate(s, build(s))
    t = run.engine.requests
    assert np.isfinite(t.finish_s).all()
    assert (t.first_token_s >= t.arrival_s).all() and (t.finish_s >= t.first_token_s).all()
    assert run.requests_per_s > 0


@pytest.mark.parametrize("prompts", ["always", "never"])
def test_clock_jumps_match_iteration_by_iteration(prompts):
    s = spec(rate=30.0, count=200, dist="exponential", engine=EngineSpec(prefill_with_decode=prompts))
    rep = build(s)
    reqs = requests(s.load, 200, 30.0)
    fast = ReplicaEngine(rep.iteration, s.engine, rep.memory.kv_blocks, rep.memory.kv_hbm_tokens).run(reqs)
    slow = ReplicaEngine(rep.iteration, s.engine, rep.memory.kv_blocks, rep.memory.kv_hbm_tokens,
                         jump=False).run(reqs)
    assert fast.iterations == slow.iterations
    assert fast.steps < slow.steps / 2
    np.testing.assert_allclose(fast.requests.finish_s, slow.requests.finish_s, rtol=2e-3)



def simpy_run(engine: ReplicaEngine, reqs: Requests):
    """The engine's two processes as SimPy processes, on the engine's own scheduling steps: the reference
    whose event order (time, then the order events were scheduled) the hand-stepped loop follows."""
    env = simpy.Environment()
    state = _State(engine, reqs)
    wake: list[simpy.Event] = []

    def arrivals():
        for i in range(len(reqs)):
            delay = reqs.arrival_s[i] - env.now
            if delay > 0:
                yield env.timeout(delay)
            state.waiting.append(_Seq(i, int(reqs.input_tokens[i]), int(reqs.output_tokens[i]), 0))
            state.arrived += 1
            if wake and not wake[0].triggered:
                wake[0].succeed()

    def serve():
        while state.done < len(reqs):
            state._admit()
            batch, chunks = state._schedule()
            if batch.tokens == 0 and state.head >= len(state.waiting) and state.arrived < len(reqs):
                wake.append(env.event())
                yield wake[0]
                wake.clear()
                continue
            k = state._jump(env.now, batch) if not chunks else 1
            yield env.timeout(state._advance(batch, k))
            state.done += state._finish(env.now, chunks)

    env.process(arrivals())
    env.process(serve())
    env.run()
    return state.result()


def arriving_at_an_iteration_end(engine: ReplicaEngine, reqs: Requests) -> Requests:
    """``reqs`` with one request moved to arrive exactly when an iteration ends (the run is the same up to
    then), so that an arrival and the engine's next step fall at the same time."""
    ends = np.unique(engine.run(reqs).requests.first_token_s)
    end = ends[len(ends) // 2]
    i = int(np.searchsorted(reqs.arrival_s, end))
    arrivals = reqs.arrival_s.copy()
    arrivals[i] = end
    return Requests(arrivals, reqs.input_tokens, reqs.output_tokens)


@pytest.mark.parametrize("scheduler, prompts", [("no_evict", "always"), ("max_utilization", "always"),
                                                ("max_utilization", "never")])
@pytest.mark.parametrize("rate", [2.0, 30.0])
def test_the_event_loop_plays_simpys_run_to_the_last_digit(scheduler, prompts, rate):
    """Arrivals tied in time, an arrival at the very end of an iteration, arrivals while an iteration runs
    and an idle engine woken by an arrival: every request's times and every counter as SimPy's processes
    give them (prompts batched with decodes, or run alone)."""
    engine_spec = EngineSpec(scheduler=scheduler, kv_memory_fraction=0.05 if scheduler == "max_utilization" else 0.9,
                             prefill_with_decode=prompts)
    s = spec(rate=rate, count=300, dist="exponential", engine=engine_spec)
    rep = build(s)
    engine = ReplicaEngine(rep.iteration, s.engine, rep.memory.kv_blocks, rep.memory.kv_hbm_tokens)
    drawn = requests(s.load, 300, rate)
    tied = Requests(np.round(drawn.arrival_s, 1), drawn.input_tokens, drawn.output_tokens)
    for reqs in (drawn, tied, arriving_at_an_iteration_end(engine, drawn)):
        ours, reference = engine.run(reqs), simpy_run(engine, reqs)
        for f in fields(ours):
            if f.name == "requests":
                for g in fields(ours.requests):
                    np.testing.assert_array_equal(getattr(ours.requests, g.name), getattr(reference.requests, g.name))
            else:
                assert getattr(ours, f.name) == getattr(reference, f.name), f.name

def _iterations(engine_spec: EngineSpec) -> tuple[list[tuple[int, int]], np.ndarray]:
    """Two requests of a 128-token prompt and 3 output tokens, both at t = 0, a prompt per iteration (128
    tokens in flight): each iteration's (decodes, prompt tokens), and when each request ends."""
    s = spec(count=2, isl=128, osl=3, engine=engine_spec)
    rep = build(s)
    engine = ReplicaEngine(rep.iteration, s.engine, rep.memory.kv_blocks, rep.memory.kv_hbm_tokens, jump=False)
    state = _State(engine, Requests(np.zeros(2), np.array([128, 128]), np.array([3, 3])))
    seen: list[tuple[int, int]] = []
    advance = state._advance

    def recording(batch: Batch, k: int) -> float:
        seen.append((batch.decode_seqs, batch.prefill_tokens))
        return advance(batch, k)

    state._advance = recording
    state.play()
    return seen, state.result().requests.finish_s


def test_prompts_run_alone_where_the_engine_does_not_batch_them_with_decodes():
    """In-flight batching runs the second prompt beside the first request's decode; vLLM 0.6 without chunked
    prefill (and SGLang without mixed chunks) runs it alone, first, and the first request's decode waits a
    turn: it ends an iteration later. With chunked prefill on, vLLM 0.6 batches them again."""
    base = EngineSpec(chunked_prefill=False, max_tokens_in_flight=128)
    mixed, mixed_end = _iterations(base)
    alone, alone_end = _iterations(replace(base, prefill_with_decode="chunked"))
    assert mixed == [(0, 128), (1, 128), (2, 0), (1, 0)]
    assert alone == [(0, 128), (0, 128), (2, 0), (2, 0)]
    assert alone_end[0] > mixed_end[0] and alone_end[0] == alone_end[1]
    assert _iterations(replace(base, prefill_with_decode="never"))[0] == alone
    chunked = replace(base, chunked_prefill=True)
    assert _iterations(replace(chunked, prefill_with_decode="chunked"))[0] == _iterations(chunked)[0]


def test_higher_rate_raises_ttft_and_the_queue_grows_past_saturation():
    s = spec(count=300)
    rep = build(s)
    ceiling = simulate(s, rep, offline=True).requests_per_s
    p99 = [simulate(s, rep, rate_per_s=f * ceiling).ttft_s.p99 for f in (0.2, 0.5, 0.8, 1.5)]
    assert all(a <= b for a, b in zip(p99, p99[1:]))
    over = [simulate(s, rep, rate_per_s=1.5 * ceiling, count=n).ttft_s.p99 for n in (300, 600)]
    assert over[1] > 1.6 * over[0]


def test_fp8_raises_offline_throughput_on_h100_and_is_refused_on_a100():
    bf16 = spec(model="llama3-70b", tensor=4, count=600)
    fp8 = spec(model="llama3-70b", precision="fp8", kv="fp8", tensor=4, count=600)
    assert (simulate(fp8, build(fp8)).output_tokens_per_s
            > 1.3 * simulate(bf16, build(bf16)).output_tokens_per_s)
    with pytest.raises(ScenarioError, match="serving.precision"):
        build(fp8, node="dgx-a100-80gb")
    with pytest.raises(ScenarioError, match="serving.kv_cache"):
        build(spec(kv="fp8"), node="dgx-a100-80gb")


def test_a_1g_slice_is_at_least_five_times_slower_on_prefill():
    whole = build(spec(), node="dgx-a100-80gb")
    part = build(spec(mig="1g.10gb", model="llama3-8b", precision="int4"), node="dgx-a100-80gb")
    whole16 = build(spec(precision="int4"), node="dgx-a100-80gb")
    prefill = Batch(prefill_tokens=4096, prefill_pairs=4096 * 2048.5, prefill_done=1)
    assert part.iteration.time_s(prefill) >= 5 * whole16.iteration.time_s(prefill)
    assert whole.memory.kv_capacity_tokens > 0


def test_mig_slice_is_its_share_of_the_gpu():
    gpu = gpu_spec("h100-sxm")
    p = mig_profile(gpu, "3g.40gb")
    s = slice_gpu(gpu, p)
    assert (p.compute_slices, p.memory_slices, p.instances) == (3, 4, 2)
    assert s.peak("bf16") == pytest.approx(gpu.peak("bf16") * 3 / 7)
    assert s.memory_bytes == pytest.approx(gpu.memory_bytes / 2)
    assert s.memory_Bps == pytest.approx(gpu.memory_Bps / 2)
    assert 7 * slice_gpu(gpu, mig_profile(gpu, "1g.10gb")).tdp_w == pytest.approx(gpu.tdp_w)
    with pytest.raises(ScenarioError, match="did you mean '1g.10gb'"):
        mig_profile(gpu, "1g.10gbb")
    with pytest.raises(ScenarioError, match="no MIG"):
        mig_profile(gpu_spec("l4"), "1g.10gb")


def test_seven_slices_fill_one_gpu_per_replica_count():
    s = spec(mig="1g.10gb", precision="int4", replicas=None)
    rep = build(s)
    assert rep.replicas == 56 and rep.gpus_used == 8


def test_gh200_with_grace_offload_holds_more_sequences_than_h100():
    long = dict(model="llama3-70b", precision="fp8", kv="fp8", count=400, isl=4096, osl=1024,
                engine=EngineSpec(max_batch=1024))
    h100 = build(spec(**long))
    gh = build(spec(**{**long, "engine": EngineSpec(max_batch=1024, offload="grace")}), node="gh200-144gb-1")
    assert gh.memory.kv_capacity_tokens > 4 * h100.memory.kv_capacity_tokens
    run_h = simulate(spec(**long), h100)
    run_g = simulate(spec(**{**long, "engine": EngineSpec(max_batch=1024, offload="grace")}), gh)
    assert run_g.engine.max_running > 4 * run_h.engine.max_running
    with pytest.raises(ScenarioError, match="offload"):
        build(spec(engine=EngineSpec(offload="grace")))


def test_max_utilization_preempts_and_recomputes_when_blocks_run_out():
    small = EngineSpec(scheduler="max_utilization", max_batch=512, kv_memory_fraction=0.02)
    s = spec(count=300, isl=1024, osl=1024, engine=small)
    rep = build(s)
    run = simulate(s, rep)
    assert run.engine.preemptions > 0
    assert np.isfinite(run.engine.requests.finish_s).all()
    reserved = simulate(replace(s, engine=replace(small, scheduler="no_evict")), rep)
    assert reserved.engine.preemptions == 0
    assert run.engine.max_running > reserved.engine.max_running


def test_preemption_gives_back_every_block_and_slot():
    """Sequences preempted many at once (the newest first, their stale ends left in the heap) and grown over
    arrays: at the end every block is free again, no decoding slot is held, and each request finished once,
    after its arrival and its first token."""
    small = EngineSpec(scheduler="max_utilization", max_batch=512, kv_memory_fraction=0.02)
    s = spec(count=300, isl=1024, osl=1024, engine=small)
    rep = build(s)
    reqs = requests(s.load, 300, None)
    engine = ReplicaEngine(rep.iteration, s.engine, rep.memory.kv_blocks, rep.memory.kv_hbm_tokens)
    state = _State(engine, reqs)
    state.play()
    assert state.preemptions > 10
    assert state.free_blocks == rep.memory.kv_blocks and not state.decoding and not state.end_of
    assert not state.slot_active.any() and len(state.free_slots) == small.max_batch
    t = state.result().requests
    assert (t.finish_s >= t.first_token_s).all() and (t.first_token_s >= t.arrival_s).all()


def test_capacity_holds_the_slo_and_sizes_the_deployment():
    s = spec(count=300, slo=SLOSpec(ttft_p99_s=1.0, tpot_p99_s=0.05))
    rep = build(s)
    cap = capacity(s, rep)
    assert 0 < cap.rate_per_s < cap.offline_requests_per_s
    at = simulate(s, rep, rate_per_s=cap.rate_per_s)
    assert at.slo_met
    size = sizing(cap.per_replica_rate_per_s, rep.devices, 1, 10 * cap.rate_per_s)
    assert size.replicas == 10 and size.gpus == 10


def test_tensor_parallel_over_nvlink_domain_beats_infiniband():
    s = spec(model="llama3-70b", precision="fp8", kv="fp8", tensor=8)
    domain = build(s, node="gh200-nvl32")
    separate = build(s, node="gh200-144gb-1", nodes=8)
    decode = Batch(decode_seqs=64, decode_context=64 * 1024.0)
    assert domain.iteration.time_s(decode) < 0.8 * separate.iteration.time_s(decode)
