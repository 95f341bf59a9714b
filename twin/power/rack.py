"""Racks: how many, what each draws on average and at peak, and whether it fits its limit.

Nodes fill racks in order, ``nodes_per_rack`` at a time: the busy (training) nodes
first, then nodes without work, then spares. Racks therefore come in at most three
kinds (all busy, one mixed, all idle), computed once each rather than per node.
Switches and storage stand in their own racks and are not counted here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from twin.power.energy import ClusterPower


@dataclass(frozen=True)
class RackGroup:
    racks: int
    busy_nodes: int              # per rack
    idle_nodes: int              # per rack
    avg_w: float                 # per rack, training
    peak_w: float                # per rack, every busy node at its limit


@dataclass(frozen=True)
class RackPower:
    racks: int
    nodes_per_rack: int
    groups: list[RackGroup]
    limit_w: float | None

    @property
    def peak_w(self) -> float:
        return max((g.peak_w for g in self.groups), default=0.0)

    @property
    def avg_w(self) -> float:
        """The busiest rack's training average."""
        return max((g.avg_w for g in self.groups), default=0.0)

    @property
    def over_limit(self) -> int:
        """Racks whose peak exceeds the limit."""
        if self.limit_w is None:
            return 0
        return sum(g.racks for g in self.groups if g.peak_w > self.limit_w)



def rack_power(power: ClusterPower, nodes_per_rack: int, limit_w: float | None) -> RackPower:
    busy, idle = power.busy_nodes, power.idle_nodes
    total = busy + idle
    racks = math.ceil(total / nodes_per_rack)
    busy_w, idle_w, peak_node_w = power.busy_node_w("train"), power.node.idle_w, power.node.peak_w

    def group(n: int, b: int, i: int) -> RackGroup:
        return RackGroup(n, b, i, b * busy_w + i * idle_w, b * peak_node_w + i * idle_w)

    groups = []
    full_busy = busy // nodes_per_rack
    if full_busy:
        groups.append(group(full_busy, nodes_per_rack, 0))
    rest_busy = busy - full_busy * nodes_per_rack
    remaining_idle = idle
    if rest_busy:
        mixed_idle = min(nodes_per_rack - rest_busy, remaining_idle)
        groups.append(group(1, rest_busy, mixed_idle))
        remaining_idle -= mixed_idle
    full_idle = remaining_idle // nodes_per_rack
    if full_idle:
        groups.append(group(full_idle, 0, nodes_per_rack))
    if remaining_idle - full_idle * nodes_per_rack:
        groups.append(group(1, 0, remaining_idle - full_idle * nodes_per_rack))
    return RackPower(racks, nodes_per_rack, groups, limit_w)


def cap_to_fit(power: ClusterPower, nodes_per_rack: int, limit_w: float) -> float | None:
    """The highest GPU power cap at which a rack of busy nodes peaks within ``limit_w``, or None.

    A node's peak is linear in the GPU limit L: gpus·L + host_idle + (host_full - host_idle)·(L - idle)/(TDP - idle).
    """
    node = power.node
    gpu, host = node.gpu, node.host
    span = gpu.tdp_w - gpu.idle_w
    slope = node.gpus + (host.full_w - host.idle_w) / span
    intercept = host.idle_w - (host.full_w - host.idle_w) * gpu.idle_w / span
    cap = (limit_w / nodes_per_rack - intercept) / slope
    return cap if gpu.idle_w < cap < gpu.tdp_w else None


def rack_warning(racks: RackPower, power: ClusterPower, node_name: str) -> str | None:
    """A clear sentence when racks would exceed their power limit."""
    if racks.limit_w is None or racks.over_limit == 0:
        return None
    n = racks.nodes_per_rack
    fit = max(1, int(racks.limit_w // power.node.peak_w))
    advice = [f"nodes_per_rack: {fit}" if fit < n else None]
    cap = cap_to_fit(power, n, racks.limit_w)
    if cap is not None:
        advice.append(f"gpu_power_cap: {math.floor(cap)} W")
    hint = " or ".join(a for a in advice if a)
    return (f"rack power: {racks.over_limit} of {racks.racks} racks of {n} x {node_name} peak at "
            f"{racks.peak_w / 1e3:.1f} kW, above rack_power_limit {racks.limit_w / 1e3:.1f} kW"
            + (f"; {hint} would fit" if hint else "; no rack layout fits: a single node exceeds the limit"))
