"""Typed hardware specs in SI units, built from the catalog and the scenario."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from twin import catalog
from twin.options import Topology
from twin.units import parse_quantity

# When no idle power is measured for a GPU, idle = this fraction of TDP.
# Calibrated on the two measured GPUs: H100 SXM 69/700 W = 0.099, A100 SXM4 62/400 W = 0.155.
IDLE_POWER_FRACTION_OF_TDP = 0.10


@dataclass(frozen=True)
class GPUSpec:
    name: str
    description: str
    peak_flops: dict[str, float]          # dense FLOP/s by precision
    memory_bytes: float
    memory_Bps: float
    tdp_w: float
    idle_w: float
    nvlink_Bps: float                     # aggregate bidirectional, as datasheets print it
    mig: dict[str, int]                   # MIG profile → instances per GPU (catalog mig.yaml)
    source: str
    host_memory_bytes: float = 0.0        # Grace memory a superchip's GPU reaches over NVLink-C2C
    host_memory_Bps: float = 0.0          # GPU reads from it: min(C2C per direction, the memory's bandwidth)

    def peak(self, precision: str) -> float:
        """Dense tensor peak for ``precision``; fp32 training runs on TF32 tensor cores."""
        key = "tf32" if precision == "fp32" else precision
        if key not in self.peak_flops:
            raise KeyError(precision)
        return self.peak_flops[key]

    @property
    def nvlink_per_direction_Bps(self) -> float:
        return self.nvlink_Bps / 2


@dataclass(frozen=True)
class NICs:
    count: int
    line_rate_Bps: float                  # per NIC, one direction

    @property
    def total_Bps(self) -> float:
        return self.count * self.line_rate_Bps


# Node layouts whose GPUs talk over NVLink: through NVSwitch, or joined pair by pair (a mesh).
NVLINK_INTRA = ("nvswitch", "nvlink-mesh")


@dataclass(frozen=True)
class NodeSpec:
    name: str
    description: str
    gpu: GPUSpec
    gpus: int
    intra: str                            # nvswitch | nvlink-mesh | pcie | c2c (``NVLINK_INTRA``: GPUs on NVLink)
    nvswitches: int
    pcie_Bps: float                       # per GPU, one direction
    compute_nics: NICs
    storage_nics: NICs
    max_power_w: float
    cpu: str
    source: str

    @property
    def nvlink_mesh(self) -> bool:
        """GPUs joined pair by pair by NVLink, no switch: NCCL's rings run in every order over the links."""
        return self.intra == "nvlink-mesh"

    @property
    def host_power_w(self) -> float:
        """Everything in the node but the GPUs, at full load: max power less the GPUs' TDP."""
        return max(0.0, self.max_power_w - self.gpus * self.gpu.tdp_w)


@dataclass(frozen=True)
class FabricSpec:
    topology: Topology
    link_Bps: float                       # per NIC port, one direction
    nodes_per_su: int
    oversubscription: float
    ll128: bool = True                    # NCCL's LL128 protocol where the node allows it (NCCL_PROTO=^LL128: off)


@dataclass(frozen=True)
class StorageSpec:
    read_Bps: float
    write_Bps: float
    capacity_bytes: float | None
    system: bool = True                   # a storage system of its own; False: bounded by the nodes' storage NICs


def nic_bound_storage(node: NodeSpec, nodes: int) -> StorageSpec:
    """No storage system named: reads and writes bounded by the nodes' storage NICs at line rate."""
    nic_Bps = nodes * node.storage_nics.total_Bps
    return StorageSpec(nic_Bps, nic_Bps, None, system=False)


@dataclass(frozen=True)
class ClusterSpec:
    node: NodeSpec
    nodes: int                            # physical nodes, spares included
    spare_nodes: int                      # held back from ``nodes`` for failures
    nodes_per_rack: int
    rack_power_limit_w: float | None
    gpu_power_cap_w: float | None
    fabric: FabricSpec
    storage: StorageSpec

    @property
    def gpus(self) -> int:
        """Every GPU of the cluster, spares included."""
        return self.nodes * self.node.gpus

    @property
    def work_nodes(self) -> int:
        """Nodes a job may start on: the cluster less its spares."""
        return self.nodes - self.spare_nodes

    @property
    def work_gpus(self) -> int:
        return self.work_nodes * self.node.gpus


@lru_cache(maxsize=None)
def gpu_spec(name: str, field_name: str = "gpu") -> GPUSpec:
    row = catalog.entry("gpus", name, field_name)
    where = f"catalog gpus.{name}"
    peaks = {k: parse_quantity(v, "flops", f"{where}.peak.{k}") for k, v in row["peak"].items()}
    tdp_w = parse_quantity(row["tdp"], "power", f"{where}.tdp")
    idle = row.get("idle_power")
    grace = row.get("grace") or {}
    host_bytes = parse_quantity(grace["memory"], "bytes", f"{where}.grace.memory") if grace else 0.0
    host_Bps = min(parse_quantity(grace["c2c"], "bandwidth", f"{where}.grace.c2c") / 2,
                   parse_quantity(grace["memory_bandwidth"], "bandwidth", f"{where}.grace.memory_bandwidth")) if grace else 0.0
    mig = catalog.table("mig").get(name, {}).get("profiles", {})
    return GPUSpec(
        name=name,
        description=row["description"],
        peak_flops=peaks,
        memory_bytes=parse_quantity(row["memory"], "bytes", f"{where}.memory"),
        memory_Bps=parse_quantity(row["memory_bandwidth"], "bandwidth", f"{where}.memory_bandwidth"),
        tdp_w=tdp_w,
        idle_w=parse_quantity(idle, "power", f"{where}.idle_power") if idle else IDLE_POWER_FRACTION_OF_TDP * tdp_w,
        nvlink_Bps=parse_quantity(row["nvlink"], "bandwidth", f"{where}.nvlink"),
        mig={profile: int(shape[2]) for profile, shape in mig.items()},
        source=row["source"],
        host_memory_bytes=host_bytes,
        host_memory_Bps=host_Bps,
    )


def _nics(value: list, where: str) -> NICs:
    count, rate = value
    return NICs(int(count), parse_quantity(rate, "bandwidth", where))


@lru_cache(maxsize=None)
def node_spec(name: str, field_name: str = "cluster.node") -> NodeSpec:
    row = catalog.entry("nodes", name, field_name)
    where = f"catalog nodes.{name}"
    return NodeSpec(
        name=name,
        description=row["description"],
        gpu=gpu_spec(row["gpu"], f"{where}.gpu"),
        gpus=int(row["gpus"]),
        intra=row["intra"],
        nvswitches=int(row.get("nvswitches", 0)),
        pcie_Bps=parse_quantity(row["pcie"], "bandwidth", f"{where}.pcie"),
        compute_nics=_nics(row["compute_nics"], f"{where}.compute_nics"),
        storage_nics=_nics(row["storage_nics"], f"{where}.storage_nics"),
        max_power_w=parse_quantity(row["max_power"], "power", f"{where}.max_power"),
        cpu=row.get("cpu", ""),
        source=row["source"],
    )
