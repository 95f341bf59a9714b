"""Level 1: bytes and FLOP multiples of the memory-bound kernels of a transformer layer.

Norms, residual adds, activation functions, the loss over the vocabulary, rotary
embeddings, the unfused attention's softmax path, autocast's weight casts: each a
count of bytes per element, per token or per parameter, as the kernels that
frameworks launch read and write them, with the code it was counted from. The
training step (``engine/stage_costs.py``) and the serving iteration
(``serving/batching.py``) price them with ``roofline.OperatorModel.memory_s``.
"""

from __future__ import annotations


# Bytes per element that Megatron's fused scale-mask-softmax and attention dropout
# move in the forward pass over the s×s scores (write scores 2, softmax read 2 +
# write 2, dropout read 2 + write 2 + mask 1, read by ·V 2).
STANDARD_ATTENTION_BYTES_PER_SCORE = 13.0
# FlashAttention's backward does 2.5× the forward's matmul work (5 GEMMs vs 2; Dao 2023).
FLASH_BACKWARD_FACTOR = 2.5
# Memory-bound bytes per token in a layer's forward, per hidden unit (norms, residual adds)
# or FFN unit (activation function), with 16-bit activations (``elementwise_bytes``).
# Norm, one kernel (Megatron/Apex/TE fused norms; PyTorch's own LayerNorm): read and write
# the 16-bit stream, 4h. Under torch.autocast the residual stream is fp32 and the norm runs
# in fp32: read 4h, write 4h, then the next GEMM casts its input to 16 bits (read 4h,
# write 2h): 14h.
NORM_BYTES = {False: 4.0, True: 14.0}                       # by autocast
# RMSNorm as eager PyTorch code writes it (Meta's reference, Hugging Face, torchtitan's
# "rmsnorm"): upcast to fp32 (r2 w4), square (r4 w4), mean (r4), scale (r4 w4), downcast
# (r4 w2), times the weight (r2 w2): 36h. Under autocast the stream is already fp32: no
# upcast, an fp32 weight product (r4 w4) and the GEMM's input cast (r4 w2): 34h.
EAGER_RMSNORM_BYTES = {False: 36.0, True: 34.0}
# Residual add (Megatron's fused bias-dropout-add, or a plain add): read the stream and the
# branch, write the stream: 6h in 16 bits; 10h with an fp32 stream under autocast.
RESIDUAL_BYTES = {False: 6.0, True: 10.0}
# Activation function: GELU reads and writes f (4f); SwiGLU fused reads 2f and writes f
# (6f), eager is SiLU (read and write 2f: 4f) and the product (read 4f, write 2f: 6f).
ACTIVATION_BYTES_PER_FFN = {"fused": {"gelu": 4.0, "swiglu": 6.0}, "eager": {"gelu": 4.0, "swiglu": 10.0}}
# Vocabulary-parallel cross-entropy, bytes per logit of (forward, backward). Unfused
# (megatron/core/tensor_parallel/cross_entropy.py, one kernel per line): fp32 cast r2 w4,
# max r4, subtract r4 w4, exp r4 w4, sum r4, divide r4 w4 = 38; backward: gradient times
# the incoming one r4 w4, cast back to 16 bits r4 w2 = 14. Fused (Megatron-Core's
# --cross-entropy-loss-fusion, megatron/core/fusions/fused_cross_entropy.py): cast and max
# r2 w4, subtract-exp-sum r4 w4, divide r4 w4 = 22; backward fused to 16 bits r4 w2 = 6.
LOSS_BYTES_PER_LOGIT = {"unfused": (38.0, 14.0), "fused": (22.0, 6.0)}
# Rotary position embeddings (Su et al. 2021) rotate q and k in every layer, in the forward and
# again (on the gradients) in the backward, bytes per element of q and k, 16-bit activations.
# Fused (Megatron-Core --apply-rope-fusion, Transformer Engine's fused RoPE; 2024 defaults): read
# 2, write 2 = 4; the cos and sin tables are per position, shared by every head. Eager, as Meta's
# reference code and torchtitan write it (apply_rotary_emb): upcast to fp32 (r2 w4), the complex
# product (r4 w4), back to 16 bits (r4 w2) = 20.
ROPE_BYTES_PER_ELEMENT = {"fused": 4.0, "eager": 20.0}
# torch.autocast keeps weights in fp32 and casts each GEMM's weight to 16 bits where it is
# used: the forward (and its recomputation) reads 4 B and writes 2 B per weight, and the
# backward casts the 16-bit weight gradient back to fp32 (read 2 B, write 4 B).
AUTOCAST_CAST_BYTES_PER_PARAM = 6.0


def elementwise_bytes(norm: str, activation: str, kernels: str, autocast: bool) -> tuple[float, float]:
    """Forward bytes per token of a layer's memory-bound kernels: (per hidden unit, per FFN unit).

    Two norms and two residual adds per layer, one activation function; 16-bit activations.
    """
    eager_rms = kernels == "eager" and norm == "rmsnorm"
    norm_bytes = EAGER_RMSNORM_BYTES[autocast] if eager_rms else NORM_BYTES[autocast]
    return 2 * norm_bytes + 2 * RESIDUAL_BYTES[autocast], ACTIVATION_BYTES_PER_FFN[kernels][activation]
