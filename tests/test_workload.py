"""Parameters, FLOPs and memory against published counts and hand computations."""

import copy

import pytest

from twin.api import build, run_dict
from twin.errors import InfeasibleError
from twin.scenario import parse_scenario
from twin.workload.memory import RUNTIME_RESERVED_BYTES, layer_activation_bytes, memory_per_gpu
from twin.workload.model import ModelSpec, model_spec
from twin.workload.plan import ParallelPlan, stage_layers
from tests.conftest import BASE


@pytest.mark.parametrize("name, published_b, tolerance", [
    ("llama2-70b", 68.98, 0.005),     # meta-llama/Llama-2-70b-hf: 68,976,648,192 parameters
    ("llama2-7b", 6.74, 0.005),
    ("llama3-8b", 8.03, 0.005),
    ("llama3-405b", 405.9, 0.01),
    ("gpt3-175b", 175.0, 0.01),
    ("bloom-176b", 176.2, 0.01),
    ("mixtral-8x7b", 46.7, 0.01),
])
def test_parameter_counts_match_published(name, published_b, tolerance):
    assert model_spec(name).params / 1e9 == pytest.approx(published_b, rel=tolerance)


def test_llama2_70b_exact_count_by_hand():
    # per layer: attention 8192·(8192 + 2·1024) + 8192² ; SwiGLU 3·8192·28672 ; two RMSNorms 2·8192
    per_layer = 8192 * (8192 + 2 * 1024) + 8192**2 + 3 * 8192 * 28672 + 2 * 8192
    total = 80 * per_layer + 2 * 32000 * 8192 + 8192
    assert model_spec("llama2-70b").params == total == 68_976_648_192


def test_mixtral_active_parameters():
    m = model_spec("mixtral-8x7b")
    assert m.active_params / 1e9 == pytest.approx(12.9, rel=0.02)   # Jiang et al. 2024: 13B active


def test_flops_match_narayanan_equation_3():
    # GPT-style model, full recomputation: F = 96·B·s·l·h²·(1 + s/6h + V/16lh) per batch of B sequences
    l, h, s, V = 96, 12288, 2048, 51200
    m = ModelSpec("gpt", l, h, 96, 96, 4 * h, V, "gelu", "layernorm", True)
    per_token = m.hardware_flops_per_token(s, "full")
    expected = 96 * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h)) / s
    # Our count includes the (tiny) 2·h·E router-free bias-free projections exactly as eq. 3
    assert per_token == pytest.approx(expected, rel=1e-9)
    # Model FLOPs (no recompute) are 3/4 of the layer part plus the head
    assert m.model_flops_per_token(s) == pytest.approx(72 * l * h**2 * (1 + s / (6 * h)) + 6 * h * V, rel=1e-9)


def test_uneven_layers_split_as_evenly_as_possible():
    assert stage_layers(70, 12) == [6] * 10 + [5] * 2
    assert sum(stage_layers(126, 16)) == 126 and max(stage_layers(126, 16)) - min(stage_layers(126, 16)) == 1


def _plan(**kw) -> ParallelPlan:
    base = dict(tensor=1, pipeline=1, data=1, expert=1, microbatch=1, virtual_stages=1, schedule="1f1b",
                sequence_parallel=False, recompute="none", zero=0, overlap_grad_reduce=True,
                overlap_param_gather=True, global_batch=8, seq_len=2048)
    base.update(kw)
    return ParallelPlan(**base)


GPT = ModelSpec("gpt-22b", 48, 6144, 64, 64, 4 * 6144, 51200, "gelu", "layernorm", True)


def test_activations_korthikanti_no_parallelism():
    # s·b·h·(34 + 5·a·s/h) bytes per layer (Korthikanti et al. 2022, eq. 1)
    s, b, h, a = 2048, 1, 6144, 64
    plan = _plan(seq_len=s, microbatch=b)
    assert layer_activation_bytes(GPT, plan, "standard") == pytest.approx(s * b * h * (34 + 5 * a * s / h))


def test_activations_korthikanti_tensor_parallel_without_and_with_sp():
    s, b, h, a, t = 2048, 1, 6144, 64, 8
    no_sp = _plan(seq_len=s, tensor=t)
    with_sp = _plan(seq_len=s, tensor=t, sequence_parallel=True)
    assert layer_activation_bytes(GPT, no_sp, "standard") == pytest.approx(
        s * b * h * (10 + 24 / t + 5 * a * s / (h * t)))          # eq. 2
    assert layer_activation_bytes(GPT, with_sp, "standard") == pytest.approx(
        s * b * h / t * (34 + 5 * a * s / h))                     # eq. 4


def test_selective_recompute_and_flash_drop_the_score_term():
    s, h, t = 2048, 6144, 8
    sel = _plan(seq_len=s, tensor=t, sequence_parallel=True, recompute="selective")
    assert layer_activation_bytes(GPT, sel, "standard") == pytest.approx(s * h * 34 / t)     # eq. 6
    flash = _plan(seq_len=s, tensor=t, sequence_parallel=True)
    assert layer_activation_bytes(GPT, flash, "flash") == pytest.approx(s * h * 34 / t)


def test_model_states_by_hand_and_zero_stages():
    m = model_spec("llama2-7b")
    plan = _plan(data=8, zero=0, recompute="selective")
    p = m.params
    mem0 = memory_per_gpu(m, plan, "bf16", "flash")
    assert mem0.weights_bytes == pytest.approx(2 * p)
    assert mem0.gradients_bytes == pytest.approx(4 * p)
    assert mem0.optimizer_bytes == pytest.approx(12 * p)
    mem1 = memory_per_gpu(m, _plan(data=8, zero=1, recompute="selective"), "bf16", "flash")
    assert mem1.optimizer_bytes == pytest.approx(12 * p / 8) and mem1.gradients_bytes == pytest.approx(4 * p)
    mem2 = memory_per_gpu(m, _plan(data=8, zero=2, recompute="selective"), "bf16", "flash")
    assert mem2.gradients_bytes == pytest.approx(4 * p / 8) and mem2.weights_bytes == pytest.approx(2 * p)
    mem3 = memory_per_gpu(m, _plan(data=8, zero=3, recompute="selective"), "bf16", "flash")
    assert mem3.weights_bytes == pytest.approx(2 * p / 8)
    assert mem0.total_bytes > mem1.total_bytes > mem2.total_bytes > mem3.total_bytes


def test_70b_tensor8_on_one_dgx_does_not_fit_and_says_by_how_much():
    data = copy.deepcopy(BASE)
    data["cluster"]["nodes"] = 1
    data["training"].update({"model": "llama2-70b", "global_batch": 8,
                             "parallelism": {"tensor": 8, "pipeline": 1, "zero": 0, "recompute": "selective"}})
    r = run_dict(data)
    assert r.memory_fits is False
    # 68.98e9 params / 8 × 18 B = 155.2 GB of model states alone, on an 80 GiB GPU
    states = 18 * 68_976_648_192 / 8
    bd = r.memory.parts()
    assert bd["weights"] + bd["gradients"] + bd["optimizer"] == pytest.approx(states)
    assert bd["runtime"] == RUNTIME_RESERVED_BYTES
    assert r.memory_per_gpu_bytes > r.memory_capacity_bytes
    over_gib = (r.memory_per_gpu_bytes - r.memory_capacity_bytes) / 2**30
    assert any(f"{over_gib:.1f} GiB over" in w for w in r.warnings)


def test_memory_advice_offers_plans_that_fit():
    data = copy.deepcopy(BASE)
    data["cluster"]["nodes"] = 4
    data["training"].update({"model": "llama2-70b", "global_batch": 32,
                             "parallelism": {"tensor": 8, "pipeline": 1, "zero": 0, "recompute": "selective"}})
    r = run_dict(data)
    assert not r.memory_fits and r.memory_advice
    assert any(a.startswith("ZeRO-3") or a.startswith("pipeline") for a in r.memory_advice)


def _does_not_fit(model: str, nodes: int) -> dict:
    data = copy.deepcopy(BASE)
    data["cluster"]["nodes"] = nodes
    data["training"].update({"model": model, "global_batch": 64, "seq_len": 4096,
                             "parallelism": {"tensor": 1, "pipeline": 1, "zero": 1, "recompute": "selective"}})
    return data


def test_where_no_single_change_fits_the_fewest_changes_together_are_named():
    """70B trained in full on 16 H100s, TP1 and ZeRO-1: 525 GiB a GPU, and no single change fits. The advice is
    the fewest changes that fit together, and none of them can be left out (each subset is tried by hand)."""
    from dataclasses import replace

    data = _does_not_fit("llama2-70b", 2)
    r = run_dict(data)
    b = build(parse_scenario(data))
    assert not r.memory_fits and r.memory_advice == [
        f"together, ZeRO-3, recompute full and tensor 2 would fit ({r.memory_advice[0].rsplit('(', 1)[1]}"]
    assert any("no single change of ZeRO, recompute, pipeline or tensor fits; together" in w for w in r.warnings)
    capacity = b.cluster.node.gpu.memory_bytes

    def need(**changes) -> float:
        plan = replace(b.plan, **changes)
        return memory_per_gpu(b.model, plan, "bf16", b.stack.attention).required_bytes

    together = {"zero": 3, "recompute": "full", "tensor": 2, "data": 8, "sequence_parallel": True}
    assert need(**together) <= capacity
    assert need(zero=3, recompute="full") > capacity                     # each pair of the three falls short
    assert need(zero=3, tensor=2, data=8, sequence_parallel=True) > capacity
    assert need(recompute="full", tensor=2, data=8, sequence_parallel=True) > capacity


def test_where_nothing_fits_on_the_gpus_the_fewest_doublings_are_named():
    """405B in full on 16 H100s: ZeRO-3 shards 18 B a parameter over every GPU, 7.3 TB in all, so no plan fits
    on 64 GPUs (114 GB each) and the advice names 128."""
    r = run_dict(_does_not_fit("llama3-405b", 2))
    assert len(r.memory_advice) == 1 and r.memory_advice[0].startswith("on 128 GPUs, ")
    assert "with ZeRO-3, recompute full and microbatch 1 would fit" in r.memory_advice[0]
    assert 405e9 * 18 / 64 > 80 * 2**30 > 405e9 * 18 / 128


def test_pipeline_first_stage_holds_p_microbatches_under_1f1b_and_m_under_gpipe():
    data = copy.deepcopy(BASE)
    data["cluster"]["nodes"] = 4
    data["training"].update({"model": "llama2-13b", "global_batch": 32,
                             "parallelism": {"tensor": 8, "pipeline": 4, "data": 1, "recompute": "selective"}})
    one_f = build(parse_scenario(data)).memory
    data["training"]["parallelism"]["schedule"] = "gpipe"
    gpipe = build(parse_scenario(data)).memory
    assert gpipe.activations_bytes > one_f.activations_bytes


@pytest.mark.parametrize("training,reason", [
    ({"global_batch": 24}, "data parallelism 12 is the largest up to 16 that divides global_batch 24 / microbatch 1"),
    ({"global_batch": 60, "parallelism": {"tensor": 1, "pipeline": 3}},
     "16 GPUs are not a multiple of tensor 1 × pipeline 3 = 3, so at most 5 data-parallel replicas fit"),
    ({"parallelism": {"tensor": 1, "pipeline": 1, "data": 8}},
     "data parallelism 8 is set in the scenario (at most 16 would fit)"),
])
def test_idle_gpu_warning_names_the_limit_that_applied(training, reason):
    data = copy.deepcopy(BASE)
    data["training"].update(training)
    r = run_dict(data)
    idle = [w for w in r.warnings if "GPUs idle" in w]
    assert len(idle) == 1 and idle[0].endswith(reason), r.warnings


def test_auto_data_parallelism_follows_the_interleaved_rule():
    """16 GPUs, PP4 × 2 virtual stages, batch 24: 4 replicas would leave 6 micro-batches each (not a multiple
    of 4), so auto takes 3 (8 each) and the scenario runs instead of being refused."""
    data = copy.deepcopy(BASE)
    data["training"].update({"global_batch": 24, "parallelism": {"tensor": 1, "pipeline": 4, "virtual_stages": 2}})
    r = run_dict(data)
    assert (r.plan.data, r.plan.microbatches, r.plan.schedule) == (3, 8, "interleaved")


def test_spare_nodes_are_held_back_from_the_cluster():
    data = copy.deepcopy(BASE)
    data["cluster"].update({"nodes": 4, "spare_nodes": 1})
    data["training"].update({"global_batch": 96, "parallelism": {"tensor": 8, "pipeline": 1}})
    r = run_dict(data)
    assert r.gpus_total == 32 and r.plan.data == 3 and r.gpus_used == 24
    assert not [w for w in r.warnings if "idle" in w]          # the only idle GPUs are the spares asked for
    assert r.power.cluster.busy_nodes == 3 and r.power.cluster.idle_nodes == 1
    data["training"]["parallelism"]["data"] = 4
    with pytest.raises(InfeasibleError, match=r"training.parallelism.data: .*1 spare nodes held back"):
        run_dict(data)
