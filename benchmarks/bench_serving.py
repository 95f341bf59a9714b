"""Speed of the serving engine (level 3s) and the capacity search (level 4s).

Prints wall-clock seconds; run with ``python benchmarks/bench_serving.py``. The
target: 10,000 requests of a 70B model on 8 GPUs (one tensor-parallel replica on a
DGX H100) in under 5 s on 2 cores, the cost growing with the engine's distinct batch
compositions (arrivals, prefills, completions) and not with tokens.
"""

from __future__ import annotations

import time

from twin.calibration import Efficiency, ServingEfficiency
from twin.hardware.specs import ClusterSpec, FabricSpec, StorageSpec, node_spec
from twin.serving.capacity import capacity
from twin.serving.deployment import ServingSpec, replica, simulate
from twin.serving.specs import EngineSpec, LengthSpec, LoadSpec, SLOSpec
from twin.workload.model import model_spec


def deployment(rate: float | None, requests: int) -> tuple[ServingSpec, object]:
    node = node_spec("dgx-h100")
    cluster = ClusterSpec(node, 1, 0, 1, None, None,
                          FabricSpec("rail-optimized-fat-tree", node.compute_nics.line_rate_Bps, 32, 1.0),
                          StorageSpec(1e10, 1e10, None))
    load = LoadSpec(rate, requests, LengthSpec(1024, "lognormal", 4096, 0.8), LengthSpec(256, "exponential", 2048),
                    seed=1)
    spec = ServingSpec(model_spec("llama3-70b"), "fp8", "fp8", 8, 1, 1, None, EngineSpec(), load,
                       SLOSpec(ttft_p99_s=2.0, tpot_p99_s=0.2))
    return spec, replica(spec, cluster, ServingEfficiency.calibrated(), Efficiency.calibrated())


def timed(label: str, fn) -> object:
    t0 = time.perf_counter()
    out = fn()
    print(f"{label:<64} {time.perf_counter() - t0:6.2f} s")
    return out


def main() -> None:
    for rate in (10.0, 30.0, None):
        spec, rep = deployment(rate, 10_000)
        run = timed(f"10,000 requests, llama3-70b fp8 TP8 on DGX H100, rate {rate or 'offline'}",
                    lambda: simulate(spec, rep))
        e = run.engine
        print(f"    {e.iterations:,} iterations in {e.steps:,} clock advances; "
              f"{run.output_tokens_per_s:,.0f} output tokens/s; TTFT p99 {run.ttft_s.p99:.2f} s")
    spec, rep = deployment(10.0, 2000)
    cap = timed("capacity bisection, 2,000 requests per trial", lambda: capacity(spec, rep))
    print(f"    {cap.rate_per_s:.1f} requests/s within the SLO ({len(cap.sweep)} trials)")


if __name__ == "__main__":
    main()
