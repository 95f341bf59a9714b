"""The replica engine's event loop, compiled: the same requests at the same times as ``engine._State``.

``engine._State`` is the reference: it reads as the engines it models do (queues of sequences, a heap of
their ends, one method per step). This module plays the same loop over arrays with numba, for the runs long
enough to pay for it (a capacity search simulates some 200,000 requests a deployment, about 13 µs each in
Python). Every step is the reference's step, in the same order and with the same floating-point operations
in the same order, so every request's first-token and finish times are the same to the last bit
(``tests/test_engine_compiled.py``). Each function below is the ``_State`` method of its name or of its
docstring's.

The iteration model reaches the loop as tables, for every token count an iteration of the run can hold
(``iteration_compiled``). The loop's scalars live in two small arrays (``st``, integers, and ``sf``,
seconds), each sequence's state in a row of ``seqs``, the waiting queue in an array with room before its head
(preempted sequences go back there), the decoding sequences' ends in a binary heap of (decode counter,
request) pairs, and, where decode grows its blocks, their lengths in ``slots``. numba caches the compiled code
beside this file: the first run on a machine compiles it (about 11 s), later processes load it (0.2 s).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from twin.serving.engine import EngineRun, ReplicaEngine, RequestTimes
from twin.serving.iteration_compiled import (I_ALONE, I_BLOCK_TOKENS, I_CHUNKED, I_GROWS, I_JUMP, I_KV_BLOCKS,
                                             I_KV_HBM_TOKENS, I_MAX_BATCH, I_MAX_TOKENS, I_NO_EVICT, I_PREFIX,
                                             iteration_time, spilled_share)
from twin.serving.load import Requests

# The loop's integer scalars (``st``)
COUNTER, BASE_SUM, FREE, ARRIVED, ORDER, DONE, SCHEDULED, IDLE, W_HEAD, W_TAIL, N_PREFILLING, DECODING, \
    N_HEAP, N_FREE_SLOTS, N_CHUNKS, IN_FLIGHT, ARRIVAL_N, SERVE_N, ITERATIONS, STEPS, PREEMPTIONS, \
    MAX_RUNNING, KV_PEAK = range(23)
# ... and its seconds (``sf``)
ARRIVAL_T, SERVE_T, BUSY, COMPUTE, MEMORY, COMM = range(6)
# A sequence's row of ``seqs`` (``_Seq``'s fields, its end in the heap, its slot)
PROMPT, OUTPUT, DONE_PROMPT, BASE, BLOCKS, SEQ_ORDER, PRODUCED, END_OF, SLOT_OF = range(9)
# A slot's row of ``slots`` (SEQ -1: free)
SLOT_SEQ, SLOT_BASE, SLOT_BLOCKS, SLOT_ORDER = range(4)


def run(engine: ReplicaEngine, reqs: Requests) -> EngineRun:
    """``ReplicaEngine.run`` through the compiled loop."""
    spec = engine.spec
    inputs = np.ascontiguousarray(reqs.input_tokens, dtype=np.int64)
    outputs = np.ascontiguousarray(reqs.output_tokens, dtype=np.int64)
    costs, heads = engine.it.tables(most_tokens(engine, inputs, outputs), spec.max_batch)
    floats, ints = engine.it.constants()
    ints += [spec.max_batch, spec.max_tokens_in_flight, int(spec.chunked_prefill), int(spec.prefill_alone),
             int(spec.scheduler == "no_evict"), spec.block_tokens, engine.prefix, engine.kv_blocks,
             engine.kv_hbm_tokens, int(engine.jump), int(spec.scheduler == "max_utilization")]
    first, finish, st, sf = play(np.ascontiguousarray(reqs.arrival_s, dtype=np.float64), inputs, outputs, costs,
                                 heads, np.array(floats, dtype=np.float64), np.array(ints, dtype=np.int64))
    start = float(reqs.arrival_s[0]) if len(reqs) else 0.0
    makespan = float(np.nanmax(finish)) - start if len(reqs) else 0.0
    times = RequestTimes(reqs.arrival_s, first, finish, reqs.input_tokens, reqs.output_tokens)
    c, t = st.tolist(), sf.tolist()
    return EngineRun(times, makespan, c[ITERATIONS], c[STEPS], t[BUSY], t[COMPUTE], t[MEMORY], t[COMM],
                     c[PREEMPTIONS], c[MAX_RUNNING], c[KV_PEAK])


def most_tokens(engine: ReplicaEngine, inputs: np.ndarray, outputs: np.ndarray) -> int:
    """The most tokens an iteration of these requests can hold (``_State._schedule``): with chunked prefill,
    decodes and chunks within the token budget, or decodes alone; without, a whole prompt (after a preemption,
    the prompt and the tokens produced) beside the decodes, however long."""
    spec = engine.spec
    if spec.chunked_prefill:
        return max(spec.max_batch, spec.max_tokens_in_flight)
    longest = int((inputs + outputs).max()) if len(inputs) else 0
    return spec.max_batch + max(spec.max_tokens_in_flight, longest)


@njit(cache=True, inline="always")
def _need_blocks(seqs, s, pi):
    """``_State._need_blocks``: the whole sequence without eviction, else its prompt and one token."""
    tokens = (seqs[s, PROMPT] + seqs[s, OUTPUT] - seqs[s, PRODUCED] if pi[I_NO_EVICT] == 1
              else seqs[s, PROMPT] + 1)
    return -(-max(0, tokens - pi[I_PREFIX]) // pi[I_BLOCK_TOKENS])


@njit(cache=True, inline="always")
def _before(keys, items, a, b):
    return keys[a] < keys[b] or (keys[a] == keys[b] and items[a] < items[b])


@njit(cache=True, inline="always")
def _heap_push(keys, items, st, key, item):
    """Push (key, item) on the heap of the first ``st[N_HEAP]`` entries (the arrays have room)."""
    j = st[N_HEAP]
    keys[j], items[j] = key, item
    st[N_HEAP] += 1
    while j > 0 and _before(keys, items, j, (j - 1) >> 1):
        parent = (j - 1) >> 1
        keys[parent], keys[j] = keys[j], keys[parent]
        items[parent], items[j] = items[j], items[parent]
        j = parent


@njit(cache=True, inline="always")
def _heap_pop(keys, items, st):
    """Remove the least (key, item) of the heap."""
    size = st[N_HEAP] - 1
    st[N_HEAP] = size
    keys[0], items[0] = keys[size], items[size]
    j = 0
    while 2 * j + 1 < size:
        child = 2 * j + 1
        if child + 1 < size and _before(keys, items, child + 1, child):
            child += 1
        if not _before(keys, items, child, j):
            break
        keys[child], keys[j] = keys[j], keys[child]
        items[child], items[j] = items[j], items[child]
        j = child


@njit(cache=True, inline="always")
def _drop_stale_ends(keys, items, seqs, st):
    while st[N_HEAP] > 0 and seqs[items[0], END_OF] != keys[0]:
        _heap_pop(keys, items, st)


@njit(cache=True, inline="always")
def _schedule_event(st, sf, which, time_s):
    """``_State._at``: an event at ``time_s`` (arrival or serve), after those scheduled before it."""
    st[SCHEDULED] += 1
    if which == 0:
        sf[ARRIVAL_T], st[ARRIVAL_N] = time_s, st[SCHEDULED]
    else:
        sf[SERVE_T], st[SERVE_N] = time_s, st[SCHEDULED]


@njit(cache=True)
def _arrive(now, arrival_s, input_tokens, output_tokens, seqs, wq, st, sf):
    total = arrival_s.shape[0]
    delay = 0.0
    while delay <= 0:
        i = st[ARRIVED]
        seqs[i, PROMPT], seqs[i, OUTPUT] = input_tokens[i], output_tokens[i]
        wq[st[W_TAIL]] = i
        st[W_TAIL] += 1
        st[ARRIVED] += 1
        if st[IDLE] == 1:
            st[IDLE] = 0
            _schedule_event(st, sf, 1, now)
        if st[ARRIVED] == total:
            sf[ARRIVAL_T], st[ARRIVAL_N] = math.inf, 0
            return
        delay = arrival_s[st[ARRIVED]] - now
    _schedule_event(st, sf, 0, now + delay)


@njit(cache=True, inline="always")
def _take_slot(s, seqs, slots, free_slots, st):
    st[N_FREE_SLOTS] -= 1
    slot = free_slots[st[N_FREE_SLOTS]]
    seqs[s, SLOT_OF] = slot
    slots[slot, SLOT_SEQ], slots[slot, SLOT_BASE] = s, seqs[s, BASE]
    slots[slot, SLOT_BLOCKS], slots[slot, SLOT_ORDER] = seqs[s, BLOCKS], seqs[s, SEQ_ORDER]


@njit(cache=True, inline="always")
def _drop_slot(s, seqs, slots, free_slots, st):
    slot = seqs[s, SLOT_OF]
    seqs[s, SLOT_OF] = -1
    seqs[s, BLOCKS] = slots[slot, SLOT_BLOCKS]
    slots[slot, SLOT_SEQ] = -1
    free_slots[st[N_FREE_SLOTS]] = slot
    st[N_FREE_SLOTS] += 1


@njit(cache=True, inline="always")
def _release(s, now, seqs, finish, st):
    finish[s] = now
    st[FREE] += seqs[s, BLOCKS]
    seqs[s, BLOCKS] = 0


@njit(cache=True)
def _prefilled(now, seqs, first, finish, prefilling, chunks, keys, items, slots, free_slots, st, grows):
    """The first half of ``_State._finish``: the iteration's prefill chunks booked; the sequences ended."""
    ended = 0
    for c in range(st[N_CHUNKS]):
        s = chunks[c, 0]
        seqs[s, DONE_PROMPT] += chunks[c, 1]
        if seqs[s, DONE_PROMPT] < seqs[s, PROMPT]:
            continue
        n = st[N_PREFILLING]
        j = 0
        while prefilling[j] != s:
            j += 1
        prefilling[j:n - 1] = prefilling[j + 1:n].copy()
        st[N_PREFILLING] = n - 1
        if math.isnan(first[s]):
            first[s] = now
        seqs[s, PRODUCED] += 1                              # the last prefill chunk emits a token
        remaining = seqs[s, OUTPUT] - seqs[s, PRODUCED]
        seqs[s, BASE] = seqs[s, PROMPT] + 1 - st[COUNTER]
        if remaining <= 0:
            _release(s, now, seqs, finish, st)
            ended += 1
            continue
        st[DECODING] += 1
        if grows:
            _take_slot(s, seqs, slots, free_slots, st)
        st[BASE_SUM] += seqs[s, BASE]
        seqs[s, END_OF] = st[COUNTER] + remaining
        _heap_push(keys, items, st, st[COUNTER] + remaining, s)
    return ended


@njit(cache=True)
def _decoded(now, seqs, finish, keys, items, slots, free_slots, st, grows):
    """The second half of ``_State._finish``: the decoding sequences whose last token this iteration made."""
    ended = 0
    while st[N_HEAP] > 0 and keys[0] <= st[COUNTER]:
        g, i = keys[0], items[0]
        _heap_pop(keys, items, st)
        if seqs[i, END_OF] != g:
            continue
        seqs[i, END_OF] = -1
        st[DECODING] -= 1
        if grows:
            _drop_slot(i, seqs, slots, free_slots, st)
        st[BASE_SUM] -= seqs[i, BASE]
        _release(i, now, seqs, finish, st)
        ended += 1
    if grows:                                               # only preemption leaves stale entries
        _drop_stale_ends(keys, items, seqs, st)
    return ended


@njit(cache=True)
def _admit(seqs, wq, prefilling, st, pi):
    while st[W_HEAD] < st[W_TAIL]:
        if st[DECODING] + st[N_PREFILLING] >= pi[I_MAX_BATCH]:
            return
        s = wq[st[W_HEAD]]
        need = _need_blocks(seqs, s, pi)
        if need > st[FREE]:
            return
        st[FREE] -= need
        seqs[s, BLOCKS], seqs[s, SEQ_ORDER] = need, st[ORDER]
        st[ORDER] += 1
        prefix = pi[I_PREFIX]
        seqs[s, DONE_PROMPT] = min(prefix, seqs[s, PROMPT] - 1) if prefix else 0
        prefilling[st[N_PREFILLING]] = s
        st[N_PREFILLING] += 1
        st[W_HEAD] += 1


@njit(cache=True)
def _schedule(seqs, prefilling, chunks, st, pi):
    """The next iteration's batch (decodes, Σ their context, prompt tokens, Σ query-key pairs, Σ earlier
    chunks' tokens, prompts done), its prefill chunks in ``chunks``."""
    st[N_CHUNKS] = 0
    if st[N_PREFILLING] == 0:                               # decode only: the common step
        n = st[DECODING]
        return n, float(st[BASE_SUM] + n * st[COUNTER]), 0, 0.0, 0.0, 0
    n = 0 if pi[I_ALONE] == 1 else st[DECODING]
    budget = pi[I_MAX_TOKENS] - n
    tokens = pairs = context = 0.0
    done = 0
    for j in range(st[N_PREFILLING]):
        s = prefilling[j]
        left = seqs[s, PROMPT] - seqs[s, DONE_PROMPT]
        if pi[I_CHUNKED] == 1:
            take = min(left, budget)
        elif left <= budget or st[N_CHUNKS] == 0:
            take = left
        else:
            take = 0
        if take <= 0:
            break
        prior = seqs[s, DONE_PROMPT]
        chunks[st[N_CHUNKS], 0], chunks[st[N_CHUNKS], 1] = s, take
        st[N_CHUNKS] += 1
        tokens += take
        pairs += take * (prior + (take + 1) / 2.0)
        context += prior
        done += 1 if take == left else 0
        budget -= take
    decode_context = float(st[BASE_SUM] + n * st[COUNTER]) if n else 0.0
    return n, decode_context, int(tokens), pairs, context, done


@njit(cache=True)
def _block_horizon(seqs, slots, st, pi):
    """Iterations before a decoding sequence needs a block that is not free."""
    bt, n, free = pi[I_BLOCK_TOKENS], st[DECODING], st[FREE]
    if free >= n:
        return bt * (free // n)
    room = np.empty(n, np.int64)
    q = 0
    for slot in range(slots.shape[0]):
        if slots[slot, SLOT_SEQ] >= 0:
            room[q] = slots[slot, SLOT_BLOCKS] * bt + pi[I_PREFIX] - (slots[slot, SLOT_BASE] + st[COUNTER])
            q += 1
    room.sort()
    return max(0, room[free])


@njit(cache=True)
def _jump(now, batch, arrival_s, seqs, wq, keys, slots, st, sf, costs, heads, pf, pi):
    """Decode-only iterations that keep ``batch`` (the decoding sequences) as it is."""
    if st[DECODING] == 0:
        return 1
    k = keys[0] - st[COUNTER]                               # until the first sequence ends
    room = st[DECODING] + st[N_PREFILLING] < pi[I_MAX_BATCH]
    if st[W_HEAD] < st[W_TAIL]:
        if room and _need_blocks(seqs, wq[st[W_HEAD]], pi) <= st[FREE]:
            return 1
    elif st[ARRIVED] < arrival_s.shape[0] and room and st[FREE] > 0:
        gap = arrival_s[st[ARRIVED]] - now                  # until the next arrival, who may be admitted
        n, dc, pt, pp, pc, pd = batch
        priced = iteration_time(n, dc, pt, pp, pc, pd, 0.0, costs, heads, pf, pi)[0]
        k = min(k, max(1, int(math.ceil(gap / priced))))
    if pi[I_GROWS] == 1:
        k = min(k, _block_horizon(seqs, slots, st, pi))
    return max(1, k)


@njit(cache=True)
def _preempt(taken, input_tokens, seqs, wq, keys, items, slots, free_slots, st):
    """Free the blocks of ``taken`` (newest first); they go back to the head of the queue, oldest first."""
    for s in taken:
        _drop_slot(s, seqs, slots, free_slots, st)
        st[DECODING] -= 1
        produced = seqs[s, PRODUCED] + (seqs[s, BASE] + st[COUNTER]) - seqs[s, PROMPT] - 1
        st[BASE_SUM] -= seqs[s, BASE]
        st[FREE] += seqs[s, BLOCKS]
        seqs[s, BLOCKS] = 0
        seqs[s, PROMPT], seqs[s, PRODUCED], seqs[s, DONE_PROMPT] = input_tokens[s] + produced, produced, 0
        seqs[s, END_OF] = -1
    _drop_stale_ends(keys, items, seqs, st)
    for s in taken:                                         # waiting[head:head] = taken[::-1]
        st[W_HEAD] -= 1
        wq[st[W_HEAD]] = s
    st[PREEMPTIONS] += taken.shape[0]


@njit(cache=True)
def _grow_blocks(k, input_tokens, seqs, wq, keys, items, slots, free_slots, st, pi):
    """Allocate the blocks decode needs over ``k`` iterations, preempting the newest sequences if short."""
    bt, grown = pi[I_BLOCK_TOKENS], st[COUNTER] + k - pi[I_PREFIX]
    short = n = 0
    for slot in range(slots.shape[0]):                      # the common case first: enough blocks free
        if slots[slot, SLOT_SEQ] >= 0:
            n += 1
            short += max(0, -(-max(0, slots[slot, SLOT_BASE] + grown) // bt) - slots[slot, SLOT_BLOCKS])
    if short > st[FREE] and n > 1:
        act = np.flatnonzero(slots[:, SLOT_SEQ] >= 0)
        want = -(-np.maximum(0, slots[act, SLOT_BASE] + grown) // bt)
        need = np.maximum(0, want - slots[act, SLOT_BLOCKS])
        newest = np.argsort(-slots[act, SLOT_ORDER])
        covered, freed = np.cumsum(need[newest]), np.cumsum(slots[act[newest], SLOT_BLOCKS])
        enough = short - covered <= st[FREE] + freed
        j = min(n - 1, 1 + int(np.argmax(enough))) if enough.any() else n - 1
        _preempt(slots[act[newest[:j]], SLOT_SEQ], input_tokens, seqs, wq, keys, items, slots, free_slots, st)
        short -= covered[j - 1]
    if short <= st[FREE]:
        for slot in range(slots.shape[0]):
            if slots[slot, SLOT_SEQ] >= 0:
                want = -(-max(0, slots[slot, SLOT_BASE] + grown) // bt)
                slots[slot, SLOT_BLOCKS] = max(slots[slot, SLOT_BLOCKS], want)
        st[FREE] -= short
    else:                                                   # one sequence left, short of blocks
        take = min(short, st[FREE])
        for slot in range(slots.shape[0]):
            if slots[slot, SLOT_SEQ] >= 0:
                slots[slot, SLOT_BLOCKS] += take
        st[FREE] -= take


@njit(cache=True)
def _advance(batch, k, input_tokens, seqs, wq, keys, items, slots, free_slots, st, sf, costs, heads, pf, pi):
    """Run ``k`` iterations of ``batch``; their total time."""
    n, dc, pt, pp, pc, pd = batch
    waits = n == 0 and st[DECODING] > 0                     # prompts run alone: the decodes wait a turn
    if pi[I_GROWS] == 1 and st[DECODING] > 0 and not waits:
        _grow_blocks(k, input_tokens, seqs, wq, keys, items, slots, free_slots, st, pi)
        n = st[DECODING]
        dc = float(st[BASE_SUM] + n * st[COUNTER])
    held = float(st[BASE_SUM] + st[DECODING] * st[COUNTER]) if waits else dc
    kv_now = held + pc + pt
    hbm = pi[I_KV_HBM_TOKENS]
    f_total, f_compute, f_memory, f_comm = iteration_time(n, dc, pt, pp, pc, pd, spilled_share(kv_now, hbm), costs,
                                                          heads, pf, pi)
    if k == 1:
        total = f_total
        sf[COMPUTE] += f_compute
        sf[MEMORY] += f_memory
        sf[COMM] += f_comm
    else:
        last_dc = float(st[BASE_SUM] + st[DECODING] * (st[COUNTER] + k - 1))
        l_total, l_compute, l_memory, l_comm = iteration_time(st[DECODING], last_dc, 0, 0.0, 0.0, 0,
                                                              spilled_share(last_dc, hbm), costs, heads, pf, pi)
        total = k * (f_total + l_total) / 2.0
        scale = total / (f_total + l_total) if f_total + l_total > 0 else 0.0
        sf[COMPUTE] += (f_compute + l_compute) * scale
        sf[MEMORY] += (f_memory + l_memory) * scale
        sf[COMM] += (f_comm + l_comm) * scale
    peak = int(kv_now + k * (0 if waits else st[DECODING]))
    st[KV_PEAK] = max(st[KV_PEAK], peak)
    st[MAX_RUNNING] = max(st[MAX_RUNNING], st[DECODING] + st[N_PREFILLING])
    if not waits:
        st[COUNTER] += k                                    # every decoding sequence grew by k tokens
    st[ITERATIONS] += k
    st[STEPS] += 1
    sf[BUSY] += total
    return total


@njit(cache=True)
def _serve(now, arrival_s, input_tokens, first, finish, seqs, wq, prefilling, chunks, keys, items, slots,
           free_slots, st, sf, costs, heads, pf, pi):
    """Book the iteration that ended, then start the next one, or go idle until an arrival."""
    total, grows = arrival_s.shape[0], pi[I_GROWS] == 1
    if st[IN_FLIGHT] == 1:
        st[DONE] += _prefilled(now, seqs, first, finish, prefilling, chunks, keys, items, slots, free_slots, st,
                               grows)
        st[DONE] += _decoded(now, seqs, finish, keys, items, slots, free_slots, st, grows)
        st[IN_FLIGHT] = 0
    sf[SERVE_T], st[SERVE_N] = math.inf, 0
    if st[DONE] >= total:
        return
    if st[W_HEAD] < st[W_TAIL]:
        _admit(seqs, wq, prefilling, st, pi)
    batch = _schedule(seqs, prefilling, chunks, st, pi)
    if not (batch[0] or batch[2]):
        if st[W_HEAD] >= st[W_TAIL] and st[ARRIVED] < total:
            st[IDLE] = 1
            return
        if st[DECODING] == 0 and st[N_PREFILLING] == 0:
            raise RuntimeError("a request needs more KV blocks than the cache holds")
    k = 1
    if st[N_CHUNKS] == 0 and pi[I_JUMP] == 1:
        k = _jump(now, batch, arrival_s, seqs, wq, keys, slots, st, sf, costs, heads, pf, pi)
    duration = _advance(batch, k, input_tokens, seqs, wq, keys, items, slots, free_slots, st, sf, costs, heads,
                        pf, pi)
    st[IN_FLIGHT] = 1
    _schedule_event(st, sf, 1, now + duration)


@njit(cache=True)
def play(arrival_s, input_tokens, output_tokens, costs, heads, pf, pi):
    """``_State.play`` over arrays: (first-token times, finish times, the integer and the float scalars)."""
    total, max_batch = arrival_s.shape[0], pi[I_MAX_BATCH]
    first, finish = np.full(total, np.nan), np.full(total, np.nan)
    seqs = np.zeros((total, 9), np.int64)
    seqs[:, END_OF] = -1
    seqs[:, SLOT_OF] = -1
    ahead = max_batch + 1                                   # room before the queue's head for preempted sequences
    wq = np.empty(total + ahead, np.int64)
    prefilling, chunks = np.empty(max_batch + 1, np.int64), np.empty((max_batch + 1, 2), np.int64)
    keys, items = np.empty(total + max_batch + 1, np.int64), np.empty(total + max_batch + 1, np.int64)
    slots = np.full((max_batch if pi[I_GROWS] == 1 else 1, 4), -1, np.int64)
    free_slots = np.arange(slots.shape[0] - 1, -1, -1)
    st, sf = np.zeros(23, np.int64), np.zeros(6)
    st[W_HEAD] = ahead
    st[W_TAIL] = ahead
    st[N_FREE_SLOTS] = slots.shape[0]
    st[FREE] = pi[I_KV_BLOCKS] - (-(-pi[I_PREFIX] // pi[I_BLOCK_TOKENS]) if pi[I_PREFIX] > 0 else 0)
    sf[ARRIVAL_T] = math.inf
    sf[SERVE_T] = math.inf
    if total > 0:                                           # the arrivals start: the first now if it is due
        if arrival_s[0] > 0:
            _schedule_event(st, sf, 0, arrival_s[0])
        else:
            _arrive(0.0, arrival_s, input_tokens, output_tokens, seqs, wq, st, sf)
    _serve(0.0, arrival_s, input_tokens, first, finish, seqs, wq, prefilling, chunks, keys, items, slots, free_slots,
           st, sf, costs, heads, pf, pi)
    while st[DONE] < total:
        if st[N_HEAP] + max_batch + 1 > keys.shape[0]:      # room for this step's new ends
            keys, items = np.concatenate((keys, np.empty_like(keys))), np.concatenate((items, np.empty_like(items)))
        if st[W_HEAD] < max_batch + 1:                      # room for this step's preempted sequences
            grown = np.empty(wq.shape[0] + ahead, np.int64)
            grown[st[W_HEAD] + ahead:st[W_TAIL] + ahead] = wq[st[W_HEAD]:st[W_TAIL]]
            wq = grown
            st[W_HEAD] += ahead
            st[W_TAIL] += ahead
        if sf[ARRIVAL_T] < sf[SERVE_T] or (sf[ARRIVAL_T] == sf[SERVE_T] and st[ARRIVAL_N] < st[SERVE_N]):
            _arrive(sf[ARRIVAL_T], arrival_s, input_tokens, output_tokens, seqs, wq, st, sf)
        else:
            _serve(sf[SERVE_T], arrival_s, input_tokens, first, finish, seqs, wq, prefilling, chunks, keys, items,
                   slots, free_slots, st, sf, costs, heads, pf, pi)
    return first, finish, st, sf
