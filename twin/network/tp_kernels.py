"""Tensor-parallel all-reduce kernels of inference engines, beside NCCL's.

An engine's tensor-parallel all-reduce in decode moves a few kilobytes per token, where
NCCL's ring pays its per-step latencies. vLLM, SGLang and TensorRT-LLM run their own
kernels over NVLink peer memory inside a node (vLLM ``custom_all_reduce.cuh``,
TensorRT-LLM ``customAllReduceKernels.cu``: a one-shot reduction for small buffers, a
reduce-scatter and all-gather through peer memory for larger ones), and fall back to NCCL
above a size or off NVLink.

Their time is measured, not derived from the link: at decode sizes these kernels move
40-60 GB/s per GPU on H100, a tenth of NVLink 4's line rate, bound by their blocks' peer
loads and flag waits. ``custom_all_reduce_s`` interpolates the measured time per call
(catalog ``tp_all_reduce.yaml``: per kernel family, buffer size and tensor-parallel size)
linearly in size, and extends it past the largest measured size at the cost per byte measured
there where the family has one (vLLM's kernels, past 1 MiB), else at the cost per byte of the last
two; a group of a size not measured takes the next larger measured size. The engine takes its
kernels by size, up to its bound, whether or not NCCL would be faster (TensorRT-LLM 0.13's
AllReduceStrategy AUTO, vLLM's ``should_custom_ar``; ``serving.batching.IterationModel.all_reduce_s``).
"""

from __future__ import annotations

import bisect
from functools import lru_cache

from twin import catalog
from twin.units import SECONDS_PER_US


# Bytes in a MiB: the unit of a family's cost per size past its table (tp_all_reduce.yaml, slope_above_us_per_mib).
BYTES_PER_MIB = 1024 * 1024


@lru_cache(maxsize=None)
def _table(kernels: str) -> tuple[tuple[float, ...], dict[int, tuple[float, ...]], dict[int, float]]:
    """(sizes in bytes, {tensor-parallel size: seconds per call at each size}, {tensor-parallel size: seconds per
    byte past the largest size, where measured}) of a kernel family."""
    row = catalog.entry("tp_all_reduce", kernels, "serving.engine.custom_all_reduce_kernels")
    sizes = tuple(float(s) for s in row["sizes"])
    slopes = {int(n): float(v) * SECONDS_PER_US / BYTES_PER_MIB
              for n, v in (row.get("slope_above_us_per_mib") or {}).items()}
    return sizes, {int(n): tuple(t * SECONDS_PER_US for t in times) for n, times in row["latency_us"].items()}, slopes


def _of_ranks(by_ranks: dict, ranks: int):
    """The entry of the next larger measured group size, else of the largest."""
    measured = sorted(by_ranks)
    return by_ranks[next((n for n in measured if n >= ranks), measured[-1])]


def custom_all_reduce_s(size_bytes: float, ranks: int, kernels: str = "trtllm") -> float:
    """Time of one all-reduce of ``size_bytes`` over ``ranks`` GPUs of an NVLink node by the engine's own kernels
    (0 for one rank)."""
    if ranks <= 1:
        return 0.0
    sizes, by_ranks, slopes = _table(kernels)
    times = _of_ranks(by_ranks, ranks)
    if size_bytes <= sizes[0]:
        return times[0]
    if size_bytes > sizes[-1] and slopes:
        return times[-1] + (size_bytes - sizes[-1]) * _of_ranks(slopes, ranks)
    i = min(bisect.bisect_left(sizes, size_bytes), len(sizes) - 1)
    lo, hi = sizes[i - 1], sizes[i]
    return times[i - 1] + (times[i] - times[i - 1]) * (size_bytes - lo) / (hi - lo)
