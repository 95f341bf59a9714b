"""Collective times for the parallel groups of a job, placed on the fabric graph.

Convention (NCCL's nccl-tests, PERFORMANCE.md): for an all-reduce of S bytes over
n ranks the algorithm bandwidth is S / t and the bus bandwidth
busbw = algbw · 2(n-1)/n; reduce-scatter and all-gather busbw = algbw · (n-1)/n.

A collective runs on every group of its kind at once (all tensor groups reduce
together, all data groups reduce together, every pipeline stage sends at once),
so groups compete for shared links: the NICs of a node, the leaf uplinks, an
oversubscribed core. For each (group kind, algorithm) the model routes every
group's flows on the topology (network/fabric.py), shares links max-min fairly
(network/flows.py) and keeps the slowest group's rate; a collective of any size
then costs ``latency + volume · S / rate``. Like NCCL's tuner, the model picks
the fastest algorithm for each size unless one is named.

Link capacities are line rates times the calibrated efficiencies: ``nvlink``
on NVLink and PCIe links inside a node, ``network`` on NICs and switch links,
``nvls`` for NVLink SHARP (catalog/data/calibration.yaml).

``CommModel(cluster, efficiency)`` alone answers for bare group shapes
(``GroupShape(ranks, ranks_per_node)``): the groups are laid out on the first
nodes with sibling groups on the node's other GPUs. Given the job's
``Placement``, shapes with a ``kind`` use the real groups.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from twin.calibration import Efficiency
from twin.hardware import topology
from twin.hardware.cabling import NetworkCables, network_cables
from twin.hardware.peaks import peak_rows
from twin.hardware.specs import NVLINK_INTRA, ClusterSpec
from twin.network import algorithms as alg
from twin.network.fabric import TIERS, Fabric
from twin.network.fabric_cache import cluster_fabric, node_fabric
from twin.network.flows import max_min_rates
from twin.network.records import Cables, FabricSummary, GroupSummary, su_rows
from twin.network.symmetry import INSIDE, NODE_RATES, cluster_node_kind, inside_key, node_key, one_node
from twin.workload.placement import GroupShape, Placement

if TYPE_CHECKING:
    import networkx as nx

_TIER_NAMES = {TIERS.index("nvlink"): "node", TIERS.index("pcie"): "node", TIERS.index("nic"): "leaf",
               TIERS.index("leaf-spine"): "spine", TIERS.index("spine-core"): "core"}
_REACH_ORDER = ("none", "node", "leaf", "spine", "core")


@dataclass(frozen=True)
class PhaseRate:
    """One phase of a collective on the fabric: under a protocol it takes
    ``latency + volume · S / (protocol bandwidth · rate)`` for a collective of S bytes."""
    rate_Bps: float              # slowest group's progress rate (bus bandwidth for ring all-reduce)
    volume: float
    hops: alg.Hops
    reach: str                   # highest tier the traffic climbs: node, leaf, spine, core


@dataclass(frozen=True, eq=False)
class CommModel:
    cluster: ClusterSpec
    efficiency: Efficiency
    placement: Placement | None = None
    graph: nx.Graph | None = None            # default: the cluster's fabric; pass a degraded copy to compare
    latency: bool = True                     # False: every collective its bytes alone (``bandwidth_only``)
    _cache: dict = field(default_factory=dict, init=False, repr=False)

    # -- set-up ----------------------------------------------------------------------------
    @classmethod
    def on_fabric(cls, fabric: Fabric, cluster: ClusterSpec, efficiency: Efficiency,
                  placement: Placement | None = None) -> "CommModel":
        """A model on a fabric already compiled (with ``efficiency``): many jobs placed on one cluster
        share its routing tables, and a job's share of contended pools is ``fabric.scaled_pools``."""
        model = cls(cluster, efficiency, placement, fabric.graph)
        model._cache["fabric"] = fabric
        return model

    def bandwidth_only(self) -> "CommModel":
        """This model on the same fabric with every collective's latency set to zero: what its bytes alone
        cost, so that a step can show how much of its communication is NCCL's latency. One per model."""
        model = self._cache.get("bandwidth_only")
        if model is None:
            model = CommModel(self.cluster, self.efficiency, self.placement, self.graph, latency=False)
            model._cache["fabric"] = self.fabric
            self._cache["bandwidth_only"] = model
        return model

    @property
    def fabric(self) -> Fabric:
        """The cluster's shared compiled fabric, or this model's own for a graph passed in."""
        fab = self._cache.get("fabric")
        if fab is None:
            fab = (Fabric(self.graph, self.efficiency) if self.graph is not None
                   else cluster_fabric(self.cluster, self.efficiency))
            self._cache["fabric"] = fab
        return fab

    @property
    def node_kind(self) -> tuple | None:
        """The fabric's ``node_kind``, without building the cluster's own (groups inside nodes need only it)."""
        if self.graph is None and "fabric" not in self._cache:
            return cluster_node_kind(self.cluster, self.efficiency)
        return self.fabric.node_kind

    @property
    def nvls_capable(self) -> bool:
        node = self.cluster.node
        return node.intra == "nvswitch" and node.gpu.name in alg.NVLS_GPUS

    def members(self, group: GroupShape) -> np.ndarray:
        """Ranks of every concurrent group of this shape (the placement's when it names the kind)."""
        gpn = self.cluster.node.gpus
        if self.placement is not None and group.kind:
            return self.placement.members(group.kind)
        return alg.synthetic_members(group, gpn, self.cluster.gpus)

    def groups_key(self, group: GroupShape) -> tuple:
        """What ``members(group)`` is a function of, on this fabric: the key of the memo (``_memo``). A
        placement's groups are keyed by their members themselves (kept on this model), so placements
        that put one kind of group on the same GPUs (tensor groups of one size, whatever the data and
        pipeline sizes around them) share the fabric's phases and rates; groups that each lie inside one
        node by the first node's groups alone (``symmetry.inside_key``), for every fabric of its node kind."""
        if self.placement is not None and group.kind:
            own = ("groups", group)
            key = self._cache.get(own)
            if key is None:
                members = self.placement.members(group.kind)
                key = self._cache[own] = (inside_key(members, self.cluster.node.gpus, self.node_kind)
                                          or ("placed", members.shape, members.tobytes()))
            return key
        return ("bare", group.ranks, group.ranks_per_node)

    def _memo(self, groups_key: tuple) -> dict:
        """Where groups' phases, rates and candidates are kept: process-wide for groups inside nodes (``INSIDE``)."""
        return INSIDE if groups_key[0] == "inside" else self.fabric.memo

    def _rate(self, phase: alg.Phase, group: GroupShape) -> PhaseRate:
        """A phase's slowest-group rate; phases of one pattern on one set of groups are routed once per fabric."""
        groups_key = self.groups_key(group)
        key = ("rate", groups_key, phase.pattern, phase.intra_scale)
        memo = self._memo(groups_key)
        shared = memo.get(key) if phase.pattern else None
        if shared is None:
            shared = self._route_and_share(phase)
            memo[key] = shared
        rate, reach = shared
        return PhaseRate(rate, phase.volume, phase.hops, reach)

    def _route_and_share(self, phase: alg.Phase) -> tuple[float, str]:
        """Route every flow of a phase, share the links max-min fairly: (slowest coflow's rate, reach); a
        phase inside nodes on one node, answered once per kind of node (``network/symmetry.py``) and routed on
        a fabric of that node alone (``fabric_cache.node_fabric``), not the cluster's."""
        kind = self.node_kind
        gpn = self.cluster.node.gpus if kind is not None else self.fabric.gpus_per_node
        inside = one_node(phase, gpn)
        key = node_key(inside, gpn, kind) if inside is not phase else None
        found = NODE_RATES.get(key) if key is not None else None
        if found is None:
            fab = self.fabric if key is None else node_fabric(self.cluster, self.efficiency)
            found = self._routed_and_shared(inside, fab)
            if key is not None:
                NODE_RATES[key] = found
        return found

    def _routed_and_shared(self, phase: alg.Phase, fab: Fabric) -> tuple[float, str]:
        flow, link = fab.route_many(phase.src, phase.dst)
        co = phase.coflow[flow]
        load = phase.weight[flow]
        if phase.intra_scale != 1.0 and len(link):
            load = np.where(fab.tier[link] <= TIERS.index("pcie"), load * phase.intra_scale, load)
        rates = max_min_rates(co, link, load, fab.capacity_Bps, phase.coflows)
        tiers = np.flatnonzero(np.bincount(fab.tier[link], minlength=len(TIERS))).tolist()   # the tiers crossed
        reach = max((_TIER_NAMES.get(t, "none") for t in tiers), key=_REACH_ORDER.index, default="none")
        return float(rates.min()), reach

    def _phases(self, op: str, group: GroupShape, algorithm: str) -> list[PhaseRate] | None:
        groups_key = self.groups_key(group)
        key = (op, groups_key, algorithm, self.efficiency.nvlink / self.efficiency.nvls)
        memo = self._memo(groups_key)
        if key in memo:
            return memo[key]
        members = self.members(group)
        gpn = self.cluster.node.gpus
        mesh = self.cluster.node.nvlink_mesh
        if op == "all_reduce":
            if algorithm == "nvls" and not self.nvls_capable:
                phases = None
            else:
                phases = alg.all_reduce_phases(algorithm, members, gpn,
                                               self.efficiency.nvlink / self.efficiency.nvls, mesh)
        elif op in ("reduce_scatter", "all_gather"):
            phases = [alg.ring_phase(members, gpn, 1.0, 1, mesh)]
        elif op == "broadcast":
            phases = [alg.ring_phase(members, gpn, members.shape[1] / max(1, members.shape[1] - 1), 1, mesh)]
        elif op == "all_to_all":
            phases = [alg.all_to_all_phase(members, gpn)]
        elif op == "send_recv":
            phases = [alg.send_recv_phase(members, gpn)]
        else:
            raise ValueError(op)
        result = [self._rate(p, group) for p in phases] if phases else None
        memo[key] = result
        return result

    def _candidates(self, op: str, group: GroupShape, algorithm: str | None) -> list[tuple[str, list[tuple]]]:
        """Every (algorithm, protocol) that applies, as (algorithm, [(latency, volume, bandwidth) per phase]).

        Memoised per fabric, and on this model by what varies on it (its placement, efficiencies and
        latency are fixed): pricing a collective of any size is then a few multiply-adds.
        """
        own = ("candidates", op, group, algorithm)
        found = self._cache.get(own)
        if found is not None:
            return found
        groups_key = self.groups_key(group)
        key = ("candidates", op, groups_key, algorithm, self.efficiency.nvlink / self.efficiency.nvls,
               self.protocols, self.net_overhead_s, self.latency)
        memo = self._memo(groups_key)
        found = memo.get(key)
        if found is not None:
            self._cache[own] = found
            return found
        names = ((algorithm,) if algorithm else alg.ALL_REDUCE_ALGORITHMS) if op == "all_reduce" else ("ring",)
        found = []
        for name in names:
            phases = self._phases(op, group, name)
            if phases is None:
                continue
            for protocol, latencies in self._latencies([p.hops for p in phases]):
                found.append((name, [(lat if self.latency else 0.0, p.volume,
                                       self._protocol_Bps(protocol, p, group.nodes))
                                     for lat, p in zip(latencies, phases)]))
        memo[key] = self._cache[own] = found
        return found

    def _latencies(self, hops: list[alg.Hops]) -> list[tuple[str, list[float]]]:
        """(protocol, each phase's latency) under every NCCL protocol that applies to all the phases: the
        protocols NCCL's tuner picks the fastest of."""
        out = []
        for protocol in self.protocols:
            latencies = [h.latency_s(protocol, self.net_overhead_s) for h in hops]
            if None not in latencies:
                out.append((protocol, latencies))
        return out

    @property
    def protocols(self) -> tuple[str, ...]:
        """NCCL's protocols on this cluster: LL128 only inside NVLink nodes (tuning.cc enables it by default
        only where the GPUs talk over NVLink and a NIC sits next to each; ``fabric.ll128`` turns it off)."""
        ll128 = self.cluster.fabric.ll128 and self.cluster.node.intra in NVLINK_INTRA
        return ("simple", "ll128", "ll") if ll128 else ("simple", "ll")

    @property
    def net_overhead_s(self) -> float:
        """The host's per-step network post on a ring that crosses nodes (tuning.cc getNetOverhead)."""
        return alg.NET_OVERHEAD_S[alg.cpu_vendor(self.cluster.node.cpu)]

    def _protocol_Bps(self, protocol: str, phase: PhaseRate, nodes: int) -> float:
        """A phase's rate under a protocol: its share of the fabric's rate, LL capped at NCCL's ceiling."""
        table = alg.TREE_PROTOCOLS if phase.hops.tree else alg.PROTOCOLS
        rate = table[protocol].bandwidth * phase.rate_Bps
        if protocol == "ll":
            node = self.cluster.node
            rate = min(rate, alg.ll_max_busbw_Bps(nodes, node.gpu.name, node.cpu))
        return rate

    def _best(self, op: str, size_bytes: float, group: GroupShape, algorithm: str | None) -> tuple[float, str]:
        """The fastest candidate at ``size_bytes``: (seconds, algorithm); each phase costs
        ``latency + volume · S / bandwidth`` (``PhaseRate.time_s``). A step asks for the same
        collective once per layer: answers are kept on this model."""
        key = (op, size_bytes, group, algorithm)
        best = self._cache.get(key)
        if best is not None:
            return best
        best = (float("inf"), "")
        for name, phases in self._candidates(op, group, algorithm):
            t = sum([latency + volume * size_bytes / bandwidth for latency, volume, bandwidth in phases])
            if t < best[0]:
                best = (t, name)
        if not best[1]:
            raise ValueError(f"algorithm {algorithm!r} does not apply to {op} over {group}")
        self._cache[key] = best
        return best

    # -- collectives ----------------------------------------------------------------------
    def all_reduce_s(self, size_bytes: float, group: GroupShape, algorithm: str | None = None) -> float:
        """All-reduce of ``size_bytes`` on every group of this shape at once (fastest algorithm unless named)."""
        if group.ranks <= 1 or size_bytes <= 0:
            return 0.0
        return self._best("all_reduce", size_bytes, group, algorithm)[0]

    def scalar_all_reduce_s(self, group: GroupShape) -> float:
        """All-reduce of a few bytes (a gradient norm, a found-inf flag) on every group of this shape: the least
        latency of the algorithms and protocols ``all_reduce_s`` chooses from. Its bytes are left out: they add
        ``volume · S / rate``, nanoseconds for S of a few bytes against latencies of tens of microseconds, and
        their rate would mean routing the groups on the fabric, where the latency needs only their layout
        (``algorithms.all_reduce_hops``)."""
        if group.ranks <= 1 or not self.latency:
            return 0.0
        own = ("scalar all-reduce", group)
        found = self._cache.get(own)
        if found is None:
            _, m, k, uniform = alg.layout(self.members(group), self.cluster.node.gpus)
            hops = [alg.all_reduce_hops(name, group.ranks, m, k, uniform) for name in alg.ALL_REDUCE_ALGORITHMS
                    if name != "nvls" or self.nvls_capable]
            found = self._cache[own] = min(sum(latencies) for phases in hops if phases is not None
                                           for _, latencies in self._latencies(phases))
        return found

    def reduce_scatter_s(self, size_bytes: float, group: GroupShape) -> float:
        """Reduce-scatter of a ``size_bytes`` buffer (each rank ends with 1/n of it)."""
        if group.ranks <= 1 or size_bytes <= 0:
            return 0.0
        return self._best("reduce_scatter", size_bytes, group, None)[0]

    def all_gather_s(self, size_bytes: float, group: GroupShape) -> float:
        """All-gather into a ``size_bytes`` buffer: the same traffic as reduce-scatter."""
        if group.ranks <= 1 or size_bytes <= 0:
            return 0.0
        return self._best("all_gather", size_bytes, group, None)[0]

    def broadcast_s(self, size_bytes: float, group: GroupShape) -> float:
        """Broadcast of ``size_bytes`` from one rank, pipelined along a ring."""
        if group.ranks <= 1 or size_bytes <= 0:
            return 0.0
        return self._best("broadcast", size_bytes, group, None)[0]

    def all_to_all_s(self, size_bytes: float, group: GroupShape) -> float:
        """All-to-all where each rank sends ``size_bytes`` in all, (n-1)/n of it away."""
        if group.ranks <= 1 or size_bytes <= 0:
            return 0.0
        return self._best("all_to_all", size_bytes, group, None)[0]

    def send_recv_s(self, size_bytes: float, group: GroupShape) -> float:
        """Point-to-point transfer between pipeline neighbours of ``group``, every stage sending at once."""
        if group.ranks <= 1 or size_bytes <= 0:
            return 0.0
        return self._best("send_recv", size_bytes, group, None)[0]

    # -- reporting --------------------------------------------------------------------------
    def busbw_Bps(self, group: GroupShape, op: str = "all_reduce", size_bytes: float = 2.0**32,
                  algorithm: str | None = None) -> float:
        """NCCL bus bandwidth of ``op`` at ``size_bytes`` (default 4 GiB, the large-message plateau)."""
        n = group.ranks
        if n <= 1:
            return 0.0
        t = self._best(op, size_bytes, group, algorithm)[0]
        factor = {"all_reduce": 2 * (n - 1) / n, "reduce_scatter": (n - 1) / n, "all_gather": (n - 1) / n,
                  "all_to_all": (n - 1) / n, "broadcast": 1.0, "send_recv": 1.0}[op]
        return size_bytes / t * factor

    def algorithm(self, size_bytes: float, group: GroupShape) -> str:
        """The all-reduce algorithm the model picks at this size."""
        return self._best("all_reduce", size_bytes, group, None)[1]

    def reach(self, group: GroupShape) -> str:
        """Highest tier a group's ring traffic climbs: none, node, leaf, spine or core."""
        if group.ranks <= 1:
            return "none"
        op = "send_recv" if group.kind == "pipeline" else "reduce_scatter"
        return self._phases(op, group, "ring")[0].reach

    def summary(self, sizes_bytes: dict[str, float] | None = None) -> "FabricSummary":
        """The fabric and where each parallel group lands (the ``Result.fabric`` record)."""
        groups: dict[str, GroupSummary] = {}
        if self.placement is not None:
            p = self.placement
            sizes = sizes_bytes or {}
            for kind in ("tensor", "data", "pipeline", "expert", "expert_data"):
                shape = getattr(p, kind)
                if shape.ranks <= 1 or (kind == "expert_data" and p.expert.ranks <= 1):
                    continue
                reach = self.reach(shape)
                level = _REACH_ORDER.index(reach)
                algorithm = None
                if kind == "pipeline":
                    busbw = self.busbw_Bps(shape, "send_recv")
                elif kind == "expert":
                    busbw = self.busbw_Bps(shape, "all_to_all")
                else:
                    size = sizes.get(kind, 2.0**32)
                    algorithm = self.algorithm(size, shape)
                    busbw = self.busbw_Bps(shape, "all_reduce", size)
                groups[kind] = GroupSummary(
                    size=shape.ranks, count=int(p.members(kind).shape[0]), ranks_per_node=shape.ranks_per_node,
                    nodes=shape.nodes, reach=reach, crosses_nodes=level >= _REACH_ORDER.index("leaf"),
                    crosses_leaves=level >= _REACH_ORDER.index("spine"), crosses_spines=reach == "core",
                    busbw_Bps=busbw, algorithm=algorithm)
        return replace(self._bare_summary(), groups=groups,
                       order=self.placement.order if self.placement is not None else None)

    def _bare_summary(self) -> "FabricSummary":
        """The fabric without a job on it: counts, capacities and scalable units (once per fabric)."""
        memo = self.fabric.memo
        found = memo.get(("summary",))
        if found is not None:
            return found
        g = self.fabric.graph
        c = topology.counts(g)
        found = memo[("summary",)] = FabricSummary(
            topology=g.graph.get("topology", ""),
            nodes=int(g.graph["nodes"]),
            gpus=c.get("gpu", 0),
            nics=c.get("nic", 0),
            nvswitch_chips=c.get("nvswitch", 0) * self.cluster.node.nvswitches,   # not the graph's: Fabric.rerated
            scalable_units=int(g.graph.get("scalable_units", 1)),
            nodes_per_su=int(g.graph.get("nodes_per_su", g.graph["nodes"])),
            leaves=c.get("leaf", 0),
            spines=c.get("spine", 0),
            cores=c.get("core", 0),
            storage_leaves=c.get("sleaf", 0),
            cables=Cables(node_leaf=c.get("cables_nic", 0) + c.get("cables_mgmt", 0),
                          leaf_spine=c.get("cables_leaf-spine", 0), spine_core=c.get("cables_spine-core", 0),
                          storage=c.get("cables_storage", 0)),
            link_Bps=float(g.graph.get("link_Bps", 0.0)),
            oversubscription=float(g.graph.get("oversubscription", 1.0)),
            injection_Bps=topology.injection_Bps(g),
            bisection_Bps=topology.bisection_Bps(g),
            spine_scope="global" if c.get("core", 0) == 0 else "su",
            su=tuple(su_rows(g)),
            groups={},
            order=None,
            networks=self._networks(c, int(g.graph.get("scalable_units", 1))
                                    * int(g.graph.get("nodes_per_su", g.graph["nodes"]))),
            peaks=peak_rows(self.cluster.node, int(g.graph["nodes"]),
                            int(g.graph.get("nodes_per_su", g.graph["nodes"]))),
            peaks_source=self.cluster.node.gpu.source.split(";")[0],
        )
        return found

    def _networks(self, c: dict[str, int], node_slots: int) -> NetworkCables:
        """Cables of the compute, storage and management networks and the power cords (``hardware/cabling.py``)."""
        cl = self.cluster
        storage = cl.storage.read_Bps if cl.storage.system else None
        compute = c.get("cables_nic", 0) + c.get("cables_mgmt", 0) + c.get("cables_leaf-spine", 0) \
            + c.get("cables_spine-core", 0)
        return network_cables(cl.node, cl.nodes, math.ceil(cl.nodes / cl.nodes_per_rack), compute,
                              c.get("leaf", 0) + c.get("spine", 0) + c.get("core", 0), c.get("cables_storage", 0),
                              c.get("sleaf", 0), storage, node_slots)

    def storage_write_s(self, bytes_per_node: float, nodes: int | None = None) -> float:
        """Every node (or the first ``nodes``) writing ``bytes_per_node`` to storage at once."""
        fab = self.fabric
        count = fab.nodes if nodes is None else min(nodes, fab.nodes)
        co, link, load = [], [], []
        for n in range(count):
            paths = fab.storage_paths(n)
            for ids in paths:
                co.extend([n] * len(ids))
                link.extend(ids)
                load.extend([1.0 / len(paths)] * len(ids))
        if not link or bytes_per_node <= 0:
            return 0.0
        rates = max_min_rates(np.array(co), np.array(link), np.array(load), fab.capacity_Bps, count)
        return bytes_per_node / float(rates.min())
