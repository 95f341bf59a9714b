"""The scheduler's free GPUs, node by node, and where a job's GPUs go (placement).

Placement (``scheduler.py`` describes the policies): ``topology`` packs a job of whole
nodes in the scalable unit (SU) that fits it most tightly, or else in the fewest
adjacent SUs, filling the fullest first, and puts a job within a node on the busiest
node it fits (best fit); ``first-fit`` takes the lowest-numbered nodes that fit.

A scheduling pass asks where a job would go many times (every job it considers, every
running job's end in a backfill reservation), so the pool keeps, besides each node's
free GPUs, a bit mask per free count: bit ``n`` of ``masks[f]`` is set when node ``n``
is usable and has ``f`` GPUs free. The lowest node with room, the free whole nodes of
an SU and their count are then a few integer operations, whatever the cluster's size,
and a copy of the pool (a trial pass) copies a handful of integers per free count.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple


class Need(NamedTuple):
    """What a job holds: ``nodes`` whole nodes, or ``gpus`` GPUs of one node (a tuple: it keys the needs of
    the waiting jobs and the choices a pass found no room for, and a tuple hashes fast)."""
    nodes: int
    gpus: int                                    # per node; every GPU of a node for a multi-node job


def node_mask(nodes: Iterable[int]) -> int:
    """The bit mask of a set of nodes (bit ``n`` for node ``n``)."""
    mask = 0
    for n in nodes:
        mask |= 1 << n
    return mask


def lowest_nodes(mask: int, count: int) -> list[int]:
    """The ``count`` lowest-numbered nodes of ``mask`` (fewer when it holds fewer), in order."""
    out: list[int] = []
    while mask and len(out) < count:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


class Pool:
    """Free GPUs of every node the scheduler may use (not a spare, not in repair), with counts and masks for
    quick tests and quick choices."""

    def __init__(self, gpus_per_node: int, node_su: list[int]):
        self.gpn = gpus_per_node
        self.su = node_su
        n = len(node_su)
        self.free = [gpus_per_node] * n
        self.usable = [True] * n
        self.by_free = [0] * (gpus_per_node + 1)   # usable nodes by their free GPUs
        self.by_free[gpus_per_node] = n
        self.masks = [0] * (gpus_per_node + 1)     # usable nodes by their free GPUs, as bit masks
        self.masks[gpus_per_node] = (1 << n) - 1
        self.su_masks = [(s, node_mask(i for i in range(n) if node_su[i] == s)) for s in sorted(set(node_su))]

    def copy(self) -> "Pool":
        other = Pool.__new__(Pool)
        other.gpn, other.su, other.su_masks = self.gpn, self.su, self.su_masks
        other.free, other.usable, other.by_free = list(self.free), list(self.usable), list(self.by_free)
        other.masks = list(self.masks)
        return other

    def adopt(self, trial: "Pool") -> None:
        """Take the free GPUs of ``trial``, a copy of this pool that took some (the same nodes usable)."""
        self.free, self.by_free, self.masks = trial.free, trial.by_free, trial.masks

    def _move(self, nodes: Iterable[int], gpus: int) -> None:
        """Each of ``nodes`` gains ``gpus`` free GPUs (loses them when negative)."""
        free, usable, by_free, masks = self.free, self.usable, self.by_free, self.masks
        for n in nodes:
            before = free[n]
            after = free[n] = before + gpus
            if usable[n]:
                bit = 1 << n
                by_free[before] -= 1
                by_free[after] += 1
                masks[before] ^= bit
                masks[after] |= bit

    def take(self, nodes: Iterable[int], gpus: int) -> None:
        self._move(nodes, -gpus)

    def give(self, nodes: Iterable[int], gpus: int) -> None:
        self._move(nodes, gpus)

    def set_usable(self, node: int, usable: bool) -> None:
        if self.usable[node] != usable:
            f, bit = self.free[node], 1 << node
            self.by_free[f] += 1 if usable else -1
            self.masks[f] ^= bit
            self.usable[node] = usable

    @property
    def whole_nodes(self) -> int:
        return self.by_free[self.gpn]

    def fits(self, need: Need) -> bool:
        """Enough free GPUs now, ignoring nodes to avoid (a quick test before ``choose``)."""
        if need.gpus == self.gpn:
            return self.by_free[self.gpn] >= need.nodes
        return any(self.masks[need.gpus:])

    def choose(self, need: Need, placement: str, avoid_mask: int = 0) -> list[int] | None:
        """Nodes for ``need`` by the placement policy, none of ``avoid_mask`` (a bit mask, ``node_mask``), or
        None when it does not fit."""
        if not self.fits(need):
            return None
        keep = ~avoid_mask
        masks, gpn = self.masks, self.gpn
        if need.gpus < gpn or need.nodes == 1 and placement == "first-fit":
            if placement == "first-fit":                # the lowest node with room
                room = 0
                for f in range(need.gpus, gpn + 1):
                    room |= masks[f]
                room &= keep
                return lowest_nodes(room, 1) if room else None
            for f in range(need.gpus, gpn + 1):         # best fit: the fewest free GPUs, then the lowest node
                room = masks[f] & keep
                if room:
                    return lowest_nodes(room, 1)
            return None
        whole = masks[gpn] & keep
        if whole.bit_count() < need.nodes:
            return None
        if placement == "first-fit":
            return lowest_nodes(whole, need.nodes)
        return _pack(whole, self.su_masks, need.nodes)


def _pack(whole: int, su_masks: list[tuple[int, int]], k: int) -> list[int]:
    """``k`` of the ``whole`` free nodes (a mask): in the SU that fits them most tightly, else the fewest
    adjacent SUs (adjacent among those with a free node), the fullest first."""
    by_su = {}
    for s, m in su_masks:
        free = whole & m
        if free:
            by_su[s] = (free, free.bit_count())
    fitting = [s for s, (_, count) in by_su.items() if count >= k]
    if fitting:
        best = min(fitting, key=lambda s: (by_su[s][1], s))
        return lowest_nodes(by_su[best][0], k)
    units = list(by_su)                               # in SU order
    best_window = None
    for width in range(2, len(units) + 1):
        for start in range(len(units) - width + 1):
            window = units[start:start + width]
            total = sum(by_su[s][1] for s in window)
            if total >= k and (best_window is None or total < best_window[0]):
                best_window = (total, window)
        if best_window:
            break
    chosen: list[int] = []
    for s in sorted(best_window[1], key=lambda s: (-by_su[s][1], s)):
        chosen += lowest_nodes(by_su[s][0], k - len(chosen))
    return sorted(chosen)
