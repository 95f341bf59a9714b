"""``cluster:``: the nodes, their racks, the compute fabric and the storage system."""

from twin.options import Topology
from twin.scenario.fields import Flag, Strict, number

# Limits (docs/scenario.md, "Limits"): beyond them a value is a typing slip, not a cluster.
Nodes = number(integer=True, ge="1", le="32768",
               why="32,768 eight-GPU nodes are 262,144 GPUs, above the largest clusters announced")
SpareNodes = number(integer=True, ge="0", le="32767", why="fewer than nodes")
NodesPerRack = number(integer=True, ge="1", le="72", why="no rack holds more than 72 servers")
RackPower = number("power", gt="0 W", le="1 MW", why="above the densest racks announced, about 600 kW")
GpuPowerCap = number("power", gt="0 W", le="5 kW", why="above any GPU's board power")
Link = number("bandwidth", ge="1 Gb/s", le="10 Tb/s", why="from 1 Gigabit Ethernet to 10x the fastest NIC port")
NodesPerSU = number(integer=True, ge="1", le="4096", why="nodes per scalable unit")
Oversubscription = number(ge="1", le="64", why="k of 1:k; 1:64 leaves a link per 64 ports")
StorageBandwidth = number("bandwidth", ge="100 MB/s", le="1 PB/s",
                          why="from one hard disk to 100x the fastest parallel file systems")
StorageCapacity = number("bytes", ge="1 GB", le="10 EB", why="from one disk to 10x the largest file systems")


class Fabric(Strict):
    topology: Topology = "rail-optimized-fat-tree"
    link: Link | None = None               # default: the node's compute NIC line rate
    nodes_per_su: NodesPerSU = 32
    oversubscription: Oversubscription = 1.0
    ll128: Flag = True                     # NCCL's LL128 protocol inside NVLink nodes; false: NCCL_PROTO=^LL128


class Storage(Strict):
    read: StorageBandwidth
    write: StorageBandwidth
    capacity: StorageCapacity | None = None


class Cluster(Strict):
    node: str
    nodes: Nodes                           # physical nodes, spares included
    spare_nodes: SpareNodes = 0            # held back from nodes for failures
    allow_shrink: Flag = False             # after a failure with no spare, go on with fewer replicas
    nodes_per_rack: NodesPerRack = 2
    rack_power_limit: RackPower | None = None
    gpu_power_cap: GpuPowerCap | None = None
    fabric: Fabric = Fabric()
    storage: Storage | None = None         # default: the nodes' storage NICs, all at line rate
