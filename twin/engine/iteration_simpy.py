"""Level 2 on SimPy, the reference: one training step played by a SimPy process per pipeline stage.

The step the twin reports is played by a plain loop (``engine/iteration.py``): a schedule of tens of
thousands of passes (the 405B scenario's 126-stage plans) spends most of its time in SimPy's event
machinery. These processes play the same rules with SimPy's clock, events and a ``simpy.Resource`` per
stage's communication stream, and ``tests/test_iteration.py`` checks that the loop gives their step,
breakdown, timeline and activations in flight to the last digit.
"""

from __future__ import annotations

import simpy

from twin.engine.iteration import BACKWARD, FORWARD, IterationResult, Stages


class SimPyPipeline(Stages):
    """A process per stage walking its schedule, and the gradient buckets that reduce on each stage's
    communication stream."""

    def __init__(self, *args):
        super().__init__(*args)
        self.env = simpy.Environment()
        # delivered[(direction, global chunk, micro-batch)]: the input of that pass has arrived
        self.delivered: dict[tuple[str, int, int], simpy.Event] = {}
        self.streams = [simpy.Resource(self.env, capacity=1) for _ in range(self.p)]

    def arrival(self, direction: str, g: int, j: int) -> simpy.Event:
        key = (direction, g, j)
        if key not in self.delivered:
            self.delivered[key] = self.env.event()
        return self.delivered[key]

    def reduce_from(self, stage: int, now_s: float, ready_s: float, duration_s: float, chunk: int) -> None:
        self.env.process(self.bucket(stage, ready_s, duration_s, chunk))

    def bucket(self, stage: int, ready_s: float, duration_s: float, chunk: int):
        """Reduce one gradient bucket on the stage's communication stream once it is ready."""
        env = self.env
        if ready_s > env.now:
            yield env.timeout(ready_s - env.now)
        with self.streams[stage].request() as turn:
            yield turn
            start = env.now
            yield env.timeout(duration_s)
            self.spans.append((stage, start, "dp_comm", env.now, -1, chunk))

    def hand_on(self, stage: int, direction: str, j: int, g: int):
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
                self.spans.append((stage, send_start, "send", self.env.now, j, g))
        self.arrival(direction, target, j).succeed()

    def rank(self, stage: int):
        """The representative rank of ``stage``: its passes in schedule order."""
        env, p, n_chunks = self.env, self.p, self.p * self.v
        order, last_backward, reduces = self.order_of(stage)
        first_forward_done: set[int] = set()
        held = 0
        deferred: list[tuple[float, int]] = []
        for direction, j, k in order:
            g = stage + p * k
            cost = self.costs.chunks[g]
            if direction == FORWARD and g > 0 or direction == BACKWARD and g < n_chunks - 1:
                yield self.arrival(direction, g, j)
            start = env.now
            if direction == FORWARD:
                duration = self.forward_s(stage, k, cost, start, first_forward_done)
                held += 1
            else:
                duration = self.backward_s(stage, cost)
                held -= 1
            self.in_flight_peak[stage] = max(self.in_flight_peak[stage], held)
            if direction == BACKWARD and j == last_backward[k] and reduces:
                duration = self.gradients_final(stage, g, cost, start, duration, deferred)
            yield env.timeout(duration)
            self.busy[stage] += duration
            self.spans.append((stage, start, direction, env.now, j, g))
            yield from self.hand_on(stage, direction, j, g)
        self.compute_end[stage] = env.now
        for share, g in deferred:
            self.reduce_from(stage, env.now, env.now, share, g)

    def run(self) -> IterationResult:
        self.gathers_first()
        for stage in range(self.p):
            self.env.process(self.rank(stage))
        self.env.run()
        return self.result()
