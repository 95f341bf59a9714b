"""Every cable of a cluster: the compute fabric (counted on its graph, ``topology.py``), the storage
fabric, the in-band and out-of-band management Ethernet, and the power cords.

The compute fabric and the nodes' storage links come from the fabric graph. The rest is counted
here from a few structural rules, each a named constant with its source; where a source gives no
figure the constant says "(estimate)":

- storage fabric: the nodes' storage links (2 per DGX H100), the storage appliances' ports, and,
  with more than one storage leaf, as many leaf-spine uplinks as the leaves have node links (1:1);
- in-band management: 2 ports per node to Ethernet leaves, each leaf with uplinks to the spines;
- out-of-band management: one BMC port per node, one management port per switch and per
  storage appliance, and the rack PDUs, on 48-port 1 GbE switches with their uplinks;
- power: the cords of the nodes, switches and appliances.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from twin.hardware.specs import NodeSpec

# DGX H100 back panel (DGX SuperPOD H100 reference architecture RA-11333-001, "Network Fabrics",
# Figure 4): besides the 8 compute ports, a pair of storage ports, a pair of in-band management
# ports and one BMC port for out-of-band management.
INBAND_PORTS_PER_NODE = 2
OOB_PORTS_PER_NODE = 1
# In-band leaves: NVIDIA SN4600C, 64 x 100 GbE (RA-11333-001, in-band management network);
# 48 ports to hosts, 4 uplinks to the in-band spines, 2 MLAG peer links (estimate: the RA's port map).
INBAND_LEAF_HOST_PORTS = 48
INBAND_LEAF_UPLINKS = 4
INBAND_LEAF_PEER_LINKS = 2
# Out-of-band switches: NVIDIA SN2201, 48 x 1 GbE + 4 x 100 GbE (SN2201 datasheet); 2 uplinks each (estimate).
OOB_SWITCH_PORTS = 48
OOB_SWITCH_UPLINKS = 2
# A storage appliance: DDN AI400X2, 90 GB/s read, 8 InfiniBand ports, 2 controllers with one
# management port each (DDN A3I AI400X2 datasheet, 2023; ports and controllers as printed there).
APPLIANCE_READ_Bps = 90e9
APPLIANCE_FABRIC_PORTS = 8
APPLIANCE_MGMT_PORTS = 2
APPLIANCE_POWER_CORDS = 4             # (estimate) redundant supplies of two controllers
# Power cords: DGX H100 has 6 power supplies (DGX H100 user guide: six 3.3 kW PSUs, N+N);
# switches 2 each (QM9700, SN4600C and SN2201 datasheets: redundant supplies, SN2201 1 + optional 1);
# each rack 2 PDU feeds (A and B, estimate).
NODE_POWER_CORDS = {"dgx-h100": 6, "dgx-h200": 6}
DEFAULT_NODE_POWER_CORDS = 2
SWITCH_POWER_CORDS = 2
RACK_FEEDS = 2


@dataclass(frozen=True)
class NetworkCables:
    """Cables of each network and the power cords (``Result.fabric.networks``)."""
    compute: int                          # nodes and UFM to leaves, leaf-spine, spine-core
    storage: int                          # nodes, appliances and uplinks of the storage fabric
    inband: int
    oob: int
    power: int
    storage_appliances: int
    inband_switches: int
    oob_switches: int

    @property
    def networks(self) -> int:
        """Compute, storage and management (in-band and out-of-band) together."""
        return self.compute + self.storage + self.inband + self.oob

    @property
    def total(self) -> int:
        return self.networks + self.power


def network_cables(node: NodeSpec, nodes: int, racks: int, compute_cables: int, compute_switches: int,
                   storage_links: int, storage_leaves: int, storage_read_Bps: float | None) -> NetworkCables:
    """Count every network's cables and the power cords (module docstring)."""
    appliances = math.ceil(storage_read_Bps / APPLIANCE_READ_Bps) if storage_read_Bps else 0
    storage_uplinks = storage_links if storage_leaves > 1 else 0
    storage_spines = math.ceil(storage_uplinks / 64) if storage_uplinks else 0
    storage = storage_links + appliances * APPLIANCE_FABRIC_PORTS + storage_uplinks
    inband_ports = nodes * INBAND_PORTS_PER_NODE
    inband_leaves = math.ceil(inband_ports / INBAND_LEAF_HOST_PORTS) if nodes > 1 else 0
    inband_spines = 2 if inband_leaves > 1 else 0
    inband = inband_ports + inband_leaves * (INBAND_LEAF_UPLINKS * (inband_leaves > 1) + INBAND_LEAF_PEER_LINKS / 2)
    switches = compute_switches + storage_leaves + storage_spines + inband_leaves + inband_spines
    oob_ports = nodes * OOB_PORTS_PER_NODE + switches + appliances * APPLIANCE_MGMT_PORTS + racks * RACK_FEEDS
    oob_switches = math.ceil(oob_ports / OOB_SWITCH_PORTS)
    oob = oob_ports + (oob_switches * OOB_SWITCH_UPLINKS if oob_switches > 1 else 0)
    power = (nodes * NODE_POWER_CORDS.get(node.name, DEFAULT_NODE_POWER_CORDS)
             + (switches + oob_switches) * SWITCH_POWER_CORDS + appliances * APPLIANCE_POWER_CORDS + racks * RACK_FEEDS)
    return NetworkCables(compute_cables, int(storage), int(math.ceil(inband)), int(oob), int(power), appliances,
                         inband_leaves + inband_spines, oob_switches)
