"""Where a study's points run: this process, a pool of local processes, or a Dask cluster.

One interface (``Executor``: ``submit``, ``wait``, ``close``), after ``concurrent.futures``
and Dask's ``Client``. ``run_batches`` feeds it batches of points sized so that each task
carries about ``TARGET_TASK_S`` of work: the first tasks hold one point each, then the
batch size follows the measured time per point. A task's answer depends on its points
alone (each point carries its own scenario, hence its own seed), so a study gives the
same numbers whatever the executor, the number of workers or the batching.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from twin.cores import die_with_parent, one_core
from twin.errors import ScenarioError

# Seconds of work a task should carry: long enough that scheduling costs (a few ms
# locally, tens of ms on a Dask cluster) stay small, short enough to balance the workers.
TARGET_TASK_S = 1.0
# Points in one task at most, whatever the measured speed.
MAX_BATCH_POINTS = 10_000
# Tasks in flight per worker: one running, one queued behind it.
TASKS_PER_WORKER = 2
# Seconds to wait for a Dask scheduler to answer before giving up.
CONNECT_TIMEOUT_S = 10
# Local worker processes at most, even with --oversubscribe: each holds a copy of the twin (about 100 MB).
MAX_LOCAL_WORKERS = 256
# A Dask scheduler address: [tcp://|tls://|inproc://]HOST:PORT.
_ADDRESS = re.compile(r"^(?:(?:tcp|tls|ucx|inproc)://)?[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$")


def local_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                       # not on Linux
        return os.cpu_count() or 1


class Executor:
    """Runs functions somewhere; ``workers`` is how many run at once."""
    workers: int = 1
    where: str = "this process"

    def submit(self, fn: Callable, *args: Any) -> Any:
        raise NotImplementedError

    def wait(self, futures: set) -> tuple[set, set]:
        """(done, pending) once at least one of ``futures`` is done."""
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class InProcess(Executor):
    """Runs each task at once, here: no processes to start (small studies, the dashboard)."""

    def submit(self, fn: Callable, *args: Any) -> cf.Future:
        future: cf.Future = cf.Future()
        try:
            future.set_result(fn(*args))
        except BaseException as exc:             # re-raised by result(), as a pool would
            future.set_exception(exc)
        return future

    def wait(self, futures: set) -> tuple[set, set]:
        return set(futures), set()


class LocalPool(Executor):
    """A pool of worker processes on this machine (forked where the platform allows, so they
    start warm with what this process has already loaded)."""

    def __init__(self, workers: int):
        self.workers = workers
        self.where = f"{workers} local processes"
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else None)
        self._pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=context,
                                            initializer=start_worker, initargs=(os.getpid(),))

    def submit(self, fn: Callable, *args: Any) -> cf.Future:
        return self._pool.submit(fn, *args)

    def wait(self, futures: set) -> tuple[set, set]:
        done, pending = cf.wait(futures, return_when=cf.FIRST_COMPLETED)
        return set(done), set(pending)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def start_worker(parent: int) -> None:
    """A worker's initialiser: it dies with its parent (``twin.cores.die_with_parent``), so no worker outlives
    its study, and splits nothing over the cores its pool already fills (``twin.cores.one_core``)."""
    one_core()
    die_with_parent(parent)


class DaskCluster(Executor):
    """An existing Dask distributed cluster, reached through its scheduler's address.

    Its workers must import the same version of twin (docs/studies.md, "Dask").
    """

    def __init__(self, address: str):
        try:
            from distributed import Client
        except ImportError:
            raise ScenarioError("--scheduler", "needs the dask[distributed] package (pip install "
                                "'dask[distributed]')") from None
        if not _ADDRESS.match(address.strip()):
            raise ScenarioError("--scheduler", f"'{address[:80]}' is not a scheduler address; write "
                                "tcp://HOST:PORT (e.g. tcp://10.0.0.5:8786)")
        try:
            self._client = Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise ScenarioError("--scheduler", f"cannot reach a Dask scheduler at '{address}': {exc}") from None
        threads = sum(w.get("nthreads", 1) for w in self._client.scheduler_info()["workers"].values())
        self.workers = max(1, threads)
        self.where = f"the Dask cluster at {address} ({self.workers} worker threads)"

    def submit(self, fn: Callable, *args: Any) -> Any:
        return self._client.submit(fn, *args, pure=False)

    def wait(self, futures: set) -> tuple[set, set]:
        from distributed import wait

        with self._client.as_current():
            done, pending = wait(list(futures), return_when="FIRST_COMPLETED")
        return set(done), set(pending)

    def close(self) -> None:
        self._client.close()


def executor(scheduler: str | None = None, workers: int | None = None, oversubscribe: bool = False) -> Executor:
    """A Dask cluster when ``scheduler`` names one, else ``workers`` local processes (default: the cores;
    more than the cores only when ``oversubscribe``, never more than ``MAX_LOCAL_WORKERS``)."""
    if scheduler:
        return DaskCluster(scheduler)
    cores = local_cores()
    count = cores if workers is None else workers
    high = MAX_LOCAL_WORKERS if oversubscribe else min(cores, MAX_LOCAL_WORKERS)
    if not 1 <= count <= high:
        more = "" if oversubscribe else f" (the cores here; --oversubscribe allows up to {MAX_LOCAL_WORKERS})"
        raise ScenarioError("--workers", f"{count:,} is not allowed: 1 to {high}{more}")
    return InProcess() if count == 1 else LocalPool(count)


def run_batches(pool: Executor, task: Callable[[list], tuple[list, float]], items: Iterable,
                target_s: float = TARGET_TASK_S) -> Iterator[list]:
    """Run ``task`` over batches of ``items``, yielding each batch's answers as it completes.

    ``task(batch)`` returns (answers, seconds of work). Batches grow from one item to about
    ``target_s`` of work at the speed measured so far.
    """
    source = iter(items)
    pending: set = set()
    done_items, done_s = 0, 0.0
    exhausted = False

    def next_batch() -> list:
        nonlocal exhausted
        size = 1 if done_items == 0 else max(1, min(MAX_BATCH_POINTS, round(target_s * done_items / max(done_s, 1e-9))))
        batch = []
        for item in source:
            batch.append(item)
            if len(batch) >= size:
                break
        else:
            exhausted = True
        return batch

    try:
        while True:
            while not exhausted and len(pending) < TASKS_PER_WORKER * pool.workers:
                batch = next_batch()
                if batch:
                    pending.add(pool.submit(task, batch))
            if not pending:
                return
            done, pending = pool.wait(pending)
            for future in done:
                answers, seconds = future.result()
                done_items += len(answers)
                done_s += seconds
                yield answers
    finally:
        for future in pending:
            future.cancel()
