"""Measure GEMM and attention throughput at the shapes the validation cases run, against the operator model.

    python benchmarks/operator_rates.py --gpu h200 --out rows.json         # the shapes, priced by the twin
    python benchmarks/operator_rates.py --measure rows.json --out m.json   # time them (PyTorch, CUDA GPU)
    python benchmarks/operator_rates.py --compare m.json                   # measured against the twin

The twin runs every GEMM at ``peak · achievable · η_matmul`` whatever its shape, bounded by
the memory roofline, and fused attention at one rate per kernel (docs/model.md §4). The check
cases still off after the stack profiles (docs/validation.md) run small FP8 GEMMs on H100
(NeMo Llama 2 7B) or attention-heavy steps (the MPT long-sequence rows). The first command
takes the per-GPU shapes of every training case's layer (the forward GEMMs, their
input-gradient and weight-gradient GEMMs, and the causal attention of one micro-batch) and
prices them with the operator model for the GPU named. The second needs PyTorch alone, not
the twin, so it runs on any machine with the GPU: cuBLAS for 16-bit GEMMs,
``torch._scaled_mm`` (E4M3 inputs, bf16 output) for FP8, ``scaled_dot_product_attention``
with its flash (FlashAttention-2) and cuDNN backends; each figure is the median of timed
runs after a warm-up, with CUDA events (``--device cpu`` tries the path without a GPU, with
figures that are no GPU's; ``--limit N`` keeps the N smallest shapes of each kind).

The result says, per shape, the measured TFLOP/s, the twin's, and their ratio: a check of
the operator model, never an input to a fit on the cases.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
THROUGHPUT_METRICS = {"tokens_per_s_per_gpu", "hardware_tflops_per_gpu", "model_tflops_per_gpu", "step_time_s"}
WARMUP, REPEATS = 3, 20      # at most; long kernels run fewer times, about a second each in all
SECONDS_PER_SHAPE = 1.0
# FlashAttention's backward does 2.5x the forward's matmul work (twin.engine.stage_costs; Dao 2023).
FLASH_BACKWARD_FACTOR = 2.5
ATTENTION_KERNELS = ("flash2", "flash")   # the twin's names: FlashAttention-2, the GPU's native fused kernel


# -- the shapes and the twin's rates (needs the twin) ------------------------------------------------

def priced_rows(gpu: str) -> list[dict]:
    """One row per distinct per-GPU shape of the training cases, with the twin's TFLOP/s on ``gpu``."""
    sys.path.insert(0, str(ROOT))
    from twin.api import build, parse_scenario
    from twin.calibration import Efficiency
    from twin.operators.roofline import OperatorModel
    from twin.operators.elementwise import FLASH_BACKWARD_FACTOR as twin_factor
    from twin.hardware.specs import gpu_spec
    from twin.validation import load_cases
    from twin.validation.runner import _scenario
    assert twin_factor == FLASH_BACKWARD_FACTOR

    efficiency, spec = Efficiency.calibrated(), gpu_spec(gpu)
    gemms: dict[tuple, set] = {}
    attention: dict[tuple, set] = {}
    for case in load_cases():
        if case.metric not in THROUGHPUT_METRICS or case.collective:
            continue
        b = build(parse_scenario(_scenario(case, None), case.id))
        model, plan = b.model, b.plan
        if model.is_moe:
            continue
        tokens, t, h = plan.microbatch * plan.seq_len, plan.tensor, model.hidden
        ffn_in = (model.ffn_matrices - 1) * model.ffn_hidden // t
        precision = "bf16" if b.ops.precision == "fp16" else b.ops.precision
        for m, n, k in ((tokens, (h + 2 * model.kv_dim) // t, h), (tokens, h, h // t),
                        (tokens, ffn_in, h), (tokens, h, model.ffn_hidden // t)):
            # forward (m×k)·(k×n), input gradient (m×n)·(n×k), weight gradient (k×m)·(m×n)
            for shape in ((m, n, k), (m, k, n), (k, n, m)):
                gemms.setdefault((*shape, precision), set()).add(case.id)
        if b.stack.attention != "standard":
            attention.setdefault((plan.microbatch, model.heads // t, plan.seq_len, model.head_dim),
                                 set()).add(case.id)

    rows = []
    for (m, n, k, precision), cases in sorted(gemms.items(), key=lambda kv: (kv[0][3], kv[0][0] * kv[0][1] * kv[0][2])):
        ops = OperatorModel(spec, precision, efficiency, separate_fp8_cast=False)
        rows.append({"kind": "gemm", "dims": [m, n, k], "precision": precision, "cases": sorted(cases),
                     "twin_tflops": 2.0 * m * n * k / ops.matmul_s(m, n, k) / 1e12})
    for dims, cases in sorted(attention.items(), key=lambda kv: kv[0][2]):
        for kernel in ATTENTION_KERNELS:
            ops = OperatorModel(spec, "bf16", efficiency, attention_kernel=kernel)
            padded = ops.padded_head_dim(dims[3]) / dims[3]
            for kind, rate in (("attention-forward", ops.attention_flops),
                               ("attention-backward", ops.attention_backward_flops)):
                rows.append({"kind": kind, "dims": list(dims), "kernel": kernel, "precision": "bf16",
                             "cases": sorted(cases), "twin_tflops": rate / padded / 1e12})
    return rows


# -- timing (needs PyTorch alone) --------------------------------------------------------------------

def _time_s(fn, device: str) -> float:
    """Median seconds of ``fn``: a warm-up, then as many timed runs as fit a second (3 to 20); CUDA
    events on a GPU, the wall clock elsewhere."""
    import torch
    times = []
    for i in range(WARMUP + REPEATS):
        if i >= WARMUP + 3 and sum(times) > SECONDS_PER_SHAPE:
            break
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            seconds = start.elapsed_time(end) / 1e3
        else:
            begin = time.perf_counter()
            fn()
            seconds = time.perf_counter() - begin
        if i >= WARMUP:
            times.append(seconds)
    return statistics.median(times)


def measure_gemm(m: int, n: int, k: int, precision: str, device: str) -> tuple[float, str]:
    import torch
    a = torch.randn(m, k, device=device, dtype=torch.bfloat16)
    b = torch.randn(k, n, device=device, dtype=torch.bfloat16)
    if precision == "fp8":
        a8 = a.to(torch.float8_e4m3fn)
        b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()          # column-major, as cuBLASLt requires
        one = torch.ones((), device=device, dtype=torch.float32)
        seconds = _time_s(lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
                          device)
        return 2.0 * m * n * k / seconds / 1e12, "torch._scaled_mm"
    return 2.0 * m * n * k / _time_s(lambda: a @ b, device) / 1e12, "torch.matmul"


def timed_heads(batch: int, heads: int, seq_len: int, head_dim: int, max_flops: float = 2e13,
                min_blocks: int = 1024) -> int:
    """Heads to time: all of them, or at long sequences as few as keep a call under ``max_flops``
    while giving the kernel ``min_blocks`` blocks of 128 queries (the rate per head is the same)."""
    total = 2.0 * seq_len ** 2 * head_dim * heads * batch
    if total <= max_flops:
        return heads
    enough = -(-min_blocks * 128 // (seq_len * batch))
    return min(heads, max(enough, int(heads * max_flops / total)))


def measure_attention(batch: int, heads: int, seq_len: int, head_dim: int, kernel: str,
                      device: str) -> tuple[float, float, str] | None:
    """(forward, backward) useful TFLOP/s of causal attention: 4·s²·d·heads·batch / 2 forward, 2.5× backward."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backend = {"flash2": SDPBackend.FLASH_ATTENTION, "flash": getattr(SDPBackend, "CUDNN_ATTENTION", None)}[kernel]
    if backend is None:
        return None
    heads = timed_heads(batch, heads, seq_len, head_dim)
    q, k, v = (torch.randn(batch, heads, seq_len, head_dim, device=device, dtype=torch.bfloat16,
                           requires_grad=True) for _ in range(3))
    flops = 2.0 * seq_len ** 2 * head_dim * heads * batch

    def forward():
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    try:
        with sdpa_kernel(backend):
            forward_s = _time_s(forward, device)
            out = forward()
            grad = torch.randn_like(out)
            backward_s = _time_s(lambda: torch.autograd.grad(out, (q, k, v), grad, retain_graph=True), device)
    except RuntimeError as error:                                     # backend not available for this shape
        print(f"  {kernel} {batch}x{heads}x{seq_len}x{head_dim}: {str(error).splitlines()[0]}")
        return None
    return flops / forward_s / 1e12, FLASH_BACKWARD_FACTOR * flops / backward_s / 1e12, str(backend)


def measure(rows: list[dict], device: str) -> str:
    """Time every row in place; returns the machine measured."""
    import torch
    if device == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("no CUDA GPU here (--device cpu tries the path without one)")
        machine = torch.cuda.get_device_name()
    else:
        machine = "CPU (a trial of the measuring path, not a GPU's figures)"
    print(f"measuring on {machine}, torch {torch.__version__}")
    attention: dict[tuple, tuple | None] = {}
    for row in rows:
        if row["kind"] == "gemm":
            row["measured_tflops"], row["backend"] = measure_gemm(*row["dims"], row["precision"], device)
            continue
        key = (*row["dims"], row["kernel"])
        if key not in attention:
            attention[key] = measure_attention(*row["dims"], row["kernel"], device)
        result = attention[key]
        if result is not None:
            row["measured_tflops"] = result[0] if row["kind"] == "attention-forward" else result[1]
            row["backend"] = result[2]
    return machine


# -- reading -----------------------------------------------------------------------------------------

def limited(rows: list[dict], n: int) -> list[dict]:
    """The ``n`` smallest GEMMs and the attention rows of the ``n`` shortest attention shapes."""
    gemms = sorted((r for r in rows if r["kind"] == "gemm"), key=lambda r: r["dims"][0] * r["dims"][1] * r["dims"][2])
    shapes = sorted({tuple(r["dims"]) for r in rows if r["kind"] != "gemm"}, key=lambda d: (d[2], d))[:n]
    return gemms[:n] + [r for r in rows if r["kind"] != "gemm" and tuple(r["dims"]) in shapes]


def print_rows(rows: list[dict]) -> None:
    print(f"{'kind':19s} {'shape':28s} {'prec':5s} {'twin':>7s} {'measured':>9s} {'ratio':>6s}  cases")
    for r in rows:
        shape = "x".join(map(str, r["dims"])) + (f" {r['kernel']}" if "kernel" in r else "")
        measured = r.get("measured_tflops")
        shown = "" if measured is None else f"{measured:9.1f}"
        ratio = "" if measured is None else f"{measured / r['twin_tflops']:6.2f}"
        cases = ", ".join(r["cases"][:2]) + (f" (+{len(r['cases']) - 2})" if len(r["cases"]) > 2 else "")
        print(f"{r['kind']:19s} {shape:28s} {r['precision']:5s} {r['twin_tflops']:7.0f} {shown:>9s} {ratio:>6s}  {cases}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", default="h100-sxm", help="catalog GPU the twin prices the shapes on")
    parser.add_argument("--measure", metavar="ROWS", help="time the rows of this file (PyTorch only)")
    parser.add_argument("--compare", metavar="ROWS", help="print measured rows against the twin")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--limit", type=int, help="keep the N smallest shapes of each kind")
    parser.add_argument("--out", help="write the rows as JSON into this file")
    args = parser.parse_args()

    if args.compare:
        rows = json.loads(Path(args.compare).read_text())
    elif args.measure:
        rows = json.loads(Path(args.measure).read_text())
    else:
        rows = priced_rows(args.gpu)
    if args.limit:
        rows = limited(rows, args.limit)
    if args.measure:
        machine = measure(rows, args.device)
        for row in rows:
            row["machine"] = machine
    print_rows(rows)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
