"""Datasets: size on disk, format, what one sample costs to read and to prepare on the fly.

The format's typical figures come from ``catalog/data/datasets.yaml``; a scenario may
override the sample size or the CPU cost. A token dataset reads ``seq_len`` token ids
per sample (``bytes_per_token`` each, packed in shards read sequentially); image, video
and audio datasets read one file per sample and decode it on the host's CPU cores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from twin import catalog
from twin.units import parse_quantity

DataFormat = Literal["tokens", "images", "video", "audio"]
DATA_FORMATS: tuple[str, ...] = ("tokens", "images", "video", "audio")


@dataclass(frozen=True)
class DatasetSpec:
    """A training dataset where it lives, in SI units."""
    size_bytes: float
    format: DataFormat
    sample_bytes: float                   # read per sample (a sequence of the batch)
    cpu_s_per_sample: float               # decode and augmentation, CPU-seconds
    opens_per_sample: float               # files or objects opened per sample
    tier: str                             # the tier read during training
    staged_from: str | None = None        # the tier it is copied from before the job
    source: str = ""

    @property
    def samples(self) -> float:
        """Samples in the dataset."""
        return self.size_bytes / self.sample_bytes


def dataset_spec(size_bytes: float, fmt: str, tier: str, seq_len: int, staged_from: str | None = None,
                 sample_bytes: float | None = None, cpu_s_per_sample: float | None = None) -> DatasetSpec:
    """A dataset of a catalog format; unset figures are the format's (tokens: ``seq_len`` token ids a sample)."""
    row = catalog.entry("datasets", fmt, "training.data.format")
    where = f"catalog datasets.{fmt}"
    if sample_bytes is None:
        if fmt == "tokens":
            sample_bytes = seq_len * float(row["bytes_per_token"])
        else:
            sample_bytes = parse_quantity(row["sample_bytes"], "bytes", f"{where}.sample_bytes")
    cpu = float(row["cpu_s_per_sample"]) if cpu_s_per_sample is None else cpu_s_per_sample
    return DatasetSpec(size_bytes, fmt, sample_bytes, cpu, float(row["opens_per_sample"]), tier, staged_from,
                       row.get("source", ""))
