"""Where the serving twin errs on the TensorRT-LLM 0.13.0 decode-heavy rows, and what the rows imply.

Run ``python benchmarks/serving_residuals.py`` (a few seconds). For every decode-heavy
calibration row (output ≥ 4 × input) it prints:

- ``capacity``: the sequences the twin's KV cache holds at once (prompt + output reserved,
  as GUARANTEED_NO_EVICT does), capped by the engine's batch limit;
- ``twin ms``: the twin's decode iteration at that batch and the mean context
  (prompt + half the output), and its tensor-parallel communication;
- ``needed ms``: the iteration the published throughput implies at that batch;
- ``implied batch``: the batch at which the twin's own iteration model would give the
  published throughput.

Nothing here is fitted or written: it is the evidence behind the limits section of
docs/serving.md. On the rows of one GPU the implied batch is near the KV capacity; on
the tensor-parallel 70B rows it is 64-217 sequences whatever the capacity (236-3,127),
which no per-byte or per-FLOP efficiency shared with the one-GPU rows can produce.

A second table pairs the rows of Llama 3 70B on H100 at TP 1 in FP8 with those at TP 2 in
FP16 (check rows, never fitted). Each GPU of either holds the same bytes: about 70 GB of
weights and 160 KiB of KV cache per token (8 KV heads in 1 byte, or 4 in 2). Per shared
length it prints both throughputs, published and twin, and their ratio. A third table
shows what a smaller KV cache for every row of both groups would do, by a fixed number
of GB per GPU or a share of the twin's own plan. These are diagnostics, not settings.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from twin.serving.batching import Batch
from twin.validation.serving import KIND_RATIO, case_replica, load_cases, run_case

PAIR = ("llama3-70b-h100-sxm-fp8-tp1-", "llama3-70b-h100-sxm-fp16-tp2-")
GIB = 2**30


def implied_batch(it, context: float, published: float, limit: int) -> int | None:
    """The smallest decode batch at which the twin's iteration reaches the published tokens/s."""
    for n in range(1, limit + 1):
        if n / it.time(Batch(n, n * context)).total_s >= published:
            return n
    return None


def main() -> None:
    engine, cases = load_cases()
    print(f"{'row':52s} {'capacity':>8s} {'twin ms':>8s} {'comm':>6s} {'needed ms':>9s} {'implied batch':>13s}")
    for case in cases:
        if case.role != "calibration" or case.output_tokens < KIND_RATIO * case.input_tokens:
            continue
        _, rep = case_replica(case, engine)
        sequence = case.input_tokens + case.output_tokens
        capacity = min(engine.max_batch, rep.memory.kv_blocks * engine.block_tokens // sequence)
        context = case.input_tokens + case.output_tokens / 2
        t = rep.iteration.time(Batch(capacity, capacity * context))
        implied = implied_batch(rep.iteration, context, case.published, engine.max_batch)
        print(f"{case.id:52s} {capacity:8d} {t.total_s * 1e3:8.1f} {t.comm_s * 1e3:6.1f} "
              f"{capacity / case.published * 1e3:9.1f} {implied if implied else 'none':>13}")


def paired(engine, cases) -> None:
    """The TP 1 FP8 and TP 2 FP16 rows of Llama 3 70B on H100, length by length."""
    rows = {}
    for case in cases:
        for i, stem in enumerate(PAIR):
            if stem in case.id:
                _, rep = case_replica(case, engine)
                m = rep.memory
                rows[i, case.id.split(stem)[1]] = (case, run_case(case, engine).predicted, m)
    print()
    for i, stem in enumerate(PAIR):
        m = next(v[2] for k, v in rows.items() if k[0] == i)
        print(f"{stem[:-1]}: weights {m.weights_bytes / GIB:.1f} GiB, reserve {m.reserve_bytes / GIB:.1f} GiB, "
              f"KV {m.kv_bytes_per_token / 1024:.0f} KiB per token, {m.kv_blocks * m.block_tokens:,} tokens")
    print(f"{'length':10s} {'TP1 FP8':>16s} {'TP2 FP16':>16s} {'ratio published':>16s} {'ratio twin':>11s}")
    for length in sorted({k[1] for k in rows}, key=lambda x: tuple(map(int, x.split('-')))):
        if (0, length) in rows and (1, length) in rows:
            (a, pa, _), (b, pb, _) = rows[0, length], rows[1, length]
            print(f"{length:10s} {a.published:7.0f} / {pa:6.0f} {b.published:7.0f} / {pb:6.0f} "
                  f"{b.published / a.published:16.2f} {pb / pa:11.2f}")


def smaller_kv(engine, cases) -> None:
    """Mean absolute error of the two groups with less KV cache per GPU: fewer GB, or a share of the plan."""
    groups = [[c for c in cases if stem in c.id] for stem in PAIR]
    print(f"\n{'KV cache':24s} {'TP1 FP8':>8s} {'TP2 FP16':>9s}")
    for label, less_bytes, share in [("as planned", 0.0, 1.0), ("1 GB less", 1e9, 1.0), ("2 GB less", 2e9, 1.0),
                                     ("3 GB less", 3e9, 1.0), ("0.7 of the plan", 0.0, 0.7),
                                     ("0.6 of the plan", 0.0, 0.6)]:
        errors = []
        for group in groups:
            e = []
            for case in group:
                m = case_replica(case, engine)[1].memory
                free = m.hbm_bytes - m.weights_bytes - m.reserve_bytes
                fraction = engine.kv_memory_fraction * share * max(free - less_bytes, 0.01 * free) / free
                e.append(abs(run_case(case, replace(engine, kv_memory_fraction=fraction)).error))
            errors.append(np.nanmean(e))
        print(f"{label:24s} {errors[0]:8.1%} {errors[1]:9.1%}")


if __name__ == "__main__":
    main()
    engine, cases = load_cases("trtllm_0.13.yaml")
    paired(engine, cases)
    smaller_kv(engine, cases)
