"""Storage tiers as hardware: object storage, the parallel file system, each node's local NVMe.

A tier has a capacity, read and write throughput and a metadata rate (file opens or
object GETs per second). Shared tiers (object storage seen from the whole cluster, a
parallel file system) give their aggregate figures; local NVMe is per node, so a job
on ``n`` nodes has ``n`` times its throughput and capacity. A shared tier is also
bounded by the path into the nodes: their storage NICs at line rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from twin import catalog
from twin.hardware.specs import NodeSpec
from twin.units import parse_quantity

TierKind = Literal["object", "parallel-fs", "local-nvme"]
TIER_KINDS: tuple[str, ...] = ("object", "parallel-fs", "local-nvme")


@dataclass(frozen=True)
class StorageTier:
    """One storage tier in SI units (``catalog/data/storage_tiers.yaml``)."""
    name: str
    kind: TierKind
    capacity_bytes: float | None          # None: unbounded (object storage); per node when per_node
    read_Bps: float                       # aggregate, or per node when per_node
    write_Bps: float
    metadata_per_s: float                 # file opens / object GETs per second (aggregate or per node)
    per_node: bool
    source: str = ""

    def _scale(self, nodes: int) -> int:
        return max(1, nodes) if self.per_node else 1

    def capacity_for(self, nodes: int) -> float | None:
        """Bytes the tier holds for a job on ``nodes`` nodes."""
        return None if self.capacity_bytes is None else self.capacity_bytes * self._scale(nodes)

    def read_for(self, node: NodeSpec, nodes: int) -> float:
        """Read throughput a job on ``nodes`` nodes sees: per-node tiers add up; shared ones stop at the NICs."""
        return self._bounded(self.read_Bps * self._scale(nodes), node, nodes)

    def write_for(self, node: NodeSpec, nodes: int) -> float:
        """Write throughput a job on ``nodes`` nodes sees (as ``read_for``)."""
        return self._bounded(self.write_Bps * self._scale(nodes), node, nodes)

    def metadata_for(self, nodes: int) -> float:
        return self.metadata_per_s * self._scale(nodes)

    def _bounded(self, rate_Bps: float, node: NodeSpec, nodes: int) -> float:
        if self.kind == "local-nvme" or node.storage_nics.count == 0:
            return rate_Bps
        return min(rate_Bps, max(1, nodes) * node.storage_nics.total_Bps)


@lru_cache(maxsize=None)
def tier_spec(name: str, field_name: str = "storage") -> StorageTier:
    """A catalog tier by name; an unknown name is a ScenarioError naming ``field_name``."""
    row = catalog.entry("storage_tiers", name, field_name)
    where = f"catalog storage_tiers.{name}"
    capacity = row.get("capacity")
    return StorageTier(
        name=name, kind=row["kind"],
        capacity_bytes=None if capacity is None else parse_quantity(capacity, "bytes", f"{where}.capacity"),
        read_Bps=parse_quantity(row["read"], "bandwidth", f"{where}.read"),
        write_Bps=parse_quantity(row["write"], "bandwidth", f"{where}.write"),
        metadata_per_s=parse_quantity(row["metadata_per_s"], "count", f"{where}.metadata_per_s"),
        per_node=bool(row.get("per_node", False)), source=row.get("source", ""))
