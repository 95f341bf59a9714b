"""``python -m twin sweep``: every point of a study, each a whole scenario, answered by ``twin.api.simulate``.

A point is the base scenario with the varied keys replaced. It is validated as a file
would be and run like ``twin run`` (training, fine-tuning or serving alike); bad input
makes an error row holding the one-line message instead of stopping the study. Rows are
gathered into typed chunks as they come and written to the study directory at least every
``SAVE_EVERY_S`` (``store``), so an interrupted study resumes where it stopped: a point
whose scenario hash is already there is not run again.
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa

from twin import __version__
from twin.api import parse_scenario, simulate, with_overrides
from twin.errors import ScenarioError
from twin.studies.records import SweepReport
from twin.studies import store
from twin.studies.executor import Executor, InProcess, run_batches
from twin.studies.progress import Progress
from twin.studies.search import pareto_front, sweep_objectives
from twin.studies.space import Space

# Results are written to the study directory at least this often while a study runs.
SAVE_EVERY_S = 30.0
# Rows kept as Python mappings before they join the typed table (bounds memory on big studies).
CHUNK_ROWS = 2000


def evaluate_points(base: dict[str, Any], source: str, closed_form: bool,
                    batch: list[tuple[int, dict[str, Any]]]) -> tuple[list[dict[str, Any]], float]:
    """Rows of a batch of points and the seconds they took (an executor task)."""
    start = time.perf_counter()
    rows = [point_row(base, source, closed_form, index, values) for index, values in batch]
    return rows, time.perf_counter() - start


def point_row(base: dict[str, Any], source: str, closed_form: bool, index: int,
              values: dict[str, Any]) -> dict[str, Any]:
    """One point's row: index, varied values, scenario hash, error or the flat result fields."""
    data = with_overrides(base, values)
    row: dict[str, Any] = {store.INDEX: index, **values, store.HASH: store.scenario_hash(data), store.ERROR: None}
    try:
        result = simulate(parse_scenario(data, f"{source} point {index}"), closed_form)
    except ScenarioError as exc:
        row[store.ERROR] = str(exc)
        return row
    flat = result.to_flat()
    for key, value in site_fields(flat).items():
        row.setdefault(key, value)
    for key, value in flat.items():
        row.setdefault(key, value)          # a varied key keeps its column (failures.seed is both)
    return row


def site_fields(flat: dict[str, Any]) -> dict[str, Any]:
    """The site's own figures out of a row's per-country fields: ``carbon_kg.FR`` → ``site_carbon_kg``
    when the site is in France, whichever country each point runs in."""
    suffix = f".{flat.get('country')}"
    return {f"site_{key[:-len(suffix)]}": value for key, value in flat.items() if key.endswith(suffix)}


class _Rows:
    """The rows of a study as they come: typed chunks, with counts of errors by message. The columns
    follow the fields of the first point that ran (whichever arrives first), then the others by name."""

    def __init__(self, first: list[str]):
        self.first = first
        self.chunks: list = []
        self.buffer: list[dict[str, Any]] = []
        self.count = 0
        self.errors: Counter = Counter()
        self.model: tuple[int, list[str]] | None = None     # (point, its fields) of the first point that ran

    def add(self, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            if row[store.ERROR] is not None:
                self.errors[row[store.ERROR]] += 1
            elif self.model is None or row[store.INDEX] < self.model[0]:
                self.model = (row[store.INDEX], [k for k, v in row.items() if v is not None])
        self.count += len(rows)
        self.buffer += rows
        if len(self.buffer) >= CHUNK_ROWS:
            self.chunks.append(store.table(self.buffer, self.first))
            self.buffer = []

    def table(self):
        if self.buffer:
            self.chunks.append(store.table(self.buffer, self.first))
            self.buffer = []
        whole = store.combine(self.chunks, self.first, self.model[1] if self.model else [])
        self.chunks = [whole]
        return whole


def sweep(base: dict[str, Any], source: str, space: Space, directory: Path | None = None,
          pool: Executor | None = None, closed_form: bool = False, progress: Progress | None = None,
          csv: bool = True) -> SweepReport:
    """Run every point of ``space`` on ``base`` (raw scenario data from ``source``), skipping those
    already in ``directory``; write the directory's files as rows come and at the end. The directory
    is held for this study while it runs (``store.locked``)."""
    study = _study(base, source, space, closed_form, csv)
    if directory is None:
        return _run(base, source, space, None, pool or InProcess(), closed_form, progress, csv, study)
    with store.locked(directory, study):
        return _run(base, source, space, directory, pool or InProcess(), closed_form, progress, csv, study)


def _study(base: dict[str, Any], source: str, space: Space, closed_form: bool, csv: bool) -> dict[str, Any]:
    """What ``study.yaml`` says of a study, before its counts."""
    return {
        "scenario": source,
        "scenario_name": base.get("name", "unnamed scenario"),
        "scenario_sha256": store.scenario_hash(base),
        "mode": space.mode,
        "vary": [a.text for a in space.axes],
        "keys": space.keys,
        "points": len(space),
        "engine": "closed-form step" if closed_form else "SimPy step",
        "twin_version": __version__,
        "files": {"results": store.RESULTS, "table": store.TABLE if csv else None},
    }


def _reused(base: dict[str, Any], space: Space, directory: Path | None, rows: _Rows) -> tuple[list, int, int]:
    """(points still to run, points reused from the directory's earlier rows, earlier rows dropped)."""
    earlier = store.read_table(directory) if directory else None
    if earlier is not None and store.FRONT in earlier.column_names:   # recomputed over the new study
        earlier = earlier.drop_columns([store.FRONT])
    known = {} if earlier is None else {h: i for i, h in enumerate(earlier.column(store.HASH).to_pylist())}
    todo, reuse = [], []
    for point in space.points():
        position = known.get(store.scenario_hash(with_overrides(base, point.values)))
        if position is None:
            todo.append((point.index, point.values))
        else:
            reuse.append((position, point))
    for start in range(0, len(reuse), CHUNK_ROWS):
        part = reuse[start:start + CHUNK_ROWS]
        found = earlier.take([position for position, _ in part]).to_pylist()
        rows.add([{**row, store.INDEX: point.index, **point.values} for row, (_, point) in zip(found, part)])
    return todo, len(reuse), len(known) - len({position for position, _ in reuse})


def _run(base: dict[str, Any], source: str, space: Space, directory: Path | None, pool: Executor,
         closed_form: bool, progress: Progress | None, csv: bool, study: dict[str, Any]) -> SweepReport:
    rows = _Rows([store.INDEX, *space.keys, store.HASH, store.ERROR])
    todo, reused, dropped = _reused(base, space, directory, rows)
    progress = progress or Progress(len(todo), enabled=False)
    progress.total = len(todo)
    task = functools.partial(evaluate_points, base, source, closed_form)
    start = saved = time.perf_counter()
    try:
        for answers in run_batches(pool, task, todo):
            rows.add(answers)
            progress.advance(len(answers))
            if directory is not None and time.perf_counter() - saved >= SAVE_EVERY_S:
                store.write_results(directory, rows.table(), csv=False)
                saved = time.perf_counter()
    finally:
        progress.close()
        seconds = time.perf_counter() - start
        data, front, objectives = _finish(rows, space, directory, csv, study)
    return SweepReport(points=data.num_rows, ran=len(todo), reused=reused, dropped=dropped,
                       errors=sum(rows.errors.values()), error_messages=dict(rows.errors.most_common()),
                       seconds=seconds, where=pool.where, study=study, front=front, objectives=objectives,
                       directory=str(directory) if directory else None, table=data)


def _finish(rows: _Rows, space: Space, directory: Path | None, csv: bool, study: dict[str, Any]):
    """The whole table with its Pareto column, written to the directory: (table, front, objectives)."""
    data = rows.table()
    objectives = sweep_objectives(data)
    wanted = [c for c in [store.INDEX, *space.keys, *objectives] if c in data.column_names]
    front = pareto_front(data.select(wanted).to_pylist(), objectives)
    on_front = {row[store.INDEX] for row in front}
    data = data.append_column(store.FRONT, pa.array([i in on_front for i in data.column(store.INDEX).to_pylist()],
                                                    pa.bool_()))
    if directory is not None and data.num_rows:
        store.write_results(directory, data, csv)
        store.write_study(directory, {**study, "rows": data.num_rows, "errors": sum(rows.errors.values()),
                                      "objectives": list(objectives), "front": len(front)})
    return data, front, objectives
