"""``training.data:`` the dataset, where it lives and how checkpoints are kept beside it (docs/storage.md)."""

from typing import Literal

from twin.scenario.fields import Strict, name_text, number

DataSize = number("bytes", gt="0 B", le="100 EB", why="10x the largest file systems")
SampleSize = number("bytes", gt="0 B", le="1 TB", why="one sample read per sequence of the batch")
CpuPerSample = number("time", ge="0 s", le="1 h", why="CPU-seconds to decode and augment one sample")
Cores = number(integer=True, ge="1", le="100000", why="CPU cores of one node")
KeepLast = number(integer=True, ge="1", le="1000000", why="checkpoints kept")
EveryNth = number(integer=True, ge="1", le="1000000", why="keep every N-th checkpoint for good")
TierName = name_text(80)


class Retention(Strict):
    keep_last: KeepLast | None = None      # unwritten: every checkpoint stays
    every_nth: EveryNth | None = None


class Data(Strict):
    size: DataSize
    format: Literal["tokens", "images", "video", "audio"] = "tokens"
    tier: TierName | None = None           # a tier of catalog storage_tiers.yaml; unwritten: cluster.storage
    staged_from: TierName | None = None    # copied from this tier before the job (e.g. object-storage)
    local_nvme: TierName | None = None     # the nodes' NVMe for asynchronous checkpoints (e.g. dgx-h100-nvme)
    sample_size: SampleSize | None = None  # unwritten: the format's (catalog datasets.yaml)
    cpu_per_sample: CpuPerSample | None = None
    cpu_cores_per_node: Cores | None = None
    retention: Retention = Retention()
