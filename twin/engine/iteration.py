"""Level 2, discrete-event: one training step played across the pipeline with SimPy.

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
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import simpy

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
    timeline: tuple[Span, ...]           # the step as played (its first micro-batches when extended)
    peak_in_flight: tuple[int, ...]      # per stage: most micro-batch chunks whose activations are held at once


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
    return IterationResult(with_stragglers(costs, extended), long.timeline, in_flight)


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
    return _Pipeline(costs, schedule, p, v, m, overlap, overlap_gather).run()


class _Pipeline:
    """One step on SimPy: a process per stage walking its schedule, and the gradient buckets that reduce on
    each stage's communication stream. Per-stage tallies (lists indexed by stage) make the breakdown."""

    def __init__(self, costs: StepCosts, schedule: str, p: int, v: int, m: int, overlap: bool,
                 overlap_gather: bool):
        self.costs, self.schedule, self.p, self.v, self.m = costs, schedule, p, v, m
        self.overlap, self.overlap_gather = overlap, overlap_gather
        self.env = simpy.Environment()
        self.spans: list[Span] = []
        # delivered[(direction, global chunk, micro-batch)]: the input of that pass has arrived
        self.delivered: dict[tuple[str, int, int], simpy.Event] = {}
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
        self.streams = [simpy.Resource(self.env, capacity=1) for _ in range(p)]

    def arrival(self, direction: str, g: int, j: int) -> simpy.Event:
        key = (direction, g, j)
        if key not in self.delivered:
            self.delivered[key] = self.env.event()
        return self.delivered[key]

    def gather_end_s(self, stage: int) -> float:
        """When the (overlapped) parameter all-gather of this stage's chunks completes."""
        return self.costs.dp_gather_s * self.stage_layers[stage] / self.max_stage_layers

    def bucket(self, stage: int, ready_s: float, duration_s: float, chunk: int):
        """Reduce one gradient bucket on the stage's communication stream once it is ready."""
        env = self.env
        if ready_s > env.now:
            yield env.timeout(ready_s - env.now)
        with self.streams[stage].request() as turn:
            yield turn
            start = env.now
            yield env.timeout(duration_s)
            self.spans.append(Span(stage, -1, chunk, "dp_comm", start, env.now))

    def _forward_s(self, stage: int, k: int, cost, start: float, first_forward_done: set[int]) -> float:
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

    def _backward_s(self, stage: int, cost) -> float:
        self.zero_extra[stage] += cost.backward_dp_s
        self.dp_latency[stage] += cost.backward_dp_latency_s
        self.comm_inside[stage] += cost.backward_comm_s
        self.launches[stage] += cost.backward_launch_s
        return cost.backward_s + cost.backward_dp_s

    def _gradients_final(self, stage: int, g: int, cost, start: float, duration: float,
                         deferred: list[tuple[float, int]]) -> float:
        """The last backward of chunk ``g``: its gradients reduce in one bucket per layer, ready as the backward
        passes its layers (last layer first). Returns the pass's duration, slowed by overlapped reduction."""
        stage_dp_s = self.costs.dp_reduce_s * self.stage_layers[stage] / self.max_stage_layers
        share = stage_dp_s * cost.layers / max(1, self.stage_layers[stage])
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
            self.env.process(self.bucket(stage, start + (i + 1) * duration / n, share / n, g))
        return duration

    def _hand_on(self, stage: int, direction: str, j: int, g: int):
        """Send the activation (or gradient) of pass (``direction``, ``j``, ``g``) to the next chunk."""
        target = g + 1 if direction == FORWARD else g - 1
        if not 0 <= target < self.p * self.v:
            return
        if self.p > 1:
            send_start = self.env.now
            yield self.env.timeout(self.costs.p2p_s)
            self.busy[stage] += self.costs.p2p_s
            self.sends_s[stage] += self.costs.p2p_s
            if self.costs.p2p_s > 0:
                self.spans.append(Span(stage, j, g, "send", send_start, self.env.now))
        self.arrival(direction, target, j).succeed()

    def rank(self, stage: int):
        """The representative rank of ``stage``: its passes in schedule order."""
        env, p, n_chunks = self.env, self.p, self.p * self.v
        order = schedule_order(self.schedule, p, self.v, self.m, stage)
        last_backward = {k: max(j for d, j, kk in order if d == BACKWARD and kk == k) for k in range(self.v)}
        first_forward_done: set[int] = set()
        held = 0
        deferred: list[tuple[float, int]] = []
        reduces = self.costs.dp_reduce_s * self.stage_layers[stage] / self.max_stage_layers > 0
        for direction, j, k in order:
            g = stage + p * k
            cost = self.costs.chunks[g]
            if direction == FORWARD and g > 0 or direction == BACKWARD and g < n_chunks - 1:
                yield self.arrival(direction, g, j)
            start = env.now
            if direction == FORWARD:
                duration = self._forward_s(stage, k, cost, start, first_forward_done)
                held += 1
            else:
                duration = self._backward_s(stage, cost)
                held -= 1
            self.in_flight_peak[stage] = max(self.in_flight_peak[stage], held)
            if direction == BACKWARD and j == last_backward[k] and reduces:
                duration = self._gradients_final(stage, g, cost, start, duration, deferred)
            yield env.timeout(duration)
            self.busy[stage] += duration
            self.spans.append(Span(stage, j, g, direction, start, env.now))
            yield from self._hand_on(stage, direction, j, g)
        self.compute_end[stage] = env.now
        for share, g in deferred:
            env.process(self.bucket(stage, env.now, share, g))

    def run(self) -> IterationResult:
        gathering = self.overlap_gather and self.costs.dp_gather_s > 0
        for stage in range(self.p):
            self.env.process(self.rank(stage))
            if gathering:     # last step's parameter all-gather, under the first forwards
                self.spans.append(Span(stage, -1, -1, "dp_comm", 0.0, self.gather_end_s(stage)))
        self.env.run()
        breakdown = self._breakdown()
        self.spans.sort(key=lambda s: (s.stage, s.start_s, s.kind))
        return IterationResult(breakdown, tuple(self.spans), tuple(self.in_flight_peak))

    def _breakdown(self) -> StepBreakdown:
        """After the passes: the barrier, the per-step work, an exposed gather, and the busiest stage's parts."""
        p, spans, costs = self.p, self.spans, self.costs
        pipeline_end = max(self.compute_end)
        barrier = max(max(self.compute_end), _last_end(spans, "dp_comm"))
        t = barrier
        for kind, duration in (("overheads", costs.overheads_s), ("optimizer", costs.optimizer_s)):
            if duration > 0:
                spans.extend(Span(stage, -1, -1, kind, t, t + duration) for stage in range(p))
            t += duration
        exposed_gather = 0.0
        if not self.overlap_gather and costs.dp_gather_s > 0:
            for stage in range(p):
                spans.append(Span(stage, -1, -1, "dp_comm", t, t + self.gather_end_s(stage)))
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


def _last_end(spans: list[Span], kind: str) -> float:
    return max((s.end_s for s in spans if s.kind == kind), default=0.0)
