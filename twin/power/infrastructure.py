"""Power of what surrounds the nodes: InfiniBand switches and the storage system.

Switch counts come from the fabric model when it reports them (``Result.fabric``
with leaf/spine counts); otherwise from the DGX SuperPOD H100 reference
architecture's table (1-4 scalable units), or for other sizes and topologies from
a fat tree of 64-port switches: leaves take the node ports, each leaf splits its
ports between down- and up-links by the oversubscription, spines take the
up-links, and beyond two tiers (more leaves than a spine has ports) a core tier
of half as many switches joins the spines. The storage fabric is a two-tier fat
tree sized for the nodes' storage ports and the storage system's ports, its
upper tier only as wide as the storage system's bandwidth (all its traffic goes there).
Storage draws power in proportion to its read bandwidth, from a reference
appliance; without a storage system in the scenario neither it nor its fabric
is counted (the nodes' storage NICs bound its speed, not its size). Switches and storage draw the same power in every phase.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from twin import catalog
from twin.hardware.specs import ClusterSpec
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

    def as_dict(self) -> dict[str, Any]:
        return {
            "compute_fabric": {"leaf": self.compute_switches.leaf, "spine": self.compute_switches.spine,
                               "core": self.compute_switches.core, "source": self.compute_switches.source},
            "storage_fabric": {"leaf": self.storage_switches.leaf, "spine": self.storage_switches.spine,
                               "core": self.storage_switches.core, "source": self.storage_switches.source},
            "switch_model": self.switch.name,
            "switch_w": self.switch.draw_w(),
            "switches_w": self.switches_w,
            "storage_w": self.storage_w,
        }


def fat_tree(ports: int, radix: int, oversubscription: float = 1.0) -> SwitchCounts:
    """Switches of a fat tree that connects ``ports`` end points with ``radix``-port switches."""
    if ports <= 0:
        return SwitchCounts(0, 0, 0, "no ports")
    if ports <= radix:
        return SwitchCounts(1, 0, 0, "one switch")
    down = math.floor(radix * oversubscription / (1.0 + oversubscription))
    up = radix - down
    leaf = math.ceil(ports / down)
    uplinks = leaf * up
    if leaf <= radix:
        spine = math.ceil(uplinks / radix)
        return SwitchCounts(leaf, spine, 0, f"two-tier fat tree of {radix}-port switches (computed)")
    spine = math.ceil(uplinks / (radix / 2))
    core = math.ceil(spine / 2)
    return SwitchCounts(leaf, spine, core, f"three-tier fat tree of {radix}-port switches (computed)")


def _from_fabric_result(fabric: dict[str, Any] | None) -> SwitchCounts | None:
    """Leaf/spine/core counts reported by the fabric model, when it reports them."""
    if not fabric:
        return None

    def pick(*names: str) -> int | None:
        for name in names:
            value = fabric.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return int(value)
        return None

    leaf = pick("leaf_switches", "leaves", "leaf")
    spine = pick("spine_switches", "spines", "spine")
    if leaf is None or spine is None:
        return None
    core = pick("core_switches", "cores", "core") or 0
    return SwitchCounts(leaf, spine, core, "fabric model")


def compute_fabric(cluster: ClusterSpec) -> SwitchCounts:
    """Compute-fabric switches for the scenario's topology, without a fabric model."""
    fabric = cluster.fabric
    radix = switch_power().ports
    ports = cluster.nodes * cluster.node.compute_nics.count
    if fabric.topology == "single-switch":
        return SwitchCounts(math.ceil(ports / radix), 0, 0, "single switch")
    if fabric.topology == "rail-optimized-fat-tree" and fabric.oversubscription == 1.0:
        table = catalog.table("power")["superpod_fabric"]
        # One slot of the first scalable unit holds the UFM appliance (31, 63, 95, 127 nodes).
        units = math.ceil((cluster.nodes + 1) / fabric.nodes_per_su)
        if units in table and fabric.nodes_per_su == 32 and cluster.node.compute_nics.count == 8:
            row = table[units]
            return SwitchCounts(int(row["leaf"]), int(row["spine"]), 0,
                                f"DGX SuperPOD H100 RA, {units} SU ({table['source']})")
    return fat_tree(ports, radix, fabric.oversubscription)


def storage_fabric(cluster: ClusterSpec) -> SwitchCounts:
    """Node storage ports plus the storage system's ports (its read bandwidth at the same line rate)."""
    nics = cluster.node.storage_nics
    node_ports = cluster.nodes * nics.count
    if node_ports == 0 or nics.line_rate_Bps <= 0:
        return SwitchCounts(0, 0, 0, "no storage ports")
    storage_ports = math.ceil(cluster.storage.read_Bps / nics.line_rate_Bps)
    # All traffic goes to the storage system: the upper tier needs only its bandwidth.
    oversubscription = max(1.0, node_ports / max(1, storage_ports))
    return fat_tree(node_ports + storage_ports, switch_power().ports, oversubscription)


def infrastructure(cluster: ClusterSpec, fabric_result: dict[str, Any] | None = None,
                   storage_named: bool = True) -> Infrastructure:
    """Switches and storage; a scenario that names no storage system (``cluster.storage``) has none counted."""
    compute = _from_fabric_result(fabric_result) or compute_fabric(cluster)
    switch = switch_power()
    if not storage_named:
        none = SwitchCounts(0, 0, 0, "no storage system in the scenario (cluster.storage)")
        return Infrastructure(compute, none, switch, compute.total * switch.draw_w(), 0.0, none.source)
    storage = storage_fabric(cluster)
    switches_w = (compute.total + storage.total) * switch.draw_w()
    w_per_Bps, source = storage_w_per_read_Bps()
    return Infrastructure(compute, storage, switch, switches_w, cluster.storage.read_Bps * w_per_Bps, source)
