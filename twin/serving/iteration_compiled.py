"""Level 2s compiled: an iteration's time from the iteration model's tables, for ``engine_compiled``.

``IterationModel.tables`` prices, for every token count ``t`` an iteration can hold, what a stage's micro-batch
of ``t`` tokens costs whatever its attention (compute- and memory-bound GEMM seconds, elementwise kernels,
all-reduces, stage-to-stage sends), and the LM head for every count of emitting sequences; ``constants`` gives
the rest. ``iteration_time`` adds the attention and the fixed costs as ``IterationModel.time`` and ``_stage`` do,
with the same floating-point operations in the same order, so it returns the same seconds to the last bit.
"""

from __future__ import annotations

from numba import njit

# The layout of the settings' arrays, floats (``pf``) and integers (``pi``): the iteration model's
# (``IterationModel.constants``, up to ``I_OVERLAP``), then the engine's (``engine_compiled.run``)
F_KV_PER_TOKEN, F_FLOPS_PER_PAIR, F_MEMORY_BPS, F_ATTENTION_FLOPS, F_HOST_BPS, F_HOST_BPS_EFF, \
    F_WEIGHT_SPILL_S, F_GRAPH_LAUNCH_S, F_EVERY_LAUNCH_S, F_HOST_S = range(10)
I_STAGES, I_LAYERS, I_CUDA_GRAPHS, I_GRAPH_MAX_BATCH, I_SCHEDULER_STEPS, I_OVERLAP, I_MAX_BATCH, \
    I_MAX_TOKENS, I_CHUNKED, I_ALONE, I_NO_EVICT, I_BLOCK_TOKENS, I_PREFIX, I_KV_BLOCKS, I_KV_HBM_TOKENS, \
    I_JUMP, I_GROWS = range(17)


@njit(cache=True, inline="always")
def iteration_time(n, decode_context, prefill_tokens, prefill_pairs, prefill_context, prefill_done, spilled, costs,
                   heads, pf, pi):
    """``IterationModel.time`` of a batch (decodes, Σ their context, prompt tokens, Σ query-key pairs, Σ earlier
    chunks' tokens, prompts done) with ``spilled`` of its KV cache in Grace memory: (total, compute, memory,
    communication) seconds."""
    p = pi[I_STAGES]
    if p == 1:
        mn, mdc, mpt, mpp, mpc, mpd = n, decode_context, prefill_tokens, prefill_pairs, prefill_context, prefill_done
    else:                                                   # one of p equal micro-batches (batching._split)
        mn, mdc, mpt = -(-n // p), decode_context / p, -(-prefill_tokens // p)
        mpp, mpc, mpd = prefill_pairs / p, prefill_context / p, -(-prefill_done // p)
    tokens, emits = mn + mpt, mn + mpd
    if tokens >= costs.shape[0] or emits >= heads.shape[0]:
        raise IndexError("an iteration beyond the engine's tables")
    read = (mdc + mpc) * pf[F_KV_PER_TOKEN]
    read_s = 0.0
    if read > 0:
        read_s = read * (1.0 - spilled) / pf[F_MEMORY_BPS]
        if spilled > 0 and pf[F_HOST_BPS] > 0:
            read_s += read * spilled / pf[F_HOST_BPS_EFF]
    decode_flops_s = pf[F_FLOPS_PER_PAIR] * mdc / pf[F_ATTENTION_FLOPS] if mdc != 0.0 else 0.0
    prefill_s = pf[F_FLOPS_PER_PAIR] * mpp / pf[F_ATTENTION_FLOPS] if mpp != 0.0 else 0.0
    if decode_flops_s > read_s:
        a_c, a_m = prefill_s + decode_flops_s, 0.0
    else:
        a_c, a_m = prefill_s, read_s
    layers = pi[I_LAYERS]
    compute = layers * (costs[tokens, 0] + a_c)
    memory = layers * (costs[tokens, 1] + a_m + costs[tokens, 2] + pf[F_WEIGHT_SPILL_S]) + heads[emits]
    comm, p2p = costs[tokens, 3], costs[tokens, 4]
    kernels = p * (compute + memory + comm) + p2p
    graph = pi[I_CUDA_GRAPHS] == 1 and prefill_tokens == 0 and n <= pi[I_GRAPH_MAX_BATCH]
    launch = pf[F_GRAPH_LAUNCH_S] if graph else pf[F_EVERY_LAUNCH_S]
    gpu = kernels if kernels >= launch else launch          # max(kernels, launch)
    host = pf[F_HOST_S] if prefill_tokens != 0 else pf[F_HOST_S] / pi[I_SCHEDULER_STEPS]
    if pi[I_OVERLAP] == 1:
        total = gpu if gpu >= host else host
    else:
        total = gpu + host
    return total, p * compute, p * memory, p * comm + p2p


@njit(cache=True, inline="always")
def spilled_share(kv_tokens, hbm_tokens):
    """``_State._spilled``: the share of ``kv_tokens`` beyond the HBM's ``hbm_tokens``."""
    return 0.0 if kv_tokens <= hbm_tokens else (kv_tokens - hbm_tokens) / kv_tokens
