"""GEMMs by shape: tiles, waves over the SMs, and the pipeline fill of each tile.

A library GEMM cuts its M×N output into tiles of ``tile_m × tile_n`` (the shape of its
list that runs the GEMM fastest), one thread block each, and runs them in waves over the GPU's SMs; each tile walks K in blocks of
``k_block`` through a pipeline of ``stages`` shared-memory buffers, and its tensor cores
wait for the first ``stages - 1`` blocks. The compute time of an M×N×K GEMM is therefore
that of ``waves · SMs`` whole tiles of ``K + fill_k`` columns:

    compute_factor = waves · SMs · tile_m · tile_n · (K + fill_k) / (M · N · K)

(≥ 1; it multiplies ``2MNK / sustained FLOP/s``). A GEMM of fewer tiles than SMs splits K
among blocks (split-K), each slice paying its fill, so skinny GEMMs still use every SM. Tile shapes, pipelines and SM counts are
in catalog ``gemm.yaml`` with their sources. A MIG instance has its share of the SMs. A
GPU not in the table is priced without the shape factor (1).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

from twin import catalog
from twin.hardware.specs import GPUSpec, gpu_spec


class TileShape(NamedTuple):
    """The tile a GPU's GEMMs run in, and how many run at once (a named tuple: it keys the cache of
    shape factors, which hashes and compares it on every GEMM priced)."""
    sms: int
    tiles: tuple[tuple[int, int], ...]   # (tile_m, tile_n) the library chooses among
    fill_k: int               # columns of K a tile waits for before its main loop runs: (stages - 1) · k_block


@lru_cache(maxsize=None)
def _shape(name: str, bf16_peak: float) -> TileShape | None:
    data = catalog.table("gemm")
    row = data["gpus"].get(name)
    if row is None:
        return None
    arch = data["architectures"][row["architecture"]]
    full_peak = gpu_spec(name).peak("bf16")
    sms = max(1, round(int(row["sms"]) * bf16_peak / full_peak))      # a MIG instance: its compute share
    tiles = tuple((int(m), int(n)) for m, n in arch["tiles"])
    return TileShape(sms, tiles, (int(arch["stages"]) - 1) * int(arch["k_block"]))


def tile_shape(gpu: GPUSpec) -> TileShape | None:
    """The tile shape and SM count of ``gpu`` (a whole GPU or a MIG instance); None where not catalogued."""
    try:
        return _shape(gpu.name, gpu.peak("bf16"))
    except KeyError:
        return None


def compute_factor(shape: TileShape | None, m: float, n: float, k: float) -> float:
    """Time of an M×N×K GEMM's tiles ÷ the time of its 2MNK useful FLOPs at the same rate (≥ 1), on a GPU
    of ``shape`` (``tile_shape``; None, a GPU not catalogued: 1)."""
    if shape is None or m <= 0 or n <= 0 or k <= 0:
        return 1.0
    return _factor(shape, m, n, k)


@lru_cache(maxsize=1 << 16)
def _factor(shape: TileShape, m: float, n: float, k: float) -> float:
    """``compute_factor`` of one shape on one tile shape (the same GEMMs recur in every iteration and plan)."""
    row_tiles = tuple(math.ceil(m / tm) for tm, _ in shape.tiles)
    return _fastest_tiles_work(shape, row_tiles, n, k) / (m * n * k)


@lru_cache(maxsize=1 << 16)
def _fastest_tiles_work(shape: TileShape, row_tiles: tuple[int, ...], n: float, k: float) -> float:
    """Multiply-adds the SMs spend with the library's fastest tile, idle slots of the last wave included;
    ``row_tiles``: each tile shape's count of tiles along M (⌈M / tile_m⌉).

    Fewer tiles than SMs split K among blocks (split-K) so that every SM works, each slice paying its
    own pipeline fill. M enters only through the row tiles, so GEMMs of nearby M (a serving run's
    token counts, one GEMM shape each) share the work."""
    sms, fill_k = shape.sms, shape.fill_k
    k_blocks = math.floor(k / max(1, fill_k))        # the most slices split-K cuts K into
    best = math.inf
    for (tm, tn), rows in zip(shape.tiles, row_tiles):
        tiles = rows * math.ceil(n / tn)
        split = max(1, min(sms // tiles, k_blocks))
        waves = math.ceil(tiles * split / sms)
        best = min(best, waves * sms * tm * tn * (k / split + fill_k))
    return best
