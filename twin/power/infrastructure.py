"""Power of what surrounds the nodes: InfiniBand switches and the storage system.

Switch counts are the fabric model's (``Result.fabric``: the compute fabric's
leaves, spines and cores, and one storage leaf per pod of the storage fabric;
docs/fabric.md), so power and topology describe the same network; a one-node
cluster has no compute fabric and is charged no switch. Storage draws
power in proportion to its read bandwidth, from a reference appliance; without
a storage system in the scenario neither it nor its fabric is counted (the
nodes' storage NICs bound its speed, not its size). Switches and storage draw
the same power in every phase.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.hardware.specs import ClusterSpec
from twin.network.records import FabricSummary
from twin.power.devices import SwitchPower, storage_w_per_read_Bps, switch_power


@dataclass(frozen=True)
class SwitchCounts:
    leaf: int
    spine: int
    core: int
    source: str

    @property
    def total(self) -> int:
        return self.leaf + self.spine + self.core


@dataclass(frozen=True)
class Infrastructure:
    compute_switches: SwitchCounts
    storage_switches: SwitchCounts
    switch: SwitchPower
    switches_w: float
    storage_w: float
    storage_source: str

    @property
    def total_w(self) -> float:
        return self.switches_w + self.storage_w


def infrastructure(cluster: ClusterSpec, fabric: FabricSummary) -> Infrastructure:
    """Switches and storage; a scenario that names no storage system (``cluster.storage``) has none counted."""
    if fabric.nodes <= 1:
        compute = SwitchCounts(0, 0, 0, "one node: no compute fabric")
    else:
        compute = SwitchCounts(fabric.leaves, fabric.spines, fabric.cores, "fabric model")
    switch = switch_power()
    if not cluster.storage.system:
        none = SwitchCounts(0, 0, 0, "no storage system in the scenario (cluster.storage)")
        return Infrastructure(compute, none, switch, compute.total * switch.draw_w(), 0.0, none.source)
    storage = SwitchCounts(fabric.storage_leaves, 0, 0, "fabric model: one storage leaf per pod")
    switches_w = (compute.total + storage.total) * switch.draw_w()
    w_per_Bps, source = storage_w_per_read_Bps()
    return Infrastructure(compute, storage, switch, switches_w, cluster.storage.read_Bps * w_per_Bps, source)
