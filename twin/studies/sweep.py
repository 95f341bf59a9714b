"""``python -m twin sweep``: every point of a study, each a whole scenario, answered by ``twin.api.simulate``.

A point is the base scenario with the varied keys replaced. It is validated as a file
would be and run like ``twin run`` (training, fine-tuning or serving alike); bad input
makes an error row holding the one-line message instead of stopping the study. Rows go
to the study directory as they come (``store``), so an interrupted study resumes where
it stopped: a point whose scenario hash is already there is not run again.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

from twin import __version__
from twin.api import parse_scenario, simulate, with_overrides
from twin.errors import ScenarioError
from twin.results import SweepReport
from twin.studies import store
from twin.studies.executor import Executor, InProcess, run_batches
from twin.studies.progress import Progress
from twin.studies.search import pareto_front, sweep_objectives
from twin.studies.space import Space

# Results are written to the study directory at least this often while a study runs.
SAVE_EVERY_S = 30.0


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


def sweep(base: dict[str, Any], source: str, space: Space, directory: Path | None = None,
          pool: Executor | None = None, closed_form: bool = False, progress: Progress | None = None,
          csv: bool = True) -> SweepReport:
    """Run every point of ``space`` on ``base`` (raw scenario data from ``source``), skipping those
    already in ``directory``; write the directory's files as rows come and at the end."""
    pool = pool or InProcess()
    points = list(space.points())
    first = [store.INDEX, *space.keys, store.HASH, store.ERROR]
    known = {row[store.HASH]: row for row in store.read_rows(directory)} if directory else {}
    rows: dict[int, dict[str, Any]] = {}
    todo = []
    for point in points:
        data_hash = store.scenario_hash(with_overrides(base, point.values))
        earlier = known.get(data_hash)
        if earlier is not None:
            rows[point.index] = {**earlier, store.INDEX: point.index, **point.values}
        else:
            todo.append((point.index, point.values))
    reused = len(rows)
    used = {row[store.HASH] for row in rows.values()}
    dropped = sum(1 for h in known if h not in used)
    study = {
        "scenario": source,
        "scenario_name": base.get("name", "unnamed scenario") if isinstance(base, dict) else "",
        "scenario_sha256": store.scenario_hash(base),
        "mode": space.mode,
        "vary": [a.text for a in space.axes],
        "keys": space.keys,
        "points": len(points),
        "engine": "closed-form step" if closed_form else "SimPy step",
        "twin_version": __version__,
        "files": {"results": store.RESULTS, "table": store.TABLE if csv else None},
    }
    progress = progress or Progress(len(todo), enabled=False)
    task = functools.partial(evaluate_points, base, source, closed_form)
    start = saved = time.perf_counter()
    try:
        for answers in run_batches(pool, task, todo):
            for row in answers:
                rows[row[store.INDEX]] = row
            progress.advance(len(answers))
            if directory is not None and time.perf_counter() - saved >= SAVE_EVERY_S:
                store.write_results(directory, rows.values(), first, csv=False)
                saved = time.perf_counter()
    finally:
        progress.close()
        seconds = time.perf_counter() - start
        if directory is not None and rows:
            _finish(directory, rows, first, study, csv)
    ordered = [rows[i] for i in sorted(rows)]
    errors = sum(1 for r in ordered if r[store.ERROR] is not None)
    objectives = sweep_objectives(ordered)
    return SweepReport(ordered, len(todo), reused, dropped, errors, seconds, pool.where, study,
                       pareto_front(ordered, objectives), objectives, str(directory) if directory else None)


def _finish(directory: Path, rows: dict[int, dict[str, Any]], first: list[str], study: dict[str, Any],
            csv: bool) -> None:
    done = [rows[i] for i in sorted(rows)]
    study = {**study, "rows": len(done), "errors": sum(1 for r in done if r[store.ERROR] is not None)}
    store.write_results(directory, done, first, csv)
    store.write_study(directory, study)
