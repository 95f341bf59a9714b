"""Step times of jobs where the scheduler put them: placement classes, shared switch pools, a cache.

A job's step time depends on where its nodes are and on the traffic of the other
jobs whose flows cross the same switch pools (the up-links of a leaf to the spines,
a pod's links to the core: ``network/fabric.py``).

**Placement class.** The nodes of one scalable unit (SU) are alike: rail ``r`` of
every node of an SU plugs into the SU's leaf ``r`` (rail-optimised), or the pod is
full bisection (fat tree). A job's step time therefore depends on how many of its
nodes sit in each SU it spans, in SU order: its class, ``(16,)`` packed in one SU,
``(9, 7)`` split over two. A class is priced once, on a canonical placement (the
first nodes of consecutive SUs), with the engines of the single-job twin (operator
model, collectives on the fabric, the SimPy iteration), and cached with the job's
shape. A job inside one node has the class ``()``.

**Sharing.** A job whose traffic crosses pools is one coflow there: its
representative collective, routed on its real SUs, puts ``L_p`` bytes on pool ``p``
per byte of progress (summed over its groups, which move in lockstep), and its own
NVLink and NIC links cap it at ``r_nic``. The max-min fair rates of all such jobs
together (``network/flows.py``) give each its rate ``r``; alone it would get
``r_solo = min(r_nic, min_p c_p / L_p)``; its share is ``g = r / r_solo`` (≤ 1).
The representative collective is the data-parallel ring when it crosses a pool,
else the expert all-to-all, the pipeline send/recv or the tensor ring, in that
order. Crossing jobs are taken to communicate at the same time: a bound on
contention (jobs whose collectives interleave slow each other less).

**Step time at a share.** The job alone on pools scaled by ``f = g·r_solo / r_pool``
(``r_pool = min_p c_p / L_p``) sees exactly the rate ``g·r_solo`` on its
representative collective. The engines price the class at ``1/g`` = 1, 2, 4, ... 64
(every pool the job crosses scaled alike) and the step time is interpolated
linearly in ``1/g`` between them: exact where the exposed communication is
bandwidth-bound on the pools.
"""

from __future__ import annotations

import bisect
import copy
from dataclasses import dataclass

import numpy as np

from twin.calibration import Efficiency
from twin.hardware.specs import ClusterSpec
from twin.network import algorithms as alg
from twin.network.collectives import CommModel
from twin.network.fabric import Fabric
from twin.network.flows import max_min_rates
from twin.operations.jobs import PricedStep, Shape
from twin.workload.placement import place

# Inverse shares 1/g at which a class is priced; beyond the last, extrapolated linearly.
INVERSE_SHARES = (1, 2, 4, 8, 16, 32, 64)
# Group kinds whose traffic stands for a job's, in order of preference (see the module docstring).
REPRESENTATIVE_KINDS = ("data", "expert", "pipeline", "tensor")


@dataclass(frozen=True)
class Traffic:
    """A job's representative collective on the switch pools of its real SUs."""
    pools: np.ndarray                # resource ids (network/fabric.py)
    loads: np.ndarray                # bytes on each pool per byte of progress
    nic_rate_Bps: float              # its rate with unlimited pools (its own links)
    pool_rate_Bps: float             # its rate with unlimited links (the pools alone)

    @property
    def solo_rate_Bps(self) -> float:
        return min(self.nic_rate_Bps, self.pool_rate_Bps)


@dataclass(frozen=True)
class _Canonical:
    """A class's representative traffic, pools named by (SU position, owner offset, direction)."""
    keys: tuple[tuple, ...]
    loads: np.ndarray
    nic_rate_Bps: float
    pool_rate_Bps: float


class StepTimes:
    """Step times by (shape, placement class, share), priced lazily with the engines and kept."""

    def __init__(self, cluster: ClusterSpec, efficiency: Efficiency, fabric: Fabric):
        self.cluster, self.efficiency = cluster, efficiency
        self.fabric = fabric
        graph = fabric.graph
        self.gpus_per_node = cluster.node.gpus
        su = np.zeros(cluster.nodes, dtype=np.int64)
        for v, data in graph.nodes(data=True):
            if data.get("kind") == "nic" and v[2] == 0:
                su[v[1]] = int(data.get("su", 0))
        self.node_su: tuple[int, ...] = tuple(su.tolist())   # Python ints: a job's class is counted often
        self.su_nodes = [np.nonzero(su == s)[0] for s in range(int(su.max()) + 1)]
        leaves: dict[int, list[int]] = {}
        for v, data in graph.nodes(data=True):
            if data.get("kind") == "leaf":
                leaves.setdefault(int(data.get("su", 0)), []).append(v[1])
        first_leaf = {s: min(ids) for s, ids in leaves.items()}
        leaf_su = {i: s for s, ids in leaves.items() for i in ids}
        self._pool_key: dict[int, tuple] = {}          # resource id → (su, kind, offset, direction)
        self._pool_id: dict[tuple, int] = {}
        for rid, (owner, direction) in self.fabric.pool_owners().items():
            if isinstance(owner, tuple):
                s = leaf_su[owner[1]]
                key = (s, "leaf", owner[1] - first_leaf[s], direction)
            else:
                key = (int(owner), "pod", 0, direction)
            self._pool_key[rid] = key
            self._pool_id[key] = rid
        self._priced: dict[tuple, PricedStep] = {}
        self._canonical: dict[tuple, _Canonical | None] = {}
        self._traffic: dict[tuple, Traffic | None] = {}
        self._shares: dict[tuple[int, ...], tuple[list[Traffic], np.ndarray]] = {}

    def repriced(self) -> "StepTimes":
        """Step times on the same cluster and fabric that price every step anew, for the same shapes with
        another step function (a band's edge); they share what depends only on where the jobs sit: each
        class's canonical traffic, each placement's traffic, the shares of crossing jobs."""
        other = copy.copy(self)
        other._priced = {}
        return other

    # -- classes -------------------------------------------------------------------------
    def classify(self, nodes: tuple[int, ...], gpus: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(class, SUs in order) of a job on ``nodes``; a job inside one node has class ()."""
        if gpus <= self.gpus_per_node:
            return (), ()
        counts: dict[int, int] = {}
        node_su = self.node_su
        for n in nodes:
            su = node_su[n]
            counts[su] = counts.get(su, 0) + 1
        sus = tuple(sorted(counts))
        return tuple(counts[s] for s in sus), sus

    def packed_class(self, gpus: int) -> tuple[int, ...]:
        """The class of a job of ``gpus`` GPUs on the cluster's first nodes (alone, packed)."""
        if gpus <= self.gpus_per_node:
            return ()
        return self.classify(tuple(range(-(-gpus // self.gpus_per_node))), gpus)[0]

    @property
    def priced_count(self) -> int:
        """Engine runs so far: distinct (shape, class, share)."""
        return len(self._priced)

    def canonical_nodes(self, cls: tuple[int, ...]) -> tuple[int, ...]:
        """The first nodes of consecutive SUs, ``cls[i]`` of them in the i-th."""
        if not cls:
            return (0,)
        return tuple(int(n) for i, c in enumerate(cls) for n in self.su_nodes[i][:c])

    # -- pricing -------------------------------------------------------------------------
    def priced(self, shape: Shape, cls: tuple[int, ...], inverse_share: int = 1) -> PricedStep:
        """The step of ``shape`` on class ``cls`` with every pool it crosses at ``1/inverse_share`` of its rate."""
        key = (shape.key, cls, inverse_share)
        found = self._priced.get(key)
        if found is None:
            placement = place(shape.plan, self.gpus_per_node, shape.order, self.canonical_nodes(cls))
            fabric = self.fabric
            canon = self._canonical_traffic(shape, cls)
            if inverse_share != 1 and canon is None:
                return self.priced(shape, cls)
            if inverse_share != 1:
                fabric = fabric.scaled_pools(canon.nic_rate_Bps / canon.pool_rate_Bps / inverse_share
                                             if canon.nic_rate_Bps < canon.pool_rate_Bps else 1.0 / inverse_share)
            comm = CommModel.on_fabric(fabric, self.cluster, self.efficiency, placement)
            found = shape.step(comm, placement)
            self._priced[key] = found
        return found

    def step_s(self, shape: Shape, cls: tuple[int, ...], share: float = 1.0) -> float:
        """Step time at a share of the contended pools, interpolated linearly in 1/share."""
        if share >= 1.0:
            return self.priced(shape, cls).step_s
        x = 1.0 / share
        i = min(bisect.bisect_right(INVERSE_SHARES, x), len(INVERSE_SHARES) - 1)
        lo, hi = INVERSE_SHARES[i - 1], INVERSE_SHARES[i]
        t_lo, t_hi = self.priced(shape, cls, lo).step_s, self.priced(shape, cls, hi).step_s
        return t_lo + (t_hi - t_lo) * (x - lo) / (hi - lo)

    # -- traffic on the pools ---------------------------------------------------------------
    def _canonical_traffic(self, shape: Shape, cls: tuple[int, ...]) -> _Canonical | None:
        key = (shape.key, cls)
        if key in self._canonical:
            return self._canonical[key]
        found = None
        if cls:
            placement = place(shape.plan, self.gpus_per_node, shape.order, self.canonical_nodes(cls))
            fab = self.fabric
            for kind in REPRESENTATIVE_KINDS:
                shape_of = getattr(placement, kind)
                if shape_of.ranks <= 1 or shape_of.ranks_per_node >= shape_of.ranks:
                    continue
                members = placement.members(kind)
                if kind == "expert":
                    phase = alg.all_to_all_phase(members, self.gpus_per_node)
                elif kind == "pipeline":
                    phase = alg.send_recv_phase(members, self.gpus_per_node)
                else:
                    phase = alg.ring_phase(members, self.gpus_per_node, 1.0, 1, self.cluster.node.nvlink_mesh)
                flow, link = fab.route_many(phase.src, phase.dst)
                load = phase.weight[flow]
                on_pool = np.isin(link, list(self._pool_key))
                if not on_pool.any():
                    continue
                pools, index = np.unique(link[on_pool], return_inverse=True)
                pool_load = np.bincount(index, weights=load[on_pool])
                capacity = fab.capacity_Bps.copy()
                capacity[pools] = np.inf
                nic = float(max_min_rates(phase.coflow[flow], link, load, capacity, phase.coflows).min())
                pool_rate = float((fab.capacity_Bps[pools] / pool_load).min())
                keys = tuple(self._pool_key[int(p)] for p in pools)      # canonical SU index = position in the class
                found = _Canonical(keys, pool_load, nic, pool_rate)
                break
        self._canonical[key] = found
        return found

    def traffic(self, shape: Shape, cls: tuple[int, ...], sus: tuple[int, ...]) -> Traffic | None:
        """The job's representative traffic on the pools of its SUs ``sus``, or None when it crosses no pool
        (kept: the jobs of one shape placed alike share it, and nothing changes it)."""
        key = (shape.key, cls, sus)
        if key in self._traffic:
            return self._traffic[key]
        canon = self._canonical_traffic(shape, cls)
        found = None
        if canon is not None:
            pools = np.array([self._pool_id[(sus[k[0]],) + k[1:]] for k in canon.keys], dtype=np.int64)
            found = Traffic(pools, canon.loads, canon.nic_rate_Bps, canon.pool_rate_Bps)
        self._traffic[key] = found
        return found

    def shares(self, traffics: list[Traffic]) -> np.ndarray:
        """Each job's share ``r / r_solo`` of its traffic when all of them cross the pools together; kept for
        each list of traffics (the jobs' traffics are kept objects, so the same jobs placed alike recur)."""
        key = tuple(id(t) for t in traffics)
        found = self._shares.get(key)
        if found is None:
            found = self._solved_shares(traffics)
            self._shares[key] = found
        return found[1]

    def _solved_shares(self, traffics: list[Traffic]) -> tuple[list[Traffic], np.ndarray]:
        """(the traffics, kept alive while their ids key the answer; their shares)."""
        if not traffics:
            return list(traffics), np.zeros(0)
        n = len(traffics)
        base = len(self.fabric.capacity_Bps)
        co = np.concatenate([np.full(len(t.pools) + 1, j) for j, t in enumerate(traffics)])
        link = np.concatenate([np.append(t.pools, base + j) for j, t in enumerate(traffics)])
        load = np.concatenate([np.append(t.loads, 1.0) for t in traffics])
        capacity = np.concatenate([self.fabric.capacity_Bps, [t.nic_rate_Bps for t in traffics]])
        rates = max_min_rates(co, link, load, capacity, n)
        solo = np.array([t.solo_rate_Bps for t in traffics])
        shares = np.minimum(1.0, rates / solo)
        shares.flags.writeable = False
        return list(traffics), shares
