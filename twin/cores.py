"""Independent work split over two cores: the same answers, sooner.

The failure Monte Carlo plays each sample from its own seed, and a fit searches each of its options on its
own, so the items of either list are independent and their order is fixed by their index. When the work is
large (the 16,384-GPU scenario plays about 75,000 failures over its hundred samples), the process forks once:
the child works out the second half of the list and sends it back through a pipe, the parent the first half
meanwhile (``split_map``). Items of unequal and uncertain work are taken one at a time by whichever process is
free instead (``shared_map``); where the items then gain from being finished together, each process finishes
those it took in one call, each taking at most half (``shared_then``: the plans a search plays in full, their
steps one by one, then their Monte Carlos in one array). The list comes back in its order, each item the one a
single process gives, so every number is the same.

The fork is taken only where it is safe and pays:

- on Linux, with at least two cores this process may run on (``os.sched_getaffinity``);
- in a process with no other thread than the terminal's ticker (``twin.ticker``, which only waits and writes
  to stderr, which the child never does): forking a process with other threads running, as a dashboard server
  or a Dask worker has, can leave the child waiting on a lock that no thread of it will release;
- when the work is worth the fork's few milliseconds (``worth``, the caller's estimate);
- not in a child of a split (a plan search's child playing its half of the plans plays each plan's Monte
  Carlo alone), nor in a worker of a pool of processes that already fills the cores (``one_core``).

A child that fails, dies or sends nothing back costs only time: the parent plays its half itself. The child
leaves through ``os._exit``, without running the parent's exit handlers or flushing its buffers, and dies
with its parent (a command killed mid-way leaves no child working on).
"""

from __future__ import annotations

import ctypes
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from twin.ticker import THREAD_NAME

# Linux prctl(2) option: the signal a process gets when its parent dies (linux/prctl.h).
PR_SET_PDEATHSIG = 1

_may_split = True       # False in a child of a split, and in a worker of a pool that already fills the cores

Item = TypeVar("Item")
Result = TypeVar("Result")


def can_split() -> bool:
    """Whether this process may fork a child for half of a list (module docstring)."""
    if not (_may_split and sys.platform.startswith("linux") and hasattr(os, "fork")):
        return False
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and t.name != THREAD_NAME]
    return (len(os.sched_getaffinity(0)) >= 2 and threading.current_thread() is threading.main_thread()
            and not others)


def die_with_parent(parent: int) -> None:
    """The kernel kills this process when its parent ``parent`` dies (even by ``kill -9``): no child of a split
    or worker of a study outlives what started it. Linux only (``prctl``); elsewhere a no-op."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):          # no prctl: the parent's own ending is all there is
        return
    if os.getppid() != parent:                 # the parent died before the signal was armed
        os._exit(1)


def one_core() -> None:
    """This process splits nothing: a pool worker's initialiser (studies, validation), whose pool already
    runs a process per core."""
    global _may_split
    _may_split = False


def split_map(play: Callable[[Item], Result], items: Sequence[Item], worth: bool) -> list[Result]:
    """``[play(item) for item in items]``, the second half played in a forked child when ``worth`` and
    ``can_split()``; the same list either way, as long as ``play`` depends on its item alone."""
    if not worth or len(items) < 2 or not can_split():
        return [play(item) for item in items]
    half = len(items) // 2
    mine, theirs = _forked(lambda: [play(item) for item in items[:half]],
                           lambda: [play(item) for item in items[half:]])
    return mine + (theirs if theirs is not None else [play(item) for item in items[half:]])


# Bytes of one item's index in the queue of ``shared_map``: reads of this size from a pipe are whole.
_INDEX_BYTES = 4
# The most the queue holds: a write of up to PIPE_BUF bytes (4,096 on Linux, POSIX's least 512) to an empty
# pipe goes in whole and at once (pipe(7)).
_QUEUE_BYTES = 4096


def shared_map(play: Callable[[Item], Result], items: Sequence[Item], worth: bool,
               here_first: Callable[[], Any] | None = None) -> list[Result]:
    """``[play(item) for item in items]``, the items taken in their order by whichever of this process and a
    forked child is free, when ``worth`` and ``can_split()``: items of unequal and uncertain work (put the
    heaviest first) end about together. Their indices wait in a pipe both processes read, one whole index a
    read (Linux copies a pipe read under the pipe's lock), so each item is played once; the child sends its
    answers back by index, and any it did not send the parent plays. The same list either way, as long as
    ``play`` depends on its item alone. More items than the queue holds are split in halves (``split_map``).

    ``here_first``: work this process does before it takes items when the child is forked, the child taking
    items meanwhile; what that work keeps (a cluster's fabric) is in both processes of the next fork."""
    if len(items) * _INDEX_BYTES > _QUEUE_BYTES:
        return split_map(play, items, worth)
    if not worth or len(items) < 2 or not can_split():
        return [play(item) for item in items]
    queue_fd, fill_fd = os.pipe()
    os.write(fill_fd, b"".join(i.to_bytes(_INDEX_BYTES, "little") for i in range(len(items))))
    os.close(fill_fd)                              # once read to its end, the queue reads as empty

    def mine() -> dict[int, Result]:
        if here_first is not None:
            here_first()
        return _taken(play, items, queue_fd)

    try:
        done, theirs = _forked(mine, lambda: _taken(play, items, queue_fd))
    finally:
        os.close(queue_fd)
    done.update(theirs or {})
    return [done[i] if i in done else play(item) for i, item in enumerate(items)]


def _taken(play: Callable[[Item], Result], items: Sequence[Item], queue_fd: int,
           most: int | None = None) -> dict[int, Result]:
    """The answers to the items this process takes from the queue of ``shared_map``, by index, until it is empty
    or this process holds ``most`` of them."""
    out: dict[int, Result] = {}
    most = len(items) if most is None else most
    while len(out) < most and len(index := os.read(queue_fd, _INDEX_BYTES)) == _INDEX_BYTES:
        i = int.from_bytes(index, "little")
        out[i] = play(items[i])
    return out


def shared_then(first: Callable[[Item], Any], then: Callable[[list[tuple[Item, Any]]], list[Result]],
                items: Sequence[Item], worth: bool) -> list[Result]:
    """``then`` of the items with their ``first``, in the items' order: each process (as in ``shared_map``) takes
    items one at a time and works out ``first`` of each, then finishes all it took at once, ``then([(item,
    first), ...])`` giving an answer for each, in the order given: for work that gains from being finished
    together (several plans' Monte Carlos in one array) after a first part of unequal and uncertain work (their
    steps). Each process takes at most half the items (rounded up): finishing grows with the items taken (a
    Monte Carlo array about linearly with its jobs), and a process quick through its first parts would otherwise
    take nearly every item and finish them all alone (the 405B plan search: 10 of 11 plans, 1.6 s of Monte Carlo
    against 0.5 s on the other core). The same list either way, as long as each answer depends on its item
    alone."""
    if not (worth and 2 <= len(items) <= _QUEUE_BYTES // _INDEX_BYTES and can_split()):
        return then([(item, first(item)) for item in items])
    queue_fd, fill_fd = os.pipe()
    os.write(fill_fd, b"".join(i.to_bytes(_INDEX_BYTES, "little") for i in range(len(items))))
    os.close(fill_fd)

    def mine() -> dict[int, Result]:
        taken = _taken(first, items, queue_fd, -(-len(items) // 2))
        return dict(zip(taken, then([(items[i], found) for i, found in taken.items()])))

    try:
        done, theirs = _forked(mine, mine)
    finally:
        os.close(queue_fd)
    done.update(theirs or {})
    left = [i for i in range(len(items)) if i not in done]     # the child's, when it sent nothing back
    if left:
        done.update(zip(left, then([(items[i], first(items[i])) for i in left])))
    return [done[i] for i in range(len(items))]


def _forked(mine: Callable[[], Result], theirs: Callable[[], Any]) -> tuple[Result, Any]:
    """``mine()`` here while a forked child works out ``theirs()`` and sends it back pickled through a pipe:
    (mine's answer, theirs, or None when the child failed, died or sent nothing)."""
    read_fd, write_fd = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:                                   # the child: its answer, pickled into the pipe, then gone
        global _may_split
        _may_split, code = False, 1
        try:
            die_with_parent(parent)
            os.close(read_fd)
            with os.fdopen(write_fd, "wb") as pipe:
                pipe.write(pickle.dumps(theirs(), pickle.HIGHEST_PROTOCOL))
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    pipe = os.fdopen(read_fd, "rb")
    try:
        here = mine()
        sent = pipe.read()
    finally:                                       # on an error here the child meets a closed pipe and ends
        pipe.close()
        _, status = os.waitpid(pid, 0)
    return here, (pickle.loads(sent) if status == 0 and sent else None)


def balanced_halves(work: Sequence[float]) -> list[list[int]]:
    """The indices of ``work`` in two parts of about equal total, each in index order: the heaviest first, each
    to the lighter part (ties to the lower index, then to the first part). For ``split_map`` over the two parts
    of a list whose items differ in work."""
    parts: list[list[int]] = [[], []]
    load = [0.0, 0.0]
    for i in sorted(range(len(work)), key=lambda i: (-work[i], i)):
        part = load.index(min(load))
        load[part] += work[i]
        parts[part].append(i)
    return [sorted(part) for part in parts]
