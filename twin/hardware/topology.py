"""The fabric as a graph: GPUs, NVSwitches, PCIe switches, NICs, leaf/spine/core switches, storage.

Every builder is a pure function returning a ``networkx.Graph``. Vertices are
tuples whose first item is their kind (``("gpu", node, local)``, ``("nic", node,
rail)``, ``("leaf", i)``, ...) and carry ``kind`` and ``tier`` attributes
(0 inside a node, 1 leaf, 2 spine/aggregation, 3 core). Edges are full-duplex
links: ``capacity_Bps`` is the bandwidth *per direction* of the whole bundle,
``cables`` the number of physical cables in it and ``tier`` one of ``nvlink``, ``pcie``, ``nic``, ``leaf-spine``,
``spine-core``, ``storage``, ``mgmt``.

Sources of the structure:
- DGX A100 / H100 nodes: every GPU reaches every other through the NVSwitch
  fabric at its full NVLink bandwidth (NVIDIA DGX A100 and DGX H100 system
  architecture whitepapers); the NVSwitch chips of a node are drawn as one
  logical switch (``nvswitch`` vertex, with the chip count as attribute).
  Each GPU is paired with one compute NIC through a PCIe switch (one rail per GPU).
- DGX SuperPOD H100 reference architecture (RA-11333-001, 2023): scalable units
  (SU) of 32 node slots (31 DGX + the UFM appliance in a 127-node 4-SU pod),
  rail-optimised: NIC *r* of every node of an SU goes to leaf *r* of that SU;
  leaf and spine counts 1 SU 8/4, 2 SU 16/8, 3 SU 24/16, 4 SU 32/16; 64-port
  NDR QM9700 switches; no core tier up to 4 SU.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Any

from twin.hardware.specs import NodeSpec

if TYPE_CHECKING:
    import networkx as nx

# NVIDIA Quantum-2 QM9700: 64 ports of NDR 400 Gb/s (QM9700 datasheet, 2022); the same
# radix is used for every switch tier of a generic Clos.
SWITCH_RADIX = 64
# Cables of the UFM appliance to the compute fabric in the SuperPOD H100 RA: the
# "node + UFM" cable counts are 8 per DGX plus 4 (252 = 31·8 + 4 for one SU).
UFM_CABLES = 4


def graph(**attrs: Any) -> nx.Graph:
    """An empty ``networkx.Graph`` with graph attributes; networkx (0.1 s to import) loads with the first fabric."""
    import networkx

    return networkx.Graph(**attrs)


# ---------------------------------------------------------------------------
# Nodes


def node_shape(node: NodeSpec) -> tuple:
    """What of a node the fabric's graph is built from (its GPUs, switches, NICs and their links): node types
    of one shape give one graph whatever their GPUs' memory, power or name."""
    return node_wiring(node) + (node.nvswitches, node.gpu.nvlink_per_direction_Bps)


def node_wiring(node: NodeSpec) -> tuple:
    """What of a node's ``node_shape`` its graph's vertices and links follow, all but the NVLinks' rate and the
    NVSwitch chips (one logical NVSwitch per node either way): node types of one wiring (DGX H100 and B200)
    give graphs alike but for those."""
    return (node.gpus, node.intra, node.pcie_Bps, node.compute_nics, node.storage_nics)


def add_node(g: nx.Graph, node: NodeSpec, index: int, su: int = 0) -> None:
    """Add one server's GPUs, its intra-node fabric, compute NICs and storage NICs to ``g``.

    ``nvswitch`` nodes: each GPU to one logical NVSwitch at its NVLink bandwidth per
    direction, and to its own NIC through PCIe. ``pcie`` nodes (L4, L40S): no NVLink;
    GPUs share PCIe switches (one per compute NIC) under the host's root complex,
    so GPU-to-GPU traffic across switches goes through the host. ``c2c`` nodes
    (GH200): one GPU, its NIC on PCIe. ``nvlink-mesh`` nodes (four GH200 to a node): every pair of GPUs
    joined directly by its share of each GPU's NVLinks (its NVLink bandwidth per direction over the
    other GPUs), each GPU to its own NIC through PCIe.
    """
    vertices, links = _server(node, index, su)
    g.add_nodes_from(vertices)
    g.add_edges_from([(u, v, {"capacity_Bps": cap, "tier": tier, "cables": 1}) for u, v, cap, tier in links])


def _server(node: NodeSpec, index: int, su: int) -> tuple[list[tuple], list[tuple]]:
    """One server's vertices (vertex, attributes) and links (u, v, capacity_Bps, tier), in the order
    ``add_node`` adds them: every pair distinct within the server."""
    gpus, nics = node.gpus, node.compute_nics.count
    host = ("host", index)
    vertices = [(host, {"kind": "host", "tier": 0, "node": index})]
    vertices += [(("gpu", index, local), {"kind": "gpu", "tier": 0, "node": index, "local": local})
                 for local in range(gpus)]
    vertices += [(("nic", index, rail), {"kind": "nic", "tier": 0, "node": index, "rail": rail, "su": su})
                 for rail in range(nics)]
    links: list[tuple] = []
    nic_of = [local * nics // gpus for local in range(gpus)]
    if node.intra == "nvswitch":
        nvs = ("nvswitch", index)
        vertices.append((nvs, {"kind": "nvswitch", "tier": 0, "node": index, "chips": node.nvswitches}))
        links += [(("gpu", index, local), nvs, node.gpu.nvlink_per_direction_Bps, "nvlink") for local in range(gpus)]
        links += [(("gpu", index, local), ("nic", index, nic_of[local]), node.pcie_Bps, "pcie") for local in range(gpus)]
    elif node.intra == "nvlink-mesh":
        pair_Bps = node.gpu.nvlink_per_direction_Bps / max(1, gpus - 1)
        links += [(("gpu", index, a), ("gpu", index, b), pair_Bps, "nvlink")
                  for a in range(gpus) for b in range(a + 1, gpus)]
        links += [(("gpu", index, local), ("nic", index, nic_of[local]), node.pcie_Bps, "pcie")
                  for local in range(gpus)]
    elif node.intra == "pcie":
        switches = max(1, nics)
        for sw in range(switches):
            vertices.append((("pcie", index, sw), {"kind": "pcie", "tier": 0, "node": index}))
            links.append((("pcie", index, sw), host, node.pcie_Bps, "pcie"))
        links += [(("gpu", index, local), ("pcie", index, local * switches // gpus), node.pcie_Bps, "pcie")
                  for local in range(gpus)]
        links += [(("nic", index, rail), ("pcie", index, rail * switches // nics), node.pcie_Bps, "pcie")
                  for rail in range(nics)]
    else:  # c2c: a superchip, one GPU per node
        links += [(("gpu", index, local), ("nic", index, nic_of[local]), node.pcie_Bps, "pcie") for local in range(gpus)]
    for j in range(node.storage_nics.count):
        vertices.append((("snic", index, j), {"kind": "snic", "tier": 0, "node": index}))
        links.append((host, ("snic", index, j), node.pcie_Bps, "pcie"))
    return vertices, links


def add_nodes(g: nx.Graph, node: NodeSpec, indices: range, su: int | None = None, per_su: int = 1) -> None:
    """Add servers ``indices``, each as ``add_node`` adds it, counted once for all: they are built alike.

    Their NICs belong to scalable unit ``su``, or when None to ``index // per_su``. One server's vertices and
    links are listed once and copied for the others, renamed, into the graph's own adjacency (networkx's
    documented dict-of-dicts: ``_node`` holds each vertex's attributes, ``_adj`` each vertex's neighbours
    with one data dict per link shared by both ends). The graph is the one ``add_node`` would build, down
    to the order of every vertex and neighbour (``tests/test_topology.py``); a 2,080-node fabric is built
    several times faster than through networkx's methods.
    """
    vertices, links = _server(node, 0, 0)
    position = {v: i for i, (v, _) in enumerate(vertices)}
    kinds = [(v[0], v[2:]) for v, _ in vertices]
    attributes = [attrs for _, attrs in vertices]
    pairs = [(position[u], position[v], {"capacity_Bps": cap, "tier": tier, "cables": 1}) for u, v, cap, tier in links]
    g_node, g_adj = g._node, g._adj
    _changed(g)
    for index in indices:
        owner = index // per_su if su is None else su
        names = [(kind, index) + rest for kind, rest in kinds]
        for name, attrs in zip(names, attributes):
            if name in g_node:
                raise ValueError(f"server {index} is in the graph already")
            own = attrs.copy()
            own["node"] = index
            if "su" in own:
                own["su"] = owner
            g_node[name] = own
            g_adj[name] = {}
        _add_new_links(g, [(names[u], names[v], data.copy()) for u, v, data in pairs])
    one = graph()
    add_node(one, node, 0)
    tally = _tally(g)
    for key, value in _scan(one).items():
        tally[key] += value * len(indices)


def _add_new_links(g: nx.Graph, links: list[tuple]) -> None:
    """Add links (u, v, data) between vertices of ``g`` not linked yet, each pair once, as ``add_edges_from``
    adds them (``data`` becomes the link's own dict, shared by both ends), without its per-link checks."""
    g_adj = g._adj
    for u, v, data in links:
        if v in g_adj[u]:
            raise ValueError(f"{u} and {v} are linked already")
        g_adj[u][v] = data
        g_adj[v][u] = data
    _changed(g)


def _changed(g: nx.Graph) -> None:
    """What networkx's own methods do when a graph changes: drop the conversions it may have cached."""
    if cache := getattr(g, "__networkx_cache__", None):
        cache.clear()


def _tally(g: nx.Graph) -> Counter:
    """Vertices by kind, cables and capacity by tier, kept as the graph is built (``counts``)."""
    tally = g.graph.get("tally")
    if tally is None:
        tally = g.graph["tally"] = Counter()
    return tally


def _cable(g: nx.Graph, pairs: list[tuple], capacity_Bps: float, tier: str) -> None:
    """Cable distinct vertex pairs, one cable each (NICs to their leaf)."""
    _add_new_links(g, [(u, v, {"capacity_Bps": capacity_Bps, "tier": tier, "cables": 1}) for u, v in pairs])
    tally = _tally(g)
    tally[f"cables_{tier}"] += len(pairs)
    tally[f"capacity_{tier}"] += capacity_Bps * len(pairs)


def _vertex(g: nx.Graph, v: tuple, **attrs) -> None:
    g.add_node(v, **attrs)
    _tally(g)[attrs["kind"]] += 1


def dgx_node(node: NodeSpec) -> nx.Graph:
    """One server alone (GPUs, NVSwitch or PCIe switches, NICs)."""
    g = graph(topology="node", nodes=1, gpus_per_node=node.gpus, rails=node.compute_nics.count)
    add_nodes(g, node, range(1))
    return g


def _link(g: nx.Graph, u, v, capacity_Bps: float, tier: str, cables: float = 1) -> None:
    """Add a link, or thicken the bundle when ``u``–``v`` already exists."""
    tally = _tally(g)
    tally[f"capacity_{tier}"] += capacity_Bps
    if g.has_edge(u, v):
        edge = g[u][v]
        tally[f"cables_{tier}"] += math.ceil(edge["cables"] + cables - 1e-9) - math.ceil(edge["cables"] - 1e-9)
        edge["capacity_Bps"] += capacity_Bps
        edge["cables"] += cables
        return
    tally[f"cables_{tier}"] += math.ceil(cables - 1e-9)
    g.add_edge(u, v, capacity_Bps=capacity_Bps, tier=tier, cables=cables)


def _new_links(g: nx.Graph, pairs: list[tuple], capacity_Bps: float, tier: str, cables: float = 1) -> None:
    """``_link`` for each of ``pairs``, none linked yet: the same links and tally, added at once (the capacity
    summed pair by pair, in the same order)."""
    if not pairs:
        return
    tally = _tally(g)
    key = f"capacity_{tier}"
    total = tally[key]
    for _ in pairs:
        total += capacity_Bps
    tally[key] = total
    tally[f"cables_{tier}"] += math.ceil(cables - 1e-9) * len(pairs)
    _add_new_links(g, [(u, v, {"capacity_Bps": capacity_Bps, "tier": tier, "cables": cables}) for u, v in pairs])


# ---------------------------------------------------------------------------
# Switch tiers


def _spread(count_needed: int, per_leaf_up: int) -> int:
    """Switches above a group of leaves: the fewest that divides a leaf's uplinks evenly.

    The RA's spine counts follow from it: 1 SU needs 8·32/64 = 4 spines, 3 SU need
    24·32/64 = 12, rounded up to 16 so that every leaf sends 2 cables to every spine.
    """
    for d in range(max(1, count_needed), per_leaf_up + 1):
        if per_leaf_up % d == 0:
            return d
    return max(1, count_needed)


def _clos(g: nx.Graph, leaves: list, pods: list[list], leaf_down_ports: int, link_Bps: float,
          leaf_oversubscription: float, pod_oversubscription: float, flat: bool) -> tuple[list, list]:
    """Spines (2-tier) or pod spines + cores (3-tier) above ``leaves``; returns (spines, cores).

    A leaf sends ``leaf_down_ports / leaf_oversubscription`` ports' worth of bandwidth
    up, spread evenly over the spines of its pod; where the pod needs more spines than a
    leaf has up-ports (a node of 256 rails: 256 leaves of 32 up-ports an SU), each leaf
    cables one stripe of them, one cable each, as the core tier does. With one pod, or ``flat`` and at
    most ``SWITCH_RADIX`` leaves, every spine reaches every leaf (two tiers, as the RA
    up to 4 SU); otherwise each pod gets its own spines and a core tier joins the pods,
    its bandwidth divided by ``pod_oversubscription``.
    """
    up_ports = math.ceil(leaf_down_ports / leaf_oversubscription)
    up_Bps = leaf_down_ports * link_Bps / leaf_oversubscription
    two_tier = len(pods) == 1 or (flat and len(leaves) <= SWITCH_RADIX)
    groups = [leaves] if two_tier else pods
    spines, cores = [], []
    spine_ports = SWITCH_RADIX if two_tier else SWITCH_RADIX // 2
    pod_spines = []
    for p, pod_leaves in enumerate(groups):
        n = _spread(math.ceil(len(pod_leaves) * up_ports / spine_ports), up_ports)
        mine = []
        for _ in range(n):
            s = ("spine", len(spines))
            _vertex(g, s, kind="spine", tier=2, pod=None if two_tier else p)
            spines.append(s)
            mine.append(s)
        if n <= up_ports:          # every leaf reaches every spine of its group, up_ports / n cables each
            _new_links(g, [(leaf, s) for leaf in pod_leaves for s in mine], up_Bps / n, "leaf-spine", up_ports / n)
        else:                      # more spines than a leaf has up-ports: each leaf cables a stripe of them
            _new_links(g, [(leaf, mine[(j * up_ports + k) % n]) for j, leaf in enumerate(pod_leaves)
                           for k in range(up_ports)], up_Bps / up_ports, "leaf-spine", 1)
        pod_spines.append(mine)
    if two_tier:
        return spines, cores
    # Core tier: each pod spine sends its downlink bandwidth / pod_oversubscription up.
    adjacency = g._adj            # each spine's links as ``g.edges(s)`` lists them, in that order, without its views
    spine_down_ports = max(sum(link["cables"] for link in adjacency[s].values()) for s in spines)
    core_up_ports = math.ceil(spine_down_ports / pod_oversubscription)
    total = len(spines) * core_up_ports
    n_cores = max(1, math.ceil(total / SWITCH_RADIX))
    n_cores = _spread(n_cores, core_up_ports) if n_cores <= core_up_ports else n_cores
    for c in range(n_cores):
        _vertex(g, ("core", c), kind="core", tier=3)
        cores.append(("core", c))
    for index, s in enumerate(spines):
        down_Bps = sum(link["capacity_Bps"] for link in adjacency[s].values())
        up = down_Bps / pod_oversubscription
        if n_cores <= core_up_ports:
            _new_links(g, [(s, c) for c in cores], up / n_cores, "spine-core", core_up_ports / n_cores)
        else:  # more cores than a spine has uplinks: each spine reaches a stripe of them (distinct cores)
            _new_links(g, [(s, cores[(index * core_up_ports + k) % n_cores]) for k in range(core_up_ports)],
                       up / core_up_ports, "spine-core", 1)
    return spines, cores


def _attach_storage(g: nx.Graph, node: NodeSpec, pods: list[list[int]], storage_write_Bps: float | None) -> None:
    """A separate storage fabric: storage NICs → one storage leaf per pod → the storage system."""
    if node.storage_nics.count == 0:
        return
    total_nodes = sum(len(p) for p in pods)
    system_Bps = storage_write_Bps or total_nodes * node.storage_nics.total_Bps
    _vertex(g, ("storage",), kind="storage", tier=2)
    for p, members in enumerate(pods):
        leaf = ("sleaf", p)
        _vertex(g, leaf, kind="sleaf", tier=1, pod=p)
        _new_links(g, [(("snic", n, j), leaf) for n in members for j in range(node.storage_nics.count)],
                   node.storage_nics.line_rate_Bps, "storage")
        # The storage system's own share behind each storage leaf (its cabling is the vendor's: not counted).
        _link(g, leaf, ("storage",), system_Bps * len(members) / total_nodes, "storage", 0)


# ---------------------------------------------------------------------------
# Cluster fabrics


def rail_optimized_fat_tree(node: NodeSpec, nodes: int, link_Bps: float | None = None, nodes_per_su: int = 32,
                            oversubscription: float = 1.0, ufm: bool = True,
                            storage_write_Bps: float | None = None) -> nx.Graph:
    """The DGX SuperPOD rail-optimised fat tree.

    Scalable units of ``nodes_per_su`` slots; one slot of the whole pod holds the
    UFM appliance (so 4 SU hold 127 nodes). Each SU has one leaf per rail (compute
    NIC index); rail *r* of every node of the SU plugs into leaf *r*. Leaves send
    their slots' bandwidth / ``oversubscription`` to the spines.
    """
    rails = node.compute_nics.count
    link = link_Bps or node.compute_nics.line_rate_Bps
    sus = max(1, math.ceil((nodes + (1 if ufm else 0)) / nodes_per_su))
    g = graph(topology="rail-optimized-fat-tree", nodes=nodes, gpus_per_node=node.gpus, rails=rails,
                 scalable_units=sus, nodes_per_su=nodes_per_su, link_Bps=link, oversubscription=oversubscription)
    leaves = []
    for su in range(sus):
        for rail in range(rails):
            leaf = ("leaf", len(leaves))
            _vertex(g, leaf, kind="leaf", tier=1, su=su, rail=rail)
            leaves.append(leaf)
    add_nodes(g, node, range(nodes), per_su=nodes_per_su)
    _cable(g, [(("nic", n, rail), leaves[n // nodes_per_su * rails + rail]) for n in range(nodes) for rail in range(rails)],
           min(link, node.compute_nics.line_rate_Bps), "nic")
    if ufm:
        _vertex(g, ("ufm",), kind="ufm", tier=0)
        last = sus - 1
        for k in range(min(UFM_CABLES, rails)):
            _link(g, ("ufm",), leaves[last * rails + k], link, "mgmt")
    pods = [leaves[su * rails:(su + 1) * rails] for su in range(sus)]
    spines, cores = _clos(g, leaves, pods, nodes_per_su, link, oversubscription, 1.0, flat=True)
    g.graph.update(leaves=len(leaves), spines=len(spines), cores=len(cores))
    node_pods = [list(range(su * nodes_per_su, min(nodes, (su + 1) * nodes_per_su))) for su in range(sus)]
    _attach_storage(g, node, [p for p in node_pods if p], storage_write_Bps)
    return g


def fat_tree(node: NodeSpec, nodes: int, link_Bps: float | None = None, nodes_per_pod: int = 32,
             oversubscription: float = 1.0, storage_write_Bps: float | None = None) -> nx.Graph:
    """A generic top-of-rack Clos: every NIC of a node on the same leaf, pods of ``nodes_per_pod``.

    Leaves have ``SWITCH_RADIX / 2`` ports down and as many up (full bisection inside a
    pod); pods are joined by a core tier whose bandwidth is divided by
    ``oversubscription`` (1:7 → 7). A cluster of one pod is two tiers.
    """
    rails = node.compute_nics.count
    link = link_Bps or node.compute_nics.line_rate_Bps
    per_leaf = max(1, (SWITCH_RADIX // 2) // rails)
    nodes_per_pod = max(per_leaf, nodes_per_pod)
    pods_n = max(1, math.ceil(nodes / nodes_per_pod))
    g = graph(topology="fat-tree", nodes=nodes, gpus_per_node=node.gpus, rails=rails,
                 scalable_units=pods_n, nodes_per_su=nodes_per_pod, link_Bps=link, oversubscription=oversubscription)
    leaves, pods = [], []
    for p in range(pods_n):
        members = list(range(p * nodes_per_pod, min(nodes, (p + 1) * nodes_per_pod)))
        pod_leaves = []
        for k in range(math.ceil(len(members) / per_leaf)):
            leaf = ("leaf", len(leaves))
            _vertex(g, leaf, kind="leaf", tier=1, su=p, rail=None)
            leaves.append(leaf)
            pod_leaves.append(leaf)
        pods.append(pod_leaves)
        add_nodes(g, node, range(members[0], members[-1] + 1), su=p)
        _cable(g, [(("nic", n, rail), pod_leaves[i // per_leaf]) for i, n in enumerate(members) for rail in range(rails)],
               min(link, node.compute_nics.line_rate_Bps), "nic")
    spines, cores = _clos(g, leaves, pods, per_leaf * rails, link, 1.0, oversubscription, flat=False)
    g.graph.update(leaves=len(leaves), spines=len(spines), cores=len(cores))
    _attach_storage(g, node, [list(range(p * nodes_per_pod, min(nodes, (p + 1) * nodes_per_pod)))
                              for p in range(pods_n)], storage_write_Bps)
    return g


def single_switch(node: NodeSpec, nodes: int, link_Bps: float | None = None,
                  storage_write_Bps: float | None = None) -> nx.Graph:
    """Every compute NIC on one (large enough) switch: no contention above the NICs."""
    rails = node.compute_nics.count
    link = link_Bps or node.compute_nics.line_rate_Bps
    g = graph(topology="single-switch", nodes=nodes, gpus_per_node=node.gpus, rails=rails, scalable_units=1,
                 nodes_per_su=nodes, link_Bps=link, oversubscription=1.0, leaves=1, spines=0, cores=0)
    _vertex(g, ("leaf", 0), kind="leaf", tier=1, su=0, rail=None)
    add_nodes(g, node, range(nodes), su=0)
    _cable(g, [(("nic", n, rail), ("leaf", 0)) for n in range(nodes) for rail in range(rails)],
           min(link, node.compute_nics.line_rate_Bps), "nic")
    _attach_storage(g, node, [list(range(nodes))], storage_write_Bps)
    return g


def build(node: NodeSpec, nodes: int, topology: str = "rail-optimized-fat-tree", link_Bps: float | None = None,
          nodes_per_su: int = 32, oversubscription: float = 1.0, storage_write_Bps: float | None = None) -> nx.Graph:
    """The compute and storage fabric a scenario names (``cluster.fabric.topology``)."""
    if topology == "rail-optimized-fat-tree":
        return rail_optimized_fat_tree(node, nodes, link_Bps, nodes_per_su, oversubscription,
                                       storage_write_Bps=storage_write_Bps)
    if topology == "fat-tree":
        return fat_tree(node, nodes, link_Bps, nodes_per_su, oversubscription, storage_write_Bps)
    if topology == "single-switch":
        return single_switch(node, nodes, link_Bps, storage_write_Bps)
    raise ValueError(f"unknown topology {topology!r}")


# ---------------------------------------------------------------------------
# Degraded fabrics and structural measures


def degrade(g: nx.Graph, links: list[tuple] = (), switches: list = ()) -> nx.Graph:
    """A copy of ``g`` without the given links (vertex pairs) and switches (vertices)."""
    h = g.copy()
    h.remove_edges_from([tuple(e) for e in links if h.has_edge(*e)])
    h.remove_nodes_from([s for s in switches if s in h])
    h.graph["degraded"] = True
    h.graph.pop("tally", None)              # counted again on the degraded graph itself
    return h


def _scan(g: nx.Graph) -> Counter:
    """Vertices by kind, cables and capacity by tier, counted on the graph itself."""
    tally: Counter = Counter()
    for _, kind in g.nodes(data="kind"):
        tally[kind] += 1
    for _, _, data in g.edges(data=True):
        tally[f"cables_{data['tier']}"] += math.ceil(data["cables"] - 1e-9)
        tally[f"capacity_{data['tier']}"] += data["capacity_Bps"]
    return tally


def _measures(g: nx.Graph) -> Counter:
    if "tally" not in g.graph:
        g.graph["tally"] = _scan(g)
    return g.graph["tally"]


def counts(g: nx.Graph) -> dict[str, int]:
    """Vertices by kind and cables by tier (``cables_<tier>``)."""
    return {k: int(v) for k, v in _measures(g).items() if not k.startswith("capacity_")}


def tier_capacity_Bps(g: nx.Graph, tier: str) -> float:
    """Total one-direction capacity of every link of one tier."""
    return tier_capacities_Bps(g).get(tier, 0.0)


def tier_capacities_Bps(g: nx.Graph) -> dict[str, float]:
    """Total one-direction capacity of the links of every tier."""
    return {k.removeprefix("capacity_"): float(v) for k, v in _measures(g).items() if k.startswith("capacity_")}


def injection_Bps(g: nx.Graph) -> float:
    """Bandwidth every compute NIC can inject into the fabric at once."""
    return tier_capacity_Bps(g, "nic")


def bisection_Bps(g: nx.Graph) -> float:
    """One-direction bandwidth across the worst cut into two halves of nodes.

    In a Clos every bit that crosses a cut aligned with the switch hierarchy climbs
    every tier up to the one joining the halves, so the bisection is half the
    narrowest tier: the NICs (injection), the leaf uplinks or the spine uplinks.
    A full-bisection fat tree gives half the injection bandwidth; an oversubscribed
    tier divides it.
    """
    totals = tier_capacities_Bps(g)
    tiers = [totals.get("nic", 0.0)]
    for tier in ("leaf-spine", "spine-core"):
        cap = totals.get(tier, 0.0)
        if cap > 0:
            tiers.append(cap)
    if g.graph.get("topology") == "rail-optimized-fat-tree" and g.graph.get("spines", 0) == 0:
        tiers = tiers[:1]
    return min(tiers) / 2
