"""``training.data:`` the dataset, where it lives and how checkpoints are kept beside it (docs/storage.md)."""

from typing import Literal

from twin.scenario.fields import Strict, name_text, number, price
from twin.units import parse_price_per_core_hour

DataSize = number("bytes", gt="0 B", le="100 EB", why="10x the largest file systems")
SampleSize = number("bytes", gt="0 B", le="1 TB", why="one sample read per sequence of the batch")
CpuPerSample = number("time", ge="0 s", le="1 h", why="CPU-seconds to decode and augment one sample")
Cores = number(integer=True, ge="1", le="100000", why="CPU cores of one node")
KeepLast = number(integer=True, ge="1", le="1000000", why="checkpoints kept")
EveryNth = number(integer=True, ge="1", le="1000000", why="keep every N-th checkpoint for good")
TierName = name_text(80)
PrepareCores = number(integer=True, ge="1", le="10000000", why="10 million cores, 1,000x the seed's 10,000 vCPUs")
# A core-hour above this is a typing slip: 100x the list price of a cloud vCPU-hour (about 0.05 USD).
MAX_CORE_HOUR_PRICE = 5.0


CoreHourPrice = price(parse_price_per_core_hour, MAX_CORE_HOUR_PRICE, "/core-h", "0.01 EUR/core-h")


class Prepare(Strict):
    """Data preparation before the job: tokenising, filtering or deduplicating ``input`` on ``cores``."""
    kind: Literal["tokenize", "filter", "deduplicate"] = "tokenize"
    input: DataSize
    cores: PrepareCores
    core_hour_price: CoreHourPrice | None = None


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
    prepare: Prepare | None = None         # a data-preparation job before training (Spark, Ray)
