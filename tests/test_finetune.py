"""Fine-tuning and quantisation: LoRA counts, frozen-weight FLOPs and step costs, quantised and FP8 memory."""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_workload import _plan as workload_plan
from twin.api import build, parse_scenario, run_dict
from twin.calibration import Efficiency
from twin.operators.roofline import OperatorModel
from twin.engine.stage_costs import step_costs
from twin.engine.step import step_time
from twin.errors import ScenarioError
from twin.hardware.specs import gpu_spec
from twin.workload.finetune import (
    FULL,
    WEIGHT_FORMATS,
    FinetuneSpec,
    LoraSpec,
    adapter_params,
    hardware_flops_per_token,
    model_flops_per_token,
    model_targets,
    resolve_targets,
    trainable_params,
)
from twin.workload.memory import layer_activation_bytes, longest_sequence, memory_per_gpu
from twin.workload.model import model_spec
from twin.workload.plan import ParallelPlan

GPT3 = model_spec("gpt3-175b")


def _plan(**kw) -> ParallelPlan:
    """One GPU, micro-batch 1, QLoRA's sequence of 512 and its gradient checkpointing, unless ``kw`` says."""
    return workload_plan(**{"recompute": "full", "global_batch": 16, "seq_len": 512, **kw})


def _qlora(model) -> FinetuneSpec:
    """The QLoRA paper's recipe: r = 64 on every linear layer, NF4 base, paged optimizer."""
    return FinetuneSpec("qlora", "nf4", LoraSpec(64, 16, model_targets(model)), paged_optimizer=True)


# -- LoRA parameter counts ---------------------------------------------------------------

@pytest.mark.parametrize("rank, targets", [(8, ("q", "v")), (4, ("q", "v")), (64, ("q", "k", "v", "o")), (1, ("q",))])
def test_lora_counts_equal_the_papers_formula_for_square_projections(rank, targets):
    # Hu et al. 2021, §4.2: |Θ| = 2 × L̂_LoRA × d_model × r, L̂_LoRA the adapted matrices of all layers
    adapted = GPT3.layers * len(targets)
    assert adapter_params(GPT3, LoraSpec(rank, rank, targets)) == 2 * adapted * GPT3.hidden * rank


@pytest.mark.parametrize("rank, targets, published_m", [
    (8, ("q", "v"), 37.7),                       # Table 4, GPT-3 (LoRA)
    (1, ("q", "v"), 4.7),                        # Table 4, GPT-3 (LoRA)
])
def test_lora_counts_match_the_papers_tables(rank, targets, published_m):
    assert round(adapter_params(GPT3, LoraSpec(rank, rank, targets)) / 1e6, 1) == published_m


def test_lora_checkpoint_is_tens_of_megabytes_against_hundreds_of_gigabytes():
    # §4.2: r = 4 on q and v, 16-bit: "from 350GB to 35MB"
    adapters = adapter_params(GPT3, LoraSpec(4, 4, ("q", "v")))
    assert 2 * adapters == pytest.approx(35e6, rel=0.1)
    assert 2 * GPT3.params == pytest.approx(350e9, rel=0.01)


def test_gqa_and_ffn_adapters_use_each_matrix_shape():
    m = model_spec("llama2-70b")            # h 8192, kv_dim 1024, f 28672, 80 layers
    r = 16
    per_layer = r * ((8192 + 8192) + 2 * (8192 + 1024) + (8192 + 8192) + 2 * (8192 + 28672) + (28672 + 8192))
    assert adapter_params(m, LoraSpec(r, 32, model_targets(m))) == 80 * per_layer
    ft = FinetuneSpec("lora", None, LoraSpec(r, 32, model_targets(m)))
    assert trainable_params(m, ft) == 80 * per_layer and trainable_params(m, FULL) == m.params


def test_targets_are_checked_against_the_model():
    assert resolve_targets(GPT3, "all-linear", "training.lora.targets") == ("q", "k", "v", "o", "up", "down")
    with pytest.raises(ScenarioError, match="training.lora.targets: 'gate' is not a projection of gpt3-175b"):
        resolve_targets(GPT3, ["q", "gate"], "training.lora.targets")
    assert resolve_targets(model_spec("llama2-7b"), ["v", "q"], "x") == ("q", "v")


# -- FLOPs ---------------------------------------------------------------------------------

def test_frozen_weights_train_with_about_two_thirds_of_the_flops():
    # Frozen weights: forward (1) + activation gradients (1) instead of + weight gradients (1) more
    m = model_spec("llama-65b")
    full = m.model_flops_per_token(512)
    frozen = m.model_flops_per_token(512, frozen=True)
    assert frozen / full == pytest.approx(2 / 3, rel=0.02)
    backward_full, backward_frozen = full - m.forward_flops_per_token(512), frozen - m.forward_flops_per_token(512)
    # the layers' and head's matmuls lose half their backward; attention's backward stays whole
    assert backward_frozen == pytest.approx(backward_full - m.weight_gradient_flops_per_token())
    assert 0.5 < backward_frozen / backward_full < 0.52


def test_adapter_flops_are_six_per_adapter_parameter_and_recomputed_with_the_layer():
    m = model_spec("llama-65b")
    ft = _qlora(m)
    adapters = adapter_params(m, ft.lora)
    assert model_flops_per_token(m, ft, 512) == pytest.approx(m.model_flops_per_token(512, frozen=True) + 6 * adapters)
    assert hardware_flops_per_token(m, ft, 512, "full") - model_flops_per_token(m, ft, 512) == pytest.approx(
        m.layers * (m.layer_linear_flops_per_token() + m.layer_attention_flops_per_token(512)) + 2 * adapters)


# -- memory --------------------------------------------------------------------------------

def test_nf4_with_double_quantisation_is_4_127_bits():
    # QLoRA §3: 32/64 = 0.5 bit of fp32 constants per weight, 8/64 + 32/(64·256) = 0.127 bit once double-quantised
    assert WEIGHT_FORMATS["nf4"].bits == pytest.approx(4.127, abs=5e-4)


def test_qlora_65b_fits_one_48gb_gpu():
    # QLoRA: LLaMA 65B on a single 48 GB GPU, batch 1, sequence 512, gradient checkpointing
    m = model_spec("llama-65b")
    mem = memory_per_gpu(m, _plan(), "bf16", "flash", _qlora(m))
    assert mem.required_bytes <= mem.total_bytes <= gpu_spec("l40s").memory_bytes
    # NF4 base: the 64.8B linear weights at 4.127 bits (33.4 GB); embeddings, head and norms in bf16
    # (1.05 GB); 800M adapter weights in bf16; one FFN matrix dequantised at a time
    linear = m.layers * (m.attention_params_per_layer + m.ffn_params_per_expert)
    adapters = adapter_params(m, _qlora(m).lora)
    expected = linear * WEIGHT_FORMATS["nf4"].bits / 8 + 2 * (m.params - linear) + 2 * adapters + 2 * 8192 * 22016
    assert mem.weights_bytes == pytest.approx(expected)
    assert adapters == pytest.approx(800e6, rel=0.01)


def test_full_finetuning_of_65b_does_not_fit_one_8x80gb_node_even_with_zero3():
    m = model_spec("llama-65b")
    mem = memory_per_gpu(m, _plan(data=8, zero=3, global_batch=8), "bf16", "flash")
    states = mem.weights_bytes + mem.gradients_bytes + mem.optimizer_bytes
    assert states / (m.params / 8) >= 16                       # at least 16 B per parameter before activations
    assert mem.total_bytes > gpu_spec("h100-sxm").memory_bytes
    # and the QLoRA paper's 16-bit accounting (12 B/param) already exceeds 780 GB for the model
    assert 12 * m.params > 780e9


def test_7b_qlora_fits_a_24gb_l4():
    m = model_spec("llama2-7b")
    mem = memory_per_gpu(m, _plan(), "bf16", "flash", _qlora(m))
    assert mem.total_bytes < gpu_spec("l4").memory_bytes


def test_frozen_base_keeps_no_gradients_or_optimizer_states_for_itself():
    m = model_spec("llama2-7b")
    ft = FinetuneSpec("lora", None, LoraSpec(8, 16, ("q", "v")))
    mem = memory_per_gpu(m, _plan(), "bf16", "flash", ft)
    adapters = adapter_params(m, ft.lora)
    assert mem.gradients_bytes == pytest.approx(2 * adapters)            # bf16 adapter gradients
    assert mem.optimizer_bytes == pytest.approx(8 * adapters)            # fp32 Adam m and v
    assert mem.weights_bytes == pytest.approx(2 * m.params + 2 * adapters)


def test_paged_optimizer_states_do_not_have_to_stay_in_hbm():
    m = model_spec("llama-65b")
    paged = memory_per_gpu(m, _plan(), "bf16", "flash", _qlora(m))
    assert paged.required_bytes == pytest.approx(paged.total_bytes - paged.optimizer_bytes)
    unpaged = memory_per_gpu(m, _plan(), "bf16", "flash", FinetuneSpec("lora", "nf4", _qlora(m).lora))
    assert unpaged.required_bytes == unpaged.total_bytes


@pytest.mark.parametrize("weights, smaller_than", [("fp8", "bf16"), ("int8", "bf16"), ("nf4", "int8")])
def test_narrower_storage_holds_less(weights, smaller_than):
    m = model_spec("llama2-13b")
    lora = LoraSpec(16, 32, ("q", "v"))
    narrow = memory_per_gpu(m, _plan(), "bf16", "flash", FinetuneSpec("lora", weights, lora))
    wide = memory_per_gpu(m, _plan(), "bf16", "flash", FinetuneSpec("lora", smaller_than, lora))
    assert narrow.weights_bytes < wide.weights_bytes


def test_fp8_training_saves_activations_and_spends_weight_copies():
    m = model_spec("llama2-7b")
    plan = _plan(recompute="selective", seq_len=4096)
    bf16 = memory_per_gpu(m, plan, "bf16", "flash")
    fp8 = memory_per_gpu(m, plan, "fp8", "flash")
    assert fp8.activations_bytes < bf16.activations_bytes
    # saved: the four linear layers' inputs in 1 B (QKV and FFN-in h each, out-projection h, FFN-out f)
    h, f, s = m.hidden, m.ffn_hidden, 4096
    saved = m.layers * s * (3 * h + f)
    assert bf16.activations_bytes - fp8.activations_bytes == pytest.approx(saved)
    # spent: an fp8 copy and its transpose of every linear weight, plus delayed scaling's amax histories
    linear = m.layers * (m.attention_params_per_layer + m.ffn_params_per_expert)
    history = m.layers * 4 * 5 * 1024 * 4
    assert fp8.weights_bytes - bf16.weights_bytes == pytest.approx(2 * linear + history)
    current = memory_per_gpu(m, plan, "fp8", "flash", fp8_recipe="current")
    assert fp8.weights_bytes - current.weights_bytes == pytest.approx(history)
    # fp8 weights (Transformer Engine fp8 parameters) replace the bf16 copy: 1 B + a 1 B transpose
    fp8_params = memory_per_gpu(m, plan, "fp8", "flash", FinetuneSpec(weights="fp8"))
    assert fp8.weights_bytes - fp8_params.weights_bytes == pytest.approx(2 * linear)


def test_fp8_activation_saving_follows_tensor_and_sequence_parallelism():
    m = model_spec("llama2-70b")
    h, f, s, t = m.hidden, m.ffn_hidden, 4096, 8
    no_sp = _plan(tensor=t, seq_len=s, recompute="selective")
    sp = _plan(tensor=t, seq_len=s, recompute="selective", sequence_parallel=True)
    assert (layer_activation_bytes(m, no_sp, "flash") - layer_activation_bytes(m, no_sp, "flash", fp8=True)
            == pytest.approx(s * (2 * h + (h + f) / t)))
    assert (layer_activation_bytes(m, sp, "flash") - layer_activation_bytes(m, sp, "flash", fp8=True)
            == pytest.approx(s * (3 * h + f) / t))


def test_longest_sequence_is_the_last_that_fits():
    m = model_spec("llama3-8b")
    plan = _plan(data=8, zero=3, global_batch=8)
    capacity = gpu_spec("h100-sxm").memory_bytes
    longest = longest_sequence(m, plan, "bf16", "flash", capacity)
    assert 8192 < longest < 131072
    assert memory_per_gpu(m, replace(plan, seq_len=longest), "bf16", "flash").total_bytes <= capacity
    assert memory_per_gpu(m, replace(plan, seq_len=longest + 1), "bf16", "flash").total_bytes > capacity
    # stored scores (no recomputation) grow with the square of the sequence: found by bisection
    stored = replace(plan, recompute="none")
    standard = longest_sequence(m, stored, "bf16", "standard", capacity)
    assert 0 < standard < longest_sequence(m, stored, "bf16", "flash", capacity)
    assert memory_per_gpu(m, replace(stored, seq_len=standard), "bf16", "standard").total_bytes <= capacity
    assert memory_per_gpu(m, replace(stored, seq_len=standard + 1), "bf16", "standard").total_bytes > capacity
    # a quantised, adapter-trained 8B reaches further on the same GPU
    q = longest_sequence(m, _plan(), "bf16", "flash", capacity, _qlora(m))
    assert q > longest


# -- step costs ----------------------------------------------------------------------------

def _built(model="llama-65b", **parallelism):

    par = {"tensor": 8, "pipeline": 1, "data": 1, "recompute": "none", "zero": 1, **parallelism}
    return build(parse_scenario({"cluster": {"node": "dgx-h100", "nodes": 1},
                                 "training": {"model": model, "tokens": "1B", "seq_len": 2048, "global_batch": 8,
                                              "parallelism": par}}))


def _costs(b, ft):

    return step_costs(b.model, b.plan, b.ops, b.comm, b.placement, b.stack, ft)


def test_frozen_base_skips_exactly_the_weight_gradient_gemms():
    b = _built()
    full, frozen = _costs(b, FULL), _costs(b, FinetuneSpec("lora"))     # frozen base, no adapters
    assert [c.forward_s for c in frozen.chunks] == [c.forward_s for c in full.chunks]
    saved_s = sum(c.backward_s for c in full.chunks) - sum(c.backward_s for c in frozen.chunks)
    # large GEMMs run at the sustained matmul rate: the saving is the weight-gradient FLOPs at that rate
    tokens = b.plan.microbatch * b.plan.seq_len
    expected = b.model.weight_gradient_flops_per_token() * tokens / b.plan.tensor / b.ops.matmul_flops
    assert saved_s == pytest.approx(expected, rel=0.01)


def test_adapters_and_dequantisation_add_their_own_time():
    b = _built()
    lora = LoraSpec(64, 16, model_targets(b.model))
    bare = _costs(b, FinetuneSpec("lora"))
    adapters = _costs(b, FinetuneSpec("lora", None, lora))
    nf4 = _costs(b, FinetuneSpec("qlora", "nf4", lora))
    assert adapters.chunks[0].forward_s > bare.chunks[0].forward_s
    # dequantisation: read 4.127 bits, write 2 B per local weight, forward and backward
    weights = b.model.layers * (b.model.attention_params_per_layer + b.model.ffn_params_per_expert) / b.plan.tensor
    per_use = b.ops.memory_s(weights * (WEIGHT_FORMATS["nf4"].bits / 8 + 2))
    assert nf4.chunks[0].forward_s - adapters.chunks[0].forward_s == pytest.approx(per_use)
    assert nf4.chunks[0].backward_s - adapters.chunks[0].backward_s == pytest.approx(per_use)


def test_only_adapter_gradients_cross_data_parallelism_and_reach_the_optimizer():
    b = _built("llama2-7b", tensor=1, data=8)
    lora = LoraSpec(8, 16, ("q", "v"))
    full, frozen = _costs(b, FULL), _costs(b, FinetuneSpec("lora", None, lora))
    ratio = adapter_params(b.model, lora) / b.model.params
    assert frozen.optimizer_s == pytest.approx(full.optimizer_s * ratio)
    assert frozen.dp_reduce_s < full.dp_reduce_s * 0.01


def test_current_scaling_reads_each_fp8_input_once_more():

    gpu, eff = gpu_spec("h100-sxm"), Efficiency.calibrated()
    delayed = OperatorModel(gpu, "fp8", eff, fp8_recipe="hybrid")
    current = OperatorModel(gpu, "fp8", eff, fp8_recipe="current")
    m, n, k = 4096, 8192, 8192
    assert current.matmul_s(m, n, k) - delayed.matmul_s(m, n, k) == pytest.approx(current.memory_s(2.0 * m * k))


# -- scenario keys and results ---------------------------------------------------------------

def _scenario(node="l40s-1", nodes=1, **training):
    tr = {"model": "llama-65b", "tokens": "15M", "seq_len": 512, "global_batch": 16,
          "parallelism": {"microbatch": 1}} | training
    return {"name": "fine-tune", "cluster": {"node": node, "nodes": nodes}, "site": {"country": "FR"}, "training": tr}


@pytest.mark.parametrize("training, message", [
    ({"lora": {"rank": 8}}, "training.lora: adapters need method lora or qlora"),
    ({"method": "qlora", "weights": "bf16"}, "training.weights: bf16 is not allowed with method qlora"),
    ({"weights": "nf4"}, "training.weights: nf4 stores a frozen base"),
    ({"weights": "fp8"}, "training.weights: fp8 weights are trained with precision fp8"),
    ({"fp8_recipe": "current"}, "training.fp8_recipe: current scales fp8 tensors, but precision is bf16"),
    ({"method": "lora", "lora": {"targets": ["q", "x"]}},
     "training.lora.targets: 'x' is not a projection; allowed: all-linear, or a list drawn from q k v o gate up down"),
    ({"method": "lora", "lora": {"targets": "everything"}}, "training.lora.targets: 'everything' is not allowed"),
    ({"method": "lora", "lora": {"targets": ["gate"]}, "model": "gpt3-175b"},
     "training.lora.targets: 'gate' is not a projection of gpt3-175b"),
    ({"method": "lora", "lora": {"rank": 9000}}, "training.lora.rank: 9000 is wider than the narrowest"),
    ({"method": "sft"}, "training.method: 'sft' is not allowed"),
])
def test_bad_fine_tuning_keys_name_the_key(training, message):

    with pytest.raises(ScenarioError) as err:
        run_dict(_scenario(**training))
    assert str(err.value).startswith(message), str(err.value)


def test_qlora_recipe_fills_unwritten_keys_and_reports_trainable_params():

    r = run_dict(_scenario(method="qlora")).to_dict()
    assert r["plan"]["recompute"] == "full"                      # gradient checkpointing, as QLoRA
    assert r["finetune"]["weights"] == "nf4" and r["finetune"]["paged_optimizer"]
    assert r["finetune"]["lora"] == {"rank": 64, "alpha": 16.0, "targets": ["q", "k", "v", "o", "gate", "up", "down"]}
    m = model_spec("llama-65b")
    assert r["trainable_params"] == adapter_params(m, LoraSpec(64, 16, model_targets(m)))
    assert r["memory_fits"]                                      # one 48 GB L40S
    # a written recompute wins
    written = run_dict(_scenario(method="qlora", parallelism={"recompute": "selective"})).to_dict()
    assert written["plan"]["recompute"] == "selective"


def test_full_fine_tuning_65b_on_one_dgx_does_not_fit_and_qlora_on_one_gpu_does():

    full = run_dict(_scenario("dgx-h100", global_batch=8, parallelism={"data": 8, "zero": 3, "recompute": "full"}))
    assert not full.memory_fits and full.trainable_params == full.params
    small = run_dict(_scenario("l4-1", model="llama2-7b", method="qlora"))
    assert small.memory_fits


def test_lora_checkpoints_hold_the_adapters_alone():

    lora = run_dict(_scenario("dgx-h100", model="llama2-7b", method="lora", global_batch=64,
                              parallelism={"data": 8}) | {"failures": {"enabled": True}})
    full = run_dict(_scenario("dgx-h100", model="llama2-7b", global_batch=64, parallelism={"data": 8})
                    | {"failures": {"enabled": True}})
    # adapters: bf16 weights + fp32 Adam m, v = 10 B each; full: 2 + 12 B for every parameter
    assert lora.failures.checkpoint_bytes == pytest.approx(10 * lora.trainable_params)
    assert full.failures.checkpoint_bytes == pytest.approx(14 * full.params)


def test_a_single_instance_counts_no_switch_fabric():

    r = run_dict(_scenario("l40s-1", method="qlora"))
    assert r.power.infrastructure.switches_w == 0
    assert r.peak_power_it_w == pytest.approx(457, abs=1)          # the instance at its maximum, alone


@pytest.mark.parametrize("tensor, low, high", [(1, 1.3, 1.5), (8, 1.15, 1.3)])
def test_a_lora_step_is_faster_than_a_full_one_by_about_the_flops_it_skips(tensor, low, high):
    # LoRA §4.2 reports a 25% speed-up over full fine-tuning of GPT-3 175B. Frozen weights skip a third
    # of the FLOPs and the optimizer step (up to 1.5x); tensor-parallel communication stays whole

    b = _built("llama-65b", tensor=tensor)
    full = step_time(_costs(b, FULL), b.plan).step_s
    lora = step_time(_costs(b, FinetuneSpec("lora", None, LoraSpec(64, 16, model_targets(b.model)))), b.plan).step_s
    assert low < full / lora < high


# -- what the frameworks hold beyond the model ---------------------------------------------

def test_a_one_gpu_job_holds_no_nccl_buffers():
    # NCCL allocates its buffers when a communicator is created; one GPU creates none
    m = model_spec("llama2-7b")
    one = memory_per_gpu(m, _plan(), "bf16", "flash", _qlora(m))
    eight = memory_per_gpu(m, _plan(data=8, global_batch=16), "bf16", "flash", _qlora(m))
    assert one.runtime_bytes == 2**30
    assert eight.runtime_bytes == 2 * 2**30


def test_hugging_face_loss_holds_twelve_bytes_per_logit():
    # transformers' LlamaForCausalLM: fp32 logits (4 B), their shifted contiguous copy (4 B) and the
    # fp32 log-softmax the loss saves (4 B), against 6 B for 16-bit logits and an fp32 softmax
    from twin.engine.stack import stack_profile
    m = model_spec("llama3-8b")
    hf = stack_profile("hf-transformers").loss_bytes_per_logit
    assert hf == 12.0 and stack_profile("megatron-core-2024").loss_bytes_per_logit == 6.0
    for seq_len in (2048, 16384):
        plan = _plan(seq_len=seq_len)
        base = memory_per_gpu(m, plan, "bf16", "flash", _qlora(m))
        held = memory_per_gpu(m, plan, "bf16", "flash", _qlora(m), loss_bytes_per_logit=hf)
        assert held.activations_bytes - base.activations_bytes == pytest.approx(6.0 * seq_len * m.vocab)
    # at 16k tokens of Llama 3 (vocabulary 128,256) the fp32 loss outweighs every checkpointed layer input
    plan = _plan(seq_len=16384)
    checkpoints = m.layers * 2 * 16384 * m.hidden
    assert 12.0 * 16384 * m.vocab > 2 * checkpoints
    # so the longest context that fits one 24 GB GPU is shorter under the upcast loss
    capacity = gpu_spec("l4").memory_bytes
    longest = longest_sequence(m, plan, "bf16", "flash", capacity, _qlora(m))
    upcast = longest_sequence(m, plan, "bf16", "flash", capacity, _qlora(m), loss_bytes_per_logit=hf)
    assert 0 < upcast < 0.8 * longest


def test_qlora_65b_still_fits_one_48gb_gpu_under_the_hugging_face_loss():
    # QLoRA §1: LLaMA 65B fine-tunes on one 48 GB GPU with the Hugging Face trainer (sequence 512)
    m = model_spec("llama-65b")
    mem = memory_per_gpu(m, _plan(), "bf16", "flash", _qlora(m), loss_bytes_per_logit=12.0)
    assert mem.required_bytes <= gpu_spec("l40s").memory_bytes


# -- a quantised base that keeps its linears' inputs (bitsandbytes before 0.43.2) ------------------

def test_bitsandbytes_4bit_linears_hold_their_inputs_without_recomputation():
    # bitsandbytes 0.39-0.43.1 MatMul4Bit keeps each 4-bit linear's 16-bit input A for a backward that reads
    # only the weight. Beyond a frozen base's own activations that is, per token and layer, the attention
    # norm's output (h), the FFN's input (h) and the FFN-out input (f), 2 B each; the output projection's
    # input is the flash kernel's saved output. LitGPT's Llama 2 7B table: 1,304 tokens, 32 layers.
    m = model_spec("llama2-7b")                 # h 4096, f 11008
    plan = _plan(seq_len=1304, recompute="none")
    lora = LoraSpec(8, 16, ("q", "v"))
    plain = memory_per_gpu(m, plan, "bf16", "flash", FinetuneSpec("lora", "nf4", lora))
    kept = memory_per_gpu(m, plan, "bf16", "flash", FinetuneSpec("lora", "nf4", lora, quantised_inputs_kept=True))
    by_hand = 1304 * 32 * (2 * 4096 + 2 * 4096 + 2 * 11008)
    assert by_hand == 1_602_355_200
    assert kept.activations_bytes - plain.activations_bytes == pytest.approx(by_hand)
    # LLM.int8's MatMul8bitLt also keeps the input's int8 transpose: 3 B per element instead of 2
    int8 = memory_per_gpu(m, plan, "bf16", "flash", FinetuneSpec("lora", "int8", lora, quantised_inputs_kept=True))
    int8_plain = memory_per_gpu(m, plan, "bf16", "flash", FinetuneSpec("lora", "int8", lora))
    assert int8.activations_bytes - int8_plain.activations_bytes == pytest.approx(1.5 * by_hand)
    # a 16-bit base runs PyTorch's own linear, which keeps nothing a frozen weight does not need
    bf16 = FinetuneSpec("lora", None, lora)
    assert (memory_per_gpu(m, plan, "bf16", "flash", replace(bf16, quantised_inputs_kept=True))
            == memory_per_gpu(m, plan, "bf16", "flash", bf16))
    # under full recomputation only the layer being recomputed holds them
    checkpointed = _plan(seq_len=1304)
    nf4 = FinetuneSpec("lora", "nf4", lora)
    difference = (memory_per_gpu(m, checkpointed, "bf16", "flash", replace(nf4, quantised_inputs_kept=True))
                  .activations_bytes - memory_per_gpu(m, checkpointed, "bf16", "flash", nf4).activations_bytes)
    assert difference == pytest.approx(by_hand / 32)


def test_which_stacks_keep_quantised_inputs_and_a_scenario_may_say_otherwise():
    from twin.engine.stack import stack_profile
    # bitsandbytes' own (the QLoRA recipe's 0.39, LitGPT's tables' 0.41.1) keep them; torchao's NF4 does not
    assert stack_profile("hf-transformers").quantised_inputs_kept
    assert stack_profile("litgpt-2023").quantised_inputs_kept
    assert not stack_profile("pytorch-fsdp").quantised_inputs_kept
    assert not stack_profile("megatron-core-2024").quantised_inputs_kept

    def memory(stack) -> float:
        return run_dict({"name": "qlora", "cluster": {"node": "dgx-a100-80gb", "nodes": 1}, "training": {
            "model": "llama2-7b", "tokens": "1M", "seq_len": 2048, "global_batch": 8, "method": "qlora",
            "stack": stack, "parallelism": {"tensor": 1, "pipeline": 1, "data": 1, "microbatch": 1,
                                             "recompute": "none"}}}).memory.activations_bytes

    newer = memory({"name": "hf-transformers", "quantised_inputs_kept": False})   # bitsandbytes >= 0.43.2
    assert memory("hf-transformers") - newer == pytest.approx(2048 * 32 * (4 * 4096 + 2 * 11008))


def test_a_base_that_does_not_fit_for_its_kept_inputs_is_told_the_release_that_frees_them():
    # Llama 2 13B on NF4 at 8,192 tokens without recomputation: the inputs bitsandbytes 0.41 keeps push it
    # past a capacity its activations alone fit in; the advice names the release that drops them
    from twin.workload.memory import fitting_alternatives
    m = model_spec("llama2-13b")
    plan = _plan(seq_len=8192, recompute="none")
    lora = LoraSpec(8, 16, ("q", "v"))
    kept = FinetuneSpec("lora", "nf4", lora, quantised_inputs_kept=True)
    with_inputs = memory_per_gpu(m, plan, "bf16", "flash", kept).required_bytes
    without = memory_per_gpu(m, plan, "bf16", "flash", replace(kept, quantised_inputs_kept=False)).required_bytes
    capacity = (with_inputs + without) / 2
    advice = dict(fitting_alternatives(m, plan, "bf16", "flash", capacity, 8, kept))
    assert advice["bitsandbytes 0.43.2 or later (stack quantised_inputs_kept: false)"] == pytest.approx(without)
    # an int8 base keeps them in every release: no such advice
    int8 = replace(kept, weights="int8")
    assert not any("bitsandbytes" in label for label, _ in
                   fitting_alternatives(m, plan, "bf16", "flash", capacity, 8, int8))


@settings(max_examples=60, deadline=None)
@given(model=st.sampled_from(["llama2-7b", "llama3-70b", "mixtral-8x7b", "gpt3-175b"]),
       storage=st.sampled_from(["nf4", "int8", "fp8", None]), recompute=st.sampled_from(["none", "selective", "full"]),
       tensor=st.sampled_from([1, 2, 8]), seq_len=st.sampled_from([512, 4096]), microbatch=st.integers(1, 4))
def test_kept_inputs_never_shrink_memory_and_cost_one_layer_under_full_recompute(model, storage, recompute, tensor,
                                                                                  seq_len, microbatch):
    m = model_spec(model)
    plan = workload_plan(tensor=tensor, recompute=recompute, seq_len=seq_len, microbatch=microbatch,
                         sequence_parallel=tensor > 1)
    ft = FinetuneSpec("lora", storage, LoraSpec(8, 16, ("q", "v")))
    plain = memory_per_gpu(m, plan, "bf16", "flash", ft).activations_bytes
    kept = memory_per_gpu(m, plan, "bf16", "flash", replace(ft, quantised_inputs_kept=True)).activations_bytes
    assert kept >= plain
    assert (kept > plain) == (storage in ("nf4", "int8"))
    one_layer = (layer_activation_bytes(m, plan, "flash", kept_bytes_per_element=3.0)
                 - layer_activation_bytes(m, plan, "flash"))
    if recompute == "full":
        assert kept - plain <= one_layer * (1 + 1e-12)
    else:
        assert kept - plain <= m.layers * one_layer * (1 + 1e-12)
