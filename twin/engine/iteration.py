"""Level 2, discrete-event: one training step played across the pipeline.

One representative rank per pipeline stage (every rank of a stage does the
same work at the same time: tensor- and data-parallel peers are symmetric).
Each stage walks its schedule, the order in which Megatron-LM issues forward
and backward passes of its model chunks:

* ``gpipe``: every forward, then every backward (Huang et al. 2019);
* ``1f1b``: ``p - stage - 1`` warm-up forwards, then one forward one backward,
  then the cool-down backwards (Narayanan et al. SC'21 §2.2.1, PipeDream-Flush);
* ``interleaved``: ``v`` chunks per stage, micro-batches in groups of ``p``,
  ``2(p - stage - 1) + (v - 1)·p`` warm-up forwards (Narayanan et al. SC'21 §2.2.2,
  Megatron-LM ``forward_backward_pipelining_with_interleaving``).

A pass waits for its input: the forward of global chunk g for the forward of
chunk g - 1 on the previous stage, the backward of chunk g for the backward of
chunk g + 1. A stage that finishes a pass sends its activation (or gradient) to
the next stage; the send holds the sender for the point-to-point time (Megatron
uses blocking batched send/recv between passes). The costs of each pass come
from ``StepCosts`` (operators and TP/EP communication inside the layers).

Data parallelism: with ``overlap_grad_reduce`` the gradients of a chunk are
reduced bucket by bucket (one bucket per layer) on a separate communication
stream while the last micro-batch's backward of that chunk runs; otherwise after
the whole backward. ZeRO-2/3 traffic lengthens each pass by what its prefetch
cannot hide (``ChunkCost.forward_dp_s``, ``sharding``). Every stage then waits
for the slowest (gradient-norm clipping is a global reduction), runs the
per-step overheads and the optimizer, and with ZeRO-1/2 the updated parameters
are all-gathered: with ``overlap_param_gather`` overlapped with the next step's
first forward (modelled at the start of this step, layer by layer), otherwise
exposed after the optimizer.

The step then waits for its slowest GPU (``stragglers``; not drawn in the timeline).

The stages are played by a plain loop (``_Loop``) that forms every time as SimPy's clock would; the SimPy
processes (``iteration_simpy.py``) are the reference it is tested against.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property, lru_cache

from twin.engine.stage_costs import StepCosts
from twin.engine.step import StepBreakdown, step_time, with_stragglers
from twin.workload.plan import ParallelPlan

FORWARD, BACKWARD = "forward", "backward"


@dataclass(frozen=True)
class Span:
    """One interval of a stage's timeline."""
    stage: int
    microbatch: int            # -1 for step-level work (DP communication, optimizer)
    chunk: int                 # global model chunk (stage + pipeline · virtual index); -1 for step-level work
    kind: str                  # forward | backward | send | dp_comm | overheads | optimizer
    start_s: float
    end_s: float


@dataclass(frozen=True)
class IterationResult:
    breakdown: StepBreakdown
    # the step as played (its first micro-batches when extended), by stage and start:
    # (stage, start_s, kind, end_s, microbatch, chunk), a Span's fields in the order they sort by
    played: tuple[tuple[int, float, str, float, int, int], ...]
    peak_in_flight: tuple[int, ...]      # per stage: most micro-batch chunks whose activations are held at once

    @cached_property
    def timeline(self) -> tuple[Span, ...]:
        """The step's spans as played, made when asked (a plan search plays 30,000-pass steps it never draws)."""
        return tuple(Span(stage, j, g, kind, start, end) for stage, start, kind, end, j, g in self.played)


def schedule_order(plan_schedule: str, pipeline: int, virtual: int, microbatches: int,
                   stage: int) -> list[tuple[str, int, int]]:
    """The passes a stage runs, in order: (forward|backward, micro-batch, virtual chunk index)."""
    p, v, m = pipeline, virtual, microbatches
    if plan_schedule == "gpipe":
        fwd = [(FORWARD, j, k) for j in range(m) for k in range(v)]
        bwd = [(BACKWARD, j, k) for j in range(m) for k in reversed(range(v))]
        return fwd + bwd
    if plan_schedule != "interleaved" or v == 1:
        warmup = min(p - stage - 1, m)
        order = [(FORWARD, j, 0) for j in range(warmup)]
        for j in range(warmup, m):
            order.append((FORWARD, j, 0))
            order.append((BACKWARD, j - warmup, 0))
        order += [(BACKWARD, j, 0) for j in range(m - warmup, m)]
        return order

    total = m * v

    def pass_of(n: int, forward: bool) -> tuple[str, int, int]:
        group = n % (p * v)
        chunk = group // p
        if not forward:
            chunk = v - 1 - chunk
        microbatch = (n // (p * v)) * p + group % p
        return (FORWARD if forward else BACKWARD, microbatch, chunk)

    warmup = min((p - stage - 1) * 2 + (v - 1) * p, total)
    order = [pass_of(n, True) for n in range(warmup)]
    for n in range(warmup, total):
        order.append(pass_of(n, True))
        order.append(pass_of(n - warmup, False))
    order += [pass_of(n, False) for n in range(total - warmup, total)]
    return order


# Work bounds (docs/engine.md). Past the pipeline's warm-up every further micro-batch adds the
# same time to a step (the steady state of 1F1B: one forward and one backward of the busiest
# stage), so a step of many micro-batches is played with STEADY_MICROBATCHES_PER_STAGE · p of
# them and p fewer, and extended linearly; a schedule of more passes than MAX_SIMULATED_PASSES
# is timed in closed form (``step.step_time``) and has no timeline; so is DeepSpeed's lockstep
# pipeline (``deepspeed_pipe``).
STEADY_MICROBATCHES_PER_STAGE = 4
MIN_SIMULATED_MICROBATCHES = 32
MAX_SIMULATED_PASSES = 100_000


def simulate_iteration(costs: StepCosts, plan: ParallelPlan) -> IterationResult:
    """Play one step; identical plans and costs are simulated once (cached)."""
    p, v, m = plan.pipeline, plan.virtual_stages, plan.microbatches
    played = max(MIN_SIMULATED_MICROBATCHES, STEADY_MICROBATCHES_PER_STAGE * p)
    played -= played % p
    if 2 * p * v * min(m, played) > MAX_SIMULATED_PASSES or plan.schedule == "deepspeed":
        return IterationResult(step_time(costs, plan), (), ())
    if m <= played:
        played_m = _simulate_cached(costs, _plan_key(plan, m))
        waited = with_stragglers(costs, played_m.breakdown)
        return played_m if waited is played_m.breakdown else replace(played_m, breakdown=waited)
    long = _simulate_cached(costs, _plan_key(plan, played))
    short = _simulate_cached(costs, _plan_key(plan, played - p))
    per_microbatch = [(a - b) / p for a, b in zip(_parts(long.breakdown), _parts(short.breakdown))]
    extended = StepBreakdown(*(a + (m - played) * d for a, d in zip(_parts(long.breakdown), per_microbatch)),
                             bottleneck_stage=long.breakdown.bottleneck_stage)
    extended = replace(extended, dp_latency_s=_extend(long.breakdown.dp_latency_s, short.breakdown.dp_latency_s,
                                                      p, m - played))
    in_flight = tuple(m if plan.schedule == "gpipe" else n for n in long.peak_in_flight)
    return IterationResult(with_stragglers(costs, extended), long.played, in_flight)


def _extend(long_s: float, short_s: float, p: int, more: int) -> float:
    """A part of the step played with ``played`` and ``played - p`` micro-batches, extended by ``more``."""
    return long_s + more * (long_s - short_s) / p


def _parts(b: StepBreakdown) -> tuple[float, ...]:
    return (b.step_s, b.compute_s, b.tp_comm_s, b.pp_comm_s, b.bubble_s, b.dp_comm_s, b.overheads_s, b.optimizer_s)


def _plan_key(plan: ParallelPlan, microbatches: int) -> tuple:
    return (plan.schedule, plan.pipeline, plan.virtual_stages, microbatches, plan.overlap_grad_reduce,
            plan.overlap_param_gather)


@lru_cache(maxsize=64)
def _simulate_cached(costs: StepCosts, plan_key: tuple) -> IterationResult:
    return _simulate(costs, *plan_key)


def _simulate(costs: StepCosts, schedule: str, p: int, v: int, m: int, overlap: bool,
              overlap_gather: bool) -> IterationResult:
    return _Loop(costs, schedule, p, v, m, overlap, overlap_gather).run()


class Stages:
    """What a play of one step keeps and works out, whichever engine plays it: per-stage tallies (lists
    indexed by stage), each pass's duration, the gradient buckets asked for, the breakdown. How a bucket is
    reduced once asked for (``reduce_from``) and how the stages wait for each other are the engine's."""

    def __init__(self, costs: StepCosts, schedule: str, p: int, v: int, m: int, overlap: bool,
                 overlap_gather: bool):
        self.costs, self.schedule, self.p, self.v, self.m = costs, schedule, p, v, m
        self.overlap, self.overlap_gather = overlap, overlap_gather
        self.spans: list[tuple[int, float, str, float, int, int]] = []    # IterationResult.played, unsorted
        self.stage_layers = [sum(c.layers for c in costs.stage_chunks(s, p)) for s in range(p)]
        self.max_stage_layers = max(self.stage_layers) or 1
        self.compute_end = [0.0] * p
        self.busy = [0.0] * p
        self.comm_inside = [0.0] * p
        self.launches = [0.0] * p
        self.sends_s = [0.0] * p
        self.zero_extra = [0.0] * p   # data-parallel traffic not hidden under a pass, and compute slowed beside it
        self.dp_latency = [0.0] * p   # of zero_extra, what the collectives' latency adds
        self.gather_wait = [0.0] * p
        self.in_flight_peak = [0] * p

    def reduce_from(self, stage: int, now_s: float, ready_s: float, duration_s: float, chunk: int) -> None:
        """Asked at ``now_s``: reduce one gradient bucket of ``chunk`` on the stage's communication stream (one
        bucket at a time, first asked first served) once it is ready at ``ready_s``."""
        raise NotImplementedError

    def order_of(self, stage: int) -> tuple[list[tuple[str, int, int]], dict[int, int], bool]:
        """A stage's passes in order; the micro-batch of the last backward of each of its chunks; whether its
        gradients reduce at all."""
        order = schedule_order(self.schedule, self.p, self.v, self.m, stage)
        last_backward = {k: max(j for d, j, kk in order if d == BACKWARD and kk == k) for k in range(self.v)}
        return order, last_backward, self.reduce_s(stage) > 0

    def reduce_s(self, stage: int) -> float:
        """The data-parallel reduction of this stage's gradients, all its chunks'."""
        return self.costs.dp_reduce_s * self.stage_layers[stage] / self.max_stage_layers

    def gather_end_s(self, stage: int) -> float:
        """When the (overlapped) parameter all-gather of this stage's chunks completes."""
        return self.costs.dp_gather_s * self.stage_layers[stage] / self.max_stage_layers

    def gathers_first(self) -> None:
        """Last step's parameter all-gather, under the first forwards, when it overlaps."""
        if self.overlap_gather and self.costs.dp_gather_s > 0:
            self.spans.extend((stage, 0.0, "dp_comm", self.gather_end_s(stage), -1, -1) for stage in range(self.p))

    def forward_s(self, stage: int, k: int, cost, start: float, first_forward_done: set[int]) -> float:
        """A forward pass's duration, with the overlapped parameter gather's effects on it."""
        duration = cost.forward_s + cost.forward_dp_s
        self.zero_extra[stage] += cost.forward_dp_s
        self.dp_latency[stage] += cost.forward_dp_latency_s
        self.comm_inside[stage] += cost.forward_comm_s
        self.launches[stage] += cost.forward_launch_s
        gathering = self.overlap_gather and self.costs.dp_gather_s > 0
        if gathering and start < self.gather_end_s(stage):
            # Compute is slowed while the gather (from the step's start) still runs beside it.
            beside = min(duration, self.gather_end_s(stage) - start)
            slowdown = self.costs.overlap_slowdown * beside
            self.gather_wait[stage] += slowdown
            duration += slowdown
        if gathering and k not in first_forward_done:
            # The first forward of a chunk consumes its layers as the gather delivers them.
            per_layer = duration / max(1, cost.layers)
            gathered = self.gather_end_s(stage) * (k + 1) / self.v
            stretched = max(duration, gathered + per_layer - start)
            self.gather_wait[stage] += stretched - duration
            duration = stretched
        first_forward_done.add(k)
        return duration

    def backward_s(self, stage: int, cost) -> float:
        self.zero_extra[stage] += cost.backward_dp_s
        self.dp_latency[stage] += cost.backward_dp_latency_s
        self.comm_inside[stage] += cost.backward_comm_s
        self.launches[stage] += cost.backward_launch_s
        return cost.backward_s + cost.backward_dp_s

    def gradients_final(self, stage: int, g: int, cost, start: float, duration: float,
                        deferred: list[tuple[float, int]]) -> float:
        """The last backward of chunk ``g``: its gradients reduce in one bucket per layer, ready as the backward
        passes its layers (last layer first). Returns the pass's duration, slowed by overlapped reduction."""
        share = self.reduce_s(stage) * cost.layers / max(1, self.stage_layers[stage])
        n = max(1, cost.layers)
        if not self.overlap:
            deferred.append((share, g))
            return duration
        # compute slowed while the buckets reduce beside it; reduction that outlasts the backward is
        # exposed at the step's barrier
        slowdown = self.costs.overlap_slowdown * min(duration, share)
        self.zero_extra[stage] += slowdown
        duration += slowdown
        for i in range(n):
            self.reduce_from(stage, start, start + (i + 1) * duration / n, share / n, g)
        return duration

    def result(self) -> IterationResult:
        """Once every stage and bucket has played: the breakdown, and the timeline by stage and start."""
        breakdown = self._breakdown()
        self.spans.sort()
        return IterationResult(breakdown, tuple(self.spans), tuple(self.in_flight_peak))

    def _breakdown(self) -> StepBreakdown:
        """After the passes: the barrier, the per-step work, an exposed gather, and the busiest stage's parts."""
        p, spans, costs = self.p, self.spans, self.costs
        pipeline_end = max(self.compute_end)
        barrier = max(max(self.compute_end), _last_end(spans, "dp_comm"))
        t = barrier
        for kind, duration in (("overheads", costs.overheads_s), ("optimizer", costs.optimizer_s)):
            if duration > 0:
                spans.extend((stage, t, kind, t + duration, -1, -1) for stage in range(p))
            t += duration
        exposed_gather = 0.0
        if not self.overlap_gather and costs.dp_gather_s > 0:
            for stage in range(p):
                spans.append((stage, t, "dp_comm", t + self.gather_end_s(stage), -1, -1))
            exposed_gather = costs.dp_gather_s
        step_s = t + exposed_gather
        s = max(range(p), key=lambda s: self.busy[s] - self.gather_wait[s])
        compute = (self.busy[s] - self.comm_inside[s] - self.launches[s] - self.sends_s[s] - self.zero_extra[s]
                   - self.gather_wait[s])
        dp_exposed = (barrier - pipeline_end) + exposed_gather + self.zero_extra[s] + self.gather_wait[s]
        overheads = self.launches[s] + costs.overheads_s
        bubble = (step_s - compute - self.comm_inside[s] - self.sends_s[s] - dp_exposed - overheads
                  - costs.optimizer_s)
        return StepBreakdown(step_s=step_s, compute_s=compute, tp_comm_s=self.comm_inside[s],
                             pp_comm_s=self.sends_s[s], bubble_s=max(0.0, bubble),
                             dp_comm_s=dp_exposed - self.dp_latency[s], overheads_s=overheads,
                             optimizer_s=costs.optimizer_s, bottleneck_stage=s, dp_latency_s=self.dp_latency[s])


class _Loop(Stages):
    """The step played without an event queue: each stage walks its passes in order, a pass starting when its
    stage is free and its input has arrived; a stage whose input has not been sent yet waits (a generator
    suspended on the input's key) until the stage that sends it gets there. Every time is the sum SimPy's
    clock forms (``engine/iteration_simpy.py``, the reference, gives the same step to the last digit:
    ``tests/test_iteration.py``); each stage's stream then reduces its buckets first asked first served."""

    def __init__(self, *args):
        super().__init__(*args)
        self.arrived: dict[tuple[str, int, int], float] = {}     # (direction, global chunk, micro-batch) → time
        self.waiting: dict[tuple[str, int, int], object] = {}
        self.resumed: list[tuple[object, float | None]] = []
        self.asked: list[list[tuple[float, int, float, int]]] = [[] for _ in range(self.p)]

    def reduce_from(self, stage: int, now_s: float, ready_s: float, duration_s: float, chunk: int) -> None:
        # A SimPy process asked at ``now_s`` waits ``ready_s - now_s`` on its clock: asked again at the sum of the
        # two, which may differ from ``ready_s`` in its last bit.
        asked = self.asked[stage]
        asked.append((now_s + (ready_s - now_s) if ready_s > now_s else now_s, len(asked), duration_s, chunk))

    def rank(self, stage: int):
        """The representative rank of ``stage``: yields the key of an input not yet sent, is sent its arrival."""
        p, n_chunks, chunks, p2p_s, arrived = self.p, self.p * self.v, self.costs.chunks, self.costs.p2p_s, self.arrived
        order, last_backward, reduces = self.order_of(stage)
        first_forward_done: set[int] = set()
        held, now, busy, sent = 0, 0, 0.0, 0.0          # the clock starts at 0, an int, as SimPy's does
        deferred: list[tuple[float, int]] = []
        spans = self.spans
        for direction, j, k in order:
            g = stage + p * k
            cost = chunks[g]
            if direction == FORWARD and g > 0 or direction == BACKWARD and g < n_chunks - 1:
                key = (direction, g, j)
                arrival = arrived[key] if key in arrived else (yield key)
                if arrival > now:
                    now = arrival
            start = now
            if direction == FORWARD:
                duration = self.forward_s(stage, k, cost, start, first_forward_done)
                held += 1
                target = g + 1
            else:
                duration = self.backward_s(stage, cost)
                held -= 1
                target = g - 1
            if held > self.in_flight_peak[stage]:
                self.in_flight_peak[stage] = held
            if direction == BACKWARD and j == last_backward[k] and reduces:
                duration = self.gradients_final(stage, g, cost, start, duration, deferred)
            now = start + duration
            busy += duration
            spans.append((stage, start, direction, now, j, g))
            if not 0 <= target < n_chunks:
                continue
            if p > 1:
                send_start, now = now, now + p2p_s
                busy += p2p_s
                sent += p2p_s
                if p2p_s > 0:
                    spans.append((stage, send_start, "send", now, j, g))
            key = (direction, target, j)
            arrived[key] = now
            if key in self.waiting:
                self.resumed.append((self.waiting.pop(key), now))
        self.busy[stage], self.sends_s[stage], self.compute_end[stage] = busy, sent, now
        for share, g in deferred:
            self.reduce_from(stage, now, now, share, g)

    def run(self) -> IterationResult:
        self.gathers_first()
        self.resumed = [(self.rank(stage), None) for stage in reversed(range(self.p))]
        while self.resumed:
            rank, arrival = self.resumed.pop()
            try:
                self.waiting[rank.send(arrival)] = rank
            except StopIteration:
                pass
        for stage, asked in enumerate(self.asked):
            free = 0.0
            for ready, _, duration, chunk in sorted(asked):
                start = ready if ready > free else free
                free = start + duration
                self.spans.append((stage, start, "dp_comm", free, -1, chunk))
        return self.result()


def _last_end(spans: list[tuple], kind: str) -> float:
    return max((s[3] for s in spans if s[2] == kind), default=0.0)
