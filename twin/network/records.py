"""The records of a fabric summary (``CommModel.summary``, ``Result.fabric``, docs/results.md): the fabric's
counts and scalable units, its cables, and where each parallel group lands."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from twin.hardware.cabling import NetworkCables
from twin.hardware.peaks import PeakRow

if TYPE_CHECKING:
    import networkx as nx


def su_rows(g: nx.Graph) -> list["ScalableUnit"]:
    """Per scalable unit (pod): nodes, GPUs, leaves and spines of its own."""
    rows: dict[int, list[int]] = {}            # index → [nodes, leaves, spines]
    for v, d in g.nodes(data=True):
        kind = d.get("kind")
        if kind == "nic" and d.get("rail") == 0:
            rows.setdefault(int(d.get("su", 0)), [0, 0, 0])[0] += 1
        elif kind == "leaf":
            rows.setdefault(int(d.get("su", 0)), [0, 0, 0])[1] += 1
        elif kind == "spine" and d.get("pod") is not None:
            rows.setdefault(int(d["pod"]), [0, 0, 0])[2] += 1
    gpn = int(g.graph.get("gpus_per_node", 1))
    return [ScalableUnit(index=k, nodes=n, gpus=n * gpn, leaves=leaves, spines=spines)
            for k, (n, leaves, spines) in sorted(rows.items())]


@dataclass(frozen=True)
class ScalableUnit:
    index: int
    nodes: int
    gpus: int
    leaves: int
    spines: int                  # its own spines (three-tier fabrics only)


@dataclass(frozen=True)
class Cables:
    node_leaf: int               # compute NICs and UFM appliances to leaves
    leaf_spine: int
    spine_core: int
    storage: int                 # storage NICs to storage leaves


@dataclass(frozen=True)
class GroupSummary:
    """Where the groups of one parallel kind land and how fast they communicate all at once."""
    size: int
    count: int
    ranks_per_node: int
    nodes: int
    reach: str                   # node | leaf | spine | core: the highest tier its traffic climbs
    crosses_nodes: bool
    crosses_leaves: bool
    crosses_spines: bool
    busbw_Bps: float
    algorithm: str | None = None     # all-reduce algorithm at 4 GiB (tensor and data groups)


@dataclass(frozen=True)
class FabricSummary:
    """The compute fabric and where each parallel group lands (``Result.fabric``, docs/results.md)."""
    topology: str
    nodes: int
    gpus: int
    nics: int
    nvswitch_chips: int
    scalable_units: int
    nodes_per_su: int
    leaves: int
    spines: int
    cores: int
    storage_leaves: int
    cables: Cables
    link_Bps: float
    oversubscription: float
    injection_Bps: float
    bisection_Bps: float
    spine_scope: str             # global | su
    su: tuple[ScalableUnit, ...]
    groups: dict[str, GroupSummary]
    order: str | None = None     # rank order of the placement
    networks: NetworkCables | None = None    # every network's cables and the power cords
    peaks: tuple[PeakRow, ...] = ()          # peak FLOP/s per GPU, node, SU and cluster, dense and sparse
    peaks_source: str = ""                   # the GPU's datasheet the dense peaks come from (catalog gpus.yaml)
