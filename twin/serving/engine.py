"""Level 3s: requests over time on one replica, a discrete-event simulation.

Two processes, the arrivals and the engine, each wait for one event at a time, so their
next events are kept as two (time, order) pairs rather than in an event queue with an
object per event: events run in time order, ties in the order they were scheduled
(SimPy's rule).

Like vLLM's and TensorRT-LLM's in-flight batching, the engine runs iteration after
iteration. Before each one it admits waiting requests (first come, first served)
while the batch has room (``max_batch``) and the paged KV cache has free blocks,
then schedules every decoding sequence (one token each) and prefill chunks up to
``max_tokens_in_flight`` tokens (with ``chunked_prefill``, a long prompt is cut into
chunks; without, a prompt runs whole). The iteration's time comes from level 2s
(``batching.IterationModel``).

KV admission (``scheduler``):
- ``no_evict`` (TensorRT-LLM's GUARANTEED_NO_EVICT): a request is admitted only when
  blocks for its whole sequence (prompt + requested output) are free; nothing is
  ever evicted.
- ``max_utilization`` (vLLM's default): blocks for the prompt are enough; decode
  allocates blocks as sequences grow, and when none is free the most recently
  admitted sequences are preempted: their blocks are freed and they go back to the
  head of the queue to recompute their prompt and the tokens they had produced.

Cost grows with the number of distinct batch compositions, not with tokens: while
no request arrives that could be admitted, no prefill is pending, no sequence ends
and no block runs out, every iteration decodes the same sequences, one token longer
each time. The iteration time is affine in the KV context, so the engine jumps the
clock over all those iterations at once (the sum of an arithmetic series).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from twin.serving.batching import Batch, IterationModel, IterationTime
from twin.serving.load import Requests
from twin.serving.specs import EngineSpec


@dataclass(frozen=True)
class RequestTimes:
    """Per request, in arrival order (NaN where a request never got that far)."""
    arrival_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray


@dataclass(frozen=True)
class EngineRun:
    """What one replica did."""
    requests: RequestTimes
    makespan_s: float              # from the first arrival to the last completion
    iterations: int                # engine iterations simulated
    steps: int                     # clock advances (iterations, or jumps over many)
    busy_s: float                  # time with an iteration running
    compute_s: float               # of which compute-bound work
    memory_s: float                # of which memory-bound work
    comm_s: float                  # of which communication
    preemptions: int
    max_running: int               # most sequences in flight at once
    kv_peak_tokens: int


class _Seq:
    __slots__ = ("index", "prompt", "output", "done_prompt", "base", "blocks", "order", "produced")

    def __init__(self, index: int, prompt: int, output: int, order: int):
        self.index = index
        self.prompt = prompt          # tokens to prefill (the prompt, plus produced tokens after a preemption)
        self.output = output          # tokens to produce in all
        self.done_prompt = 0
        self.base = 0                 # decode length = base + the engine's decode counter
        self.blocks = 0
        self.order = order            # admission order (preemption takes the newest)
        self.produced = 0             # tokens produced before the current prefill (recompute after preemption)


# A run of this many requests or more plays the compiled loop (``engine_compiled``) unless told otherwise: it repays
# loading that code and the iteration model's tables (0.2-0.3 s) at about 13 µs a request. Shorter runs (a
# scenario's 1,000 requests, a validation row) play ``_State``; a capacity search decides for its trials.
COMPILED_FROM_REQUESTS = 20_000


class ReplicaEngine:
    """One replica serving a stream of requests."""

    def __init__(self, iteration: IterationModel, engine: EngineSpec, kv_blocks: int, kv_hbm_tokens: int,
                 shared_prefix_tokens: int = 0, jump: bool = True, compiled: bool | None = None):
        self.jump = jump                  # False: one clock advance per iteration (the reference the jumps match)
        self.compiled = compiled          # True: the compiled loop; False: _State; None: by the run's length
        self.it = iteration
        self.spec = engine
        self.kv_blocks = kv_blocks
        self.kv_hbm_tokens = kv_hbm_tokens
        self.prefix = shared_prefix_tokens if engine.prefix_cache else 0

    # -- blocks --------------------------------------------------------------------------------
    def _blocks_for(self, tokens: int) -> int:
        return -(-max(0, tokens - self.prefix) // self.spec.block_tokens)

    def run(self, reqs: Requests) -> EngineRun:
        compiled = self.compiled if self.compiled is not None else len(reqs) >= COMPILED_FROM_REQUESTS
        if compiled:
            from twin.serving import engine_compiled       # numba: loaded only for the runs that use it

            return engine_compiled.run(self, reqs)
        state = _State(self, reqs)
        state.play()
        return state.result()


# The (time, order) of an event that is not scheduled: after every other.
NEVER = (math.inf, 0)


class _State:
    """The mutable state of one run (queues, blocks, counters, the two processes' next events)."""

    def __init__(self, engine: ReplicaEngine, reqs: Requests):
        self.e = engine
        self.reqs = reqs
        self.total = n = len(reqs)              # requests in all
        # The requests as Python numbers: read one at a time, and the clock that runs from the arrival
        # times then does plain float arithmetic rather than numpy scalars'.
        self.arrival_s: list[float] = reqs.arrival_s.tolist()
        self.input_tokens: list[int] = reqs.input_tokens.tolist()
        self.output_tokens: list[int] = reqs.output_tokens.tolist()
        self.first = [math.nan] * n              # per request, as lists while the run writes them one by one
        self.finish = [math.nan] * n
        self.waiting: list[_Seq] = []            # FIFO; preempted sequences go back to the head
        self.head = 0                            # index of the first waiting sequence in ``waiting``
        self.prefilling: list[_Seq] = []
        self.decoding: dict[int, _Seq] = {}
        self.ends: list[tuple[int, int]] = []    # heap of (decode counter at which a sequence ends, index)
        self.end_of: dict[int, int] = {}         # that counter of every decoding sequence: entries of ``ends``
                                                 # that differ are stale (preempted), dropped as they come up
        self.counter = 0                         # decode iterations so far (every decoding sequence grew by one)
        self.base_sum = 0                        # Σ base of decoding sequences
        self.free_blocks = engine.kv_blocks
        self.arrived = 0
        self.order = 0
        self.done = 0                            # requests finished
        self.scheduled = 0                       # events scheduled so far (ties run in this order)
        self.next_arrival = self.next_serve = NEVER
        self.idle = False                        # the engine waits for an arrival to wake it
        self.in_flight: list[tuple[_Seq, int]] | None = None   # the running iteration's prefill chunks
        self.priced: tuple[Batch, IterationTime] | None = None  # a batch _jump priced, for _advance to reuse
        self.grows = engine.spec.scheduler == "max_utilization"  # decode allocates blocks as sequences grow
        if self.grows:      # decoding sequences' base, blocks and admission order in slots, for numpy (_grow_blocks)
            slots = engine.spec.max_batch
            self.slot_of: dict[int, int] = {}
            self.free_slots = list(range(slots - 1, -1, -1))
            self.slot_seq: list[_Seq | None] = [None] * slots
            self.slot_active = np.zeros(slots, dtype=bool)
            self.slot_base = np.zeros(slots, dtype=np.int64)
            self.slot_blocks = np.zeros(slots, dtype=np.int64)
            self.slot_order = np.zeros(slots, dtype=np.int64)
        self.iterations = self.steps = self.preemptions = self.max_running = 0
        self.busy_s = self.compute_s = self.memory_s = self.comm_s = 0.0
        self.kv_peak = 0
        if engine.prefix:                         # the shared prefix's blocks are held once
            prefix_blocks = -(-engine.prefix // engine.spec.block_tokens)
            self.free_blocks -= prefix_blocks

    # -- processes -----------------------------------------------------------------------------
    def play(self) -> None:
        """Run the arrival process and the engine process from t = 0 until every request is done.

        Each process waits for one event at a time (the next arrival; the end of the running
        iteration, or the arrival that wakes an idle engine); events run in time order, ties in the
        order they were scheduled, as in a discrete-event library's queue, without its per-event
        objects. Both start at t = 0, arrivals first."""
        self._start_arrivals()
        self._serve(0.0)
        while self.done < self.total:
            if self.next_arrival < self.next_serve:
                self._arrive(self.next_arrival[0])
            else:
                self._serve(self.next_serve[0])

    def _at(self, time_s: float) -> tuple[float, int]:
        """An event at ``time_s``, after those scheduled before it at the same time."""
        self.scheduled += 1
        return time_s, self.scheduled

    def _start_arrivals(self) -> None:
        """The arrival process at t = 0: the first request arrives now if it is due, else later."""
        if not self.total:
            return
        first_s = self.arrival_s[0]
        if first_s > 0:
            self.next_arrival = self._at(first_s)
        else:
            self._arrive(0.0)

    def _arrive(self, now: float) -> None:
        """The next request arrives at ``now``, and so do the ones after it that are due by then; the
        first wakes an idle engine. Then the next arrival is scheduled."""
        delay = 0.0
        while delay <= 0:
            i = self.arrived
            self.waiting.append(_Seq(i, self.input_tokens[i], self.output_tokens[i], 0))
            self.arrived += 1
            if self.idle:
                self.idle = False
                self.next_serve = self._at(now)
            if self.arrived == self.total:
                self.next_arrival = NEVER
                return
            delay = self.arrival_s[self.arrived] - now
        self.next_arrival = self._at(now + delay)

    def _serve(self, now: float) -> None:
        """The engine at ``now``: book the iteration that ended, then start the next one, or go idle
        until an arrival when there is nothing to run."""
        total = self.total
        if self.in_flight is not None:
            self.done += self._finish(now, self.in_flight)
            self.in_flight = None
        self.next_serve = NEVER
        if self.done >= total:
            return
        if self.head < len(self.waiting):
            self._admit()
        batch, chunks = self._schedule()
        if not (batch.decode_seqs or batch.prefill_tokens):
            if self.head >= len(self.waiting) and self.arrived < total:
                self.idle = True
                return
            if not self.decoding and not self.prefilling:
                raise RuntimeError("a request needs more KV blocks than the cache holds")
        k = self._jump(now, batch) if not chunks and self.e.jump else 1
        duration = self._advance(batch, k)
        self.in_flight = chunks
        self.next_serve = self._at(now + duration)

    # -- scheduling ----------------------------------------------------------------------------
    def _need_blocks(self, s: _Seq) -> int:
        if self.e.spec.scheduler == "no_evict":
            return self.e._blocks_for(s.prompt + s.output - s.produced)   # the whole sequence, reserved up front
        return self.e._blocks_for(s.prompt + 1)

    def _admit(self) -> None:
        spec = self.e.spec
        while self.head < len(self.waiting):
            if len(self.decoding) + len(self.prefilling) >= spec.max_batch:
                return
            s = self.waiting[self.head]
            need = self._need_blocks(s)
            if need > self.free_blocks:
                return
            self.free_blocks -= need
            s.blocks = need
            s.order = self.order
            self.order += 1
            s.done_prompt = min(self.e.prefix, s.prompt - 1) if self.e.prefix else 0
            self.prefilling.append(s)
            self.head += 1
        if self.head > 1024:                    # drop the consumed part of the queue now and then
            del self.waiting[:self.head]
            self.head = 0

    def _schedule(self) -> tuple[Batch, list[tuple[_Seq, int]]]:
        """The next iteration: every decode and prompt chunks up to the token budget; where prompts run alone
        (``EngineSpec.prefill_alone``), prompt chunks within the whole budget and no decode while any is pending."""
        if not self.prefilling:                                  # decode only: the common step
            return self._decode_batch(0), []
        spec = self.e.spec
        alone = spec.prefill_alone
        n = 0 if alone else len(self.decoding)
        budget = spec.max_tokens_in_flight - n
        chunks: list[tuple[_Seq, int]] = []
        tokens = pairs = context = 0.0
        done = 0
        for s in self.prefilling:
            left = s.prompt - s.done_prompt
            if spec.chunked_prefill:
                take = min(left, budget)
            elif left <= budget or not chunks:
                take = left
            else:
                take = 0
            if take <= 0:
                break
            prior = s.done_prompt
            chunks.append((s, take))
            tokens += take
            pairs += take * (prior + (take + 1) / 2.0)
            context += prior
            done += take == left
            budget -= take
        decode_context = self.base_sum + n * self.counter if n else 0
        return Batch(n, float(decode_context), int(tokens), pairs, context, done), chunks

    def _spilled(self, kv_tokens: float) -> float:
        hbm = self.e.kv_hbm_tokens
        return 0.0 if kv_tokens <= hbm else (kv_tokens - hbm) / kv_tokens

    def _jump(self, now: float, batch: Batch) -> int:
        """Decode-only iterations that keep ``batch`` (the decoding sequences) as it is."""
        if not self.decoding:
            return 1
        k = self.ends[0][0] - self.counter                     # until the first sequence ends
        room = len(self.decoding) + len(self.prefilling) < self.e.spec.max_batch
        if self.head < len(self.waiting):
            if room and self._need_blocks(self.waiting[self.head]) <= self.free_blocks:
                return 1
        elif self.arrived < self.total and room and self.free_blocks > 0:
            gap = self.arrival_s[self.arrived] - now            # until the next arrival, who may be admitted
            self.priced = batch, self.e.it.time(batch)          # the first iteration's time, at no spill
            k = min(k, max(1, math.ceil(gap / self.priced[1].total_s)))
        if self.grows:
            k = min(k, self._block_horizon())
        return max(1, k)

    def _block_horizon(self) -> int:
        """Iterations before a decoding sequence needs a block that is not free."""
        bt = self.e.spec.block_tokens
        n = len(self.decoding)
        if self.free_blocks >= n:                # each sequence can take free // n more blocks
            return bt * (self.free_blocks // n)
        act = np.flatnonzero(self.slot_active)
        room = self.slot_blocks[act] * bt + self.e.prefix - (self.slot_base[act] + self.counter)
        return max(0, int(np.partition(room, self.free_blocks)[self.free_blocks]))

    def _decode_batch(self, ahead: int) -> Batch:
        n = len(self.decoding)
        return Batch(n, float(self.base_sum + n * (self.counter + ahead)))

    # -- the clock -----------------------------------------------------------------------------
    def _advance(self, batch: Batch, k: int) -> float:
        """Run ``k`` iterations of ``batch`` (k > 1 only for decode-only batches); their total time."""
        it = self.e.it
        waits = batch.decode_seqs == 0 and bool(self.decoding)   # prompts run alone: the decodes wait a turn
        if self.grows and self.decoding and not waits:
            self._grow_blocks(k)
            n = len(self.decoding)
            batch = Batch(n, float(self.base_sum + n * self.counter),
                          batch.prefill_tokens, batch.prefill_pairs, batch.prefill_context, batch.prefill_done)
        held = float(self.base_sum + len(self.decoding) * self.counter) if waits else batch.decode_context
        kv_now = held + batch.prefill_context + batch.prefill_tokens
        spilled = self._spilled(kv_now)
        priced, self.priced = self.priced, None
        if priced is not None and priced[0] is batch and spilled == 0.0:
            first = priced[1]                                    # _jump priced this very batch, at no spill
        else:
            first = it.time(batch, spilled)
        if k == 1:
            total = first.total_s
            self.compute_s += first.compute_s
            self.memory_s += first.memory_s
            self.comm_s += first.comm_s
        else:
            last_batch = self._decode_batch(k - 1)
            last = it.time(last_batch, self._spilled(last_batch.decode_context))
            total = k * (first.total_s + last.total_s) / 2.0
            scale = total / (first.total_s + last.total_s) if first.total_s + last.total_s > 0 else 0.0
            self.compute_s += (first.compute_s + last.compute_s) * scale
            self.memory_s += (first.memory_s + last.memory_s) * scale
            self.comm_s += (first.comm_s + last.comm_s) * scale
        n = 0 if waits else len(self.decoding)
        peak = int(kv_now + k * n)
        if peak > self.kv_peak:
            self.kv_peak = peak
        running = len(self.decoding) + len(self.prefilling)
        if running > self.max_running:
            self.max_running = running
        if not waits:
            self.counter += k                                    # every decoding sequence grew by k tokens
        self.iterations += k
        self.steps += 1
        self.busy_s += total
        return total

    def _grow_blocks(self, k: int) -> None:
        """Allocate the blocks decode needs over ``k`` iterations, preempting the newest sequences if short: one
        by one, newest first, until the others' shortfall fits the free blocks and theirs (or one sequence is
        left). Over the slots' arrays: at thousands of sequences in flight this runs every iteration."""
        act = np.flatnonzero(self.slot_active)
        n = len(act)
        prefix, bt = self.e.prefix, self.e.spec.block_tokens
        want = -(-np.maximum(0, self.slot_base[act] + (self.counter + k) - prefix) // bt)
        need = np.maximum(0, want - self.slot_blocks[act])
        short = int(need.sum())
        if short > self.free_blocks and n > 1:
            newest = np.argsort(-self.slot_order[act])
            covered, freed = np.cumsum(need[newest]), np.cumsum(self.slot_blocks[act][newest])
            enough = short - covered <= self.free_blocks + freed      # after the newest j + 1 are preempted
            j = min(n - 1, 1 + int(np.argmax(enough))) if enough.any() else n - 1
            self._preempt([self.slot_seq[slot] for slot in act[newest[:j]]])
            short -= int(covered[j - 1])
            keep = np.ones(n, dtype=bool)
            keep[newest[:j]] = False
            act, want, need = act[keep], want[keep], need[keep]
        if short <= self.free_blocks:
            self.slot_blocks[act] = np.maximum(want, self.slot_blocks[act])
            self.free_blocks -= short
        else:                                                      # one sequence left, short of blocks
            take = min(short, self.free_blocks)
            self.slot_blocks[act] += take
            self.free_blocks -= take

    def _take_slot(self, s: _Seq) -> None:
        """A sequence starts decoding: its base, blocks and order into a free slot."""
        slot = self.free_slots.pop()
        self.slot_of[s.index] = slot
        self.slot_seq[slot] = s
        self.slot_active[slot] = True
        self.slot_base[slot], self.slot_blocks[slot], self.slot_order[slot] = s.base, s.blocks, s.order

    def _drop_slot(self, s: _Seq) -> None:
        """A sequence stops decoding: its blocks back on it, its slot free."""
        slot = self.slot_of.pop(s.index)
        s.blocks = int(self.slot_blocks[slot])
        self.slot_seq[slot] = None
        self.slot_active[slot] = False
        self.free_slots.append(slot)

    def _preempt(self, taken: list[_Seq]) -> None:
        """Free the blocks of sequences (newest first); each recomputes its prompt and its tokens so far later,
        the oldest of them first."""
        for s in taken:
            self._drop_slot(s)
            del self.decoding[s.index]
            produced = s.produced + (s.base + self.counter) - s.prompt - 1
            self.base_sum -= s.base
            self.free_blocks += s.blocks
            s.blocks = 0
            s.prompt = self.input_tokens[s.index] + produced
            s.produced = produced
            s.done_prompt = 0
            del self.end_of[s.index]
        self._drop_stale_ends()
        self.waiting[self.head:self.head] = taken[::-1]
        self.preemptions += len(taken)

    def _finish(self, now: float, chunks: list[tuple[_Seq, int]]) -> int:
        """Book the iteration's prefill progress and the sequences that ended; returns how many ended."""
        ended = 0
        for s, take in chunks:
            s.done_prompt += take
            if s.done_prompt < s.prompt:
                continue
            self.prefilling.remove(s)
            if math.isnan(self.first[s.index]):
                self.first[s.index] = now
            s.produced += 1                        # the last prefill chunk emits a token
            remaining = s.output - s.produced
            s.base = s.prompt + 1 - self.counter
            if remaining <= 0:
                self._release(s, now)
                ended += 1
                continue
            self.decoding[s.index] = s
            if self.grows:
                self._take_slot(s)
            self.base_sum += s.base
            self.end_of[s.index] = self.counter + remaining
            heapq.heappush(self.ends, (self.counter + remaining, s.index))
        while self.ends and self.ends[0][0] <= self.counter:
            g, i = heapq.heappop(self.ends)
            if self.end_of.get(i) != g:
                continue
            del self.end_of[i]
            s = self.decoding.pop(i)
            if self.grows:
                self._drop_slot(s)
            self.base_sum -= s.base
            self._release(s, now)
            ended += 1
        if self.grows:                            # only preemption (block growth) leaves stale entries
            self._drop_stale_ends()
        return ended

    def _drop_stale_ends(self) -> None:
        """Pop the preempted sequences' entries off the top of ``ends``, so that its first is a decoding one's."""
        ends, end_of = self.ends, self.end_of
        while ends and end_of.get(ends[0][1]) != ends[0][0]:
            heapq.heappop(ends)

    def _release(self, s: _Seq, now: float) -> None:
        self.finish[s.index] = now
        self.free_blocks += s.blocks
        s.blocks = 0

    def result(self) -> EngineRun:
        r = self.reqs
        start = float(r.arrival_s[0]) if len(r) else 0.0
        first, finish = np.array(self.first, dtype=float), np.array(self.finish, dtype=float)
        makespan = float(np.nanmax(finish)) - start if len(r) else 0.0
        times = RequestTimes(r.arrival_s, first, finish, r.input_tokens, r.output_tokens)
        return EngineRun(times, makespan, self.iterations, self.steps, self.busy_s, self.compute_s, self.memory_s,
                         self.comm_s, self.preemptions, self.max_running, self.kv_peak)
