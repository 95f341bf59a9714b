"""Tensor-parallel all-reduce kernels of inference engines, beside NCCL's.

An engine's tensor-parallel all-reduce in decode moves a few kilobytes per token, where
NCCL's ring pays its per-step latencies. vLLM, SGLang and TensorRT-LLM run their own
kernels over NVLink peer memory inside a node (vLLM ``custom_all_reduce.cuh``,
TensorRT-LLM ``customAllReduceKernels.cu``), and fall back to NCCL above a size or off
NVLink:

- **one-shot**: every rank reads the whole buffer from each of its ``n - 1`` peers and
  reduces it locally, after one barrier: ``launch + barrier + (n - 1) · S / B``;
- **two-shot**: a reduce-scatter then an all-gather through peer memory, two barriers:
  ``launch + 2 · barrier + 2 (n - 1)/n · S / B``.

``B`` is a GPU's NVLink bandwidth per direction at the calibrated NCCL efficiency
(``Efficiency.nvlink``); the launch is one kernel launch (``operators.launches``); a
barrier is one flag round over NVLink, NCCL's LL step (``network.algorithms.PROTOCOLS``).
The engine picks the fastest of one-shot, two-shot and NCCL (TensorRT-LLM's
AllReduceStrategy AUTO; vLLM's size rule gives the same choice on full NVLink).
"""

from __future__ import annotations

from twin.network.algorithms import PROTOCOLS
from twin.operators.launches import KERNEL_LAUNCH_S

# One barrier over NVLink peer memory: a flag written and seen, as NCCL's LL protocol's step.
BARRIER_S = PROTOCOLS["ll"].nvlink_step_s


def one_shot_s(size_bytes: float, ranks: int, link_Bps: float) -> float:
    """One-shot all-reduce of ``size_bytes`` over ``ranks`` GPUs whose peers are reached at ``link_Bps`` each."""
    return KERNEL_LAUNCH_S + BARRIER_S + (ranks - 1) * size_bytes / link_Bps


def two_shot_s(size_bytes: float, ranks: int, link_Bps: float) -> float:
    """Two-shot all-reduce: reduce-scatter and all-gather through peer memory."""
    return KERNEL_LAUNCH_S + 2 * BARRIER_S + 2.0 * (ranks - 1) / ranks * size_bytes / link_Bps


def custom_all_reduce_s(size_bytes: float, ranks: int, link_Bps: float) -> float:
    """The faster of the one-shot and two-shot kernels (0 for one rank)."""
    if ranks <= 1:
        return 0.0
    return min(one_shot_s(size_bytes, ranks, link_Bps), two_shot_s(size_bytes, ranks, link_Bps))
