"""Kernel launches: the fixed cost every kernel pays, and how many a layer launches.

A kernel costs its roofline time plus a fixed launch cost: the GPU runs the next
kernel of a stream only after launching it, however small either is. The
launch cost is the measured latency of back-to-back asynchronous launches of an
empty kernel on A100 (``KERNEL_LAUNCH_S``). Fast GEMMs expose it: the same layer
launches the same kernels on H100 in a third of the time.

Kernels per layer, forward, counted from the framework code of each kernel
style (communication kernels are priced by the collectives):

- **fused** (Megatron-LM / Megatron-Core, Transformer Engine): 2 norms, 4 GEMMs
  (QKV, output, FFN in, FFN out; SwiGLU's gate and up are one GEMM), the
  activation, 2 bias-dropout-adds, and the attention core: 1 fused kernel, or 5
  unfused (scores GEMM, fused scale-mask-softmax, dropout, ·V GEMM, the layout
  copy) in Megatron's ParallelAttention. Under FP8 each GEMM adds the cast of its
  input (Transformer Engine's cast-transpose).
- **eager** (PyTorch modules: torchtitan, Hugging Face, llm-foundry): a norm is
  one kernel for LayerNorm, 8 for RMSNorm written in PyTorch (upcast, square,
  mean, add eps, rsqrt, scale, downcast, weight); QKV is one GEMM and 2 split
  copies or 3 GEMMs; the FFN 2 GEMMs (GELU) or 3 (SwiGLU); GELU 1 kernel, SwiGLU
  2 (SiLU, product); 2 residual adds; attention 1 fused kernel with 4 layout
  copies (q, k, v to the kernel's layout, the output back), or 8 unfused
  (matmul, scale, mask, softmax, dropout, matmul, 2 copies). Under
  torch.autocast every GEMM adds the casts of its weight and its input.

Rotary position embeddings add the rotation of q and of k: 1 kernel each fused, 3 each
eager (upcast, complex product, downcast).

The backward launches about two kernels per forward kernel (an input gradient
and, for GEMMs and norms, a weight gradient): twice the forward count.
"""

from __future__ import annotations

from twin.workload.model import ModelSpec

# Back-to-back asynchronous launches of an empty kernel, A100 (CSCS ReFrame benchmark
# reference, reframe-hpc/reframe cscs-checks/microbenchmarks/gpu/kernel_latency:
# 'async' latency 2.7 µs on ault:amda100; 1.83 µs on V100, 2.2 µs on P100).
KERNEL_LAUNCH_S = 2.7e-6
# Backward kernels per forward kernel (input gradient plus weight gradient).
BACKWARD_KERNELS_PER_FORWARD = 2.0

FUSED_NORM = 1
EAGER_NORM = {"layernorm": 1, "rmsnorm": 8}
FUSED_ATTENTION_CORE = {"fused": 1, "unfused": 5}       # fused kernel | Megatron's ParallelAttention
EAGER_ATTENTION_CORE = {"fused": 5, "unfused": 8}       # fused kernel + 4 layout copies | eager softmax path
EAGER_ACTIVATION = {"gelu": 1, "swiglu": 2}
ROPE_KERNELS = {"fused": 2, "eager": 6}                 # q and k


def forward_kernels_per_layer(model: ModelSpec, kernels: str, autocast: bool, attention: str, precision: str,
                              local_experts: float = 1.0) -> float:
    """Kernels one layer launches in its forward, in the stack's ``kernels`` style (fused | eager), with
    weights cast under ``autocast`` (see the module docstring for the counts)."""
    core = "unfused" if attention == "standard" else "fused"
    experts = local_experts if model.is_moe else 1.0
    rope = ROPE_KERNELS[kernels] if model.position == "rope" else 0
    if kernels == "fused":
        gemms = 2 + 2 * experts + (1 if model.is_moe else 0)            # + the router
        count = 2 * FUSED_NORM + gemms + experts + 2 + FUSED_ATTENTION_CORE[core] + rope
        if precision == "fp8":
            count += gemms
        return float(count)
    ffn_gemms = model.ffn_matrices * experts
    gemms = 3 + 1 + ffn_gemms + (1 if model.is_moe else 0)               # QKV (as 3), output, FFN, router
    count = (2 * EAGER_NORM[model.norm] + gemms + EAGER_ACTIVATION[model.activation] * experts + 2
             + EAGER_ATTENTION_CORE[core] + rope)
    if autocast:
        count += 2 * gemms
    return float(count)


def layer_launch_s(model: ModelSpec, kernels: str, autocast: bool, attention: str, precision: str,
                   local_experts: float = 1.0) -> tuple[float, float]:
    """(forward, backward) launch time of one layer for one micro-batch, recomputation not included."""
    forward = forward_kernels_per_layer(model, kernels, autocast, attention, precision, local_experts) * KERNEL_LAUNCH_S
    return forward, BACKWARD_KERNELS_PER_FORWARD * forward
