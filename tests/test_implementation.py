"""How the framework runs the model: attention kernel, eager kernels, torch.autocast, and
compute that shares the GPU with an overlapped collective. Each against hand arithmetic."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from twin.api import build, run_dict
from twin.calibration import Efficiency
from twin.engine.iteration import simulate_iteration
from twin.engine.sharding import ChunkWork, sharded_extra_s
from twin.engine.stage_costs import ChunkCost, StepCosts, _layer_costs
from twin.operators.elementwise import elementwise_bytes
from twin.engine.step import step_time
from twin.errors import ScenarioError
from twin.scenario import parse_scenario
from twin.workload.plan import ParallelPlan
from tests.conftest import BASE


def built(**training):
    data = copy.deepcopy(BASE)
    data["training"].update(training)
    return build(parse_scenario(data))


def layer(b, **stack) -> tuple[float, float, float, float]:
    return _layer_costs(b.model, b.plan, b.ops, b.comm, b.placement, replace(b.stack, **stack))


def attention_ops(node: str, kernel: str):
    data = copy.deepcopy(BASE)
    data["cluster"]["node"] = node
    data["training"]["attention"] = kernel
    return build(parse_scenario(data)).ops


def test_flash2_reaches_35_percent_of_peak_on_hopper_and_is_native_on_ampere():
    """FlashAttention-3 paper: FA2 reaches only 35% of H100 peak; on A100 FA2 is the native kernel."""
    assert attention_ops("dgx-h100", "flash2").attention_flops == pytest.approx(0.35 * 989e12, rel=1e-6)
    assert attention_ops("dgx-h100", "flash").attention_flops > 0.5 * 989e12
    assert attention_ops("dgx-a100-80gb", "flash2").attention_flops == attention_ops("dgx-a100-80gb", "flash").attention_flops
    assert attention_ops("dgx-h100", "flash2").matmul_flops == attention_ops("dgx-h100", "flash").matmul_flops


@pytest.mark.parametrize("node", ["dgx-h100", "dgx-a100-80gb"])
def test_flash1_runs_at_half_flash2(node):
    """FlashAttention-2 paper: about 2x FlashAttention(-1); on A100 that is 30% of peak, inside its 25-40%."""
    fa1, fa2 = attention_ops(node, "flash1"), attention_ops(node, "flash2")
    assert fa1.attention_flops == pytest.approx(0.5 * fa2.attention_flops)
    if node == "dgx-a100-80gb":
        assert 0.25 <= fa1.attention_flops / 312e12 <= 0.40


@pytest.mark.parametrize("node", ["dgx-h100", "dgx-a100-80gb"])
def test_triton_attention_runs_its_forward_and_backward_at_their_own_speeds(node):
    """FlashAttention-2 paper §4.1: FA2 is 1.3-1.5x faster than FlashAttention in Triton forward, about
    2x backward; flash_attn_triton.py: its forward beats FlashAttention-1's, its backward does not."""
    triton, fa2, fa1 = (attention_ops(node, k) for k in ("triton", "flash2", "flash1"))
    assert 1 / 1.5 <= triton.attention_flops / fa2.attention_flops <= 1 / 1.3
    assert triton.attention_backward_flops == pytest.approx(0.5 * fa2.attention_backward_flops)
    assert triton.attention_flops > fa1.attention_flops
    assert triton.attention_backward_flops <= fa1.attention_backward_flops
    assert fa2.attention_backward_flops == fa2.attention_flops         # one rate for kernels measured as a whole


@pytest.mark.parametrize("node,kernel,head_dim,padded", [
    ("dgx-a100-80gb", "triton", 112, 128), ("dgx-a100-80gb", "triton", 128, 128),      # next power of two, >= 16
    ("dgx-a100-80gb", "triton", 80, 128), ("dgx-a100-80gb", "triton", 8, 16),
    ("dgx-a100-80gb", "flash2", 112, 128), ("dgx-a100-80gb", "flash2", 80, 96),        # multiple of 32; 256 above 192
    ("dgx-a100-80gb", "flash2", 96, 96), ("dgx-a100-80gb", "flash2", 200, 256),
    ("dgx-a100-80gb", "flash", 112, 128),                                              # native FlashAttention-2 on A100
    ("dgx-h100", "flash", 112, 112), ("dgx-h100", "flash2", 112, 128), ("dgx-a100-80gb", "flash1", 112, 112),
])
def test_attention_kernels_compute_over_their_padded_head_dimension(node, kernel, head_dim, padded):
    assert attention_ops(node, kernel).padded_head_dim(head_dim) == padded


def test_a_padded_head_costs_attention_time_in_proportion():
    """MPT-30B's 112-wide heads run in the Triton kernel's 128-wide blocks: the layer's forward costs
    128/112 - 1 of its attention core more than with 128-wide heads of the same hidden size; the
    GEMMs and everything else are unchanged. A kernel without padding sees no difference."""
    def with_heads(heads, kernel):
        return built(model={"name": "m", "layers": 4, "hidden": 7168, "heads": heads, "vocab": 50368},
                     attention=kernel, seq_len=8192)

    def forward(heads, kernel):
        return layer(with_heads(heads, kernel))[0]

    wide = with_heads(56, "triton")
    tokens = wide.plan.microbatch * wide.plan.seq_len
    core = wide.ops.attention_s(tokens * wide.model.layer_attention_flops_per_token(8192) / 2)
    assert forward(64, "triton") - forward(56, "triton") == pytest.approx((128 / 112 - 1) * core)
    assert forward(64, "flash") == pytest.approx(forward(56, "flash"))     # BASE is on H100: no padding


@pytest.mark.parametrize("norm,activation,kernels,autocast,expected", [
    ("layernorm", "gelu", "fused", False, (20.0, 4.0)),       # Megatron: 2 norms 4h + 2 fused adds 6h
    ("rmsnorm", "swiglu", "fused", False, (20.0, 6.0)),
    ("layernorm", "gelu", "eager", True, (48.0, 4.0)),        # fp32 stream: 2 × 14h + 2 × 10h
    ("layernorm", "gelu", "eager", False, (20.0, 4.0)),       # PyTorch LayerNorm is one kernel
    ("rmsnorm", "swiglu", "eager", False, (84.0, 10.0)),      # 2 × 36h (five kernels, fp32) + 2 × 6h
    ("rmsnorm", "swiglu", "eager", True, (88.0, 10.0)),
])
def test_elementwise_bytes_by_hand(norm, activation, kernels, autocast, expected):
    assert elementwise_bytes(norm, activation, kernels, autocast) == expected


def test_eager_kernels_add_the_counted_bytes():
    """Llama 2 7B (RMSNorm, SwiGLU, RoPE), TP1: eager moves (84 - 20)·h + (10 - 6)·f more bytes per token
    forward, twice that backward, and its rotary embedding (20 - 4)·(h + kv) more each way."""
    b = built()
    fused_fwd, fused_bwd, _, _ = layer(b, kernels="fused")
    eager_fwd, eager_bwd, _, _ = layer(b, kernels="eager")
    h, f, kv, tokens = b.model.hidden, b.model.ffn_hidden, b.model.kv_dim, b.plan.microbatch * b.plan.seq_len
    extra = b.ops.memory_s(tokens * (64 * h + 4 * f))          # 16-bit: act / 2 = 1
    rope = b.ops.memory_s(tokens * 16 * (h + kv))
    assert eager_fwd - fused_fwd == pytest.approx(extra + rope, rel=1e-9)
    assert eager_bwd - fused_bwd == pytest.approx(2 * extra + rope, rel=1e-9)


@pytest.mark.parametrize("kernels,bytes_per_element", [("fused", 4.0), ("eager", 20.0)])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_rotary_embeddings_rotate_q_and_k_forward_and_backward(kernels, bytes_per_element, recompute):
    """Llama 2 70B (GQA: k is 1/8 of q) on TP 4: the rotation reads and writes q and k once forward and
    once backward (fused 4 B per element; Meta's eager complex form 20 B); a full recomputation runs
    it again, selective recomputation does not (it re-runs attention's core only)."""
    parallelism = {"tensor": 4, "pipeline": 1, "recompute": recompute}
    rope = built(model="llama2-70b", parallelism=parallelism)
    learned = built(model=dict(name="learned-70b", layers=80, hidden=8192, heads=64, kv_heads=8, ffn_hidden=28672,
                               vocab=32000, position="learned"), parallelism=parallelism)
    (rf, rb, _, _), (lf, lb, _, _) = layer(rope, kernels=kernels), layer(learned, kernels=kernels)
    tokens = rope.plan.microbatch * rope.plan.seq_len
    rotation = rope.ops.memory_s(tokens * bytes_per_element * (8192 + 1024) / 4)
    assert rf - lf == pytest.approx(rotation, rel=1e-9)
    assert rb - lb == pytest.approx(rotation * (2 if recompute == "full" else 1), rel=1e-9)


def test_catalog_models_name_how_positions_enter():
    from twin.workload.model import model_spec
    assert {model_spec(n).position for n in ("llama-65b", "llama2-7b", "llama3-405b", "mistral-7b")} == {"rope"}
    assert model_spec("gpt3-175b").position == "learned" and model_spec("bloom-176b").position == "alibi"


def test_autocast_casts_every_weight_forward_and_its_gradient_backward():
    b = built(parallelism={"tensor": 1, "pipeline": 1, "recompute": "selective"})
    plain_fwd, plain_bwd, _, _ = layer(b, autocast=False)
    amp_fwd, amp_bwd, _, _ = layer(b, autocast=True)
    weights = b.model.dense_params_per_layer + b.model.expert_params_per_layer     # a dense FFN is one expert
    cast = b.ops.memory_s(6.0 * weights)                                         # read 4 B + write 2 B each
    h, tokens = b.model.hidden, b.plan.microbatch * b.plan.seq_len
    stream = b.ops.memory_s(tokens * (48.0 - 20.0) * h)      # fused norms on an fp32 stream: 48h, not 20h
    assert amp_fwd - plain_fwd == pytest.approx(cast + stream, rel=1e-9)
    assert amp_bwd - plain_bwd == pytest.approx(cast + 2 * stream, rel=1e-9)
    # full recomputation runs the forward, and so its casts, a second time
    full = built(parallelism={"tensor": 1, "pipeline": 1, "recompute": "full"})
    extra_bwd = layer(full, autocast=True)[1] - layer(full, autocast=False)[1]
    assert extra_bwd == pytest.approx(2 * cast + 3 * stream, rel=1e-9)


def zero3_traffic_s(b) -> tuple[float, float]:
    """(forward, backward) ZeRO-3 traffic of one layer with no compute to hide it: the collectives alone."""
    work = ChunkWork(layers=1, layer_forward_s=0.0, layer_backward_s=0.0)
    param_bytes = 4.0 if b.stack.autocast else 2.0
    return sharded_extra_s(work, b.model, b.plan, b.comm, b.placement, b.stack, param_bytes,
                           b.stack.grad_reduce_bytes(b.ops.precision), b.costs.overlap_slowdown)


def test_autocast_under_zero3_gathers_fp32_weights():
    """One FSDP block, nothing to hide its traffic: a gather of 2 B (4 B under autocast) per parameter
    forward, the same gather and the gradients' reduce-scatter backward."""
    zero3 = {"tensor": 1, "pipeline": 1, "zero": 3}
    for autocast, param_bytes in ((False, 2.0), (True, 4.0)):
        b = built(parallelism=zero3, autocast=autocast)
        params, group = b.model.dense_params_per_layer + b.model.expert_params_per_layer, b.placement.data
        gather = b.comm.all_gather_s(param_bytes * params, group)
        reduce = b.comm.reduce_scatter_s(b.stack.grad_reduce_bytes(b.ops.precision) * params, group)
        forward, backward = zero3_traffic_s(b)
        assert forward == pytest.approx(gather)
        assert backward == pytest.approx(gather + reduce)


def test_unknown_kernel_names_are_rejected_with_what_is_allowed():
    data = copy.deepcopy(BASE)
    data["training"]["attention"] = "flash3"
    with pytest.raises(ScenarioError, match="training.attention"):
        parse_scenario(data)
    data["training"]["attention"] = "flash"
    data["training"]["kernels"] = "compiled"
    with pytest.raises(ScenarioError, match="training.kernels"):
        parse_scenario(data)


def test_autocast_needs_a_lower_training_precision():
    with pytest.raises(ScenarioError, match="training.autocast"):
        built(precision="fp32", autocast=True)
    assert built(precision="fp16", autocast=True).stack.autocast


@pytest.mark.parametrize("compute,comm,expected", [(1.0, 0.5, 1.0 + 0.5 * 0.25), (1.0, 3.0, 3.0),
                                                    (1.0, 1.0, 1.25), (2.0, 0.0, 2.0)])
def test_compute_beside_a_collective_by_hand(compute, comm, expected):
    costs = StepCosts([], 0.0, 0.0, 0.0, 0.0, overlap_slowdown=0.25)
    assert costs.overlapped_s(compute, comm) == pytest.approx(expected)


def test_overlap_slowdown_is_the_cited_measurement():
    """arXiv:2507.03114: compute overlapped with communication runs 18.9% slower on average."""
    eff = Efficiency.calibrated()
    assert eff.overlap_slowdown == pytest.approx(0.189, abs=1e-3)
    assert built().costs.overlap_slowdown == pytest.approx(eff.overlap_slowdown)


def zero3_plan(m: int) -> ParallelPlan:
    return ParallelPlan(tensor=1, pipeline=1, data=8, expert=1, microbatch=1, virtual_stages=1, schedule="1f1b",
                        sequence_parallel=False, recompute="none", zero=3, overlap_grad_reduce=True,
                        overlap_param_gather=True, global_batch=8 * m, seq_len=1)


def test_zero3_traffic_lengthens_each_pass_in_both_engines():
    """A chunk whose forward the gathers lengthen by 0.1 s and its backward by 0.2 s: m · 3.3 s."""
    chunk = ChunkCost(1.0, 2.0, 0.0, 0.0, 4, forward_dp_s=0.1, backward_dp_s=0.2)
    costs = StepCosts([chunk], 0.0, 0.0, 0.0, 0.0, overlap_slowdown=0.25)
    m = 3
    for breakdown in (step_time(costs, zero3_plan(m)), simulate_iteration(costs, zero3_plan(m)).breakdown):
        assert breakdown.step_s == pytest.approx(m * 3.3)
        assert breakdown.dp_comm_s == pytest.approx(m * 0.3)


def test_contention_never_speeds_a_run():
    data = copy.deepcopy(BASE)
    data["training"]["parallelism"] = {"tensor": 1, "pipeline": 1, "zero": 3}
    free = run_dict({**data, "efficiency": {"overlap_compute": 1.0}})
    shared = run_dict(data)
    assert shared.step_time_s > free.step_time_s
    assert shared.step.dp_comm_s > free.step.dp_comm_s


@pytest.mark.parametrize("name, expected", [
    # Mistral 7B (h 4096, 8 KV heads of 128, FFN 14,336, SwiGLU): 2 · (4096 · (4096 + 2 · 1024) + 4096² + 3 · 4096
    # · 14,336) = 2 · (41,943,040 + 176,160,768)
    ("mistral-7b", 436_207_616),
    # Mixtral 8x7B: the same attention, two of its eight experts per token, and the router (4096 × 8)
    ("mixtral-8x7b", 2 * (41_943_040 + 2 * 176_160_768 + 4096 * 8)),
])
def test_a_layers_projection_flops_per_token_by_hand(name, expected):
    """What a fit's first floor (``twin.api.gemm_floor_s``) counts: every projection GEMM of a layer, forward, for
    one token, as ``_projection_gemms_s`` prices them."""
    from twin.engine.stage_costs import projection_flops_per_token
    from twin.workload.model import model_spec

    assert projection_flops_per_token(model_spec(name)) == expected
