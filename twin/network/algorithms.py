"""Collective algorithms as traffic: which GPU sends how much to which, in which phases.

A collective of ``S`` bytes on every group of one kind (all tensor groups, all
data groups...) runs as one or more *phases*. A phase is a set of flows
(source rank, destination, weight) grouped into coflows (one per group, or one
per pair for point-to-point); a flow of weight ``w`` moves ``w · volume · S``
bytes. The phase takes ``latency + volume · S / rate`` where ``rate`` is its
slowest coflow's max-min fair progress rate on the fabric (network/flows.py).
With NCCL's convention a ring all-reduce has ``volume = 2(n-1)/n`` and its
progress rate is its bus bandwidth.

Algorithms (NCCL's, as its documentation and tuning model describe them):

- **ring**: members sorted by GPU, so a node's members are consecutive. With
  ``k`` members on each of ``m`` nodes NCCL runs ``k`` rings (channels), one per
  NIC: each channel crosses the node on NVLink and leaves it through a
  different rail, so a GPU's NVLink carries ``(k-1)/k`` of the bus volume and
  its NIC ``1/k``, to the same rail of the next node. Bus bandwidth
  ``min(NVLink · k/(k-1), k · NIC)``: 8 × 24 GB/s = 192 GB/s on DGX A100 with HDR.
- **tree** (all-reduce across nodes): NCCL's double binary tree; every node
  still sends and receives about ``2S``, so its links carry the ring's load with
  ``volume = 2``, but its latency grows with ``log2(nodes)`` instead of ``n``.
- **nvls** (all-reduce inside one NVSwitch node, H100 and later): NVLink SHARP
  reduces in the switch, so each GPU sends ``S`` and receives ``S`` once
  (``volume = 1``) at its own efficiency (calibration ``nvls``).
- **hierarchical** (all-reduce across nodes): reduce-scatter inside each node,
  ``k`` parallel all-reduces of ``S/k`` across nodes (one per rail), all-gather
  inside each node; the phases run one after the other.
- **all-to-all**: every member sends ``S/n`` to every other member at once.
- **send/recv**: every pipeline stage sends to the next one at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.workload.placement import GroupShape



@dataclass(frozen=True)
class Protocol:
    """An NCCL protocol on one algorithm: its latencies and the share of the fabric's rate it delivers."""
    base_s: float              # per collective launch (tuning.cc baseLat)
    nvlink_step_s: float       # per step over NVLink (or PCIe) inside a node (hwLat[NVLINK])
    network_step_s: float      # per step across the network (hwLat[NET])
    bandwidth: float           # fraction of the Simple protocol's bandwidth


# NCCL's tuning model, src/graph/tuning.cc (NCCL 2.19-2.23), in µs: baseLat per
# collective, hwLat per step on NVLink and on the network, for each algorithm and
# protocol. Simple moves whole chunks and flushes them: the lowest per-byte cost, the
# highest per-step latency (14 µs across the network). LL (8-byte stores carrying
# their own flag) has the lowest latency at half the bus bandwidth (``busBw · 0.5``,
# capped at ``LL_MAX_BUSBW_GBps``); LL128 (128-byte lines, 120 bytes of data) keeps
# 0.92 of the bandwidth at a latency between the two. Tree all-reduce with LL runs at
# ``busBw / 3.8`` and with LL128 at ``busBw · 120/128``.
PROTOCOLS = {
    "simple": Protocol(base_s=8.4e-6, nvlink_step_s=3.4e-6, network_step_s=14.0e-6, bandwidth=1.0),
    "ll128": Protocol(base_s=14.0e-6, nvlink_step_s=1.9e-6, network_step_s=4.0e-6, bandwidth=0.92),
    "ll": Protocol(base_s=6.6e-6, nvlink_step_s=0.6e-6, network_step_s=2.7e-6, bandwidth=0.5),
}
TREE_PROTOCOLS = {
    "simple": Protocol(base_s=8.4e-6, nvlink_step_s=4.0e-6, network_step_s=14.0e-6, bandwidth=1.0),
    "ll128": Protocol(base_s=14.0e-6, nvlink_step_s=1.25e-6, network_step_s=8.5e-6, bandwidth=120 / 128),
    "ll": Protocol(base_s=6.8e-6, nvlink_step_s=0.6e-6, network_step_s=5.0e-6, bandwidth=1 / 3.8),
}
# tuning.cc getNetOverhead: a ring that crosses nodes posts a network operation on every
# step, so even its NVLink steps take at least 1 µs (Intel hosts; 2 µs on AMD hosts),
# three times that under Simple.
NET_OVERHEAD_S = {"intel": 1.0e-6, "amd": 2.0e-6}
SIMPLE_NET_OVERHEAD_FACTOR = 3.0
# tuning.cc llMaxBws (GB/s): the LL protocol's bus-bandwidth ceiling. One node: by GPU
# generation; two nodes and more than two: by host CPU (Intel row, AMD row).
LL_MAX_BUSBW_GBps = {
    "volta": (39.0, 39.0, 20.4), "ampere": (87.7, 22.5, 19.0),
    "hopper": (141.0, 45.0, 35.0), "blackwell": (282.0, 90.0, 70.0),
}
LL_MAX_BUSBW_MULTINODE_ROW = {"intel": "volta", "amd": "ampere"}


def gpu_generation(gpu: str) -> str:
    """The row of NCCL's per-generation tables a catalog GPU falls in."""
    name = gpu.lower()
    if name.startswith(("b200", "gb200", "b100")):
        return "blackwell"
    if name.startswith(("h100", "h200", "gh200")):
        return "hopper"
    if name.startswith(("a100", "a10", "a30", "a40", "l4", "l40")):
        return "ampere"
    return "volta"


def cpu_vendor(cpu: str) -> str:
    """intel or amd, from a node's CPU description (NCCL's getNetOverhead treats others as Intel)."""
    return "amd" if "amd" in cpu.lower() else "intel"


def ll_max_busbw_Bps(nodes: int, gpu: str, cpu: str) -> float:
    """The LL protocol's bus-bandwidth ceiling for a group spanning ``nodes`` nodes (tuning.cc llMaxBws)."""
    row = gpu_generation(gpu) if nodes <= 1 else LL_MAX_BUSBW_MULTINODE_ROW[cpu_vendor(cpu)]
    return LL_MAX_BUSBW_GBps[row][min(nodes, 3) - 1] * 1e9


# NVLS has a larger fixed cost than a ring (switch multicast set-up; tuning.cc: hwLat
# NVLS 25 µs on NVLink) and runs the Simple protocol only, so small all-reduces stay on rings.
NVLS_BASE_LATENCY_S = 25e-6
# GPUs whose NVSwitch generation reduces in the switch (NVLink SHARP, third-generation
# NVSwitch of HGX/DGX H100 and later; NVIDIA H100 Tensor Core GPU Architecture whitepaper, 2022).
NVLS_GPUS = frozenset({"h100-sxm", "h200", "b200"})

ALL_REDUCE_ALGORITHMS = ("ring", "tree", "nvls", "hierarchical")


@dataclass(frozen=True)
class Hops:
    """What a phase's latency is made of: launches, NVLink steps and network steps in sequence."""
    launches: float = 1.0
    nvlink_steps: float = 0.0
    network_steps: float = 0.0
    nvls: bool = False
    tree: bool = False                  # NCCL's tree latencies instead of the ring's
    one_per_node: bool = False          # one rank per node: tuning.cc prices each network step at the tree's

    def latency_s(self, protocol: str = "simple", net_overhead_s: float = 0.0) -> float | None:
        """Latency under an NCCL protocol; None where the protocol does not apply (NVLS is Simple only).

        ``net_overhead_s``: the host's per-step network post (``NET_OVERHEAD_S``), the floor of every
        step of a ring that crosses nodes."""
        if self.nvls and protocol != "simple":
            return None
        p = (TREE_PROTOCOLS if self.tree else PROTOCOLS)[protocol]
        base = NVLS_BASE_LATENCY_S if self.nvls else p.base_s
        nvlink_step = p.nvlink_step_s
        if self.network_steps > 0 and not self.tree:
            factor = SIMPLE_NET_OVERHEAD_FACTOR if protocol == "simple" else 1.0
            nvlink_step = max(nvlink_step, factor * net_overhead_s)
        network_step = TREE_PROTOCOLS[protocol].network_step_s if self.one_per_node else p.network_step_s
        return self.launches * base + self.nvlink_steps * nvlink_step + self.network_steps * network_step


@dataclass(frozen=True)
class Phase:
    """One phase of a collective on every group at once."""
    coflow: np.ndarray           # coflow index of each flow
    src: np.ndarray              # source rank of each flow
    dst: np.ndarray              # destination rank of each flow (-1: the node's NVSwitch)
    weight: np.ndarray           # share of volume · S each flow moves
    volume: float                # bytes per rank per byte of the collective
    hops: Hops
    coflows: int
    intra_scale: float = 1.0     # load multiplier on intra-node links (NVLS efficiency)
    pattern: str = ""            # name of the flow pattern: phases with equal patterns share their rates


def synthetic_members(shape: GroupShape, gpus_per_node: int, gpus: int) -> np.ndarray:
    """Groups of a bare shape, laid out as a job whose every GPU is busy in such groups.

    ``ranks_per_node`` members on each of ``nodes`` consecutive nodes; the node's
    other GPUs hold sibling groups (the same shape, one GPU further), so NICs are
    shared as they are in a real job.
    """
    n, k = shape.ranks, max(1, min(shape.ranks_per_node, shape.ranks))
    if n <= 1:
        return np.zeros((1, 1), dtype=np.int64)
    m = -(-n // k)
    if m == 1:
        count = max(1, gpus_per_node // n)
        return np.arange(count * n).reshape(count, n)
    stride = max(1, gpus_per_node // k)
    rows = []
    for j in range(stride):
        locals_ = j + stride * np.arange(k)
        ranks = (np.arange(m)[:, None] * gpus_per_node + locals_[None, :]).reshape(-1)[:n]
        rows.append(ranks)
    members = np.array(rows)
    if members.max() >= gpus:
        raise ValueError(f"a group of {n} ranks with {k} per node needs {m} nodes")
    return members


def layout(members: np.ndarray, gpus_per_node: int) -> tuple[np.ndarray, int, int, bool]:
    """(members sorted by GPU, nodes per group m, members per node k, uniform: every node holds k)."""
    srt = np.sort(members, axis=1)
    n = srt.shape[1]
    nodes = srt // gpus_per_node
    m = len(set(nodes[0].tolist()))       # a set, not np.unique: that loads numpy.ma on first use
    k = n // m
    uniform = n == m * k and bool((nodes.reshape(len(srt), m, k) == nodes.reshape(len(srt), m, k)[:, :, :1]).all())
    return srt, m, k, uniform


def _rows(shape: tuple, groups: int) -> np.ndarray:
    return np.broadcast_to(np.arange(groups).reshape((groups,) + (1,) * (len(shape) - 1)), shape)


def _phase(parts: list[tuple[np.ndarray, np.ndarray, float]], groups: int, volume: float, hops: Hops,
           intra_scale: float = 1.0, pattern: str = "") -> Phase:
    """Concatenate (src, dst, weight) arrays of shape (groups, ...) into a phase."""
    co, src, dst, w = [], [], [], []
    for s, d, weight in parts:
        co.append(_rows(s.shape, groups).reshape(-1))
        src.append(s.reshape(-1))
        dst.append(d.reshape(-1))
        w.append(np.full(s.size, weight))
    return Phase(np.concatenate(co), np.concatenate(src), np.concatenate(dst), np.concatenate(w), volume,
                 hops, groups, intra_scale, pattern)


def ring_flows(members: np.ndarray, gpus_per_node: int,
               mesh: bool = False) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Flows of NCCL's rings over every group (weights: share of the bus volume).

    ``mesh``: the node's GPUs are joined pair by pair (no switch). NCCL's channels then run rings in different
    orders, one over each of a GPU's links, so the part of a ring inside a node is spread evenly over a GPU's
    links to the group's other members on that node: each GPU sends its share to every one of them."""
    srt, m, k, uniform = layout(members, gpus_per_node)
    groups = len(srt)
    if m == 1 or not uniform or k == 1:
        return _rings(srt, 1, srt.shape[1], mesh and m == 1, 1.0)
    blk = srt.reshape(groups, m, k)
    return (_rings(blk, 2, k, mesh, (k - 1) / k)                 # across the node
            + [(blk, np.roll(blk, -1, axis=1), 1.0 / k)])        # to the same rail of the next node


def _rings(members: np.ndarray, axis: int, k: int, every_order: bool,
           weight: float) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """A ring over the ``k`` members along ``axis`` carrying ``weight`` of the bus volume: in one order, or in
    every order (each member to every other, the weight split evenly: NCCL's channels on a mesh node)."""
    shifts = range(1, k) if every_order and k > 1 else (1,)
    return [(members, np.roll(members, -s, axis=axis), weight / len(shifts)) for s in shifts]


def ring_hops(steps: int, n: int, m: int) -> Hops:
    """``steps`` ring steps over n ranks on m nodes; as tuning.cc counts them, m - 1 of every n - 1
    cross the network (2(m - 1) of an all-reduce's 2(n - 1)), the rest stay inside a node."""
    net = steps * (m - 1) / (n - 1) if m > 1 and n > 1 else 0.0
    return Hops(1.0, steps - net, net, one_per_node=m > 1 and m == n)


def all_reduce_hops(algorithm: str, n: int, m: int, k: int, uniform: bool) -> list[Hops] | None:
    """The latency of each phase of one all-reduce algorithm over groups of ``n`` ranks on ``m`` nodes, ``k`` a
    node (``layout``), or None where it does not apply: what ``all_reduce_phases`` prices besides the bytes."""
    if algorithm == "ring":
        return [ring_hops(2 * (n - 1), n, m)]
    if algorithm == "tree":
        if m == 1:
            return None
        depth = (m - 1).bit_length()                 # ceil(log2 m), exact
        return [Hops(1.0, 2 * (k - 1), 2 * depth, tree=True)]
    if algorithm == "nvls":
        return None if m != 1 else [Hops(1.0, 2.0, 0.0, nvls=True)]
    if algorithm == "hierarchical":
        if m == 1 or k == 1 or not uniform:
            return None
        intra = Hops(1.0, k - 1, 0.0)
        return [intra, Hops(1.0, 0.0, 2 * (m - 1), one_per_node=True), intra]
    raise ValueError(f"unknown all-reduce algorithm {algorithm!r}; known: {', '.join(ALL_REDUCE_ALGORITHMS)}")


def all_reduce_phases(algorithm: str, members: np.ndarray, gpus_per_node: int,
                      nvls_scale: float = 1.0, mesh: bool = False) -> list[Phase] | None:
    """Phases of one all-reduce algorithm over every group, or None where it does not apply (``mesh``: as
    ``ring_flows``)."""
    srt, m, k, uniform = layout(members, gpus_per_node)
    groups, n = srt.shape
    hops = all_reduce_hops(algorithm, n, m, k, uniform)
    if hops is None:
        return None
    if algorithm == "ring":
        return [_phase(ring_flows(srt, gpus_per_node, mesh), groups, 2 * (n - 1) / n, hops[0], pattern="ring")]
    if algorithm == "tree":
        return [_phase(ring_flows(srt, gpus_per_node, mesh), groups, 2.0, hops[0], pattern="ring")]
    if algorithm == "nvls":
        return [_phase([(srt, np.full_like(srt, -1), 1.0), (np.full_like(srt, -1), srt, 1.0)], groups, 1.0,
                       hops[0], nvls_scale, pattern="nvls")]
    blk = srt.reshape(groups, m, k)                  # hierarchical
    intra = _phase(_rings(blk, 2, k, mesh, 1.0), groups, (k - 1) / k, hops[0], pattern="node-ring")
    inter = _phase([(blk, np.roll(blk, -1, axis=1), 1.0)], groups, 2 * (m - 1) / m / k, hops[1],
                   pattern="rail-rings")
    return [intra, inter, intra]


def ring_phase(members: np.ndarray, gpus_per_node: int, volume_factor: float, steps_factor: int,
               mesh: bool = False) -> Phase:
    """A ring collective moving ``volume_factor · (n-1)/n · S`` per rank (reduce-scatter, all-gather, broadcast;
    ``mesh``: as ``ring_flows``)."""
    srt, m, _, _ = layout(members, gpus_per_node)
    groups, n = srt.shape
    return _phase(ring_flows(srt, gpus_per_node, mesh), groups, volume_factor * (n - 1) / n,
                  ring_hops(steps_factor * (n - 1), n, m), pattern="ring")


def all_to_all_phase(members: np.ndarray, gpus_per_node: int) -> Phase:
    """Every member sends S/n to every other member at once."""
    srt, m, _, _ = layout(members, gpus_per_node)
    groups, n = srt.shape
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    hops = Hops(1.0, 0.0 if m > 1 else 1.0, 1.0 if m > 1 else 0.0)
    return _phase([(srt[:, i], srt[:, j], 1.0)], groups, 1.0 / n, hops, pattern="all-to-all")


def send_recv_phase(members: np.ndarray, gpus_per_node: int) -> Phase:
    """Every stage of every pipeline sends to the next stage at once; each pair is its own coflow."""
    src = members[:, :-1].reshape(-1)
    dst = members[:, 1:].reshape(-1)
    crosses = bool(((src // gpus_per_node) != (dst // gpus_per_node)).any())
    hops = Hops(1.0, 0.0 if crosses else 1.0, 1.0 if crosses else 0.0)
    pairs = len(src)
    return Phase(np.arange(pairs), src, dst, np.ones(pairs), 1.0, hops, pairs, pattern="send-recv")
