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
"""

from __future__ import annotations

from twin.serving.batching import Batch
from twin.validation.serving import KIND_RATIO, case_replica, load_cases


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


if __name__ == "__main__":
    main()
