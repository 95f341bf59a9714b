"""Fine-tuning: LoRA adapters and the storage of a frozen, possibly quantised, base.

LoRA (Hu et al. 2021, arXiv:2106.09685, §4): a frozen weight W of d_in × d_out gets a
trainable update B·A of rank r, A of d_in × r and B of r × d_out: r·(d_in + d_out)
parameters, 2·d_model·r for a square projection, so that the paper counts
2 × (adapted matrices) × d_model × r for GPT-3 (37.7M for r = 8 on q and v). Only the
adapters train: gradients and Adam states exist for them alone.

QLoRA (Dettmers et al. 2023, arXiv:2305.14314, §3): the frozen base is stored in 4-bit
NormalFloat with double quantisation (blocks of 64 weights with an 8-bit scale, and one
fp32 scale per 256 of those: 4 + 8/64 + 32/(64·256) = 4.127 bits per weight), computes in
BF16 after dequantising each weight where it is used, keeps the adapters' optimizer
states in paged memory and checkpoints every layer's activations.

The base's linear projections (attention and FFN, the MoE router) take the storage
format; embeddings, the LM head and the norms stay in 16 bits, as bitsandbytes leaves them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from twin.errors import ScenarioError
from twin.options import LORA_TARGETS, METHODS, BaseWeights, LoraTarget, Method
from twin.workload.model import ModelSpec

ATTENTION_TARGETS = ("q", "k", "v", "o")


@dataclass(frozen=True)
class WeightFormat:
    name: str
    bits: float                  # per stored weight, scales included
    source: str


# Storage formats of the base's linear weights. Scales per tensor (fp8) or per row (int8)
# add well under 0.01 bit per weight and are not counted.
WEIGHT_FORMATS = {
    "fp32": WeightFormat("fp32", 32.0, "IEEE 754 single precision"),
    "bf16": WeightFormat("bf16", 16.0, "bfloat16"),
    "fp8": WeightFormat("fp8", 8.0, "Micikevicius et al. 2022, FP8 Formats for Deep Learning (arXiv:2209.05433): "
                                    "E4M3/E5M2 with one scale per tensor"),
    "int8": WeightFormat("int8", 8.0, "Dettmers et al. 2022, LLM.int8() (arXiv:2208.07339): vector-wise int8 with "
                                      "one absmax scale per row"),
    "nf4": WeightFormat("nf4", 4.0 + 8.0 / 64 + 32.0 / (64 * 256),
                        "Dettmers et al. 2023, QLoRA (arXiv:2305.14314) §3: NF4 in blocks of 64, double "
                        "quantisation of the scales, 0.127 bit per weight of constants"),
}

# Bytes per element of a GEMM's operands by precision (fp8 and int8 GEMMs read 1-byte inputs).
GEMM_OPERAND_BYTES = {"fp32": 4.0, "tf32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0}

# Bytes per adapter parameter: weights and gradients in the compute precision, Adam m and v in
# fp32, no fp32 master copy (the QLoRA recipe, artidoro/qlora qlora.py: LoRA modules cast to
# bf16, --optim paged_adamw_32bit). With fp32 training the weights and gradients are fp32.
ADAPTER_STATE_BYTES = {False: (2.0, 2.0, 8.0), True: (4.0, 4.0, 8.0)}      # by fp32 training


@dataclass(frozen=True)
class LoraSpec:
    rank: int
    alpha: float
    targets: tuple[LoraTarget, ...]   # drawn from LORA_TARGETS, in that order


@dataclass(frozen=True)
class FinetuneSpec:
    """How a model is trained: every weight (full), or adapters on a frozen base."""
    method: Method = "full"
    weights: BaseWeights | None = None   # storage of the base's linear weights; None: the training precision's
    lora: LoraSpec | None = None
    paged_optimizer: bool = False        # optimizer states in paged memory, spilled to the host when HBM is full
    quantised_inputs_kept: bool = False  # an int8 or NF4 base's linears keep their inputs for the backward (the
                                         # stack's ``quantised_inputs_kept``: bitsandbytes before 0.43.2)

    @property
    def frozen(self) -> bool:
        """The base weights keep no gradients and no optimizer states."""
        return self.method != "full"

    def storage(self, precision: str) -> WeightFormat:
        """The format the base's linear weights are stored in."""
        return weight_format(self.weights, precision)


def weight_format(weights: str | None, precision: str) -> WeightFormat:
    """A storage format by name; None: the training precision's own (16 bits, fp32 for fp32 training)."""
    if weights is not None:
        return WEIGHT_FORMATS[weights]
    return WEIGHT_FORMATS["fp32" if precision in ("fp32", "tf32") else "bf16"]


# Bytes per input element a quantised linear keeps for its backward when it keeps its input
# (bitsandbytes/autograd/_functions.py): MatMul4Bit the 16-bit input A (up to 0.43.1), MatMul8bitLt
# A and its int8 transpose CAt (every release).
KEPT_INPUT_BYTES = {"nf4": 2.0, "int8": 3.0}


def kept_input_bytes(ft: FinetuneSpec, precision: str) -> float:
    """Bytes per element of each linear's input that a frozen int8 or NF4 base keeps until the backward,
    although the backward of a frozen weight reads only the weight (the stack's ``quantised_inputs_kept``);
    0 when it keeps none."""
    if not (ft.frozen and ft.quantised_inputs_kept):
        return 0.0
    return KEPT_INPUT_BYTES.get(ft.storage(precision).name, 0.0)


def dequantised_per_use(storage: WeightFormat, precision: str) -> bool:
    """True when the GEMM cannot read the stored weight: an int8 or NF4 base, or an fp8 base under
    16- or 32-bit compute. (A base stored wider than an fp8 GEMM reads is cast once per step and kept.)"""
    return storage.name in ("int8", "nf4") or (storage.name == "fp8" and precision != "fp8")


FULL = FinetuneSpec()


def model_targets(model: ModelSpec) -> tuple[str, ...]:
    """The linear projections a model has: ``all-linear`` (GELU FFNs have no gate)."""
    return tuple(t for t in LORA_TARGETS if t != "gate" or model.activation == "swiglu")


def resolve_targets(model: ModelSpec, targets: str | tuple[str, ...] | list[str], where: str) -> tuple[str, ...]:
    """``all-linear`` or a list drawn from q k v o gate up down, checked against the model."""
    if isinstance(targets, str):
        if targets != "all-linear":
            raise ScenarioError(where, f"{targets!r} is not allowed; allowed: all-linear or a list of "
                                       f"{' '.join(LORA_TARGETS)}")
        return model_targets(model)
    own = model_targets(model)
    for name in targets:
        if name not in own:
            raise ScenarioError(where, f"{name!r} is not a projection of {model.name}; allowed: {' '.join(own)}")
    if not targets:
        raise ScenarioError(where, "is empty; name at least one projection, or all-linear")
    return tuple(t for t in LORA_TARGETS if t in targets)


def matrix_shape(model: ModelSpec, target: str) -> tuple[int, int]:
    """(d_in, d_out) of one projection (K and V are kv_dim wide under GQA)."""
    h = model.hidden
    if target in ("q", "o"):
        return h, h
    if target in ("k", "v"):
        return h, model.kv_dim
    if target == "down":
        return model.ffn_hidden, h
    return h, model.ffn_hidden                   # gate, up


@lru_cache(maxsize=256)
def adapter_params_per_layer(model: ModelSpec, lora: LoraSpec) -> tuple[int, int]:
    """(attention, FFN per expert) adapter parameters of one layer: r·(d_in + d_out) per adapted matrix."""
    attention = ffn = 0
    for target in lora.targets:
        d_in, d_out = matrix_shape(model, target)
        if target in ATTENTION_TARGETS:
            attention += lora.rank * (d_in + d_out)
        else:
            ffn += lora.rank * (d_in + d_out)
    return attention, ffn


def adapter_params(model: ModelSpec, lora: LoraSpec) -> int:
    """Every adapter of the model (FFN adapters on every expert)."""
    attention, ffn = adapter_params_per_layer(model, lora)
    return model.layers * (attention + model.experts * ffn)


def trainable_params(model: ModelSpec, ft: FinetuneSpec) -> int:
    """Parameters the optimizer updates: the whole model, or its adapters (none on a bare frozen base)."""
    if not ft.frozen:
        return model.params
    return adapter_params(model, ft.lora) if ft.lora is not None else 0


def linear_params_per_layer(model: ModelSpec) -> tuple[int, int]:
    """(attention and router, FFN per expert) weights of one layer: what a quantised format stores."""
    return model.attention_params_per_layer + model.router_params_per_layer, model.ffn_params_per_expert


def adapter_flops_per_token(model: ModelSpec, lora: LoraSpec) -> float:
    """Forward FLOPs of one token through every adapter: 2 per adapter parameter (x·A, then ·B),
    the FFN adapters of the token's top_k experts."""
    attention, ffn = adapter_params_per_layer(model, lora)
    return 2.0 * model.layers * (attention + model.top_k * ffn)


def model_flops_per_token(model: ModelSpec, ft: FinetuneSpec, seq_len: int) -> float:
    """Training FLOPs per token without recomputation (MFU's numerator) for the method:
    the base (no weight gradients when frozen) and the adapters (forward, and a backward of
    twice the forward: gradients of their input and of their weights)."""
    flops = model.model_flops_per_token(seq_len, frozen=ft.frozen)
    if ft.frozen and ft.lora is not None:
        flops += 3.0 * adapter_flops_per_token(model, ft.lora)
    return flops


def hardware_flops_per_token(model: ModelSpec, ft: FinetuneSpec, seq_len: int, recompute: str) -> float:
    """Training FLOPs per token including recomputation (full recomputation runs the adapters' forward again)."""
    flops = model.hardware_flops_per_token(seq_len, recompute, frozen=ft.frozen)
    if ft.frozen and ft.lora is not None:
        adapters = adapter_flops_per_token(model, ft.lora)
        flops += (4.0 if recompute == "full" else 3.0) * adapters
    return flops


def dequant_bytes_per_weight(storage: WeightFormat, precision: str) -> float:
    """Bytes a dequantisation kernel moves per use of a weight the GEMM cannot read as stored: read the
    stored weight, write it as the GEMM's operand; nothing otherwise."""
    if not dequantised_per_use(storage, precision):
        return 0.0
    return storage.bits / 8 + GEMM_OPERAND_BYTES[precision]
