"""Checkpoints against capacity: how many the file system keeps beside the dataset, and over time.

Capacity: ``floor((C − D) / K)`` checkpoints of ``K`` bytes fit on a file system of
``C`` bytes that also holds a dataset of ``D`` bytes.

Retention (``keep_last`` L, ``every_nth`` N): after the k-th checkpoint the last L
are kept, and every N-th one for good; so the file system holds

    kept(k) = min(k, L) + ⌊max(0, k − L) / N⌋

checkpoints (each N-th among the older ones). Without ``keep_last`` every checkpoint is kept.

Asynchronous checkpointing to local NVMe: the GPUs stop only while each node writes its
share to its own drives (``K / (n · W_nvme)``); the drain to the file system runs in the
background (``K / W_fs``); a restart reads the last durable checkpoint back (``K / R_fs``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from twin.hardware.specs import NodeSpec
from twin.storage.tiers import StorageTier


@dataclass(frozen=True)
class Retention:
    """Which checkpoints stay on the file system."""
    keep_last: int | None = None          # None: keep every checkpoint
    every_nth: int | None = None          # also keep every N-th checkpoint for good


def kept_after(written: int, retention: Retention) -> int:
    """Checkpoints on the file system after ``written`` have been written (module docstring)."""
    if retention.keep_last is None:
        return written
    recent = min(written, retention.keep_last)
    older = max(0, written - retention.keep_last)
    return recent + (older // retention.every_nth if retention.every_nth else 0)


def checkpoints_that_fit(capacity_bytes: float, dataset_bytes: float, checkpoint_bytes: float) -> int:
    """Whole checkpoints the file system holds beside the dataset (0 when the dataset fills it)."""
    free = capacity_bytes - dataset_bytes
    return max(0, math.floor(free / checkpoint_bytes + 1e-9)) if checkpoint_bytes > 0 else 0


@dataclass(frozen=True)
class StorageUse:
    """Bytes on the file system after each checkpoint of a run."""
    checkpoint_bytes: float
    dataset_bytes: float
    capacity_bytes: float | None
    fit: int | None                       # checkpoints that fit beside the dataset
    used_bytes: tuple[float, ...]         # after checkpoint 1, 2, ...
    full_at: int | None                   # the first checkpoint that would not fit, if any


def storage_use(checkpoints: int, checkpoint_bytes: float, dataset_bytes: float, capacity_bytes: float | None,
                retention: Retention, limit: int = 1000) -> StorageUse:
    """File-system use after each of ``checkpoints`` checkpoints (at most ``limit`` listed)."""
    fit = None if capacity_bytes is None else checkpoints_that_fit(capacity_bytes, dataset_bytes, checkpoint_bytes)
    used, full_at = [], None
    for k in range(1, min(checkpoints, limit) + 1):
        kept = kept_after(k, retention)
        used.append(dataset_bytes + kept * checkpoint_bytes)
        if full_at is None and fit is not None and kept > fit:
            full_at = k
    return StorageUse(checkpoint_bytes, dataset_bytes, capacity_bytes, fit, tuple(used), full_at)


@dataclass(frozen=True)
class AsyncCheckpoint:
    """A checkpoint written to local NVMe, drained to the file system, read back at a restart."""
    stall_s: float                        # GPUs stopped: each node writes its share to its NVMe
    drain_s: float                        # background copy to the file system
    restart_read_s: float                 # read back from the file system
    nvme_fits: bool


def async_checkpoint(checkpoint_bytes: float, nvme: StorageTier, fs: StorageTier, node: NodeSpec,
                     nodes: int) -> AsyncCheckpoint:
    """Times of one checkpoint staged on local NVMe then drained (module docstring)."""
    stall = checkpoint_bytes / nvme.write_for(node, nodes)
    drain = checkpoint_bytes / min(fs.write_for(node, nodes), nvme.read_for(node, nodes))
    capacity = nvme.capacity_for(nodes)
    return AsyncCheckpoint(stall, drain, checkpoint_bytes / fs.read_for(node, nodes),
                           capacity is None or checkpoint_bytes <= capacity)
