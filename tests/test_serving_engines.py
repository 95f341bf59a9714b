"""Engine profiles, GEMMs by shape and tensor-parallel kernels, against hand calculations and invariants."""

from __future__ import annotations

from dataclasses import replace

import pytest

from twin.calibration import Efficiency, ServingEfficiency
from twin.errors import ScenarioError
from twin.hardware.specs import ClusterSpec, FabricSpec, StorageSpec, gpu_spec, node_spec
from twin.network.tp_kernels import custom_all_reduce_s
from twin.operators.launches import KERNEL_LAUNCH_S
from twin.operators.roofline import OperatorModel
from twin.serving.batching import Batch
from twin.serving.deployment import ServingSpec, replica, simulate
from twin.serving.profiles import engine_profile, profile_names
from twin.serving.specs import LengthSpec, LoadSpec, SLOSpec
from twin.workload.model import model_spec

SERVING = ServingEfficiency.calibrated()
TRAINING = Efficiency.calibrated()
H100 = gpu_spec("h100-sxm")


def cluster(node: str = "dgx-h100") -> ClusterSpec:
    n = node_spec(node)
    fabric = FabricSpec("rail-optimized-fat-tree", n.compute_nics.line_rate_Bps, 32, 1.0)
    return ClusterSpec(n, 1, 0, 1, None, None, fabric, StorageSpec(1e10, 1e10, None))


def deployment(engine, precision="bf16", tensor=1, isl=128, osl=1, count=1, model="llama3-8b") -> ServingSpec:
    load = LoadSpec(None, count, LengthSpec(isl), LengthSpec(osl))
    kv = "fp8" if precision == "fp8" else precision
    return ServingSpec(model_spec(model), precision, kv, tensor, 1, 1, None, engine, load, SLOSpec())


def run(s: ServingSpec, node: str = "dgx-h100"):
    rep = replica(s, cluster(node), SERVING, TRAINING)
    return rep, simulate(s, rep)


# -- profiles -----------------------------------------------------------------------------------

def test_every_profile_reads_with_its_source():
    import twin.catalog as catalog

    for name in profile_names():
        e = engine_profile(name)
        assert e.profile == name and e.max_batch >= 1 and e.block_tokens >= 1
        assert len(catalog.table("engines")[name]["source"]) > 100


def test_an_unknown_profile_is_one_line_with_a_suggestion():
    with pytest.raises(ScenarioError, match=r"serving.engine.profile: unknown engine 'vllm-06' \(did you mean 'vllm-0.6'\?\)"):
        engine_profile("vllm-06")


def test_the_sampler_buffers_of_every_batch_slot_come_out_of_the_kv_cache():
    """TensorRT-LLM 0.13 keeps float32 penalised logits and int32 occurrence counts for each of its max_batch
    slots over the vocabulary: Llama 3 70B (vocabulary 128,256) at a batch limit of 4,096 holds
    4,096 · 128,256 · 8 B = 4.20 GB of them on each GPU, which the KV cache does not get."""
    engine = replace(engine_profile("tensorrt-llm-0.13"), max_batch=4096, kv_memory_fraction=1.0, block_tokens=1)
    bare = replace(engine, decoder_bytes_per_logit=0.0)
    held, free = (replica(deployment(e, "fp8", model="llama3-70b"), cluster(), SERVING, TRAINING).memory
                  for e in (engine, bare))
    assert held.reserve_bytes - free.reserve_bytes == pytest.approx(4096 * 128256 * 8, rel=1e-12)
    assert 4.20e9 < held.reserve_bytes - free.reserve_bytes < 4.21e9
    per_token = 2 * 80 * 8 * 128 * 1                          # fp8 KV, 80 layers, 8 KV heads of 128
    assert free.kv_capacity_tokens - held.kv_capacity_tokens == pytest.approx(4096 * 128256 * 8 / per_token, abs=1)


def test_vllm_gives_the_kv_cache_its_share_of_the_whole_gpu_less_weights_and_reserve():
    """vLLM: total_gpu_memory · gpu_memory_utilization − peak (weights and the rest); TensorRT-LLM: the fraction
    of what the weights and the reserve leave. Llama 3 8B in BF16 on one H100 at 0.9: the two differ by
    0.1 · (W + R) of KV memory, vLLM's the smaller."""
    vllm, trt = (replica(deployment(e), cluster(), SERVING, TRAINING).memory
                 for e in (engine_profile("vllm-0.6"), replace(engine_profile("vllm-0.6"), kv_memory_basis="free")))
    m = vllm
    assert vllm.kv_hbm_tokens == pytest.approx((0.9 * m.hbm_bytes - m.weights_bytes - m.reserve_bytes)
                                               / m.kv_bytes_per_token, abs=m.block_tokens)
    gap = (trt.kv_hbm_tokens - vllm.kv_hbm_tokens) * m.kv_bytes_per_token
    assert gap == pytest.approx(0.1 * (m.weights_bytes + m.reserve_bytes), abs=2 * m.block_tokens * m.kv_bytes_per_token)
    assert engine_profile("tensorrt-llm-0.13").kv_memory_basis == "free"


def test_batch_one_first_token_includes_the_engine_per_iteration_cost():
    """128-token prompt, batch 1: the first token waits for the engine's host work and launches;
    a profile without them answers sooner, by at least the host work (vLLM 0.6: 4 ms)."""
    engine = engine_profile("vllm-0.6")
    bare = replace(engine, host_s=0.0, kernels_per_layer=0.0, kernels_per_iteration=0.0, cuda_graphs=False)
    _, with_cost = run(deployment(engine))
    _, without = run(deployment(bare))
    assert with_cost.ttft_s.p50 - without.ttft_s.p50 >= engine.host_s * (1 - 1e-9)
    assert with_cost.ttft_s.p50 < without.ttft_s.p50 + engine.host_s + 0.01


def test_launches_bound_a_short_iteration_and_hide_behind_a_long_one():
    rep, _ = run(deployment(engine_profile("tensorrt-llm-0.13")))
    it = rep.iteration
    kernels = it.engine.kernels_per_layer * 32 + it.engine.kernels_per_iteration      # llama3-8b: 32 layers
    assert it.launch_s(Batch(decode_seqs=1, decode_context=1)) == pytest.approx(kernels * KERNEL_LAUNCH_S)
    long = it.time(Batch(prefill_tokens=8192, prefill_pairs=8192 * 8193 / 2, prefill_done=1))
    assert long.total_s - it.host_s == pytest.approx(long.compute_s + long.memory_s + long.comm_s)


def test_multi_step_scheduling_pays_the_host_work_once_per_its_decode_steps():
    """vLLM 0.6's --num-scheduler-steps n: a decode-only iteration pays 1/n of the host work (vLLM 0.6: 4 ms),
    an iteration with prompt tokens the whole of it; the GPU's time is the same either way."""
    engine = engine_profile("vllm-0.6")
    decode, prefill = Batch(decode_seqs=32, decode_context=32 * 600), Batch(prefill_tokens=512, prefill_pairs=512 * 513 / 2,
                                                                           prefill_done=1)
    single, multi = (run(deployment(replace(engine, scheduler_steps=n)))[0].iteration for n in (1, 10))
    for batch in (decode, prefill):
        assert multi.time(batch).compute_s == single.time(batch).compute_s
    assert single.time(decode).total_s - multi.time(decode).total_s == pytest.approx(0.004 * 0.9, rel=1e-9)
    assert multi.time(prefill).total_s == single.time(prefill).total_s


def test_scheduler_steps_and_the_prompt_rule_are_scenario_keys_within_their_bounds():
    from twin.api import scenario_from_text
    from twin.api.specs import engine_of

    text = ("cluster: {node: dgx-h100, nodes: 1}\nserving: {model: llama3-8b, replicas: 1, "
            "engine: {profile: vllm-0.6, %s}, load: {rate: 1/s, input_tokens: {mean: 128}, "
            "output_tokens: {mean: 128}}}\n")
    engine = engine_of(scenario_from_text(text % "scheduler_steps: 10, prefill_with_decode: never").serving.engine)
    assert (engine.scheduler_steps, engine.prefill_with_decode, engine.prefill_alone) == (10, "never", True)
    assert engine_of(scenario_from_text(text % "max_batch: 8").serving.engine).prefill_with_decode == "chunked"
    with pytest.raises(ScenarioError, match=r"serving.engine.scheduler_steps: 0 is not allowed: allowed 1 to 64"):
        scenario_from_text(text % "scheduler_steps: 0")
    with pytest.raises(ScenarioError, match=r"serving.engine.prefill_with_decode: .*'always', 'chunked' or 'never'"):
        scenario_from_text(text % "prefill_with_decode: sometimes")


def test_cuda_graphs_replay_decode_with_one_launch():
    rep, _ = run(deployment(engine_profile("vllm-0.10")))
    it = rep.iteration
    assert it.launch_s(Batch(decode_seqs=8, decode_context=800)) == KERNEL_LAUNCH_S
    assert it.launch_s(Batch(decode_seqs=8, decode_context=800, prefill_tokens=64)) > 100 * KERNEL_LAUNCH_S


@pytest.mark.parametrize("older, newer", [("vllm-0.6", "vllm-0.10"), ("tensorrt-llm-0.13", "tensorrt-llm-1.0")])
def test_a_newer_profile_never_slows_a_run_its_limits_do_not_bind(older, newer):
    """The same scheduler limits and rules on both; the newer release's per-iteration costs are no higher."""
    old = engine_profile(older)
    limits = {k: getattr(old, k) for k in ("max_batch", "max_tokens_in_flight", "chunked_prefill", "prefix_cache",
                                           "scheduler", "prefill_with_decode", "block_tokens", "kv_memory_fraction")}
    new = replace(engine_profile(newer), **limits)
    for isl, osl, count in ((128, 1, 1), (512, 128, 64), (2048, 256, 16)):
        _, a = run(deployment(old, isl=isl, osl=osl, count=count))
        _, b = run(deployment(new, isl=isl, osl=osl, count=count))
        assert b.output_tokens_per_s >= a.output_tokens_per_s * (1 - 1e-9)
        assert b.ttft_s.p50 <= a.ttft_s.p50 * (1 + 1e-9)


def test_a_precision_the_engine_has_no_kernels_for_is_refused():
    engine = replace(engine_profile("vllm-0.6"), quantised=("int4",))
    with pytest.raises(ScenarioError, match="serving.precision: vllm-0.6 has no fp8 kernels"):
        run(deployment(engine, precision="fp8"))


# -- GEMMs by shape ------------------------------------------------------------------------------

def test_a_gemm_of_one_row_is_memory_bound_at_the_weight_bytes():
    ops = OperatorModel(H100, "bf16", TRAINING, shape_aware=True)
    n = k = 4096
    moved = 2.0 * (k * n + k + n)              # the weight, one input row, one output row, 16 bits each
    assert ops.matmul_s(1, n, k) == pytest.approx(moved / ops.memory_Bps, rel=1e-9)
    assert ops.matmul_compute_s(1, n, k) < 0.5 * ops.matmul_s(1, n, k)


def test_a_large_gemm_reaches_the_calibrated_rate():
    ops = OperatorModel(H100, "bf16", TRAINING, shape_aware=True)
    m = n = k = 8192
    rate = 2.0 * m * n * k / ops.matmul_s(m, n, k)
    assert 0.93 * ops.matmul_flops <= rate <= ops.matmul_flops


def test_small_model_gemms_run_below_the_rate_of_large_model_gemms():
    """Hidden 2,048 against 16,384 on H100, 8,192 tokens: tiles, waves and pipeline fill cost more
    of a small GEMM."""
    ops = OperatorModel(H100, "bf16", TRAINING, shape_aware=True)
    tokens = 8192

    def rate(h: int) -> float:
        return 2.0 * tokens * h * h / ops.matmul_s(tokens, h, h)

    assert rate(2048) < 0.95 * rate(16384)
    assert rate(16384) <= ops.matmul_flops


def test_fp8_speedup_of_a_batch_one_decode_step_is_below_the_ratio_of_the_peaks():
    times = {}
    for precision in ("bf16", "fp8"):
        rep, _ = run(deployment(engine_profile("tensorrt-llm-0.13"), precision=precision))
        times[precision] = rep.iteration.time_s(Batch(decode_seqs=1, decode_context=128))
    speedup = times["bf16"] / times["fp8"]
    assert 1.0 < speedup < H100.peak("fp8") / H100.peak("bf16")
    assert speedup < 1.9                       # the 16-bit LM head and the fixed costs do not shrink


# -- tensor-parallel all-reduce in decode ---------------------------------------------------------

def test_a_tp8_all_reduce_is_latency_bound_small_and_bandwidth_bound_large():
    """TensorRT-LLM's kernels at TP 8 on H100 as measured (SGLang PR #2904): 5.7 µs at 4 KB, 7.8 µs at 32 KB,
    33.8 µs at 1 MB; 16 KB lies between, near its latency. TensorRT-LLM 0.13 takes its own kernels up to
    8,000,000 bytes whatever NCCL would take, 16,000,000 on two GPUs, and NCCL above."""
    rep, _ = run(deployment(engine_profile("tensorrt-llm-0.13"), tensor=8, model="llama3-70b"))
    it = rep.iteration
    small = it.all_reduce_s(16e3)
    assert 5.7e-6 < small < 7.8e-6
    assert it.all_reduce_s(8e3) > 0.9 * small
    assert custom_all_reduce_s(1048576, 8, "trtllm") == pytest.approx(33.8e-6)
    assert custom_all_reduce_s(1048576, 8, "vllm") == pytest.approx(45.0e-6)      # vLLM's own kernels, slower
    assert custom_all_reduce_s(2 * 1048576, 8) == pytest.approx(33.8e-6 + (33.8e-6 - 22.1e-6) * 2)   # last slope
    # vLLM's kernels past 1 MiB at the cost per MiB vLLM measured (PR #24111: TP 4 8.33 µs, TP 6 6.67 µs; TP 8
    # takes the largest measured size)
    assert custom_all_reduce_s(4 * 1048576, 4, "vllm") == pytest.approx(40.2e-6 + 3 * 8.33e-6)
    assert custom_all_reduce_s(4 * 1048576, 8, "vllm") == pytest.approx(45.0e-6 + 3 * 6.67e-6)
    assert it.all_reduce_s(1048576) == pytest.approx(33.8e-6)
    at_bound = custom_all_reduce_s(8e6, 8)
    assert it.all_reduce_s(8e6) == pytest.approx(at_bound) and at_bound > it.comm.all_reduce_s(8e6, it.tensor)
    assert it.all_reduce_s(8e6 + 16) == pytest.approx(it.comm.all_reduce_s(8e6 + 16, it.tensor))
    large = it.all_reduce_s(256e6)
    assert it.all_reduce_s(512e6) == pytest.approx(2 * large, rel=0.02)
    assert large == pytest.approx(rep.iteration.comm.all_reduce_s(256e6, it.tensor))   # NCCL above the bound
    two, _ = run(deployment(engine_profile("tensorrt-llm-0.13"), tensor=2, model="llama3-70b", precision="fp8"))
    assert two.iteration.all_reduce_s(12e6) == pytest.approx(custom_all_reduce_s(12e6, 2))
    assert two.iteration.all_reduce_s(17e6) == pytest.approx(two.iteration.comm.all_reduce_s(17e6, two.iteration.tensor))


def test_without_nvlink_the_all_reduce_is_nccl_over_pcie():
    rep, _ = run(deployment(engine_profile("tensorrt-llm-0.13"), tensor=4, model="llama3-70b", precision="fp8"),
                 node="l40s-8")
    it = rep.iteration
    assert it.all_reduce_s(16e3) == pytest.approx(it.comm.all_reduce_s(16e3, it.tensor))
