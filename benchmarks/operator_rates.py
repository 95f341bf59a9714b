"""Measure GEMM and attention throughput at the shapes the validation cases run, against the operator model.

    python benchmarks/operator_rates.py --list                 # shapes and the twin's rates; no GPU needed
    python benchmarks/operator_rates.py --out rates.json       # measure on this machine's CUDA GPU (PyTorch)

The twin runs every GEMM at ``peak · achievable · η_matmul`` whatever its shape, bounded by
the memory roofline, and fused attention at one rate per kernel (docs/model.md §4). The check
cases still off after the stack profiles (docs/validation.md) run small FP8 GEMMs on H100
(NeMo Llama 2 7B) or attention-heavy steps (the MPT long-sequence rows). This script takes
the per-GPU shapes of every training case's layer (the forward GEMMs, their input-gradient
and weight-gradient GEMMs, and the causal attention of one micro-batch), prices them with the
operator model for the GPU it measures on, and times them with PyTorch: cuBLAS for 16-bit
GEMMs, ``torch._scaled_mm`` (E4M3 inputs, bf16 output) for FP8, and
``scaled_dot_product_attention`` with its flash (FlashAttention-2) and, where PyTorch has it,
cuDNN backends. Each figure is the median of timed runs after a warm-up, with CUDA events.

The result (JSON, one row per shape) says, per shape, the measured TFLOP/s, the twin's, and
their ratio; it is a check of the operator model, never an input to a fit on the cases.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from twin.api import build, parse_scenario  # noqa: E402
from twin.calibration import Efficiency  # noqa: E402
from twin.engine.operators import OperatorModel  # noqa: E402
from twin.engine.stage_costs import FLASH_BACKWARD_FACTOR  # noqa: E402
from twin.hardware.specs import gpu_spec  # noqa: E402
from twin.validation import load_cases  # noqa: E402
from twin.validation.runner import _scenario  # noqa: E402

THROUGHPUT_METRICS = {"tokens_per_s_per_gpu", "hardware_tflops_per_gpu", "model_tflops_per_gpu", "step_time_s"}
# torch.cuda.get_device_name() → the catalog's GPU name.
DEVICE_NAMES = {"H200": "h200", "GH200": "gh200", "H100": "h100-sxm", "A100-SXM4-80GB": "a100-80gb",
                "A100-SXM4-40GB": "a100-40gb", "B200": "b200"}
WARMUP, REPEATS = 3, 20      # at most; long kernels run fewer times, about a second each in all
SECONDS_PER_SHAPE = 1.0


@dataclass(frozen=True)
class Gemm:
    m: int
    n: int
    k: int
    precision: str

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k


@dataclass(frozen=True)
class Attention:
    batch: int
    heads: int
    seq_len: int
    head_dim: int


@dataclass
class Row:
    kind: str                   # gemm | attention-forward | attention-backward
    shape: str
    precision: str
    cases: list[str]
    twin_tflops: float
    measured_tflops: float | None = None
    backend: str = ""

    @property
    def ratio(self) -> float | None:
        return None if self.measured_tflops is None else self.measured_tflops / self.twin_tflops


def case_shapes() -> tuple[dict[Gemm, list[str]], dict[Attention, list[str]]]:
    """Per-GPU GEMM and attention shapes of one layer and one micro-batch of every training case."""
    gemms: dict[Gemm, list[str]] = {}
    attention: dict[Attention, list[str]] = {}
    for case in load_cases():
        if case.metric not in THROUGHPUT_METRICS or case.collective:
            continue
        b = build(parse_scenario(_scenario(case, None), case.id))
        model, plan = b.model, b.plan
        if model.is_moe:
            continue
        tokens, t, h = plan.microbatch * plan.seq_len, plan.tensor, model.hidden
        ffn_in = (model.ffn_matrices - 1) * model.ffn_hidden // t
        forward = [(tokens, (h + 2 * model.kv_dim) // t, h), (tokens, h, h // t),
                   (tokens, ffn_in, h), (tokens, h, model.ffn_hidden // t)]
        precision = "bf16" if b.ops.precision == "fp16" else b.ops.precision
        for m, n, k in forward:
            # forward, input gradient (m×n)·(n×k), weight gradient (k×m)·(m×n)
            for shape in ((m, n, k), (m, k, n), (k, n, m)):
                gemms.setdefault(Gemm(*shape, precision), []).append(case.id)
        if b.stack.attention != "standard":
            attention.setdefault(Attention(plan.microbatch, model.heads // t, plan.seq_len, model.head_dim),
                                 []).append(case.id)
    return gemms, attention


def twin_rates(gpu: str, gemms: dict[Gemm, list[str]], attention: dict[Attention, list[str]]) -> list[Row]:
    """What the operator model assumes on ``gpu`` for every shape."""
    efficiency = Efficiency.calibrated()
    rows = []
    for g, cases in sorted(gemms.items(), key=lambda kv: (kv[0].precision, kv[0].flops)):
        ops = OperatorModel(gpu_spec(gpu), g.precision, efficiency, separate_fp8_cast=False)
        rows.append(Row("gemm", f"{g.m}x{g.n}x{g.k}", g.precision, sorted(set(cases)),
                        g.flops / ops.matmul_s(g.m, g.n, g.k) / 1e12))
    for a, cases in sorted(attention.items(), key=lambda kv: kv[0].seq_len):
        for kernel in ("flash2", "flash"):
            ops = OperatorModel(gpu_spec(gpu), "bf16", efficiency, attention_kernel=kernel)
            shape = f"b{a.batch} h{a.heads} s{a.seq_len} d{a.head_dim} {kernel}"
            padded = ops.padded_head_dim(a.head_dim) / a.head_dim
            rows.append(Row("attention-forward", shape, "bf16", sorted(set(cases)), ops.attention_flops / padded / 1e12))
            rows.append(Row("attention-backward", shape, "bf16", sorted(set(cases)),
                            ops.attention_backward_flops / padded / 1e12))
    return rows


def _time_s(fn) -> float:
    """Median seconds of ``fn`` on the GPU: a warm-up, then as many timed runs as fit a second (3 to 20)."""
    import torch
    times = []
    for i in range(WARMUP + REPEATS):
        if i >= WARMUP + 3 and sum(times) > SECONDS_PER_SHAPE:
            break
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        if i >= WARMUP:
            times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def measure_gemm(g: Gemm) -> float:
    import torch
    a = torch.randn(g.m, g.k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(g.k, g.n, device="cuda", dtype=torch.bfloat16)
    if g.precision == "fp8":
        a8 = a.to(torch.float8_e4m3fn)
        b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()          # column-major, as cuBLASLt requires
        one = torch.ones((), device="cuda", dtype=torch.float32)
        seconds = _time_s(lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
    else:
        seconds = _time_s(lambda: a @ b)
    return g.flops / seconds / 1e12


def timed_heads(a: Attention, max_flops: float = 2e13, min_blocks: int = 1024) -> int:
    """Heads to time: all of them, or at long sequences as few as keep a call under ``max_flops``
    while giving the kernel ``min_blocks`` blocks of 128 queries (the rate per head is the same)."""
    total = 4.0 * a.seq_len ** 2 * a.head_dim * a.heads * a.batch / 2
    if total <= max_flops:
        return a.heads
    enough = -(-min_blocks * 128 // (a.seq_len * a.batch))
    return min(a.heads, max(enough, int(a.heads * max_flops / total)))


def measure_attention(a: Attention, kernel: str) -> tuple[float, float, str] | None:
    """(forward, backward) useful TFLOP/s of causal attention: 4·s²·d·heads·batch / 2 forward, 2.5× backward."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backend = {"flash2": SDPBackend.FLASH_ATTENTION, "flash": getattr(SDPBackend, "CUDNN_ATTENTION", None)}[kernel]
    if backend is None:
        return None
    heads = timed_heads(a)
    q, k, v = (torch.randn(a.batch, heads, a.seq_len, a.head_dim, device="cuda", dtype=torch.bfloat16,
                           requires_grad=True) for _ in range(3))
    flops = 4.0 * a.seq_len ** 2 * a.head_dim * heads * a.batch / 2

    def forward():
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    try:
        with sdpa_kernel(backend):
            forward_s = _time_s(forward)
            out = forward()
            grad = torch.randn_like(out)
            backward_s = _time_s(lambda: torch.autograd.grad(out, (q, k, v), grad, retain_graph=True))
    except RuntimeError as error:                                     # backend not available for this shape
        print(f"  {kernel} b{a.batch} h{a.heads} s{a.seq_len} d{a.head_dim}: {error}".splitlines()[0])
        return None
    return flops / forward_s / 1e12, FLASH_BACKWARD_FACTOR * flops / backward_s / 1e12, str(backend)


def measure(rows: list[Row], gemms: dict[Gemm, list[str]], attention: dict[Attention, list[str]]) -> None:
    by_shape = {(r.kind, r.shape, r.precision): r for r in rows}
    for g in gemms:
        row = by_shape[("gemm", f"{g.m}x{g.n}x{g.k}", g.precision)]
        row.measured_tflops, row.backend = measure_gemm(g), "torch._scaled_mm" if g.precision == "fp8" else "cuBLAS"
    for a in attention:
        for kernel in ("flash2", "flash"):
            result = measure_attention(a, kernel)
            if result is None:
                continue
            shape = f"b{a.batch} h{a.heads} s{a.seq_len} d{a.head_dim} {kernel}"
            for kind, value in (("attention-forward", result[0]), ("attention-backward", result[1])):
                row = by_shape[(kind, shape, "bf16")]
                row.measured_tflops, row.backend = value, result[2]


def print_rows(rows: list[Row]) -> None:
    print(f"{'kind':19s} {'shape':34s} {'prec':5s} {'twin':>7s} {'measured':>9s} {'ratio':>6s}  cases")
    for r in rows:
        measured = "" if r.measured_tflops is None else f"{r.measured_tflops:9.0f}"
        ratio = "" if r.ratio is None else f"{r.ratio:6.2f}"
        cases = ", ".join(r.cases[:2]) + (f" (+{len(r.cases) - 2})" if len(r.cases) > 2 else "")
        print(f"{r.kind:19s} {r.shape:34s} {r.precision:5s} {r.twin_tflops:7.0f} {measured:>9s} {ratio:>6s}  {cases}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print the shapes and the twin's rates; measure nothing")
    parser.add_argument("--gpu", help="catalog GPU to price the shapes on (default: the local CUDA GPU)")
    parser.add_argument("--out", help="write the rows as JSON into this file")
    parser.add_argument("--precision", choices=["bf16", "fp8"], help="only GEMMs of this precision")
    args = parser.parse_args()

    gemms, attention = case_shapes()
    if args.precision:
        gemms = {g: c for g, c in gemms.items() if g.precision == args.precision}
    gpu = args.gpu
    if not args.list:
        try:
            import torch
        except ImportError:
            print("PyTorch is not installed: use --list to see the shapes and the twin's rates", file=sys.stderr)
            return 2
        if not torch.cuda.is_available():
            print("no CUDA GPU: use --list to see the shapes and the twin's rates", file=sys.stderr)
            return 2
        name = torch.cuda.get_device_name()
        gpu = gpu or next((v for k, v in DEVICE_NAMES.items() if k in name), None)
        if gpu is None:
            print(f"{name}: not in the catalog; name it with --gpu", file=sys.stderr)
            return 2
        print(f"measuring on {name} (priced as {gpu}), torch {torch.__version__}")
    rows = twin_rates(gpu or "h100-sxm", gemms, attention)
    if not args.list:
        measure(rows, gemms, attention)
    print_rows(rows)
    if args.out:
        Path(args.out).write_text(json.dumps([asdict(r) | {"ratio": r.ratio} for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
