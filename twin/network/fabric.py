"""The fabric graph compiled for routing: link ids, capacities, and paths between GPUs.

Every undirected edge ``e`` of the topology graph becomes two directed links, ``2e`` (as listed) and ``2e + 1``
(reverse), each with the edge's per-direction capacity. Paths follow the real hardware:

- inside a node, the shortest path in the node's own subgraph (GPU → NVSwitch → GPU; GPU → PCIe switch → host →
  PCIe switch → GPU on PCIe servers);
- between nodes, GPU → its NIC (the rail it is paired with; the next live NIC of the node when that one has lost
  its leaf) → its leaf → ... → the destination's leaf → NIC → GPU.

Above the leaves a route is not one chain of cables. The SuperPOD reference architecture runs InfiniBand adaptive
routing, which spreads a leaf's traffic over all its up-links; the model therefore treats the up-links of a leaf
(and the down-links into it) as one *pool* whose capacity is the sum of its cables, and likewise the core up-links
of a pod's spines. A flow between two leaves crosses the source leaf's up pool and the destination leaf's down pool
(plus both pods' core pools when it leaves its pod). Removing a cable or a switch shrinks the pools it belonged to;
an oversubscribed tier shrinks exactly the pools of the flows that cross it.
"""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import numpy as np

from twin.calibration import Efficiency

if TYPE_CHECKING:
    import networkx as nx

TIERS = ("nvlink", "pcie", "nic", "leaf-spine", "spine-core", "storage", "mgmt")
INTRA_NODE_TIERS = ("nvlink", "pcie")
NETWORK_TIERS = ("nic", "leaf-spine", "spine-core")
_TIER_INDEX = {t: i for i, t in enumerate(TIERS)}

# Paths inside a node by the node's shape (``Fabric._template``): shared by every fabric of the process.
_TEMPLATES: dict[tuple, dict[tuple, list]] = {}


class Fabric:
    """A topology graph with numbered directed links and a router.

    ``node_kind``: what makes its nodes alike inside, (catalog node, efficiencies) for a fabric
    ``cluster_fabric`` builds; None for a graph given (it may be degraded), whose phases inside a
    node are routed on it alone (``network/symmetry.py``)."""

    def __init__(self, graph: nx.Graph, efficiency: Efficiency | None = None, node_kind: tuple | None = None):
        self.graph = graph
        self.node_kind = node_kind
        self.gpus_per_node = int(graph.graph["gpus_per_node"])
        self.rails = int(graph.graph["rails"])
        self.nodes = int(graph.graph["nodes"])
        self._id: dict[tuple, int] = {}            # (u, v) → directed link id, for links a route names by ends
        self._leaf: dict[tuple, tuple] = {}           # NIC → its leaf, for NICs still cabled
        # Switch tiers as pools (adaptive routing spreads a leaf's traffic evenly over its
        # up-links): the up and down bandwidth of every leaf, and of every pod's spines.
        self._pool: dict[tuple, int] = {}
        self._pod: dict[tuple, int | None] = {}
        line_Bps, tiers, through_switch, uplinks = self._number_links(graph)
        self._line_Bps, self._scale = np.array(line_Bps, dtype=float), _link_scale(tiers, through_switch, efficiency)
        capacity = np.repeat(self._line_Bps * self._scale, 2)
        owned: dict[object, list[float]] = {}          # pool owner → [capacity, tier index], up and down alike
        nodes = graph.nodes
        link_capacity = capacity[::2].tolist()
        switches: dict[tuple, tuple] = {}              # switch → (its tier, its pod), read once each
        pod_of, last_u = self._pod, None
        for e, u, v, t in uplinks:
            if u is not last_u:                        # a switch's links come one after another
                last_u = u
                at_u = switches.get(u) or switches.setdefault(u, (nodes[u]["tier"], nodes[u].get("pod")))
            at_v = switches.get(v) or switches.setdefault(v, (nodes[v]["tier"], nodes[v].get("pod")))
            if at_u[0] < at_v[0]:
                low, low_at, high_at = u, at_u, at_v
            else:
                low, low_at, high_at = v, at_v, at_u
            if t == "leaf-spine":
                owner = low
                pod_of[low] = high_at[1]
            else:
                owner = low_at[1]
            pool = owned.get(owner)
            if pool is None:
                pool = owned[owner] = [0.0, _TIER_INDEX[t]]
            pool[0] += link_capacity[e]
        pools = {(owner, direction): sums for owner, sums in owned.items() for direction in ("up", "down")}
        self._first_pool = len(capacity)
        self._pool.update(zip(pools, range(len(capacity), len(capacity) + len(pools))))
        pool_capacity, pool_tier = [cap for cap, _ in pools.values()], [index for _, index in pools.values()]
        self.capacity_Bps = np.concatenate([capacity, np.array(pool_capacity, dtype=float)])
        self.tier = np.concatenate([np.repeat(tiers, 2), np.array(pool_tier, dtype=np.int8)])
        self._intra: dict[tuple, list] = {}
        self._part: dict[tuple, tuple] = {}           # vertex → its node's part (``_node_part``)
        self._chains: dict[int, list] = {}            # coded pair of local ends → template edges (``_chain``)
        self._nic: dict[tuple, tuple] = {}
        self._ends: dict[tuple, tuple] = {}
        self._edge_arrays: dict[tuple, np.ndarray] = {}
        self._vertices: dict[tuple, list[tuple]] = {}   # a node's vertex → it in every node (``_in_every_node``)
        self._tables: dict[str, tuple] = {}           # "ends" (``_rank_ends``), "leaf pools" (``_leaf_arrays``)
        # Results derived from this fabric alone (collective phases and their rates, keyed by
        # the groups' members), filled by network.collectives and shared by its CommModels.
        self.memo: dict[tuple, object] = {}

    def _number_links(self, graph: nx.Graph) -> tuple[list[float], np.ndarray, list[int], list[tuple]]:
        """Number the graph's links in its order (link ``e`` is ids ``2e`` as listed and ``2e + 1`` reversed) and
        find each NIC's leaf: (each link's line rate, its tier's index in ``TIERS``, the links through a PCIe
        switch, the (link, u, v, tier) of the switch tiers). Links are found by their ends (``_id``) where a route
        names them (inside nodes, NIC to leaf, storage); the switch tiers' links, most of a large fabric's, are
        crossed as pools (``route``) and left out of it. The order is ``graph.edges()``'s, read from the
        adjacency: the edge view would hold the graph in a reference cycle only the cyclic collector frees
        (twin/collector.py); without it a graph the fabric cache lets go of is freed at once."""
        ids, leaf_of = self._id, self._leaf
        line_Bps, tiers, through_switch, uplinks = [], [], [], []
        listed: set = set()
        e = 0
        for u, around in graph.adjacency():
            for v, data in around.items():
                if v in listed:
                    continue
                t = data["tier"]
                line_Bps.append(data["capacity_Bps"])
                tiers.append(_TIER_INDEX[t])
                if t == "leaf-spine" or t == "spine-core":     # crossed as pools, never named by their ends
                    uplinks.append((e, u, v, t))
                    e += 1
                    continue
                ids[u, v] = 2 * e
                ids[v, u] = 2 * e + 1
                if t == "nic":
                    if u[0] == "nic":
                        leaf_of[u] = v
                    else:
                        leaf_of[v] = u
                elif t == "pcie":
                    if u[0] == "pcie" or v[0] == "pcie":
                        through_switch.append(e)
                e += 1
            listed.add(u)
        return line_Bps, np.array(tiers, dtype=np.int8), through_switch, uplinks

    # -- switch-tier pools ----------------------------------------------------------------
    def pool_owners(self) -> dict[int, tuple]:
        """Resource id of every switch-tier pool → (owner, direction): the owner is a leaf vertex
        (its up-links to the spines) or a pod index (its spines' links to the core); direction up or down."""
        return {rid: key for key, rid in self._pool.items()}

    def alike(self, node_kind: tuple) -> "Fabric":
        """This fabric (its graph, links and the routes and tables found on it, shared) for nodes of kind
        ``node_kind`` built alike (``topology.node_shape``), with a memo of its own: collectives may depend on
        more of a node than its links (its GPU, its CPU)."""
        fabric = copy.copy(self)
        fabric.node_kind = node_kind
        fabric.memo = {}
        return fabric

    def rerated(self, nvlink_Bps: float) -> "Fabric":
        """This fabric for nodes wired alike (``topology.node_wiring``) whose NVLinks run at
        ``nvlink_Bps`` per direction: its links, pools, routes and tables shared (``alike``), each NVLink's
        capacity worked out at that rate as a fabric compiled from that node type's own graph would (the same
        numbers), at the same efficiencies. That graph is not built: ``graph`` stays this fabric's, to be read
        for its wiring alone, not for its NVLinks' rate or its NVSwitch chips."""
        line_Bps = self._line_Bps.copy()
        line_Bps[self.tier[:self._first_pool:2] == _TIER_INDEX["nvlink"]] = nvlink_Bps
        fabric = self.alike(self.node_kind)
        fabric._line_Bps = line_Bps
        fabric.capacity_Bps = np.concatenate([np.repeat(line_Bps * self._scale, 2),
                                              self.capacity_Bps[self._first_pool:]])
        return fabric

    def scaled_pools(self, share: float) -> "Fabric":
        """This fabric with every switch-tier pool at ``share`` of its capacity: what one job's traffic
        gets of pools that other jobs' traffic crosses too. Links inside nodes and NICs are untouched."""
        scaled = copy.copy(self)
        scaled.capacity_Bps = self.capacity_Bps.copy()
        scaled.capacity_Bps[self._first_pool:] *= share
        scaled.memo = {}                     # rates memoised on this fabric hold its own capacities
        return scaled

    # -- vertices ---------------------------------------------------------------------
    def gpu(self, rank: int) -> tuple:
        return ("gpu", rank // self.gpus_per_node, rank % self.gpus_per_node)

    def nic_of(self, gpu: tuple) -> tuple:
        """The compute NIC a GPU sends through: its own rail, else the nearest live NIC of its node."""
        if gpu in self._nic:
            return self._nic[gpu]
        _, n, local = gpu
        own = local * self.rails // self.gpus_per_node
        for k in range(self.rails):
            nic = ("nic", n, (own + k) % self.rails)
            if nic in self._leaf:
                self._nic[gpu] = nic
                return nic
        raise ValueError(f"node {n} has no NIC attached to the fabric")

    def leaf_of(self, nic: tuple) -> tuple:
        leaf = self._leaf.get(nic)
        if leaf is None:
            raise ValueError(f"{nic} is not attached to a leaf")
        return leaf

    # -- paths ----------------------------------------------------------------------------
    def _intra_path(self, a: tuple, b: tuple) -> list:
        """Vertices from ``a`` to ``b`` inside one node (the node's template path, relabelled)."""
        n = a[1]
        key = (a[0], a[2:], b[0], b[2:])
        template = self._intra.get(key)
        if template is None:
            template = self._template(a, b, key)
            self._intra[key] = template
        return [(t[0], n) + t[1:] for t in template]

    def _template(self, a: tuple, b: tuple, key: tuple) -> list:
        """The shortest path from ``a`` to ``b`` in the part of their node reachable from ``a``, without the node.

        Nodes built alike (their vertices, links and adjacency order, relabelled without the node) have the
        same paths: they are found once per process for every fabric holding such a node."""
        part = self._part.get(a)
        if part is None:
            part = self._node_part(a)
        sub, shared = part
        template = shared.get(key)
        if template is None:
            import networkx       # loaded with the first fabric (twin.hardware.topology.graph)

            template = shared[key] = [(v[0],) + v[2:] for v in networkx.shortest_path(sub, a, b)]
        return template

    def _node_part(self, a: tuple) -> tuple:
        """(the subgraph of ``a``'s node reachable from ``a``, the templates of every part built alike)."""
        g, n = self.graph, a[1]
        members, frontier = {a}, [a]
        while frontier:                                  # the node's own vertices, found from a
            v = frontier.pop()
            for w in g[v]:
                if w not in members and g.nodes[w].get("node") == n:
                    members.add(w)
                    frontier.append(w)
        relabel = {v: (v[0],) + v[2:] for v in members}
        shape = tuple(sorted((relabel[v], tuple(relabel[w] for w in g[v] if w in members)) for v in members))
        part = (g.subgraph(members), _TEMPLATES.setdefault(shape, {}))
        for v in members:
            self._part[v] = part
        return part

    def link_ids(self, vertices: list) -> list[int]:
        """Directed link ids along a chain of adjacent vertices."""
        ids = self._id
        return [ids[(vertices[i], vertices[i + 1])] for i in range(len(vertices) - 1)]

    def route(self, a: tuple, b: tuple) -> list[int]:
        """Resource ids (links and switch-tier pools) crossed from vertex ``a`` to vertex ``b``."""
        if a[1] == b[1]:
            return self.link_ids(self._intra_path(a, b))
        up, leaf_a, _ = self._end(a)
        _, leaf_b, down = self._end(b)
        middle = []
        if leaf_a != leaf_b:
            pod_a, pod_b = self._pod.get(leaf_a), self._pod.get(leaf_b)
            if (leaf_a, "up") not in self._pool or (leaf_b, "down") not in self._pool:
                raise ValueError(f"no path from {leaf_a} to {leaf_b}: the fabric is disconnected")
            middle.append(self._pool[(leaf_a, "up")])
            if pod_a != pod_b:
                if (pod_a, "up") not in self._pool or (pod_b, "down") not in self._pool:
                    raise ValueError(f"no path from pod {pod_a} to pod {pod_b}: the fabric is disconnected")
                middle += [self._pool[(pod_a, "up")], self._pool[(pod_b, "down")]]
            middle.append(self._pool[(leaf_b, "down")])
        return up + middle + down

    def _end(self, v: tuple) -> tuple[list[int], tuple, list[int]]:
        """(links from ``v`` up to its leaf, the leaf, links from the leaf down to ``v``), cached per vertex."""
        end = self._ends.get(v)
        if end is None:
            nic = self.nic_of(v) if v[0] == "gpu" else v
            leaf = self.leaf_of(nic)
            if nic == v or (v, nic) in self._id:
                to_nic = [v, nic] if nic != v else [v]
            else:
                to_nic = self._intra_path(v, nic)
            up = self.link_ids(to_nic) + [self._id[(nic, leaf)]]
            down = [self._id[(leaf, nic)]] + self.link_ids(to_nic[::-1])
            end = self._ends[v] = (up, leaf, down)
        return end

    # -- many flows at once -------------------------------------------------------------------
    def _edge_array(self, u: tuple, v: tuple) -> np.ndarray:
        """Link id of the node-template edge ``u → v`` (vertices without their node) in every node; -1 if absent."""
        key = (u, v)
        arr = self._edge_arrays.get(key)
        if arr is None:
            ids = self._id
            arr = np.array([ids.get(pair, -1) for pair in zip(self._in_every_node(u), self._in_every_node(v))],
                           dtype=np.int64)
            self._edge_arrays[key] = arr
        return arr

    def _in_every_node(self, local: tuple) -> list[tuple]:
        """The vertex ``local`` (without its node) of every node, in node order; kept for the edges it ends."""
        found = self._vertices.get(local)
        if found is None:
            kind, rest = local[0], local[1:]
            found = self._vertices[local] = [(kind, n) + rest for n in range(self.nodes)]
        return found

    def _rank_ends(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For every GPU: links up to its leaf and down from it (padded with -1), and its leaf index."""
        found = self._tables.get("ends")
        if found is not None:
            return found
        gpn, nodes = self.gpus_per_node, self.nodes
        ups, downs, leaves = [], [], np.full(nodes * gpn, -1, dtype=np.int64)
        for local in range(gpn):
            rail = local * self.rails // gpn
            nics = [("nic", n, rail) for n in range(nodes)]
            leaf_of = [self._leaf.get(nic) for nic in nics]
            live = np.array([leaf is not None for leaf in leaf_of])
            ranks = np.arange(nodes) * gpn + local
            probe = next((n for n in range(nodes) if live[n]), None)
            chain = self._intra_path(("gpu", probe, local), ("nic", probe, rail)) if probe is not None else []
            template = [(v[0],) + v[2:] for v in chain]
            up_cols = [self._edge_array(template[i], template[i + 1]) for i in range(len(template) - 1)]
            down_cols = [self._edge_array(template[i + 1], template[i]) for i in reversed(range(len(template) - 1))]
            ids = self._id
            up_cols.append(np.array([ids.get((nic, leaf), -1) for nic, leaf in zip(nics, leaf_of)], dtype=np.int64))
            down_cols.insert(0, np.array([ids.get((leaf, nic), -1) for nic, leaf in zip(nics, leaf_of)],
                                         dtype=np.int64))
            leaves[ranks] = [leaf[1] if leaf is not None else -1 for leaf in leaf_of]
            up = np.stack(up_cols, axis=1)
            down = np.stack(down_cols, axis=1)
            for n in np.nonzero(~live)[0]:          # a NIC without its cable: the GPU borrows a neighbour's
                try:
                    u, leaf, d = self._end(("gpu", int(n), local))
                except ValueError:                   # no NIC of the node is cabled: the node is cut off
                    continue
                leaves[ranks[n]] = leaf[1]
                up, down = _set_row(up, n, u), _set_row(down, n, d)
            ups.append((ranks, up))
            downs.append((ranks, down))
        width = max(a.shape[1] for _, a in ups + downs)
        up_all = np.full((nodes * gpn, width), -1, dtype=np.int64)
        down_all = np.full((nodes * gpn, width), -1, dtype=np.int64)
        for (ranks, up), (_, down) in zip(ups, downs):
            up_all[ranks, :up.shape[1]] = up
            down_all[ranks, :down.shape[1]] = down
        found = self._tables["ends"] = (up_all, down_all, leaves)
        return found

    def _leaf_arrays(self) -> tuple[np.ndarray, ...]:
        """Per leaf index: up pool, down pool, pod (-1: spines shared by all); per pod: up and down core pools."""
        found = self._tables.get("leaf pools")
        if found is not None:
            return found
        count = 1 + max((v[1] for v in self.graph if v[0] == "leaf"), default=0)
        pods = 1 + max((p for p in self._pod.values() if p is not None), default=0)
        up, down, pod = (np.full(count, -1, dtype=np.int64) for _ in range(3))
        pod_up, pod_down = np.full(pods, -1, dtype=np.int64), np.full(pods, -1, dtype=np.int64)
        for (owner, direction), rid in self._pool.items():
            if isinstance(owner, tuple):
                (up if direction == "up" else down)[owner[1]] = rid
            elif owner is not None:
                (pod_up if direction == "up" else pod_down)[owner] = rid
        for leaf, p in self._pod.items():
            pod[leaf[1]] = -1 if p is None else p
        found = self._tables["leaf pools"] = (up, down, pod, pod_up, pod_down)
        return found

    def route_many(self, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Routes of many flows at once, as (flow index, resource id) pairs.

        ``src``/``dst`` are GPU ranks, or -1 for the NVSwitch of the other end's node.
        Equivalent to ``route`` flow by flow; identical node-internal paths and per-GPU
        ends are looked up once and applied to every node with numpy.
        """
        gpn = self.gpus_per_node
        src_node = np.where(src >= 0, src, dst) // gpn
        dst_node = np.where(dst >= 0, dst, src) // gpn
        flows, res = [], []
        inside = np.nonzero(src_node == dst_node)[0]
        if len(inside):
            src_local = np.where(src[inside] >= 0, src[inside] % gpn, -1)
            dst_local = np.where(dst[inside] >= 0, dst[inside] % gpn, -1)
            flow, link = self._route_inside((src_local + 1) * (gpn + 1) + (dst_local + 1), src_node[inside])
            flows.append(inside[flow])
            res.append(link)
        across = np.nonzero(src_node != dst_node)[0]
        if len(across):
            up, down, leaf = self._rank_ends()
            s, d = src[across], dst[across]
            for table, ranks in ((up, s), (down, d)):
                block = table[ranks]
                rows, cols = np.nonzero(block >= 0)
                flows.append(across[rows])
                res.append(block[rows, cols])
            la, lb = leaf[s], leaf[d]
            if (la < 0).any() or (lb < 0).any():
                raise ValueError("a node has no NIC attached to the fabric: the fabric is disconnected")
            pool_up, pool_down, pod, pod_up, pod_down = self._leaf_arrays()
            apart = np.nonzero(la != lb)[0]
            hops = [pool_up[la[apart]], pool_down[lb[apart]]]
            pa, pb = pod[la[apart]], pod[lb[apart]]
            cross = np.nonzero((pa != pb) & (pa >= 0))[0]
            hops_cross = [pod_up[pa[cross]], pod_down[pb[cross]]]
            if any((h < 0).any() for h in hops + hops_cross):
                raise ValueError("no path between two leaves: the fabric is disconnected")
            for h in hops:
                flows.append(across[apart])
                res.append(h)
            for h in hops_cross:
                flows.append(across[apart[cross]])
                res.append(h)
        if not flows:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(flows), np.concatenate(res)

    def _route_inside(self, pair: np.ndarray, node: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Routes of flows inside their node, as (flow index, resource id) pairs ordered by the flows' pair of
        ends (``pair``: source and destination local index, coded), then hop, then flow: each pair's template
        path is looked up once and its links are read for every node at once."""
        order = np.argsort(pair, kind="stable")
        codes, starts = np.unique(pair[order], return_index=True)
        rows: dict[tuple, int] = {}                  # template edge → its row of ``links``
        chains = [[rows.setdefault(edge, len(rows)) for edge in self._chain(code, int(node[order[start]]))]
                  for code, start in zip(codes.tolist(), starts.tolist())]
        table = np.full((len(codes), max(map(len, chains))), -1, dtype=np.int64)
        for k, chain in enumerate(chains):
            table[k, :len(chain)] = chain
        block = np.repeat(np.arange(len(codes)), np.diff(np.append(starts, len(pair))))
        hops = table[block]                          # template edges of each flow, in ``order``
        j, i = np.nonzero(hops >= 0)
        by = np.lexsort((j, i, block[j]))
        j, i = j[by], i[by]
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        links = np.stack([self._edge_array(u, v) for u, v in rows])
        return order[j], links[hops[j, i], node[order[j]]]

    def _chain(self, code: int, node: int) -> list[tuple]:
        """Template edges (vertices without their node) from one local end to the other of a coded pair,
        the template found on ``node`` when first asked; a local index of 0 is the node's NVSwitch."""
        chain = self._chains.get(code)
        if chain is None:
            a_local, b_local = divmod(code, self.gpus_per_node + 1)
            a = ("gpu", node, a_local - 1) if a_local else ("nvswitch", node)
            b = ("gpu", node, b_local - 1) if b_local else ("nvswitch", node)
            path = [(v[0],) + v[2:] for v in self._intra_path(a, b)]
            chain = self._chains[code] = list(zip(path, path[1:]))
        return chain

    def storage_paths(self, node: int) -> list[list[int]]:
        """Links from a node's host through each of its storage NICs to the storage system."""
        out = []
        host = ("host", node)
        for w in self.graph[host]:
            if self.graph.nodes[w]["kind"] != "snic":
                continue
            for leaf in self.graph[w]:
                if self.graph.nodes[leaf]["kind"] == "sleaf" and self.graph.has_edge(leaf, ("storage",)):
                    out.append(self.link_ids([host, w, leaf, ("storage",)]))
        return out


def _link_scale(tiers: np.ndarray, through_switch: list[int], efficiency: Efficiency | None) -> np.ndarray:
    """Each link's efficiency from its tier's index (1 without efficiencies): ``nvlink`` inside a node, ``network``
    on the NICs and switch tiers. Nodes without NVLink send GPU-to-GPU traffic through their PCIe switches and
    host, bound by what the host delivers: the links through a PCIe switch take the ``pcie`` efficiency; a GPU's
    own PCIe link to its NIC keeps the intra-node one."""
    if efficiency is None:
        return np.ones(len(tiers))
    intra, network = efficiency.nvlink, efficiency.network
    factor = np.array([intra if t in INTRA_NODE_TIERS else network if t in NETWORK_TIERS else 1.0 for t in TIERS])
    factor = factor[tiers]
    factor[through_switch] = efficiency.pcie
    return factor


def _set_row(table: np.ndarray, row: int, values: list[int]) -> np.ndarray:
    """``table`` with ``row`` replaced by ``values`` (widened with -1 when longer)."""
    if len(values) > table.shape[1]:
        table = np.hstack([table, np.full((table.shape[0], len(values) - table.shape[1]), -1, dtype=np.int64)])
    table[row] = -1
    table[row, :len(values)] = values
    return table
