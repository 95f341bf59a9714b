"""Power specs of the devices of a cluster, in watts, from ``catalog/data/power.yaml``.

A GPU draws ``idle + (limit - idle) · activity`` where ``limit`` is its TDP or the
scenario's power cap and ``activity`` the share of its dynamic range a phase uses
(one figure per phase, each with its source). The host (CPUs, memory, NICs,
NVSwitches, drives, fans and power conversion) draws between its idle and its
full-load power in proportion to the GPUs' activity; at full load a node draws
exactly its vendor maximum, so the node's maximum bounds the model.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin import catalog
from twin.hardware.specs import GPUSpec, NodeSpec, node_spec
from twin.units import parse_quantity

PHASES = ("compute", "memory", "communication", "bubble", "checkpoint", "restart", "idle")


@dataclass(frozen=True)
class GPUPower:
    """One GPU's power by phase."""
    idle_w: float
    tdp_w: float
    limit_w: float                       # TDP, or the power cap when lower
    activity: dict[str, float]           # phase → share of (limit - idle) above idle

    def phase_w(self, phase: str) -> float:
        return self.idle_w + (self.limit_w - self.idle_w) * self.activity[phase]

    def draw_w(self, activity: float) -> float:
        return self.idle_w + (self.limit_w - self.idle_w) * activity


@dataclass(frozen=True)
class HostPower:
    """Everything in a node but its GPUs."""
    idle_w: float
    full_w: float                        # at full GPU load: node maximum less the GPUs' TDP
    components_w: dict[str, float]       # full-load power by component, for the breakdown
    source: str

    def draw_w(self, activity: float) -> float:
        return self.idle_w + (self.full_w - self.idle_w) * activity


@dataclass(frozen=True)
class NodePower:
    gpus: int
    gpu: GPUPower
    host: HostPower
    max_w: float                         # vendor maximum system power

    def draw_w(self, activity: float, busy_gpus: int | None = None) -> float:
        """Whole node with its busy GPUs (all, unless ``busy_gpus``) at ``activity`` (0 = idle, 1 = at its
        limit) and the rest idle; the host follows the GPUs' mean heat."""
        busy = self.gpus if busy_gpus is None else busy_gpus
        share = busy / self.gpus if self.gpus else 0.0
        return (busy * self.gpu.draw_w(activity) + (self.gpus - busy) * self.gpu.idle_w
                + self.host.draw_w(self.host_activity(activity) * share))

    def host_activity(self, gpu_activity: float) -> float:
        """The host follows the GPUs' heat: their dynamic power as a share of its uncapped range."""
        span = self.gpu.tdp_w - self.gpu.idle_w
        return (self.gpu.draw_w(gpu_activity) - self.gpu.idle_w) / span if span > 0 else 0.0

    @property
    def idle_w(self) -> float:
        return self.draw_w(0.0)

    @property
    def peak_w(self) -> float:
        return self.draw_w(1.0)


@dataclass(frozen=True)
class SwitchPower:
    name: str
    ports: int
    base_w: float
    cage_w: float                        # per populated cage (two ports)
    source: str

    def draw_w(self) -> float:
        """Fully populated: every port's cage holds a transceiver (two ports per cage)."""
        return self.base_w + self.cage_w * self.ports / 2


def _power(value: object, where: str) -> float:
    return parse_quantity(value, "power", where)


def gpu_power(gpu: GPUSpec, cap_w: float | None = None) -> GPUPower:
    phases = catalog.table("power")["gpu_phases"]
    activity = {p: float(phases[p]["activity"]) for p in PHASES}
    limit = gpu.tdp_w if cap_w is None else min(gpu.tdp_w, cap_w)
    return GPUPower(gpu.idle_w, gpu.tdp_w, limit, activity)


def _host_row(name: str) -> dict | None:
    hosts = catalog.table("power")["hosts"]
    row = hosts.get(name)
    if row and "same_as" in row:
        row = hosts[row["same_as"]]
    return row


def _component_totals(row: dict, where: str) -> tuple[float, float, dict[str, float]]:
    """(idle, max, max by component) of a host's listed components."""
    idle = full = 0.0
    by_name = {}
    for name, c in row["components"].items():
        n = float(c["count"])
        m = n * _power(c["max"], f"{where}.{name}.max")
        idle += n * _power(c["idle"], f"{where}.{name}.idle")
        full += m
        by_name[name] = m
    return idle, full, by_name


def host_idle_fraction_default() -> float:
    """Idle ÷ full-load host power of the reference node's component table."""
    ref = catalog.table("power")["host_idle_fraction_default"]["from_node"]
    node = node_spec(ref)
    return host_power(node).idle_w / node.host_power_w


def host_power(node: NodeSpec) -> HostPower:
    full = node.host_power_w
    row = _host_row(node.name)
    if row is None:
        idle = host_idle_fraction_default() * full
        return HostPower(idle, full, {"host": full},
                         f"{node.name}: node maximum less GPUs' TDP; idle share from the DGX H100 table")
    where = f"catalog power.hosts.{node.name}"
    comp_idle, comp_full, by_name = _component_totals(row, where)
    rest = max(0.0, full - comp_full)
    by_name["fans, conversion and board"] = rest
    idle = comp_idle + float(row["rest_idle_fraction"]) * rest
    return HostPower(min(idle, full), full, by_name, row["source"])


def node_power(node: NodeSpec, cap_w: float | None = None) -> NodePower:
    return NodePower(node.gpus, gpu_power(node.gpu, cap_w), host_power(node), node.max_power_w)


def switch_power(name: str = "qm9700") -> SwitchPower:
    row = catalog.table("power")["switches"][name]
    where = f"catalog power.switches.{name}"
    return SwitchPower(name, int(row["ports"]), _power(row["base_power"], f"{where}.base_power"),
                       _power(row["cage_power"], f"{where}.cage_power"), row["source"])


def storage_w_per_read_Bps() -> tuple[float, str]:
    """Storage system power per byte/s of read bandwidth, from the reference appliance."""
    row = catalog.table("power")["storage"]
    read = parse_quantity(row["read_bandwidth"], "bandwidth", "catalog power.storage.read_bandwidth")
    return _power(row["power"], "catalog power.storage.power") / read, row["source"]
