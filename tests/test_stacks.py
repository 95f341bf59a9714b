"""Software stacks as data: the catalog profiles, and each behaviour they switch against hand arithmetic."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import yaml

from tests.conftest import BASE
from twin import catalog
from twin.api import build, parse_scenario, run_dict
from twin.operators.launches import KERNEL_LAUNCH_S, forward_kernels_per_layer
from twin.engine.optimizer_step import OPTIMIZER_BYTES_PER_PARAM, step_work_s
from twin.engine.sharding import ChunkWork, layer_tensors, pass_s, prefetch_window, sharded_extra_s
from twin.engine.stack import META_KEYS, StackProfile, behaviour_fields, stack_names, stack_profile
from twin.engine.stage_costs import _layer_costs, step_costs
from twin.engine.stragglers import PER_GPU_SPREAD
from twin.operators.elementwise import LOSS_BYTES_PER_LOGIT
from twin.engine.step import PART_LABELS, step_time
from twin.errors import ScenarioError
from twin.network.algorithms import NET_OVERHEAD_S, PROTOCOLS
from twin.workload.memory import stage_params


def scenario(stack: str | dict = "megatron-core-2024", nodes: int = 2, node: str = "dgx-h100", **training) -> dict:
    data = copy.deepcopy(BASE)
    data["cluster"] = {"node": node, "nodes": nodes}
    data["training"].update(stack=stack, **training)
    return data


def built(stack: str | dict = "megatron-core-2024", **kw):
    return build(parse_scenario(scenario(stack, **kw)))


# -- the catalog ---------------------------------------------------------------------------------

def test_every_profile_loads_and_every_value_names_its_source():
    raw = catalog.table("stacks")
    for name in ("megatron-lm-2021", "megatron-core-2024", "deepspeed-zero", "deepspeed-megatron-pipeline",
                 "pytorch-fsdp", "torchtitan", "nemo-2024"):
        assert name in raw
    for name in stack_names():
        profile = stack_profile(name)
        assert profile.name == name and raw[name]["source"] and raw[name]["description"]
        for key, cell in raw[name].items():
            if key not in META_KEYS:
                assert key in behaviour_fields() and cell["source"], f"{name}.{key}"


@pytest.mark.parametrize("cell,message", [
    ({"value": "fused"}, "needs a value and its source"),
    ({"value": "compiled", "source": "s"}, "allowed: fused, eager"),
    ({"value": "yes", "source": "s"}, "allowed: True, False"),
])
def test_a_malformed_catalog_value_is_refused(monkeypatch, cell, message):
    key = "autocast" if cell["value"] == "yes" else "kernels"
    row = {"description": "d", "source": "s", "extends": "megatron-core-2024", key: cell}
    real = catalog.entry
    monkeypatch.setattr(catalog, "entry", lambda kind, name, where: row if name == "broken" else real(kind, name, where))
    with pytest.raises(ValueError, match=message):
        stack_profile("broken")


def test_a_profile_extends_another_and_overrides_only_what_it_names():
    core, nemo = stack_profile("megatron-core-2024"), stack_profile("nemo-2024")
    named = {k for k in catalog.table("stacks")["nemo-2024"] if k not in META_KEYS}
    for field in behaviour_fields():
        if field not in named:
            assert getattr(nemo, field) == getattr(core, field), field
    assert nemo.overlap_grad_reduce and not core.overlap_grad_reduce      # NeMo's recipes overlap, Megatron does not


def test_an_unknown_stack_is_refused_with_a_suggestion():
    with pytest.raises(ScenarioError, match=r"training\.stack: unknown stack 'nemo-2042'.*did you mean 'nemo-2024'"):
        parse_scenario(scenario("nemo-2042"))
    with pytest.raises(ScenarioError, match=r"training\.stack\.name"):
        parse_scenario(scenario({"name": "torchtitn"}))
    with pytest.raises(ScenarioError, match=r"training\.stack\.tp_comm_overlap"):
        parse_scenario(scenario({"name": "nemo-2024", "tp_comm_overlap": "yes"}))


def test_scenario_keys_override_the_profile():
    b = built("llm-foundry-2023", attention="flash", autocast=False, parallelism={"overlap_grad_reduce": False})
    assert (b.stack.attention, b.stack.autocast, b.stack.kernels) == ("flash", False, "eager")
    assert b.ops.attention_kernel == "flash" and not b.plan.overlap_grad_reduce
    b = built({"name": "nemo-2024", "tp_comm_overlap": False, "grad_reduce": "fp32"})
    assert not b.stack.tp_comm_overlap and b.stack.grad_reduce == "fp32" and b.stack.overlap_param_gather
    assert run_dict(scenario("torchtitan")).to_dict()["stack"]["name"] == "torchtitan"


def test_a_stack_with_autocast_needs_a_lower_precision():
    with pytest.raises(ScenarioError, match=r"training\.stack"):
        built("llm-foundry-2023", precision="fp32")
    assert not built("llm-foundry-2023", precision="fp32", autocast=False).stack.autocast


# -- gradient reduction --------------------------------------------------------------------------

def over_dp(b, collective, bytes_per_param: float) -> float:
    """A collective over the stage's dense parameters (data group) and its FFN/expert ones (expert-data group)."""
    dense, expert = stage_params(b.model, b.plan, 0)
    return (collective(bytes_per_param * dense, b.placement.data)
            + collective(bytes_per_param * expert, b.placement.expert_data))


def test_fp32_gradient_reduction_moves_twice_the_bytes_of_bf16():
    """ZeRO-0 all-reduce of the stage's gradients: 4 B per parameter in fp32, 2 B in bf16."""
    fp32 = built({"name": "megatron-core-2024", "grad_reduce": "fp32"}, parallelism={"zero": 0})
    bf16 = built({"name": "megatron-core-2024", "grad_reduce": "param"}, parallelism={"zero": 0})
    assert fp32.costs.dp_reduce_s == pytest.approx(over_dp(fp32, fp32.comm.all_reduce_s, 4.0))
    assert bf16.costs.dp_reduce_s == pytest.approx(over_dp(bf16, bf16.comm.all_reduce_s, 2.0))
    assert fp32.costs.dp_reduce_s / bf16.costs.dp_reduce_s == pytest.approx(2.0, rel=0.01)    # bandwidth-bound
    megatron = stack_profile("megatron-lm-2021")       # bf16 forces fp32 reduction, fp16 does not
    assert (megatron.grad_reduce_bytes("bf16"), megatron.grad_reduce_bytes("fp16")) == (4.0, 2.0)


def test_deepspeed_bf16_zero1_all_reduces_fp32_gradients():
    ds = built("deepspeed-megatron-pipeline", parallelism={"zero": 1})
    assert ds.costs.dp_reduce_s == pytest.approx(over_dp(ds, ds.comm.all_reduce_s, 4.0))
    fp16 = built("deepspeed-megatron-pipeline", precision="fp16", parallelism={"zero": 1})
    assert fp16.costs.dp_reduce_s == pytest.approx(over_dp(fp16, fp16.comm.reduce_scatter_s, 2.0))


@pytest.mark.parametrize("stack", ["megatron-core-2024", "nemo-2024"])
def test_old_stacks_expose_the_reduction_and_the_gather(stack):
    b = built(stack, parallelism={"zero": 1})
    step = step_time(b.costs, b.plan)
    overlapped = b.stack.overlap_grad_reduce
    assert b.plan.overlap_grad_reduce == overlapped and b.plan.overlap_param_gather == b.stack.overlap_param_gather
    if not overlapped:
        assert step.dp_comm_s == pytest.approx(b.costs.dp_reduce_s + b.costs.dp_gather_s)
    else:
        assert step.dp_comm_s < b.costs.dp_reduce_s + b.costs.dp_gather_s


# -- tensor-parallel communication overlap -------------------------------------------------------

@pytest.mark.parametrize("model,tensor,seq_len,precision", [
    ("llama2-70b", 8, 4096, "bf16"), ("llama2-70b", 4, 4096, "fp8"), ("llama2-7b", 2, 2048, "bf16"),
    ("gpt3-175b", 8, 2048, "fp8"), ("llama2-13b", 8, 512, "bf16"),
])
def test_tp_comm_overlap_never_slows_a_step(model, tensor, seq_len, precision):
    kw = dict(model=model, seq_len=seq_len, precision=precision, global_batch=32,
              parallelism={"tensor": tensor, "pipeline": 1})
    plain = run_dict(scenario({"name": "nemo-2024", "tp_comm_overlap": False}, **kw))
    overlapped = run_dict(scenario({"name": "nemo-2024", "tp_comm_overlap": True}, **kw))
    assert overlapped.step_time_s <= plain.step_time_s
    assert overlapped.step.tp_comm_s <= plain.step.tp_comm_s


def test_tp_comm_overlap_exposes_what_the_gemms_cannot_hide():
    """Per layer: exposed = max(M, C + σ·min(C, M)) - C with C the layer's GEMMs and M its TP collectives."""
    b = built("nemo-2024", parallelism={"tensor": 8, "pipeline": 1})
    fwd_on, _, comm_on, _ = _layer_costs(b.model, b.plan, b.ops, b.comm, b.placement, b.stack)
    off = replace(b.stack, tp_comm_overlap=False)
    fwd_off, _, comm_off, _ = _layer_costs(b.model, b.plan, b.ops, b.comm, b.placement, off)
    assert fwd_on == pytest.approx(fwd_off)                         # compute unchanged
    tokens, h, t = b.plan.microbatch * b.plan.seq_len, b.model.hidden, b.plan.tensor
    gemm = (b.ops.matmul_s(tokens, (h + 2 * b.model.kv_dim) / t, h) + b.ops.matmul_s(tokens, h, h / t)
            + b.ops.matmul_s(tokens, 2 * b.model.ffn_hidden / t, h) + b.ops.matmul_s(tokens, h, b.model.ffn_hidden / t))
    sigma = b.costs.overlap_slowdown
    assert comm_off == pytest.approx(2 * b.comm.all_reduce_s(tokens * h * 2.0, b.placement.tensor))
    assert comm_on == pytest.approx(max(comm_off, gemm + sigma * min(gemm, comm_off)) - gemm)


# -- sharded data parallelism --------------------------------------------------------------------

def test_a_pass_hides_what_its_prefetch_window_covers():
    """n units of compute c, gather g (σ = 0): prefetching the next unit exposes only the first gather
    (g + n·c when g ≤ c); gathering after each unit's compute exposes every one (n·(g + c))."""
    n, c, g = 6, 1.0, 0.4
    compute, gather, reduce = [c] * n, [g] * n, [0.0] * n
    fsdp = stack_profile("pytorch-fsdp")
    window = prefetch_window([0.0] * n, fsdp)
    assert window == [1, 2, 3, 4, 5, 5]
    assert pass_s(compute, gather, reduce, window, False, 0.0) == pytest.approx(g + n * c)
    assert pass_s(compute, gather, reduce, window, True, 0.0) == pytest.approx(n * (g + c))
    slow = [0.2] * n                                              # gathers outlast compute: the stream bounds it
    assert pass_s(slow, gather, reduce, window, False, 0.0) == pytest.approx(n * g + 0.2)
    assert pass_s(compute, gather, reduce, window, False, 0.25) == pytest.approx(g + (n - 1) * (c + 0.25 * g) + c)


def test_deepspeed_prefetches_as_many_tensors_as_its_bucket_holds():
    ds = replace(stack_profile("deepspeed-zero"), prefetch_bucket_params=250.0, max_live_params=1e9)
    params = [100.0] * 6
    assert prefetch_window(params, ds) == [2, 3, 4, 5, 5, 5]     # two tensors of 100 fit in 250
    tight = replace(ds, max_live_params=250.0)                    # the live budget counts the tensor in use
    assert prefetch_window(params, tight) == [1, 2, 3, 4, 5, 5]


def test_per_tensor_zero3_pays_ranks_minus_one_ring_latencies_per_collective():
    """Tiny tensors, no compute: every collective is its latency, a launch plus (n - 1) ring steps
    (LL protocol for small messages), n the data-parallel ranks over m nodes: as NCCL's tuning.cc counts
    them, m - 1 steps cross the network and the others stay on NVLink, each at least the host's
    per-step network post (1 µs on the DGX H100's Intel hosts)."""
    model = {"name": "tiny", "layers": 2, "hidden": 64, "heads": 8, "vocab": 512, "activation": "gelu",
             "norm": "layernorm", "tied_embeddings": True}
    stack = {"name": "deepspeed-zero", "persistence_threshold_params": 0, "prefetch_bucket_params": 0,
             "reduce_bucket_params": 0}
    for nodes in (2, 4):
        b = built(stack, nodes=nodes, model=model, parallelism={"tensor": 1, "pipeline": 1, "zero": 3,
                                                                "recompute": "none"})
        n, m = b.plan.data, nodes
        ll = PROTOCOLS["ll"]
        intra_step = max(ll.nvlink_step_s, NET_OVERHEAD_S["intel"])
        ring = ll.base_s + (n - m) * intra_step + (m - 1) * ll.network_step_s
        tensors = len(layer_tensors(b.model, b.plan))              # every tensor gathered, none persistent
        work = ChunkWork(layers=2, layer_forward_s=0.0, layer_backward_s=0.0)
        forward, backward = sharded_extra_s(work, b.model, b.plan, b.comm, b.placement, b.stack, 2.0, 2.0, 0.0)
        assert forward == pytest.approx(2 * tensors * ring, rel=0.02)
        assert backward == pytest.approx(2 * 2 * tensors * ring, rel=0.02)        # gather + reduce-scatter each


def test_deepspeed_reduces_gradients_per_bucket():
    """No compute: a backward is every tensor's gather, then one reduce-scatter per full bucket of
    gradients and one for the rest."""
    tiny = {"name": "tiny", "layers": 2, "hidden": 64, "heads": 8, "vocab": 512, "activation": "gelu",
            "norm": "layernorm", "tied_embeddings": True}
    zero3 = {"tensor": 1, "pipeline": 1, "zero": 3, "recompute": "none"}
    b = built({"name": "deepspeed-zero", "persistence_threshold_params": 0}, model=tiny, parallelism=zero3)
    tensors = layer_tensors(b.model, b.plan) * 2
    layer_params = sum(x.params for x in tensors) / 2
    work = ChunkWork(layers=2, layer_forward_s=0.0, layer_backward_s=0.0)
    group = b.placement.data
    gathers = sum(b.comm.all_gather_s(2.0 * x.params, group) for x in tensors)
    for bucket, reduces in ((1e12, [2 * layer_params]), (layer_params, [layer_params, layer_params])):
        stack = replace(b.stack, reduce_bucket_params=bucket)
        _, backward = sharded_extra_s(work, b.model, b.plan, b.comm, b.placement, stack, 2.0, 2.0, 0.0)
        assert backward == pytest.approx(gathers + sum(b.comm.reduce_scatter_s(2.0 * r, group) for r in reduces))


def test_zero3_per_gpu_throughput_falls_as_data_parallelism_grows_at_a_fixed_batch():
    """DeepSpeed ZeRO-3, 7B, 2,048 sequences per step: more replicas, fewer micro-batches each, and every
    micro-batch pays its gathers with a ring latency that grows with the ranks."""
    per_gpu = []
    for nodes in (4, 16, 64, 256):
        r = run_dict(scenario("deepspeed-zero", nodes=nodes, node="dgx-a100-80gb", seq_len=2048, global_batch=2048,
                              parallelism={"tensor": 1, "pipeline": 1, "zero": 3, "recompute": "full"}))
        per_gpu.append(r.tokens_per_s_per_gpu)
        exposed = (r.step.dp_comm_s + r.step.dp_latency_s) / r.step_time_s
    assert all(a > b for a, b in zip(per_gpu, per_gpu[1:]))
    assert per_gpu[-1] < 0.6 * per_gpu[0] and exposed > 0.4


def test_zero3_at_four_times_the_gpus_halves_per_gpu_throughput_when_gathers_outlast_a_layer():
    """DeepSpeed ZeRO-3, 7B, 2,048 sequences per step, 512 then 2,048 A100s: at 2,048 each GPU runs one
    micro-batch and the per-tensor gathers and reduce-scatters, each a ring over 2,048 ranks whose
    latency grows with its steps (NCCL's tuning model), outlast the layer's compute they would hide
    behind: per-GPU throughput falls to at most half."""
    runs = [run_dict(scenario("deepspeed-zero", nodes=nodes, node="dgx-a100-80gb", seq_len=2048, global_batch=2048,
                              parallelism={"tensor": 1, "pipeline": 1, "zero": 3, "recompute": "full"}))
            for nodes in (64, 256)]
    small, large = runs
    exposed = large.step.dp_comm_s + large.step.dp_latency_s
    assert exposed > large.step.compute_s                                  # the gathers do not fit in compute
    assert large.step.dp_latency_s > large.step.dp_comm_s                  # and most of what shows is latency
    assert large.tokens_per_s_per_gpu <= 0.5 * small.tokens_per_s_per_gpu


def test_collective_latency_is_its_own_part_of_a_zero3_step():
    """The dp_latency part is the exposed ZeRO-3 time less what a latency-free fabric leaves exposed;
    the parts still add up to the step, and a plan without sharding has none."""
    kw = dict(nodes=8, node="dgx-a100-80gb", global_batch=256)
    zero3 = built("deepspeed-zero", parallelism={"tensor": 1, "pipeline": 1, "zero": 3, "recompute": "full"}, **kw)
    chunk = zero3.costs.chunks[0]
    bare = _chunks_without_latency(zero3)
    assert chunk.forward_dp_latency_s == pytest.approx(chunk.forward_dp_s - bare.forward_dp_s)
    assert chunk.backward_dp_latency_s == pytest.approx(chunk.backward_dp_s - bare.backward_dp_s)
    step = step_time(zero3.costs, zero3.plan)
    m = zero3.plan.microbatches
    assert step.dp_latency_s == pytest.approx(m * (chunk.forward_dp_latency_s + chunk.backward_dp_latency_s))
    assert sum(step.parts().values()) == pytest.approx(step.step_s)
    assert "dp_latency" in PART_LABELS
    plain = built("megatron-core-2024", parallelism={"tensor": 1, "pipeline": 1, "zero": 1}, **kw)
    assert step_time(plain.costs, plain.plan).dp_latency_s == 0.0


def _chunks_without_latency(b):
    """The first chunk's cost priced on the same fabric with every collective's latency at zero."""
    costs = step_costs(b.model, b.plan, b.ops, b.comm.bandwidth_only(), b.placement, b.stack,
                       straggler_spread=0.0)
    return costs.chunks[0]


def test_deepspeed_regathers_under_full_recomputation():
    full = {"tensor": 1, "pipeline": 1, "zero": 3, "recompute": "full"}
    again = built("deepspeed-zero", parallelism=full)
    once = built({"name": "deepspeed-zero", "regather_under_recompute": False}, parallelism=full)
    assert again.costs.chunks[0].backward_dp_s > once.costs.chunks[0].backward_dp_s
    assert again.costs.chunks[0].forward_dp_s == pytest.approx(once.costs.chunks[0].forward_dp_s)


# -- kernels, loss, recomputation, pipeline sends ------------------------------------------------

@pytest.mark.parametrize("stack,model,attention,precision,expected", [
    ("megatron-lm-2021", "gpt3-175b", "standard", "fp16", 14),    # 2 norms, 4 GEMMs, GeLU, 2 BDA, 5 attention
    ("megatron-core-2024", "llama2-7b", "flash", "bf16", 12),     # one fused attention kernel, RoPE on q and k
    ("nemo-2024", "llama2-7b", "flash", "fp8", 16),               # + an FP8 input cast per GEMM
    ("torchtitan", "llama2-7b", "flash2", "bf16", 38),            # 2 x 8 RMSNorm, 7 GEMMs, SiLU·x, 2 adds, 5, RoPE 2 x 3
    ("llm-foundry-2023", "gpt3-175b", "triton", "bf16", 28),      # 2 LayerNorm, 6 GEMMs (+12 casts), GeLU, 2 adds, 5
])
def test_kernels_per_layer_by_hand(stack, model, attention, precision, expected):
    b = built(stack, model=model, precision=precision)
    assert forward_kernels_per_layer(b.model, b.stack.kernels, b.stack.autocast, attention, precision) == expected


def test_kernel_launches_are_reported_as_overheads():
    b = built("torchtitan", parallelism={"tensor": 1, "pipeline": 1, "zero": 3, "recompute": "none"})
    per_layer = forward_kernels_per_layer(b.model, b.stack.kernels, b.stack.autocast, b.stack.attention, "bf16") * KERNEL_LAUNCH_S
    chunk = b.costs.chunks[0]
    assert chunk.forward_launch_s == pytest.approx(b.model.layers * per_layer)
    assert chunk.backward_launch_s == pytest.approx(2 * b.model.layers * per_layer)
    step = step_time(b.costs, b.plan)
    m = b.plan.microbatches
    assert step.overheads_s == pytest.approx(m * 3 * b.model.layers * per_layer + b.costs.overheads_s)
    assert sum(step.parts().values()) == pytest.approx(step.step_s)
    assert "overheads" in PART_LABELS and "overheads" in run_dict(scenario()).to_dict()["step_breakdown_s"]


def test_unfused_cross_entropy_moves_its_counted_bytes():
    """Per logit: unfused 38 B forward and 14 B backward; fused 22 B and 6 B."""
    assert LOSS_BYTES_PER_LOGIT == {"unfused": (38.0, 14.0), "fused": (22.0, 6.0)}
    kw = dict(parallelism={"tensor": 1, "pipeline": 1})
    unfused, fused = built({"name": "nemo-2024", "cross_entropy": "unfused"}, **kw), built("nemo-2024", **kw)
    logits = unfused.plan.microbatch * unfused.plan.seq_len * unfused.model.vocab
    head = unfused.costs.chunks[-1]
    assert head.forward_s - fused.costs.chunks[-1].forward_s == pytest.approx(unfused.ops.memory_s(16 * logits))
    assert head.backward_s - fused.costs.chunks[-1].backward_s == pytest.approx(unfused.ops.memory_s(8 * logits))


def test_selective_recomputation_reruns_fused_attention_where_the_framework_does():
    kw = dict(parallelism={"tensor": 1, "pipeline": 1, "recompute": "selective"})
    core = built("megatron-core-2024", **kw)
    fsdp = built({"name": "megatron-core-2024", "recompute_fused_attention": False}, **kw)
    _, bwd_rerun, _, _ = _layer_costs(core.model, core.plan, core.ops, core.comm, core.placement, core.stack)
    _, bwd_plain, _, _ = _layer_costs(fsdp.model, fsdp.plan, fsdp.ops, fsdp.comm, fsdp.placement, fsdp.stack)
    tokens = core.plan.microbatch * core.plan.seq_len
    attention_fwd = core.ops.attention_s(tokens * core.model.layer_attention_flops_per_token(core.plan.seq_len) / 2)
    assert bwd_rerun - bwd_plain == pytest.approx(attention_fwd)


def test_deepspeed_pipeline_partitions_its_sends_over_the_tensor_ranks_as_megatron_does():
    """DeepSpeed's PipelineEngine sends a PartitionedTensor under tensor parallelism (1/t per rank, all-gathered
    by the receivers); a stack sending whole stage outputs moves t times the bytes over the network."""
    kw = dict(model="llama2-70b", global_batch=64, parallelism={"tensor": 8, "pipeline": 2, "sequence_parallel": False})
    ds, mg = built("deepspeed-megatron-pipeline", **kw), built("megatron-lm-2021", **kw)
    whole = built({"name": "deepspeed-megatron-pipeline", "pipeline_sends": "full"}, **kw)
    activation = ds.plan.microbatch * ds.plan.seq_len * ds.model.hidden * 2.0
    assert ds.costs.p2p_s == pytest.approx(mg.costs.p2p_s)
    assert mg.costs.p2p_s == pytest.approx(mg.comm.send_recv_s(activation / 8, mg.placement.pipeline)
                                           + mg.comm.all_gather_s(activation, mg.placement.tensor))
    assert whole.costs.p2p_s == pytest.approx(whole.comm.send_recv_s(activation, whole.placement.pipeline))
    assert whole.costs.p2p_s > ds.costs.p2p_s


# -- per-step work -------------------------------------------------------------------------------

def test_per_step_work_by_hand():
    """Megatron-Core, bf16, ZeRO-1 on 16 ranks: memset of the fp32 gradient buffer over every local
    parameter, the norm's read of the shard, Adam over the shard, one-element all-reduces for the norm."""
    b = built("megatron-core-2024", parallelism={"tensor": 1, "pipeline": 1, "zero": 1})
    local, shard = b.model.params, b.model.params / b.plan.data
    overheads, optimizer = step_work_s(local, shard, b.plan, b.ops, b.comm, b.placement, b.stack)
    norm = sum(b.comm.all_reduce_s(4.0, g) for g in (b.placement.tensor, b.placement.pipeline, b.placement.data))
    assert overheads == pytest.approx(b.ops.memory_s(4.0 * local + 4.0 * shard) + norm)
    assert optimizer == pytest.approx(b.ops.memory_s(OPTIMIZER_BYTES_PER_PARAM * shard))
    fsdp = built("pytorch-fsdp", parallelism={"tensor": 1, "pipeline": 1, "zero": 3})    # no buffer; bf16 grads cast
    overheads, _ = step_work_s(local, shard, fsdp.plan, fsdp.ops, fsdp.comm, fsdp.placement, fsdp.stack)
    assert overheads == pytest.approx(fsdp.ops.memory_s((4.0 + 6.0) * shard) + norm)


def test_shipped_scenarios_and_cases_name_a_known_stack():
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    for path in sorted((root / "twin" / "validation" / "cases").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        if data["group"] == "nccl":
            continue
        stacks = {str((c.get("scenario") or {}).get("training", {}).get("stack", "")) for c in data["cases"]}
        default = data.get("defaults", {}).get("scenario", {}).get("training", {}).get("stack")
        assert default or all(stacks), f"{path.name}: every case names its stack"
    assert set(stack_names()) >= {"megatron-lm-2021", "nemo-2024"}


def test_step_costs_take_the_profile_as_is():
    """The engine prices what it is given: a hand-made profile needs no catalog entry."""
    b = built()
    custom = StackProfile(name="custom", **{f: getattr(b.stack, f) for f in behaviour_fields()})
    assert step_costs(b.model, b.plan, b.ops, b.comm, b.placement, custom,
                      straggler_spread=PER_GPU_SPREAD) == b.costs
