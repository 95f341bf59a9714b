"""The twin's own operator timings: ``benchmarks/operator_rates.py --measure ROWS --out m.json``.

A JSON list of rows ``{"kind": "gemm" | "attention-forward" | "attention-backward", "dims": [...],
"precision": "bf16", "kernel": "flash2", "measured_tflops": 612.3, "machine": "NVIDIA H100 80GB HBM3", ...}``
(the script's own format; ``twin_tflops`` is the twin's figure when the rows were priced).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from twin.calibrate.gpus import catalog_gpu
from twin.calibrate.logs import LogError

KINDS = ("gemm", "attention-forward", "attention-backward")
PRECISIONS = ("bf16", "fp16", "fp8", "tf32", "fp32")


@dataclass(frozen=True)
class OperatorRow:
    kind: str
    dims: tuple[int, ...]
    precision: str
    kernel: str | None
    measured_flops: float      # FLOP/s


@dataclass(frozen=True)
class OperatorTimings:
    path: str
    device: str
    gpu: str | None
    rows: tuple[OperatorRow, ...]


def looks_like(text: str) -> bool:
    head = text.lstrip()[:2000]
    return head.startswith("[") and '"kind"' in head and '"dims"' in head


def parse(path: str | Path, text: str) -> OperatorTimings:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LogError(path, exc.lineno, f"not JSON (truncated?): {exc.msg}") from None
    if not isinstance(data, list) or not data:
        raise LogError(path, 1, "operator timings are a JSON list of rows (benchmarks/operator_rates.py --measure)")
    rows, device = [], ""
    for i, row in enumerate(data):
        at = f"row {i}"
        if not isinstance(row, dict) or row.get("kind") not in KINDS:
            raise LogError(path, 1, f"{at}: kind must be one of {', '.join(KINDS)}")
        dims = row.get("dims")
        if not isinstance(dims, list) or not dims or not all(isinstance(d, int) and 0 < d < 2**31 for d in dims):
            raise LogError(path, 1, f"{at}: dims must be a list of positive integers")
        if row.get("precision") not in PRECISIONS:
            raise LogError(path, 1, f"{at}: precision must be one of {', '.join(PRECISIONS)}")
        measured = row.get("measured_tflops")
        if measured is None:
            continue                     # a row the GPU could not run (the script leaves it unmeasured)
        if isinstance(measured, bool) or not isinstance(measured, (int, float)) or not 0 < measured < 1e6:
            raise LogError(path, 1, f"{at}: measured_tflops {measured!r} is not a positive TFLOP/s")
        device = device or str(row.get("machine", ""))
        rows.append(OperatorRow(row["kind"], tuple(dims), row["precision"], row.get("kernel"), measured * 1e12))
    if not rows:
        raise LogError(path, 1, "no row has measured_tflops: time the rows first (operator_rates.py --measure)")
    return OperatorTimings(str(path), device, catalog_gpu(device), tuple(rows))
