"""Small logs in exactly the formats the tools write, with values chosen here (for tests/test_calibrate.py).

Formats: nccl-tests (NVIDIA/nccl-tests src/common.cu print_header and its README's sample output),
benchmarks/operator_rates.py --measure rows, nvidia-smi --query-gpu ... --format=csv, DCGM exporter
Prometheus text, sacct --parsable2, Megatron-LM training_log lines and timers, torchtitan metric lines,
vLLM benchmark_serving.py --save-result JSON and a trtllm-bench PERFORMANCE OVERVIEW block.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

NCCL_SIZES = [2**p for p in range(3, 34, 2)]          # 8 B to 8 GiB
H100_DEVICE = "NVIDIA H100 80GB HBM3"


def nccl_log(test: str, ranks: int, nodes: int, busbw_Bps: Callable[[float], float],
             latency_s: float = 30e-6, device: str = H100_DEVICE) -> str:
    """nccl-tests output of ``test`` (all_reduce, all_gather, ...) on ``ranks`` GPUs over ``nodes`` hosts;
    each size's bus bandwidth from ``busbw_Bps``, its time the latency plus the transfer."""
    n = ranks
    factor = {"all_reduce": 2 * (n - 1) / n, "sendrecv": 1.0}.get(test, (n - 1) / n)
    per_node = ranks // nodes
    lines = [f"# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 4(factor) warmup iters: 5 iters: 20 "
             "agg iters: 1 validation: 1 graph: 0", "#", "# Using devices"]
    for r in range(ranks):
        lines.append(f"#  Rank {r:2d} Group  0 Pid {4000 + r:6d} on   node-{r // per_node:02d} device "
                     f"{r % per_node:2d} [0x{0x18 + r % per_node:02x}] {device}")
    lines += ["#", "#                                                              out-of-place                       "
                   "in-place          ",
              "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
              "busbw #wrong",
              "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
              "(GB/s)       "]
    for size in NCCL_SIZES:
        bus = busbw_Bps(size)
        time_s = size * factor / bus if size >= 64 * 2**20 else latency_s + size * factor / bus
        busbw = size * factor / time_s / 1e9
        algbw = size / time_s / 1e9
        t_us = time_s * 1e6
        lines.append(f"{size:12d} {size // 4:13d}     float     sum      -1 {t_us:8.2f} {algbw:7.2f} {busbw:7.2f}"
                     f"      0 {t_us:8.2f} {algbw:7.2f} {busbw:7.2f}      0")
    lines += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 123.456", "#", ""]
    return "\n".join(lines)


def operator_rows(rows: Sequence[tuple[str, list[int], str, str | None, float]], device: str = H100_DEVICE) -> str:
    """benchmarks/operator_rates.py --measure output: (kind, dims, precision, kernel, measured TFLOP/s) rows."""
    out = []
    for kind, dims, precision, kernel, tflops in rows:
        row = {"kind": kind, "dims": dims, "precision": precision, "cases": ["site"], "twin_tflops": 1.0,
               "measured_tflops": tflops, "backend": "cublas", "machine": device}
        if kernel:
            row["kernel"] = kernel
        out.append(row)
    return json.dumps(out, indent=1)


def nvidia_smi_csv(samples: Sequence[tuple[float, int]], device: str = H100_DEVICE) -> str:
    """(power W, utilisation %) samples as nvidia-smi --query-gpu=timestamp,name,power.draw,clocks.sm,
    utilization.gpu --format=csv -l 1 writes them."""
    lines = ["timestamp, name, power.draw [W], clocks.sm [MHz], utilization.gpu [%]"]
    for i, (power, util) in enumerate(samples):
        lines.append(f"2026/11/30 10:{i // 60:02d}:{i % 60:02d}.123, {device}, {power:.2f} W, "
                     f"{1980 if util else 345} MHz, {util} %")
    return "\n".join(lines) + "\n"


def dcgm_text(samples: Sequence[tuple[float, int]], device: str = H100_DEVICE) -> str:
    lines = []
    for power, util in samples:
        labels = f'gpu="0",UUID="GPU-0b1c",device="nvidia0",modelName="{device}",Hostname="node-00"'
        lines += ["# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).", "# TYPE DCGM_FI_DEV_POWER_USAGE gauge",
                  f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} {power}",
                  "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).", "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
                  f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {util}",
                  f"DCGM_FI_DEV_SM_CLOCK{{{labels}}} 1980"]
    return "\n".join(lines) + "\n"


def sacct_text(jobs: Sequence[tuple[str, str, int, int]]) -> str:
    """(state, elapsed [D-]HH:MM:SS, nodes, GPUs) allocations, each with a batch step, as sacct --parsable2 writes."""
    lines = ["JobID|JobName|State|ExitCode|Elapsed|Submit|Start|End|NNodes|AllocTRES"]
    for i, (state, elapsed, nodes, gpus) in enumerate(jobs):
        tres = f"billing={gpus * 8},cpu={nodes * 112},gres/gpu={gpus},mem={nodes * 2000}G,node={nodes}"
        lines.append(f"{1000 + i}|pretrain|{state}|0:0|{elapsed}|2026-11-01T08:00:00|2026-11-01T09:30:00|"
                     f"2026-11-02T09:30:00|{nodes}|{tres}")
        lines.append(f"{1000 + i}.batch|batch|{state}|0:0|{elapsed}|2026-11-01T09:30:00|2026-11-01T09:30:00|"
                     f"2026-11-02T09:30:00|1|cpu=112,mem=2000G,node=1")
    return "\n".join(lines) + "\n"


def megatron_log(step_s: float, iterations: int = 5, timers_s: dict[str, float] | None = None) -> str:
    """Megatron-LM training_log lines, every 10 iterations, each followed by its timers when given."""
    lines = ["using world size: 992, data-parallel size: 31, tensor-model-parallel size: 8"]
    for i in range(1, iterations + 1):
        lines.append(f" [2026-11-30 10:{i:02d}:00] iteration {10 * i:8d}/  500000 | consumed samples: {9920 * i:12d} "
                     f"| elapsed time per iteration (ms): {step_s * 1e3:.1f} | learning rate: 1.500000E-04 | "
                     f"global batch size:   992 | lm loss: 7.812345E+00 | loss scale: 1.0 | grad norm: 1.234 | "
                     f"number of skipped iterations:   0 | number of nan iterations:   0 |")
        if timers_s:
            lines.append("(min, max) time across ranks (ms):")
            for name, value in timers_s.items():
                lines.append(f"    {name} {'.' * (48 - len(name))}: ({value * 1e3 * 0.98:.2f}, {value * 1e3:.2f})")
    return "\n".join(lines) + "\n"


def torchtitan_log(tps: float, steps: int = 5) -> str:
    return "".join(f"[rank0]:[titan] 2026-11-30 10:00:{s:02d},123 - root - INFO - \x1b[31mstep: {s:2d}  \x1b[32m"
                   f"loss:  7.8412  \x1b[33mmemory: 41.23GiB(52.05%)  \x1b[34mtps: {tps:,.0f}  \x1b[36mtflops: 307.89  "
                   f"\x1b[35mmfu: 31.13%\x1b[39m\n" for s in range(1, steps + 1))


def vllm_result(output_tps: float, ttft_ms: tuple[float, float], tpot_ms: tuple[float, float]) -> str:
    """vLLM benchmark_serving.py --save-result JSON (median and p99 TTFT and TPOT)."""
    return json.dumps({
        "date": "20261130-100000", "backend": "vllm", "model_id": "meta-llama/Llama-3.1-70B-Instruct",
        "tokenizer_id": "meta-llama/Llama-3.1-70B-Instruct", "num_prompts": 1000, "request_rate": "inf",
        "burstiness": 1.0, "max_concurrency": None, "duration": 120.5, "completed": 1000,
        "total_input_tokens": 1024000, "total_output_tokens": 128000, "request_throughput": 8.3,
        "request_goodput:": None, "output_throughput": output_tps, "total_token_throughput": output_tps * 9,
        "mean_ttft_ms": ttft_ms[0] * 1.1, "median_ttft_ms": ttft_ms[0], "std_ttft_ms": 10.0, "p99_ttft_ms": ttft_ms[1],
        "mean_tpot_ms": tpot_ms[0] * 1.02, "median_tpot_ms": tpot_ms[0], "std_tpot_ms": 1.0,
        "p99_tpot_ms": tpot_ms[1], "mean_itl_ms": tpot_ms[0], "median_itl_ms": tpot_ms[0], "std_itl_ms": 1.0,
        "p99_itl_ms": tpot_ms[1], "mean_e2el_ms": 5000.0, "median_e2el_ms": 4900.0, "std_e2el_ms": 100.0,
        "p99_e2el_ms": 6000.0}, indent=2)


def trtllm_report(output_tps: float) -> str:
    return "\n".join([
        "===========================================================", "= REQUEST DETAILS",
        "===========================================================", "Number of requests:             1000",
        "Average Input Length (tokens):  128.0000", "Average Output Length (tokens): 128.0000",
        "===========================================================", "= PERFORMANCE OVERVIEW",
        "===========================================================",
        "Request Throughput (req/sec):                     86.5373",
        f"Total Output Throughput (tokens/sec):             {output_tps:.4f}",
        "Total Token Throughput (tokens/sec):              22153.5399",
        "Total Latency (ms):                               11555.7150",
        "Average request latency (ms):                     1093.2284",
        "Average time-to-first-token [TTFT] (ms):          162.6706",
        "Average time-per-output-token [TPOT] (ms):        7.3272", ""])
