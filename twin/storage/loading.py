"""Data loading: whether the tier a dataset lives on, and the hosts' CPUs, keep the GPUs busy.

The data loader prefetches the next step's samples while the GPUs run the current
one (PyTorch ``DataLoader`` workers, NVIDIA DALI), so a step waits only for what the
loader cannot finish inside it. With ``b`` samples a step of ``S`` bytes each on
``n`` nodes of ``c`` CPU cores:

    read_s     = b · S / R            R: the tier's read throughput for n nodes (NIC-bounded)
    metadata_s = b · o / M            o: files opened per sample, M: the tier's metadata rate
    decode_s   = b · κ / (n · c)      κ: CPU-seconds per sample (decode, augmentation)
    feed_s     = max(read_s, metadata_s, decode_s)
    wait_s     = max(0, feed_s − step_s)         the ``data`` part of the step

The step the GPUs see is ``step_s + wait_s``. Staging copies a dataset from object
storage to the tier it is read from before the job: ``size / min(source read, target write)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.hardware.specs import NodeSpec
from twin.storage.datasets import DatasetSpec
from twin.storage.tiers import StorageTier

# Cores a DGX H100 gives its data loader: 2 x Xeon Platinum 8480C, 56 cores each
# (NVIDIA DGX H100 datasheet, 2023); used when a node does not state its cores.
DEFAULT_CPU_CORES_PER_NODE = 112


@dataclass(frozen=True)
class DataFeed:
    """What feeding one step costs, and what the GPUs wait for."""
    samples_per_step: int
    bytes_per_step: float
    read_Bps: float                       # the tier's read throughput for the job's nodes
    read_s: float
    metadata_s: float
    decode_s: float
    step_s: float                         # the step without waiting for data
    wait_s: float                         # the GPUs wait this long per step (``data`` part)
    limit: str                            # what bounds the loader: "read", "metadata" or "decode"
    tier: str

    @property
    def feed_s(self) -> float:
        return max(self.read_s, self.metadata_s, self.decode_s)

    @property
    def demand_Bps(self) -> float:
        """Read throughput the GPUs would need to never wait."""
        return self.bytes_per_step / self.step_s

    @property
    def starved(self) -> bool:
        return self.wait_s > 0


def data_feed(data: DatasetSpec, tier: StorageTier, node: NodeSpec, nodes: int, samples_per_step: int,
              step_s: float, cpu_cores_per_node: int = DEFAULT_CPU_CORES_PER_NODE) -> DataFeed:
    """The loader's time per step against the GPUs' step (module docstring)."""
    bytes_step = samples_per_step * data.sample_bytes
    read_Bps = tier.read_for(node, nodes)
    read_s = bytes_step / read_Bps
    opens = samples_per_step * data.opens_per_sample
    metadata_s = opens / tier.metadata_for(nodes) if opens else 0.0
    decode_s = samples_per_step * data.cpu_s_per_sample / (max(1, nodes) * cpu_cores_per_node)
    times = {"read": read_s, "metadata": metadata_s, "decode": decode_s}
    limit = max(times, key=times.get)
    wait_s = max(0.0, times[limit] - step_s)
    return DataFeed(samples_per_step, bytes_step, read_Bps, read_s, metadata_s, decode_s, step_s, wait_s, limit,
                    tier.name)


@dataclass(frozen=True)
class Staging:
    """Copying the dataset to the tier it is read from, before the job starts."""
    source: str
    target: str
    bytes: float
    rate_Bps: float
    time_s: float
    fits: bool                            # the target holds the dataset


def staging(data: DatasetSpec, source: StorageTier, target: StorageTier, node: NodeSpec, nodes: int) -> Staging:
    """Time to copy ``data`` from ``source`` to ``target`` for a job on ``nodes`` nodes.

    Onto local NVMe each node receives its data-parallel share (``size / nodes``).
    """
    rate = min(source.read_for(node, nodes), target.write_for(node, nodes))
    capacity = target.capacity_for(nodes)
    fits = capacity is None or data.size_bytes <= capacity
    return Staging(source.name, target.name, data.size_bytes, rate, data.size_bytes / rate, fits)
