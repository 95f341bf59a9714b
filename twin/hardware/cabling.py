"""Every cable of a cluster: the compute fabric (counted on its graph, ``topology.py``), the storage
fabric, the in-band and out-of-band management Ethernet, and the power cords.

The rules follow the NVIDIA DGX SuperPOD H100 reference architecture (RA-11333-001 V11,
2023-09-22): its "Storage Fabric" section, and Appendix A, Table 7 (major components of the
4 SU, 127-node SuperPOD) and Table 8 (estimate of cables required for it). The RA counts a
cable per 400 Gb/s port: the switches' twin-port OSFP transceivers take two cables each
(Table 8: 2,040 compute cables = 1,016 node ports + 1,024 leaf-spine ports, against 1,536 switch
and 508 system twin-port transceivers). Where the RA gives no figure the constant says "(estimate)".

- compute: the graph's node, UFM, leaf-spine and spine-core cables (RA Table 4);
- storage: the nodes' storage ports; with more than one storage leaf, the node leaves' uplinks
  at 4:3 for every node slot of the scalable units, the storage appliances' 2 x 200 Gb/s cables
  with as many uplinks (1:1), and the UFM and management-server cables of Table 8;
- in-band: 2 ports per node, the management servers and the NFS user storage on MLAG leaf
  pairs, each leaf with 4 uplinks to 2 core switches, 2 peer links per pair, 4 uplinks to the site;
- out-of-band: one port per node, switch, PDU, management server, UFM appliance and storage
  controller, on 48-port switches with 2 uplinks each to the in-band network;
- power: the cords of the nodes, switches, appliances, servers and PDUs.

For the RA's own pod (127 DGX H100, 4 per rack, 12 storage appliances for its 48 storage
cables) these rules give its Table 8 storage 548 (494 + 48 + 2 + 4) and in-band 304 cables and
Table 7's 108 PDUs. Out-of-band comes to 355: Table 8's 333, less 2 because port arithmetic
finds 14 storage switches where Table 7 lists 16, plus the appliances' 24 controller ports that
Table 8 leaves as "varies" (tests/test_cabling.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from twin.hardware.specs import NodeSpec

RA = "DGX SuperPOD H100 RA-11333-001 V11"
# Ports of the fabric switches: QM9700 64 x NDR 400 Gb/s (compute and storage, RA Table 7).
IB_SWITCH_PORTS = 64
# Storage fabric (RA "Storage Fabric"): node connections oversubscribed "near 4:3", storage
# devices at "a 1:1 port to uplink ratio"; the fabric is built for whole scalable units
# ("Network Fabrics": leaf switches and leaf-spine cables of the full SU). 4 SU: 128 slots x 2
# ports x 3/4 = 192 uplinks; with the 48 storage cables' 48 uplinks, Table 8's 240 leaf-spine.
STORAGE_NODE_UPLINKS_PER_PORT = 3 / 4
# A DDN AI400X2: 90 GB/s read, 8 InfiniBand 200 Gb/s ports, 2 controllers with one management
# port each (DDN A3I AI400X2 datasheet, 2023). The RA reaches storage over "NDR Cables, 2x 200
# Gbps" from a 400 Gb/s switch port (Table 8: 48 of them), so one cable per 2 appliance ports.
APPLIANCE_READ_Bps = 90e9
APPLIANCE_FABRIC_PORTS = 8
APPLIANCE_PORTS_PER_CABLE = 2
APPLIANCE_MGMT_PORTS = 2
APPLIANCE_POWER_CORDS = 4             # (estimate) redundant supplies of two controllers
# The pod's management services (RA Table 7: 4 UFM appliances, 4 Base Command Manager servers),
# counted for a cluster with more than one storage leaf; their cables (RA Table 8): storage
# fabric 2 UFM-to-leaf and 4 management-server (HDR 400 to 2 x 200 Gb/s); in-band 8 (2 per
# server); out-of-band 8 (one per server and UFM) and 2 UFM back-to-back.
UFM_APPLIANCES = 4
MGMT_SERVERS = 4
STORAGE_UFM_CABLES = 2
STORAGE_MGMT_CABLES = 4
INBAND_PORTS_PER_MGMT_SERVER = 2
OOB_UFM_BACK_TO_BACK = 2
# In-band (RA Table 8, In-Band Ethernet Cables: 254 DGX + 8 management nodes + 8 NFS storage +
# 24 leaf-core + 6 ISL + 4 uplinks to the site core = 304, on 8 SN4600C in Table 7): 2 bonded
# 100 Gb/s ports per node; leaves in MLAG pairs, 4 uplinks each to 2 core switches (24 over 6
# leaves), 2 peer links per pair (6 over 3 pairs), 2 site uplinks per core switch.
INBAND_PORTS_PER_NODE = 2
INBAND_NFS_CABLES = 8
INBAND_LEAF_HOST_PORTS = 48           # (estimate; the RA's 6 leaves carry 270 host cables, 45 each)
INBAND_LEAF_UPLINKS = 4
INBAND_PAIR_PEER_LINKS = 2
INBAND_CORE_SWITCHES = 2
INBAND_SITE_UPLINKS = 4
# Out-of-band (RA Table 8, OOB Ethernet Cables: 127 DGX + 64 InfiniBand switches + 8
# management/UFM nodes + 8 in-band switches + 2 UFM back-to-back + 108 PDUs + 16 uplinks = 333,
# storage "varies"; 8 SN2201, 48 x 1 GbE, in Table 7): "two uplinks per OOB to in-band".
OOB_PORTS_PER_NODE = 1
OOB_SWITCH_PORTS = 48
OOB_SWITCH_UPLINKS = 2
# Rack PDUs (RA Table 7: 38 racks, 96 PDUs in the 32 racks of four DGX H100 = 3 per 4 nodes,
# 12 in the 6 management racks = 2 each); at least an A and a B feed per rack (estimate).
PDUS_PER_NODE = 3 / 4
PDUS_PER_RACK_MIN = 2
MGMT_RACKS = 6
# Power cords: DGX H100 has 6 power supplies (DGX H100 user guide: six 3.3 kW PSUs, N+N);
# switches 2 each (QM9700, SN4600C and SN2201 datasheets: redundant supplies); management
# servers and UFM appliances 2 each (estimate); one inlet per PDU.
NODE_POWER_CORDS = {"dgx-h100": 6, "dgx-h200": 6}
DEFAULT_NODE_POWER_CORDS = 2
SWITCH_POWER_CORDS = 2
SERVER_POWER_CORDS = 2


@dataclass(frozen=True)
class NetworkCables:
    """Cables of each network and the power cords (``Result.fabric.networks``)."""
    compute: int                          # nodes and UFM to leaves, leaf-spine, spine-core
    storage: int                          # nodes, uplinks, appliances, UFM and servers of the storage fabric
    inband: int
    oob: int
    power: int
    storage_appliances: int
    inband_switches: int
    oob_switches: int
    storage_switches: int = 0
    pdus: int = 0

    @property
    def networks(self) -> int:
        """Compute, storage and management (in-band and out-of-band) together."""
        return self.compute + self.storage + self.inband + self.oob

    @property
    def total(self) -> int:
        return self.networks + self.power


def storage_fabric(node: NodeSpec, storage_links: int, storage_leaves: int, node_slots: int,
                   appliances: int) -> tuple[int, int]:
    """Cables and switches of the storage fabric (module docstring); one leaf alone has no spines."""
    if storage_leaves <= 1:
        return storage_links + appliances * APPLIANCE_FABRIC_PORTS, storage_leaves
    slot_ports = node_slots * node.storage_nics.count
    node_uplinks = math.ceil(slot_ports * STORAGE_NODE_UPLINKS_PER_PORT)
    device = math.ceil(appliances * APPLIANCE_FABRIC_PORTS / APPLIANCE_PORTS_PER_CABLE)
    cables = storage_links + node_uplinks + 2 * device + STORAGE_UFM_CABLES + STORAGE_MGMT_CABLES
    per_unit = math.ceil(slot_ports / storage_leaves) + math.ceil(node_uplinks / storage_leaves)
    leaves = storage_leaves * math.ceil(per_unit / IB_SWITCH_PORTS)
    leaves += math.ceil((2 * device + STORAGE_UFM_CABLES + STORAGE_MGMT_CABLES) / IB_SWITCH_PORTS)
    spines = math.ceil((node_uplinks + device) / IB_SWITCH_PORTS)
    return cables, leaves + spines


def inband_fabric(nodes: int, services: bool) -> tuple[int, int]:
    """Cables and switches of the in-band management Ethernet (module docstring)."""
    if nodes <= 1:
        return nodes * INBAND_PORTS_PER_NODE, 0
    hosts = nodes * INBAND_PORTS_PER_NODE
    if services:
        hosts += MGMT_SERVERS * INBAND_PORTS_PER_MGMT_SERVER + INBAND_NFS_CABLES
    pairs = math.ceil(hosts / (2 * INBAND_LEAF_HOST_PORTS))
    cores = INBAND_CORE_SWITCHES if pairs > 1 else 0
    cables = hosts + pairs * INBAND_PAIR_PEER_LINKS + (2 * pairs * INBAND_LEAF_UPLINKS if cores else 0)
    cables += INBAND_SITE_UPLINKS if services else 0
    return cables, 2 * pairs + cores


def network_cables(node: NodeSpec, nodes: int, racks: int, compute_cables: int, compute_switches: int,
                   storage_links: int, storage_leaves: int, storage_read_Bps: float | None,
                   node_slots: int | None = None) -> NetworkCables:
    """Count every network's cables and the power cords (module docstring).

    ``node_slots``: the node slots of the scalable units the storage fabric is built for
    (``nodes`` when not given).
    """
    appliances = math.ceil(storage_read_Bps / APPLIANCE_READ_Bps) if storage_read_Bps else 0
    services = storage_leaves > 1
    storage, storage_switches = storage_fabric(node, storage_links, storage_leaves, node_slots or nodes, appliances)
    inband, inband_switches = inband_fabric(nodes, services)
    per_rack = math.ceil(nodes / racks) if racks else 0
    pdus = racks * max(PDUS_PER_RACK_MIN, math.ceil(per_rack * PDUS_PER_NODE))
    servers = (MGMT_SERVERS + UFM_APPLIANCES) if services else 0
    pdus += MGMT_RACKS * PDUS_PER_RACK_MIN if services else 0
    switches = compute_switches + storage_switches + inband_switches
    oob_ports = (nodes * OOB_PORTS_PER_NODE + switches + servers + appliances * APPLIANCE_MGMT_PORTS + pdus
                 + (OOB_UFM_BACK_TO_BACK if services else 0))
    oob_switches = math.ceil(oob_ports / OOB_SWITCH_PORTS)
    oob = oob_ports + (oob_switches * OOB_SWITCH_UPLINKS if oob_switches > 1 else 0)
    power = (nodes * NODE_POWER_CORDS.get(node.name, DEFAULT_NODE_POWER_CORDS)
             + (switches + oob_switches) * SWITCH_POWER_CORDS + servers * SERVER_POWER_CORDS
             + appliances * APPLIANCE_POWER_CORDS + pdus)
    return NetworkCables(compute_cables, storage, inband, oob, power, appliances, inband_switches, oob_switches,
                         storage_switches, pdus)
