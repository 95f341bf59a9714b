"""Write twin/validation/cases/operators/vidur_gemm.yaml from Vidur's measured GEMM times.

    python benchmarks/vidur_gemm_rows.py PATH/TO/vidur

Vidur (microsoft/vidur, MIT licence) ships the kernel times it profiled with vLLM's model code in
float16 (``data/profiling/compute/{a100,h100}/meta-llama/Llama-2-{7b,70b}-hf/mlp.csv``: the median
of each operator, in ms, per token count and tensor-parallel size). This keeps the four GEMMs of a
layer (``attn_pre_proj``: QKV, ``attn_post_proj``: output, ``mlp_up_proj``: gate and up,
``mlp_down_proj``: down) at a few token counts and every tensor-parallel size. The twin never fits on
them: they check its operator model (docs/validation.md, "Operators").
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "twin" / "validation" / "cases" / "operators" / "vidur_gemm.yaml"
GPUS = {"h100": "h100-sxm", "a100": "a100-80gb"}
MODELS = {"Llama-2-7b-hf": "llama2-7b", "Llama-2-70b-hf": "llama2-70b"}
TOKENS = (1, 8, 64, 256, 1024, 4096)
OPS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")
HEADER = """\
# Measured GEMM times (ms, the median of Vidur's profiling runs) of Llama 2 7B and 70B layers in float16
# under vLLM's model code, per GPU, tensor-parallel size and token count: microsoft/vidur
# data/profiling/compute/{a100,h100}/meta-llama/Llama-2-{7b,70b}-hf/mlp.csv (MIT licence; repository
# state of 2024-11-19), written by benchmarks/vidur_gemm_rows.py. Each row: [gpu, model, tensor, tokens,
# QKV ms, output ms, gate/up ms, down ms] (Vidur's attn_pre_proj, attn_post_proj, mlp_up_proj,
# mlp_down_proj). Checks of the operator model, never fitted on (docs/validation.md, "Operators").
"""


def rows(vidur: Path) -> list[list]:
    """One row per (GPU, model, tensor-parallel size, token count); where Vidur profiled a setting twice
    (some of its 2,048- and 4,096-token rows), the first run's."""
    out: dict[tuple, list] = {}
    for short, gpu in GPUS.items():
        for name, model in MODELS.items():
            path = vidur / "data" / "profiling" / "compute" / short / "meta-llama" / name / "mlp.csv"
            with path.open(newline="") as f:
                for r in csv.DictReader(f):
                    tokens, tensor = int(r["num_tokens"]), int(r["num_tensor_parallel_workers"])
                    if tokens in TOKENS:
                        out.setdefault((gpu, model, tensor, tokens), [
                            gpu, model, tensor, tokens,
                            *(round(float(r[f"time_stats.{op}.median"]), 4) for op in OPS)])
    return [out[key] for key in sorted(out)]


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    lines = [HEADER, "source: \"microsoft/vidur, data/profiling/compute/*/meta-llama/Llama-2-*-hf/mlp.csv "
             "(float16, vLLM model code; medians in ms)\"", "rows:"]
    lines += [f"  - {row}".replace("'", "") for row in rows(Path(sys.argv[1]))]
    TARGET.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
