"""``training.data`` → the data feed of each step, and the job's storage record (docs/storage.md).

A scenario without a ``training.data`` section is untouched: no wait, no record.
"""

from __future__ import annotations

import math
from dataclasses import replace

from twin.engine.step import StepBreakdown
from twin.jobs.checkpoint import checkpoint_bytes_per_param
from twin.hardware.specs import ClusterSpec
from twin.results import TrainingResult
from twin.scenario import Scenario
from twin.scenario.data import Data
from twin.storage.assess import StorageJob, StorageReport, assess_storage, verdict
from twin.storage.checkpoints import Retention
from twin.storage.datasets import DatasetSpec, dataset_spec
from twin.storage.loading import DEFAULT_CPU_CORES_PER_NODE, DataFeed, data_feed
from twin.storage.preparation import prepare_job
from twin.storage.tiers import StorageTier, tier_spec
from twin.units import fmt_si

FIELD = "training.data"


def cluster_tier(cluster: ClusterSpec) -> StorageTier:
    """The scenario's ``cluster.storage`` as a tier (its metadata rate unknown: not a bound)."""
    s = cluster.storage
    return StorageTier("cluster.storage", "parallel-fs", s.capacity_bytes, s.read_Bps, s.write_Bps, math.inf, False,
                       "scenario cluster.storage")


def _tiers(d: Data, cluster: ClusterSpec) -> tuple[StorageTier, StorageTier]:
    """(the tier read during training, the file system checkpoints go to)."""
    own = cluster_tier(cluster)
    read = tier_spec(d.tier, f"{FIELD}.tier") if d.tier else own
    fs = read if read.kind == "parallel-fs" else own
    return read, fs


def _dataset(d: Data, scenario: Scenario, read: StorageTier) -> DatasetSpec:
    return dataset_spec(d.size, d.format, read.name, scenario.training.seq_len, d.staged_from, d.sample_size,
                        d.cpu_per_sample)


def _nodes(cluster: ClusterSpec, gpus: int) -> int:
    return max(1, math.ceil(gpus / cluster.node.gpus))


def data_feed_of(scenario: Scenario, cluster: ClusterSpec, gpus: int, step: StepBreakdown) -> DataFeed | None:
    """The loader's time per step for a scenario's ``training.data`` (None without one)."""
    d = scenario.training.data
    if d is None:
        return None
    read, _ = _tiers(d, cluster)
    return data_feed(_dataset(d, scenario, read), read, cluster.node, _nodes(cluster, gpus),
                     scenario.training.global_batch, step.step_s, d.cpu_cores_per_node or DEFAULT_CPU_CORES_PER_NODE)


def with_data_wait(step: StepBreakdown, feed: DataFeed | None) -> StepBreakdown:
    """The step the GPUs see: its time plus what they wait for data (the ``data`` part)."""
    if feed is None or feed.wait_s <= 0:
        return step
    return replace(step, step_s=step.step_s + feed.wait_s, data_s=feed.wait_s)


def storage_of(scenario: Scenario, cluster: ClusterSpec, result: TrainingResult, step_s: float) -> StorageReport | None:
    """The job's storage record once its run length and checkpoint interval are known."""
    d, tr = scenario.training.data, scenario.training
    if d is None:
        return None
    read, fs = _tiers(d, cluster)
    data = _dataset(d, scenario, read)
    interval = result.failures.checkpoint_interval_s if result.failures else None
    if interval is None and not isinstance(tr.checkpoint.interval, str):
        interval = float(tr.checkpoint.interval)
    job = StorageJob(cluster.node, _nodes(cluster, result.gpus_used), tr.global_batch, step_s,
                     result.trainable_params * checkpoint_bytes_per_param(tr.precision, result.finetune.frozen),
                     result.time_to_train_s, interval, d.cpu_cores_per_node or DEFAULT_CPU_CORES_PER_NODE)
    source = tier_spec(d.staged_from, f"{FIELD}.staged_from") if d.staged_from else None
    nvme = tier_spec(d.local_nvme, f"{FIELD}.local_nvme") if d.local_nvme else None
    report = assess_storage(job, data, read, fs, source, nvme, Retention(d.retention.keep_last, d.retention.every_nth))
    p = d.prepare
    if p is None:
        return report
    price = p.core_hour_price
    return replace(report, prepare=prepare_job(p.kind, p.input, p.cores, price[0] if price else None),
                   prepare_currency=price[1] if price else None)


def storage_warnings(report: StorageReport) -> list[str]:
    """Lines for the result's warnings: starving tiers, a dataset that does not fit, a full file system."""
    out = [f"data: {verdict(report.feed)}"] if report.feed.starved else []
    if report.staging is not None and not report.staging.fits:
        out.append(f"data: the {fmt_si(report.dataset.size_bytes, 'B')} dataset does not fit on "
                   f"{report.staging.target} (training.data.tier)")
    use = report.use
    if use.full_at is not None:
        out.append(f"storage: checkpoint {use.full_at} would not fit: {use.fit} checkpoints of "
                   f"{fmt_si(use.checkpoint_bytes, 'B')} fit beside the dataset (training.data.retention)")
    return out
