"""Scheduling: which waiting jobs start now, and on which GPUs.

Policies are small functions over the cluster's state (as in the Blox toolkit for
GPU-cluster schedulers), so they can be swapped and compared:

- ``fifo``: jobs start in queue order; the first that does not fit blocks every job
  behind it (SLURM's ``sched/builtin``).
- ``backfill``: EASY backfill (Lifka 1995; Mu'alem and Feitelson 2001): as ``fifo``,
  then the blocked head gets a reservation at the earliest time the running jobs'
  estimated ends free enough GPUs for it; a later job may start now if it fits and
  either ends, by its estimate, before that time or leaves the reserved nodes alone.
  A pass tests at most ``depth`` jobs behind the head (SLURM's ``default_queue_depth``,
  100 by default: Scheduling Configuration Guide, slurm.schedmd.com/sched_config.html).
- ``priority``: the queue ordered by job priority, then by the tenant's fair-share
  factor ``F = 2^(-U/S)`` (SLURM's classic fair share: ``U`` the tenant's share of the
  GPU-time used, decayed with a half-life, 7 days by default; ``S`` its normalised
  share; slurm.schedmd.com/classic_fair_share.html), then by submit time; then EASY
  backfill.

Gang scheduling: a job starts only when all its GPUs are free at once. A job within
a node takes GPUs of one node (shared with other jobs); a larger job takes whole
nodes. Placement: ``topology`` packs a job in the scalable unit (SU) that fits it
most tightly, or else in the fewest adjacent SUs, filling the fullest first, and
puts a small job on the busiest node it fits (best fit); ``first-fit`` takes the
lowest-numbered nodes that fit. Estimated ends are the running jobs' time limits,
or, without one, their remaining work at their current speed (an oracle).

A hero reservation holds a set of nodes for one job from a start time: before it,
a job that would still run at that time (by its estimate) stays off those nodes.

Serving jobs go through a queue of their own (as a Kubernetes scheduler would take
them: in order of arrival, each as soon as all its replicas fit), ahead of the
training queue at every pass, and without reservations. A replica on whole GPUs takes
GPUs of one node (best fit, or first fit); MIG instances are packed: first on GPUs
already split into the same profile (the fullest first), then on GPUs newly split,
taken from the nodes one at a time (``Partitions``). A GPU goes back to the pool when
its last instance is freed.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain, islice
from operator import itemgetter
from typing import NamedTuple

from twin.operations.pool import Need, Pool, node_mask
from twin.options import PLACEMENTS, Placement, SchedulerPolicy
from twin.options import SCHEDULER_POLICIES as POLICIES

__all__ = ["DEFAULT_BACKFILL_DEPTH", "DEFAULT_FAIR_SHARE_HALF_LIFE_S", "Decision", "FairShare", "Hold", "Need",
           "Partitions", "Policy", "Pool", "Queue", "Running", "Slot", "Waiting", "order", "place_service",
           "release_slot", "reservation", "schedule"]

# SLURM's default_queue_depth: jobs a scheduling pass considers behind the head.
DEFAULT_BACKFILL_DEPTH = 100
# SLURM's PriorityDecayHalfLife default (slurm.conf): 7 days.
DEFAULT_FAIR_SHARE_HALF_LIFE_S = 7 * 86400.0
# A ``priority`` queue up to this long is sorted whole at each pass rather than merged lazily by tenant.
SORTED_QUEUE_UP_TO = 512


@dataclass(frozen=True)
class Policy:
    """How the scheduler orders, fits and places jobs (``jobs.scheduler``)."""
    name: SchedulerPolicy = "backfill"
    placement: Placement = "topology"
    depth: int = DEFAULT_BACKFILL_DEPTH
    shares: tuple[tuple[str, float], ...] = ()   # fair share per tenant (default: equal)
    half_life_s: float = DEFAULT_FAIR_SHARE_HALF_LIFE_S

    def __post_init__(self) -> None:
        if self.name not in POLICIES or self.placement not in PLACEMENTS:
            raise ValueError(f"unknown policy {self.name!r} or placement {self.placement!r}; "
                             f"known: {', '.join(POLICIES)}; {', '.join(PLACEMENTS)}")


@dataclass
class Waiting:
    """A queued job as the scheduler sees it."""
    index: int
    need: Need
    estimate_s: float                            # its run time, by its time limit or the oracle
    priority: float
    tenant: str
    release_s: float                             # when it entered the queue


class Running(NamedTuple):
    """A running job as the scheduler sees it: when it should end and what it will free. A plain tuple in
    this order serves as well (the cluster lists its running jobs as tuples at every reservation)."""
    estimated_end_s: float
    nodes: Sequence[int]
    gpus: int                                    # per node


@dataclass(frozen=True)
class Hold:
    """Nodes held for a hero job from ``start_s``."""
    index: int
    start_s: float
    nodes: frozenset[int]
    mask: int = field(init=False, repr=False, compare=False)     # the nodes as a bit mask (``pool.node_mask``)

    def __post_init__(self) -> None:
        object.__setattr__(self, "mask", node_mask(self.nodes))


@dataclass
class FairShare:
    """Each tenant's decayed GPU-time and its fair-share factor 2^(-U/S)."""
    shares: dict[str, float]
    half_life_s: float
    usage: dict[str, float] = field(default_factory=dict)
    updated_s: float = 0.0

    def advance(self, now: float, allocated: dict[str, int]) -> None:
        """Decay the usage to ``now`` and add the GPU-time held meanwhile (constant allocation)."""
        dt = now - self.updated_s
        if dt <= 0:
            return
        rate = math.log(2) / self.half_life_s
        keep = math.exp(-rate * dt)
        fresh = 1 - keep
        usage = self.usage
        # Tenants already counted keep their place, new ones follow in the order they hold GPUs: the order the
        # usage is summed in is the same in every process (a set's would follow the strings' hash seed).
        for tenant in [*usage, *(t for t in allocated if t not in usage)]:
            usage[tenant] = usage.get(tenant, 0.0) * keep + allocated.get(tenant, 0) * fresh / rate
        self.updated_s = now

    def factor(self, tenant: str) -> float:
        return self.factors([tenant])[0]

    def factors(self, tenants: Iterable[str]) -> list[float]:
        """The factor of each of ``tenants`` (the usage summed once for all of them)."""
        total = sum(self.usage.values())
        out = []
        for tenant in tenants:
            used = self.usage.get(tenant, 0.0) / total if total > 0 else 0.0
            share = self.shares.get(tenant) or (1.0 / max(1, len(self.shares)) if self.shares else 1.0)
            out.append(2.0 ** (-used / share))
        return out


def _fifo_key(w: Waiting) -> tuple[float, float, int]:
    """Queue order of ``fifo`` and ``backfill``: a job of infinite priority (a hero run) first, then by release."""
    return (-w.priority if math.isinf(w.priority) else 0.0, w.release_s, w.index)


def _tenant_key(w: Waiting) -> tuple[float, float, int]:
    """Order within a tenant under ``priority``: by priority, then by release."""
    return (-w.priority, w.release_s, w.index)


class Queue:
    """The waiting training jobs, kept in each policy's order as they come and go, so that a scheduling pass
    reads only the head it needs instead of sorting the whole queue.

    ``fifo`` and ``backfill`` read one list in ``_fifo_key`` order. ``priority`` orders by priority, then by the
    tenant's fair-share factor, then by release: since the factor is the same for every job of a tenant, each
    tenant's list in ``_tenant_key`` order is already in that order, and a pass merges the tenants' lists lazily
    with their current factors. A job's keys never change while it waits (it leaves the queue to start).
    """

    def __init__(self, jobs: list[Waiting] = ()):
        self._jobs: dict[int, Waiting] = {}
        self._fifo: list[tuple[tuple[float, float, int], int]] = []
        self._tenants: dict[str, list[tuple[tuple[float, float, int], int]]] = {}
        for w in jobs:
            self[w.index] = w

    def __setitem__(self, index: int, w: Waiting) -> None:
        if index in self._jobs:
            del self[index]
        self._jobs[index] = w
        bisect.insort(self._fifo, (_fifo_key(w), index))
        bisect.insort(self._tenants.setdefault(w.tenant, []), (_tenant_key(w), index))

    def __delitem__(self, index: int) -> None:
        w = self._jobs.pop(index)
        _remove(self._fifo, (_fifo_key(w), index))
        own = self._tenants[w.tenant]
        _remove(own, (_tenant_key(w), index))
        if not own:
            del self._tenants[w.tenant]

    def __len__(self) -> int:
        return len(self._jobs)

    def __contains__(self, index: int) -> bool:
        return index in self._jobs

    def values(self) -> list[Waiting]:
        return list(self._jobs.values())

    def ordered(self, policy: Policy, fair: FairShare | None) -> Iterator[Waiting]:
        """The waiting jobs in the order the policy considers them, produced lazily. Under ``priority`` a
        single tenant's lane is already in order; several are merged with their factors: a short queue (a
        pass then reads most of it) is sorted at once, a long one merged lazily."""
        jobs = self._jobs
        if policy.name == "priority" and fair is not None and len(self._tenants) > 1:
            factors = fair.factors(self._tenants)
            lanes = [_with_factor(lane, -f) for lane, f in zip(self._tenants.values(), factors)]
            if len(jobs) <= SORTED_QUEUE_UP_TO:
                return iter([jobs[i] for _, i in sorted(chain.from_iterable(lanes))])
            return (jobs[i] for _, i in heapq.merge(*lanes))
        if policy.name == "priority" and fair is not None and self._tenants:
            (lane,) = self._tenants.values()
            return (jobs[i] for _, i in lane)
        return (jobs[i] for _, i in self._fifo)


def _with_factor(lane: list, factor: float) -> Iterator[tuple[tuple[float, float, float, int], int]]:
    """A tenant's lane with the full ``priority`` key: (−priority, −fair-share factor, release, index)."""
    return (((k[0], factor, k[1], k[2]), i) for k, i in lane)


def _remove(lane: list, item: tuple) -> None:
    at = bisect.bisect_left(lane, item)
    del lane[at]


def order(policy: Policy, queue: list[Waiting], fair: FairShare | None) -> list[Waiting]:
    """The queue in the order the policy considers it."""
    return list(Queue(queue).ordered(policy, fair))


def _avoid(hold: Hold | None, job: Waiting, now: float) -> int:
    """The held nodes (a bit mask) when ``job`` would still run at the hold's start, else none."""
    if hold is None or job.index == hold.index or now >= hold.start_s or now + job.estimate_s <= hold.start_s:
        return 0
    return hold.mask


def reservation(pool: Pool, head: Waiting, running: list[Running], placement: str) -> tuple[float, frozenset[int]]:
    """When and where the blocked head could start as the running jobs end by their estimates (in the order
    of their estimated ends, ties in the order listed)."""
    future = pool.copy()
    need = head.need
    for end_s, nodes, gpus in sorted(running, key=itemgetter(0)):
        future.give(nodes, gpus)
        if future.fits(need):
            chosen = future.choose(need, placement)
            if chosen is not None:
                return end_s, frozenset(chosen)
    return math.inf, frozenset()


class Decision(NamedTuple):
    """What a scheduling pass decided."""
    starts: list[tuple[int, list[int]]]          # (job index, nodes)
    head: int | None = None                      # the blocked head, when one holds a reservation
    head_start_s: float = math.inf               # its reserved start


def schedule(policy: Policy, pool: Pool, queue: Queue | list[Waiting], running: Callable[[], list[Running]],
             now: float, fair: FairShare | None = None, hold: Hold | None = None) -> Decision:
    """One scheduling pass: the jobs to start now, in order, and their nodes. ``pool`` and ``queue`` are not
    changed; ``running()`` lists the running jobs, asked for only when a backfill reservation is computed.
    A pass reads the queue's head: the jobs that start in order, the blocked head, and ``depth`` behind it."""
    if not queue:
        return Decision([])
    state = pool.copy()
    starts: list[tuple[int, list[int]]] = []
    started: list[tuple[float, list[int], int]] = []
    waiting = (queue if isinstance(queue, Queue) else Queue(queue)).ordered(policy, fair)
    head = None
    for job in waiting:
        nodes = state.choose(job.need, policy.placement, _avoid(hold, job, now))
        if nodes is None:
            head = job
            break
        state.take(nodes, job.need.gpus)
        starts.append((job.index, nodes))
        started.append((now + job.estimate_s, nodes, job.need.gpus))
    if head is None or policy.name == "fifo":
        return Decision(starts)
    candidates = _fitting(state, islice(waiting, policy.depth))
    if not candidates:
        return Decision(starts)
    shadow, reserved = reservation(state, head, running() + started, policy.placement)
    return Decision(starts + _backfill(policy, state, candidates, shadow, node_mask(reserved), now, hold), head.index,
                    shadow)


def _fitting(state: Pool, jobs: Iterable[Waiting]) -> list[Waiting]:
    """The jobs whose need the pool could hold now (ignoring nodes to avoid), tested once per distinct need."""
    fits: dict[Need, bool] = {}
    out = []
    for job in jobs:
        found = fits.get(job.need)
        if found is None:
            found = fits[job.need] = state.fits(job.need)
        if found:
            out.append(job)
    return out


def _backfill(policy: Policy, state: Pool, candidates: list[Waiting], shadow: float, reserved_mask: int,
              now: float, hold: Hold | None) -> list[tuple[int, list[int]]]:
    """EASY backfill behind the blocked head reserved ``reserved_mask`` nodes from ``shadow``: the candidates
    that start now without delaying it. ``state`` takes their GPUs."""
    # Within a pass GPUs only get taken: what did not fit once does not fit again.
    failed: set[tuple[Need, int]] = set()
    starts: list[tuple[int, list[int]]] = []
    for job in candidates:
        if not state.fits(job.need):
            continue
        avoid = _avoid(hold, job, now)
        if now + job.estimate_s > shadow:
            avoid |= reserved_mask
        if (job.need, avoid) in failed:
            continue
        nodes = state.choose(job.need, policy.placement, avoid)
        if nodes is None:
            failed.add((job.need, avoid))
            continue
        state.take(nodes, job.need.gpus)
        starts.append((job.index, nodes))
    return starts


# ---------------------------------------------------------------------------
# Serving jobs: replicas on whole GPUs, or MIG instances packed onto split GPUs


@dataclass(frozen=True)
class Slot:
    """Part of a serving job's allocation: ``count`` GPUs of a node, or ``count`` instances of split GPU ``gpu``."""
    node: int
    gpu: int                                     # a split GPU's id, or -1 for whole GPUs
    count: int


@dataclass
class Partitions:
    """GPUs split into MIG instances, one profile per GPU: node, profile and free instances of each."""
    gpus: dict[int, list] = field(default_factory=dict)      # id → [node, profile, free, instances per GPU]
    next_id: int = 0

    def copy(self) -> "Partitions":
        return Partitions({k: list(v) for k, v in self.gpus.items()}, self.next_id)


def place_service(pool: Pool, parts: Partitions, devices: int, per_replica: int, profile: str | None,
                  instances_per_gpu: int, placement: Placement) -> list[Slot] | None:
    """Slots for ``devices`` devices (GPUs in replicas of ``per_replica``, or MIG instances), or None when they do
    not all fit. ``pool`` and ``parts`` are changed only when they do."""
    trial, split = pool.copy(), parts.copy()
    slots: list[Slot] = []
    if profile is None:
        for _ in range(devices // per_replica):
            nodes = trial.choose(Need(1, per_replica), placement)
            if nodes is None:
                return None
            trial.take(nodes, per_replica)
            slots.append(Slot(nodes[0], -1, per_replica))
    else:
        left = devices
        for gpu, (node, kind, free, _) in sorted(split.gpus.items(), key=lambda kv: (kv[1][2], kv[0])):
            if left and kind == profile and free:
                take = min(free, left)
                split.gpus[gpu][2] -= take
                slots.append(Slot(node, gpu, take))
                left -= take
        while left:
            nodes = trial.choose(Need(1, 1), placement)
            if nodes is None:
                return None
            trial.take(nodes, 1)
            take = min(instances_per_gpu, left)
            split.gpus[split.next_id] = [nodes[0], profile, instances_per_gpu - take, instances_per_gpu]
            slots.append(Slot(nodes[0], split.next_id, take))
            split.next_id += 1
            left -= take
    pool.adopt(trial)
    parts.gpus, parts.next_id = split.gpus, split.next_id
    return slots


def release_slot(pool: Pool, parts: Partitions, slot: Slot) -> None:
    """Free a slot; a split GPU whose instances are all free goes back to the pool whole."""
    if slot.gpu < 0:
        pool.give([slot.node], slot.count)
        return
    entry = parts.gpus[slot.gpu]
    entry[2] += slot.count
    if entry[2] == entry[3]:
        del parts.gpus[slot.gpu]
        pool.give([slot.node], 1)
