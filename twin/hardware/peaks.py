"""Peak FLOP/s as vendors quote them: per GPU, node, scalable unit and cluster, dense and with sparsity.

The catalog stores dense tensor-core peaks (``gpus.yaml``). NVIDIA's datasheets print the
2:4 structured-sparsity figure for TF32 and the narrower types, twice the dense one (H100
datasheet footnote "with sparsity"); FP64 has no sparse mode. So 32 DGX H100 (one scalable
unit of 32 node slots) give 32 · 8 · 3,958 TFLOP/s = 1.01 EFLOPS FP8 with sparsity, as the
seed's "1 exaflops of FP8 per scalable unit" quotes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.hardware.specs import NodeSpec

# 2:4 structured sparsity doubles the tensor peak of these types (NVIDIA A100 and H100 datasheets,
# "* With sparsity"); FP64 and FP64 tensor run dense only.
SPARSE_SPEEDUP = 2.0
SPARSE_PRECISIONS = ("tf32", "bf16", "fp16", "fp8", "int8", "fp4")
# Vendors' names of each type.
VENDOR_NAMES = {"fp64": "FP64", "fp64_tensor": "FP64 Tensor Core", "tf32": "TF32 Tensor Core",
                "bf16": "BF16 Tensor Core", "fp16": "FP16 Tensor Core", "fp8": "FP8 Tensor Core",
                "int8": "INT8 Tensor Core", "fp4": "FP4 Tensor Core"}


@dataclass(frozen=True)
class PeakRow:
    """One precision's peak at every scale, FLOP/s (or OP/s for INT8)."""
    precision: str
    name: str                             # as the vendor names it
    sparse: bool                          # the figure with 2:4 sparsity
    gpu: float
    node: float
    scalable_unit: float
    cluster: float


def peak_rows(node: NodeSpec, nodes: int, nodes_per_su: int) -> tuple[PeakRow, ...]:
    """Dense and sparse peaks of every precision the GPU has, per GPU, node, SU and cluster.

    A cluster smaller than one scalable unit is its own unit (``min(nodes_per_su, nodes)`` nodes).
    """
    su_nodes = min(nodes_per_su, nodes)
    rows = []
    for precision, dense in node.gpu.peak_flops.items():
        variants = [(False, dense)]
        if precision in SPARSE_PRECISIONS:
            variants.append((True, dense * SPARSE_SPEEDUP))
        for sparse, per_gpu in variants:
            per_node = per_gpu * node.gpus
            rows.append(PeakRow(precision, VENDOR_NAMES.get(precision, precision.upper()), sparse, per_gpu, per_node,
                                per_node * su_nodes, per_node * nodes))
    return tuple(rows)


def quoted(value: float, precision: str) -> str:
    """'4.02 EFLOPS', or TOPS for integer types, as vendors print them."""
    unit = "OPS" if precision.startswith("int") else "FLOPS"
    for prefix, scale in (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9)):
        if value >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"
