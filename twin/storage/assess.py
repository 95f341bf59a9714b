"""A training job's data and storage in one record: the data feed, staging, checkpoints against capacity.

``assess_storage`` joins the pieces of this package for one job: whether the tier the dataset
is read from keeps the GPUs busy (``loading``), how long staging takes and whether the dataset
fits where it is staged, how many checkpoints the file system keeps beside the dataset and how
its use grows under the retention policy (``checkpoints``), and, when the nodes have local
NVMe, the times of an asynchronous checkpoint through it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from twin.hardware.specs import NodeSpec
from twin.storage.checkpoints import (AsyncCheckpoint, Retention, StorageUse, async_checkpoint, storage_use)
from twin.storage.datasets import DatasetSpec
from twin.storage.loading import DataFeed, Staging, data_feed, staging
from twin.storage.preparation import PrepareJob
from twin.storage.tiers import StorageTier
from twin.units import fmt_si

# Storage use is listed for at most this many checkpoints (the record stays small).
MAX_LISTED_CHECKPOINTS = 200


@dataclass(frozen=True)
class StorageReport:
    """``Result.storage``: the job's data path and its file system (docs/storage.md)."""
    dataset: DatasetSpec
    feed: DataFeed
    staging: Staging | None
    checkpoint_bytes: float
    checkpoints_written: int              # over the run, at its checkpoint interval
    checkpoint_interval_s: float | None   # None: no interval known (no failures, interval auto)
    retention: Retention
    use: StorageUse
    async_nvme: AsyncCheckpoint | None
    verdict: str                          # which tier starves the GPUs and by how much, or that none does
    prepare: PrepareJob | None = None     # the data-preparation job before training
    prepare_currency: str | None = None


@dataclass(frozen=True)
class StorageJob:
    """What the job asks of its storage (the API fills it from the scenario and the step)."""
    node: NodeSpec
    nodes: int
    samples_per_step: int
    step_s: float
    checkpoint_bytes: float
    run_s: float
    checkpoint_interval_s: float | None
    cpu_cores_per_node: int


def verdict(feed: DataFeed) -> str:
    """One sentence: the tier (or the CPUs) that starves the GPUs, and by how much."""
    if not feed.starved:
        return (f"{feed.tier} keeps the GPUs busy: the loader needs {feed.feed_s:.3g} s of a {feed.step_s:.3g} s step "
                f"({fmt_si(feed.demand_Bps, 'B/s')} demanded, {fmt_si(feed.read_Bps, 'B/s')} available)")
    what = {"read": f"{feed.tier} read throughput ({fmt_si(feed.read_Bps, 'B/s')} for "
                    f"{fmt_si(feed.demand_Bps, 'B/s')} demanded)",
            "metadata": f"{feed.tier} metadata rate (file opens)",
            "decode": "the hosts' CPU cores decoding samples"}[feed.limit]
    share = feed.wait_s / (feed.step_s + feed.wait_s)
    return f"{what} starves the GPUs: they wait {feed.wait_s:.3g} s a step ({share:.0%} of the step)"


def assess_storage(job: StorageJob, data: DatasetSpec, read_tier: StorageTier, fs: StorageTier,
                   source: StorageTier | None, nvme: StorageTier | None, retention: Retention) -> StorageReport:
    """The data feed of ``job`` from ``read_tier``, staging from ``source``, checkpoints on ``fs``."""
    feed = data_feed(data, read_tier, job.node, job.nodes, job.samples_per_step, job.step_s, job.cpu_cores_per_node)
    staged = staging(data, source, read_tier, job.node, job.nodes) if source is not None else None
    written = 0
    if job.checkpoint_interval_s:
        written = math.floor(job.run_s / job.checkpoint_interval_s)
    dataset_on_fs = data.size_bytes if read_tier.name == fs.name else 0.0
    use = storage_use(written, job.checkpoint_bytes, dataset_on_fs, fs.capacity_for(job.nodes), retention,
                      MAX_LISTED_CHECKPOINTS)
    nv = async_checkpoint(job.checkpoint_bytes, nvme, fs, job.node, job.nodes) if nvme is not None else None
    return StorageReport(data, feed, staged, job.checkpoint_bytes, written, job.checkpoint_interval_s, retention, use,
                         nv, verdict(feed))
