"""The largest scenarios the limits allow: wall time, CPU time and peak memory of one run each.

Run with ``python benchmarks/bench_limits.py``. The target (docs/scenario.md, "Limits"):
a 200,000-GPU cluster answers within 20 s and 2 GB on 2 cores; so does every scenario
at the edge of the limits. Each case runs in a fresh process so its peak memory is its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TRAINING = {"model": "llama3-405b", "tokens": "15T", "seq_len": 8192, "global_batch": 16000,
            "parallelism": {"tensor": 8, "pipeline": 16, "recompute": "full"}}
CASES = {
    "200,000 GPUs (25,000 DGX H100), failures, 10 samples": {
        "cluster": {"node": "dgx-h100", "nodes": 25000}, "training": TRAINING,
        "failures": {"enabled": True, "samples": 10}},
    "262,144 GPUs (32,768 nodes, the limit), failures": {
        "cluster": {"node": "dgx-h100", "nodes": 32768}, "training": TRAINING,
        "failures": {"enabled": True, "samples": 10}},
    "16,384 GPUs, failures x100, 7-day restarts, 1,000 samples": {
        "cluster": {"node": "dgx-h100", "nodes": 2048}, "training": TRAINING | {"global_batch": 2048},
        "failures": {"enabled": True, "samples": 1000, "rate_scale": 100, "restart_time": "7 d"}},
    "16M sequences per step on 2 nodes": {
        "cluster": {"node": "dgx-h100", "nodes": 2},
        "training": {"model": "llama2-7b", "tokens": "1000T", "seq_len": 4096, "global_batch": 16777216}},
}
PROBE = ("import json, resource, sys, time; t = time.perf_counter(); from twin.api import run_file; "
         "r = run_file(sys.argv[1]); print(json.dumps({'wall_s': time.perf_counter() - t, "
         "'cpu_s': time.process_time(), 'peak_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "
         "'finished': r.finished, 'gpus': r.gpus_total}))")


def main() -> None:
    print(f"{'case':<60} {'wall':>8} {'cpu':>8} {'peak':>9}")
    for label, data in CASES.items():
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            yaml.safe_dump({"name": label} | data, f)
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", PROBE, f.name], capture_output=True, text=True, cwd=ROOT)
        Path(f.name).unlink()
        if out.returncode:
            print(f"{label:<60} failed: {out.stderr.strip().splitlines()[-1]}")
            continue
        m = json.loads(out.stdout)
        print(f"{label:<60} {time.perf_counter() - start:7.1f}s {m['cpu_s']:7.1f}s {m['peak_mb']:7.0f} MB"
              + ("" if m["finished"] else "  (did not finish: stopped by a bound)"))


if __name__ == "__main__":
    main()
