"""Level 1: the time of one operator on one GPU, by roofline.

An operator takes the longer of its compute time (FLOPs ÷ sustained FLOP/s)
and its memory time (bytes moved ÷ (HBM bandwidth · efficiency)). Small GEMMs
fall to the memory side of the roofline by themselves.

Sustained FLOP/s = datasheet peak × achievable fraction × efficiency. The
achievable fraction is measured per GPU and precision (the best a matmul
reaches at the clock the GPU holds under load: 86.9% of peak on A100, 80.3% on
H100, catalog calibration.yaml ``achievable_matmul``); the efficiency is the
named, calibrated share of it that a training step's kernels sustain
(``Efficiency.matmul`` for GEMMs, ``Efficiency.attention`` for the GPU's native
fused attention). Older kernels run at published rates: FlashAttention-2 on
Hopper at a fixed fraction of peak, FlashAttention-1 at half FlashAttention-2's
speed, FlashAttention in Triton at its own forward and backward speeds (catalog
calibration.yaml ``flash2_peak_fraction``, ``flash1_speed_vs_flash2``,
``triton_speed_vs_flash2``). A fused attention kernel computes over its head
dimension rounded up to the tile it was built for (``padded_head_dim``).

With ``shape_aware`` a GEMM's compute time also pays for its shape: padded tiles, the
last partial wave over the SMs and each tile's pipeline fill (``operators.gemm``), so
small GEMMs run below the rate of large ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from twin.calibration import (Efficiency, achievable_matmul_fraction, flash1_speed_vs_flash2, flash2_peak_fraction,
                              triton_speed_vs_flash2)
from twin.hardware.specs import GPUSpec
from twin.operators.gemm import TileShape, compute_factor, tile_shape
from twin.workload.finetune import GEMM_OPERAND_BYTES

# GEMM operands by precision: twin.workload.finetune.GEMM_OPERAND_BYTES (fp8 and int8 GEMMs
# read 1-byte inputs and write 16-bit outputs).
# Bytes per element of a GEMM's output: the activation precision (16 bits under fp8).
OUTPUT_BYTES = {"fp32": 4.0, "tf32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 2.0, "int8": 2.0}
# FP8 training (NVIDIA Transformer Engine) keeps activations in 16 bits and casts each
# GEMM's activation input to fp8 in a separate kernel before the GEMM: read 2 B, write
# 1 B per element. Weights are cast once per step (negligible over many micro-batches).
FP8_CAST_BYTES_PER_ELEMENT = 3.0
# Scaling recipes (``fp8_recipe``): delayed scaling (``delayed``: E4M3 everywhere; ``hybrid``:
# E4M3 forward, E5M2 gradients, Transformer Engine's default) takes each scale from past amax
# values, kept in memory; current scaling measures each tensor's amax just before its cast,
# one more read of the 16-bit input: 2 B per element.
FP8_CURRENT_SCALING_AMAX_BYTES = 2.0


@dataclass(frozen=True)
class OperatorModel:
    gpu: GPUSpec
    precision: str
    efficiency: Efficiency
    power_cap_factor: float = 1.0     # < 1 when a GPU power cap lowers sustained clocks
    attention_kernel: str = "flash"   # flash (the GPU's native fused kernel) | flash2 | flash1 | triton | standard
    fp8_recipe: str = "hybrid"        # delayed | current | hybrid (fp8 precision only)
    weight_bytes: float | None = None  # bytes per element of the (k×n) weight operand when it differs from
                                       # the GEMM precision (weight-only quantisation: 4-bit weights, fp16 GEMM)
    separate_fp8_cast: bool = True     # training (Transformer Engine) casts each fp8 GEMM input in its own
                                       # kernel; inference engines fuse the cast into the norm or activation before
    shape_aware: bool = False          # GEMM compute priced by tiles and waves over the SMs (operators.gemm)

    @cached_property
    def matmul_flops(self) -> float:
        """Sustained FLOP/s of large GEMMs."""
        return self.achievable_flops(self.precision) * self.efficiency.matmul * self.power_cap_factor

    @cached_property
    def attention_flops(self) -> float:
        """Sustained FLOP/s of fused attention, forward (attention math stays in 16 bits under fp8 and int8)."""
        return self._flash2_based_flops * self._legacy_speed[0]

    @cached_property
    def attention_backward_flops(self) -> float:
        """Sustained FLOP/s of fused attention, backward."""
        return self._flash2_based_flops * self._legacy_speed[1]

    @cached_property
    def _flash2_based_flops(self) -> float:
        """The native kernel's rate, or FlashAttention-2's where an older kernel is measured against it."""
        precision = "bf16" if self.precision in ("fp8", "int8") else self.precision
        rate = self.achievable_flops(precision) * self.efficiency.attention
        if self.attention_kernel in ("flash2", "flash1", "triton"):
            legacy = flash2_peak_fraction(self.gpu.name)
            if legacy is not None:
                rate = min(rate, self.gpu.peak(precision) * legacy)
        return rate * self.power_cap_factor

    @cached_property
    def _legacy_speed(self) -> tuple[float, float]:
        """(forward, backward) speed of the kernel ÷ FlashAttention-2's."""
        if self.attention_kernel == "flash1":
            return flash1_speed_vs_flash2(), flash1_speed_vs_flash2()
        if self.attention_kernel == "triton":
            return triton_speed_vs_flash2()
        return 1.0, 1.0

    def padded_head_dim(self, head_dim: int) -> int:
        """The head dimension the attention kernel computes over.

        FlashAttention in Triton loads the head in a block of the next power of two, at least 16
        (flash_attn_triton.py: BLOCK_HEADDIM = max(triton.next_power_of_2(d), 16)); FlashAttention-2,
        named or the native kernel where it is (no ``flash2_peak_fraction``: Ampere, Ada), rounds it
        up to a multiple of 32 up to 192, else 256 (flash_api.cpp: head_size_rounded). Other kernels
        are taken to compute the head as it is."""
        if self.attention_kernel == "triton":
            return max(16, 1 << (head_dim - 1).bit_length())
        native_flash2 = self.attention_kernel == "flash" and flash2_peak_fraction(self.gpu.name) is None
        if self.attention_kernel == "flash2" or native_flash2:
            return -(-head_dim // 32) * 32 if head_dim <= 192 else 256
        return head_dim

    def achievable_flops(self, precision: str) -> float:
        """The GPU's measured maximum achievable matmul FLOP/s at ``precision``."""
        return self.gpu.peak(precision) * achievable_matmul_fraction(self.gpu.name, precision)

    @cached_property
    def memory_Bps(self) -> float:
        return self.gpu.memory_Bps * self.efficiency.memory

    def matmul_s(self, m: float, n: float, k: float, count: float = 1.0) -> float:
        """``count`` GEMMs of (m×k)·(k×n)."""
        return self._matmul_s(m, n, k, count, self.matmul_compute_s(m, n, k))

    def matmul_and_compute_s(self, m: float, n: float, k: float, count: float = 1.0) -> tuple[float, float]:
        """``matmul_s`` and the compute side of those ``count`` GEMMs, for callers that tell compute-bound
        GEMMs from memory-bound ones: the shape factor is looked up once."""
        compute_s = self.matmul_compute_s(m, n, k)
        return self._matmul_s(m, n, k, count, compute_s), count * compute_s

    def _matmul_s(self, m: float, n: float, k: float, count: float, compute_s: float) -> float:
        """``count`` GEMMs of (m×k)·(k×n) whose compute side is ``compute_s`` each."""
        operand = GEMM_OPERAND_BYTES[self.precision]
        weight = operand if self.weight_bytes is None else self.weight_bytes
        moved = operand * m * k + weight * k * n + OUTPUT_BYTES[self.precision] * m * n
        cast = 0.0
        if self.precision == "fp8" and self.separate_fp8_cast:
            amax = FP8_CURRENT_SCALING_AMAX_BYTES if self.fp8_recipe == "current" else 0.0
            cast = (FP8_CAST_BYTES_PER_ELEMENT + amax) * m * k / self.memory_Bps
        return count * (max(compute_s, moved / self.memory_Bps) + cast)

    def matmul_compute_s(self, m: float, n: float, k: float) -> float:
        """The compute side of one (m×k)·(k×n) GEMM's roofline: its FLOPs, or its tiles when ``shape_aware``."""
        seconds = 2.0 * m * n * k / self.matmul_flops
        return seconds * compute_factor(self._tile_shape, m, n, k) if self.shape_aware else seconds

    @cached_property
    def _tile_shape(self) -> TileShape | None:
        """The GPU's GEMM tiles and SMs (``operators.gemm``), looked up once rather than per GEMM."""
        return tile_shape(self.gpu)

    def memory_s(self, bytes_moved: float) -> float:
        """A memory-bound kernel that reads and writes ``bytes_moved`` in all."""
        return bytes_moved / self.memory_Bps

    def attention_s(self, flops: float) -> float:
        """Fused attention doing ``flops`` of useful work, forward."""
        return flops / self.attention_flops

    def attention_backward_s(self, flops: float) -> float:
        """The backward of fused attention doing ``flops`` of useful work."""
        return flops / self.attention_backward_flops
