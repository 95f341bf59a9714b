"""The fabric record (``Result.fabric``) as text, for ``python -m twin topology``."""

from __future__ import annotations

from twin.hardware.peaks import quoted
from twin.network.records import FabricSummary
from twin.units import BITS_PER_BYTE, fmt_si

# Where the counts and peaks come from, printed under them.
CABLE_SOURCES = ("counted as the DGX SuperPOD H100 reference architecture RA-11333-001 V11 counts them, one "
                 "cable per 400 Gb/s port: compute Table 4 (hardware/topology.py); storage its Storage Fabric "
                 "section and Table 8; in-band, out-of-band and PDUs Tables 7 and 8 (hardware/cabling.py)")
PEAK_SOURCES = "with sparsity = 2x dense for TF32 and narrower, the datasheet's \"with sparsity\" (hardware/peaks.py)"
# The precisions vendors quote for a cluster, in the order printed.
QUOTED_PRECISIONS = ("fp8", "bf16", "tf32", "fp64")

_REACH_WORDS = {"none": "-", "node": "inside a node (NVLink/PCIe)", "leaf": "across nodes, one leaf",
                "spine": "across leaves (spines)", "core": "across pods (core)"}


def describe(f: FabricSummary) -> str:
    """A few lines on the fabric and a table of where each parallel group lands."""
    cables = f.cables
    lines = [
        f"Fabric        {f.topology}: {f.nodes:,} nodes, {f.gpus:,} GPUs, {f.nics:,} compute NICs at "
        f"{fmt_si(f.link_Bps * BITS_PER_BYTE, 'b/s')}",
        f"Switches      {f.leaves} leaves, {f.spines} spines, {f.cores} cores"
        f" in {f.scalable_units} scalable unit(s) of {f.nodes_per_su} node slots"
        + (f"; {f.nvswitch_chips} NVSwitch chips" if f.nvswitch_chips else ""),
        f"Cables        node/UFM-leaf {cables.node_leaf:,}, leaf-spine {cables.leaf_spine:,}, "
        f"spine-core {cables.spine_core:,}, storage {cables.storage:,}",
        f"Bandwidth     injection {fmt_si(f.injection_Bps, 'B/s')}, bisection {fmt_si(f.bisection_Bps, 'B/s')} "
        f"(oversubscription 1:{f.oversubscription:g})",
    ]
    lines += _networks(f) + _peaks(f)
    if f.groups:
        lines.append("")
        lines.append(f"Groups (rank order {f.order or 'tp-dp-pp'}, every group of a kind communicating at once)")
        header = ["group", "size", "groups", "per node", "nodes", "lands", "algorithm", "bus bandwidth"]
        rows = []
        for kind, g in f.groups.items():
            rows.append([kind, str(g.size), str(g.count), str(g.ranks_per_node), str(g.nodes),
                         _REACH_WORDS.get(g.reach, g.reach),
                         g.algorithm or ("p2p" if kind == "pipeline" else "all-to-all"),
                         fmt_si(g.busbw_Bps, "B/s")])
        widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
        lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    if f.su:
        lines.append("")
        lines.append("Scalable units: " + "; ".join(f"SU{row.index} {row.nodes} nodes, {row.leaves} leaves"
                                                    + (f", {row.spines} spines" if row.spines else "")
                                                    for row in f.su[:8])
                     + (f"; ... {len(f.su) - 8} more" if len(f.su) > 8 else ""))
    return "\n".join(lines)


def _networks(f: FabricSummary) -> list[str]:
    """Cables of every network, their sum and the power cords."""
    n = f.networks
    if n is None:
        return []
    return [f"Networks      compute {n.compute:,}, storage {n.storage:,} ({n.storage_appliances} appliances), "
            f"in-band {n.inband:,}, out-of-band {n.oob:,}: {n.networks:,} cables; "
            f"with {n.power:,} power cords {n.total:,}",
            f"              ({CABLE_SOURCES})"]


def _peaks(f: FabricSummary) -> list[str]:
    """Peak FLOP/s per GPU, node, scalable unit and cluster, as vendors quote them."""
    rows = [r for p in QUOTED_PRECISIONS for r in f.peaks if r.precision == p]
    if not rows:
        return []
    header = ["peak", "per GPU", "per node", f"per SU ({min(f.nodes_per_su, f.nodes)} nodes)", f"cluster ({f.nodes} nodes)"]
    table = [[r.name + (" with sparsity" if r.sparse else ""), quoted(r.gpu, r.precision), quoted(r.node, r.precision),
              quoted(r.scalable_unit, r.precision), quoted(r.cluster, r.precision)] for r in rows]
    widths = [max(len(r[i]) for r in table + [header]) for i in range(len(header))]
    out = ["", f"Peaks (dense: {f.peaks_source or 'catalog gpus.yaml'}, x GPUs; {PEAK_SOURCES})",
           "  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip(), "  ".join("-" * w for w in widths)]
    return out + ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table]
