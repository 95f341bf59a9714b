"""The cluster's nodes: the scheduler's pool, the spare pool, nodes in repair, and who holds what.

``cluster.spare_nodes`` nodes (the last ones) start in the spare pool, out of the
scheduler's use. A job that loses a node to a failure takes another: first a free one
of the scheduler's (in the SUs it already spans when it holds whole nodes and one is
free there, so that the failure does not spread the job further), else one of the
spare pool (which then joins the scheduler's pool). A repaired node refills the spare pool up to its size,
else it returns to the scheduler. A serving job holds slots (whole GPUs or MIG
instances, ``scheduler.place_service``) rather than whole nodes; when nothing is free a
spare node joins the pool for it.
"""

from __future__ import annotations

from collections.abc import Callable

from twin.hardware.specs import ClusterSpec
from twin.jobs.model import JobKind
from twin.operations.progress import ClusterJob, ServiceJob, TrainingJob
from twin.operations.records import NodeSpan
from twin.operations.scheduler import Need, Partitions, Pool, Slot, place_service, release_slot


class NodePool:
    """Nodes and GPUs of one run; ``changed`` is called after every change the cluster's series records."""

    def __init__(self, cluster: ClusterSpec, node_su: tuple[int, ...], placement: str, changed: Callable[[], None]):
        self.cluster, self.node_su, self.placement, self.changed = cluster, node_su, placement, changed
        self.gpn = cluster.node.gpus
        self.pool = Pool(self.gpn, list(node_su))
        self.spares: list[int] = list(range(cluster.nodes - cluster.spare_nodes, cluster.nodes))
        for n in self.spares:
            self.pool.set_usable(n, False)
        self.down: set[int] = set()
        self.on_node: dict[int, set[int]] = {}       # node → indices of the jobs holding it
        self.parts = Partitions()
        self.allocated = 0.0                         # GPUs held by jobs
        self.held: dict[str, float] = {}             # GPUs each tenant holds
        self.spare_swaps = 0                         # nodes taken from the spare pool
        self.replacements = 0                        # failed nodes of running jobs replaced
        self._release = {JobKind.TRAINING: self._release_node, JobKind.SERVICE: self._release_slots}
        self._fill = {JobKind.TRAINING: self._fill_nodes, JobKind.SERVICE: self._fill_slots}

    # -- taking ------------------------------------------------------------------------------
    def take_nodes(self, job: ClusterJob, nodes: list[int], now: float) -> None:
        """The job takes whole nodes (or its GPUs of one node)."""
        self.pool.take(nodes, job.need.gpus)
        for n in nodes:
            job.spans[n] = now
            self.on_node.setdefault(n, set()).add(job.index)
        self._hold(job, len(nodes) * job.need.gpus)
        job.nodes += nodes
        self.changed()

    def take_slots(self, job: ServiceJob, slots: list[Slot], now: float) -> None:
        """A serving job takes its slots (already taken from the pool)."""
        for slot in slots:
            if slot.node not in job.spans:
                job.spans[slot.node] = now
                job.nodes.append(slot.node)
            self.on_node.setdefault(slot.node, set()).add(job.index)
            job.slots.append((slot, now))
            self._hold(job, job.gpus_of(slot))
        self.changed()

    def _hold(self, job: ClusterJob, gpus: float) -> None:
        """The job holds ``gpus`` more (or fewer) GPUs from now."""
        job.held_gpus += gpus
        self.allocated += gpus
        self.held[job.req.tenant] = self.held.get(job.req.tenant, 0) + gpus

    def service_slots(self, job: ServiceJob, devices: int) -> list[Slot] | None:
        """Slots for ``devices`` of a serving job (taken from the pool), or None; a spare node joins the
        pool when nothing else is free (once the job has started)."""
        svc = job.service
        while True:
            slots = place_service(self.pool, self.parts, devices, svc.devices_per_replica, svc.profile,
                                  svc.instances_per_gpu, self.placement)
            if slots is not None or not self.spares or job.start_s is None:
                return slots
            self._spare_joins()

    def _spare_joins(self) -> int:
        """The first spare node joins the scheduler's pool."""
        node = self.spares.pop(0)
        self.pool.set_usable(node, True)
        self.spare_swaps += 1
        return node

    # -- giving back ---------------------------------------------------------------------------
    def release(self, job: ClusterJob, node: int, now: float) -> int:
        """The job lets go of ``node`` (a node in repair stays out of the scheduler's use); returns what it
        lost there: one node, or a serving job's devices."""
        return self._release[job.kind](job, node, now)

    def release_all(self, job: ClusterJob, now: float) -> None:
        """The job lets go of every node it holds (it ended): as ``release`` node by node, in the order it took
        them; a training job's nodes go back to the pool together."""
        if job.kind is not JobKind.TRAINING:
            for node in list(job.nodes):
                self.release(job, node, now)
            return
        for node in job.nodes:
            self._close_node(job, node, now)
        self.pool.give(job.nodes, job.need.gpus)
        job.nodes.clear()
        self.changed()

    def _release_node(self, job: TrainingJob, node: int, now: float) -> int:
        self._close_node(job, node, now)
        job.nodes.remove(node)
        self.pool.give([node], job.need.gpus)
        self.changed()
        return 1

    def _close_node(self, job: TrainingJob, node: int, now: float) -> None:
        """A training job's time on ``node`` ends: its GPU-seconds and span are kept, the node no longer holds it."""
        job.tally.gpu_seconds += job.need.gpus * (now - job.spans[node])
        job.closed_spans.append(NodeSpan(node, job.spans.pop(node), now))
        self.on_node[node].discard(job.index)
        self._hold(job, -job.need.gpus)

    def _release_slots(self, job: ServiceJob, node: int, now: float) -> int:
        freed = 0
        for held in [h for h in job.slots if h[0].node == node]:
            slot, since = held
            release_slot(self.pool, self.parts, slot)
            job.slots.remove(held)
            gpus = job.gpus_of(slot)
            job.tally.gpu_seconds += gpus * (now - since)
            self._hold(job, -gpus)
            freed += slot.count
        job.closed_spans.append(NodeSpan(node, job.spans.pop(node), now))
        job.nodes.remove(node)
        self.on_node[node].discard(job.index)
        self.changed()
        return freed

    # -- replacing -----------------------------------------------------------------------------
    def fill(self, job: ClusterJob, now: float) -> None:
        """A job that lost nodes (devices) takes what is free of what it misses."""
        self._fill[job.kind](job, now)

    def _fill_slots(self, job: ServiceJob, now: float) -> None:
        slots = self.service_slots(job, job.missing)
        if slots is None:
            return
        self.take_slots(job, slots, now)
        job.missing = 0
        self.replacements += 1

    def _fill_nodes(self, job: TrainingJob, now: float) -> None:
        while job.missing:
            node = self._replacement(job)
            if node is None:
                break
            self.take_nodes(job, [node], now)
            job.missing -= 1
            self.replacements += 1

    def _replacement(self, job: TrainingJob) -> int | None:
        """A node for a job that lost one: the scheduler's (in the job's SUs if it can), else a spare."""
        need = Need(1, job.need.gpus)
        candidates = None
        own = {self.node_su[n] for n in job.nodes}
        if own and job.need.gpus == self.gpn:
            elsewhere = 0                                # the nodes of the other SUs, as a bit mask
            for su, mask in self.pool.su_masks:
                if su not in own:
                    elsewhere |= mask
            candidates = self.pool.choose(need, "first-fit", elsewhere)
        if candidates is None:
            candidates = self.pool.choose(need, self.placement)
        if candidates is not None:
            return candidates[0]
        if self.spares:
            return self._spare_joins()
        return None

    # -- failures and repairs --------------------------------------------------------------------
    def failed(self, node: int) -> None:
        """A hardware failure sends ``node`` to repair."""
        self.down.add(node)
        if node in self.spares:
            self.spares.remove(node)
        self.pool.set_usable(node, False)

    def repaired(self, node: int) -> None:
        """``node`` is back: to the spare pool while it is short (and no job still holds the node), else to
        the scheduler."""
        self.down.discard(node)
        if len(self.spares) < self.cluster.spare_nodes and not self.on_node.get(node):
            self.spares.append(node)
        else:
            self.pool.set_usable(node, True)
