"""Job traces: the twin's CSV format, and a converter from a public GPU-cluster trace.

The twin's trace (``jobs.trace``) is a CSV file with a header row; ``#`` starts a
comment line. Columns, in any order:

| column         | required | meaning                                                        |
|----------------|----------|----------------------------------------------------------------|
| ``submit_s``   | yes      | submit time, seconds from the start of the trace (≥ 0)         |
| ``gpus``       | yes      | GPUs the job asks for (whole number ≥ 1)                       |
| ``duration_s`` | yes      | run time alone on a packed placement, without failures (> 0)   |
| ``name``       | no       | job name (default: ``trace-<line>``)                           |
| ``tenant``     | no       | who pays (default: ``default``)                                |
| ``template``   | no       | a ``jobs.templates`` name (default: drawn from ``jobs.mix``)   |
| ``priority``   | no       | whole number ≥ 0 (default 0)                                   |
| ``time_limit_s`` | no     | seconds of run time before the job is killed (default: none)   |
| ``deferrable`` | no       | 1 when the carbon-aware policy may hold it (default 0)         |

``convert_helios`` reads SenseTime's Helios ``cluster_log.csv`` (Hu et al., SC '21,
github.com/S-Lab-System-Group/HeliosData: ``job_id, user, vc, gpu_num, cpu_num,
node_num, state, submit_time, start_time, end_time, duration, queue``) and writes
the twin's format: GPU jobs only (``gpu_num`` ≥ 1) that ran (``duration`` > 0);
submit times from the first one; the virtual cluster (``vc``) as the tenant; the
measured ``duration`` as the duration (Helios measured it on its own placement, with
its own failures: the twin replays it as the job's work).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from twin.errors import ScenarioError

COLUMNS = ("name", "tenant", "submit_s", "gpus", "duration_s", "template", "priority", "time_limit_s", "deferrable")
REQUIRED = ("submit_s", "gpus", "duration_s")
# Rows a trace may hold: a year of a busy cluster at ten submissions an hour is 87,600.
MAX_TRACE_ROWS = 100_000
HELIOS_COLUMNS = ("job_id", "vc", "gpu_num", "submit_time", "duration")


@dataclass(frozen=True)
class TraceRow:
    line: int
    name: str
    tenant: str
    submit_s: float
    gpus: int
    duration_s: float
    template: str | None
    priority: int
    time_limit_s: float
    deferrable: bool


def _lines(path: Path, field: str):
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            rows = [(n, line) for n, line in enumerate(handle.read().splitlines(), start=1)
                    if line.strip() and not line.lstrip().startswith("#")]
    except FileNotFoundError:
        raise ScenarioError(field, f"'{path}': no such file") from None
    except IsADirectoryError:
        raise ScenarioError(field, f"'{path}' is a directory, not a CSV file") from None
    except UnicodeDecodeError:
        raise ScenarioError(field, f"'{path}' is not UTF-8 text") from None
    except OSError as exc:
        raise ScenarioError(field, f"cannot read '{path}': {exc.strerror}") from None
    if not rows:
        raise ScenarioError(field, f"'{path}' holds no header row")
    numbers = [n for n, _ in rows]
    return numbers, list(csv.reader([line for _, line in rows]))


def _number(text: str, where: str, column: str, *, integer: bool = False, low: float = 0.0,
            above: bool = False) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    kind = "a whole number" if integer else "a number"
    if not math.isfinite(value) or (integer and value != int(value)):
        raise ScenarioError("jobs.trace", f"{where}, column {column}: {text!r} is not {kind}")
    if value < low or (above and value == low):
        raise ScenarioError("jobs.trace", f"{where}, column {column}: {text!r} is not allowed: "
                            f"{'above' if above else 'at least'} {low:g}")
    return value


def read_trace(path: str | Path) -> list[TraceRow]:
    """Rows of a trace in the twin's format; a bad cell is a ScenarioError naming its line and column."""
    path = Path(path)
    numbers, rows = _lines(path, "jobs.trace")
    header = [h.strip() for h in rows[0]]
    unknown = [h for h in header if h not in COLUMNS]
    if unknown:
        raise ScenarioError("jobs.trace", f"'{path}', line {numbers[0]}: unknown column {unknown[0]!r}; "
                            f"allowed: {', '.join(COLUMNS)}")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise ScenarioError("jobs.trace", f"'{path}', line {numbers[0]}: missing column {missing[0]!r} "
                            f"(required: {', '.join(REQUIRED)})")
    if len(rows) - 1 > MAX_TRACE_ROWS:
        raise ScenarioError("jobs.trace", f"'{path}' holds {len(rows) - 1:,} jobs; at most {MAX_TRACE_ROWS:,}")
    out = []
    for number, cells in zip(numbers[1:], rows[1:]):
        where = f"'{path}', line {number}"
        if len(cells) != len(header):
            raise ScenarioError("jobs.trace", f"{where}: {len(cells)} cells for {len(header)} columns")
        row = dict(zip(header, (c.strip() for c in cells)))
        deferrable = row.get("deferrable", "0") or "0"
        if deferrable not in ("0", "1"):
            raise ScenarioError("jobs.trace", f"{where}, column deferrable: {deferrable!r} is not 0 or 1")
        limit = row.get("time_limit_s") or ""
        out.append(TraceRow(
            line=number,
            name=row.get("name") or f"trace-{number}",
            tenant=row.get("tenant") or "default",
            submit_s=_number(row["submit_s"], where, "submit_s"),
            gpus=int(_number(row["gpus"], where, "gpus", integer=True, low=1)),
            duration_s=_number(row["duration_s"], where, "duration_s", above=True),
            template=row.get("template") or None,
            priority=int(_number(row.get("priority") or "0", where, "priority", integer=True)),
            time_limit_s=_number(limit, where, "time_limit_s", above=True) if limit else math.inf,
            deferrable=deferrable == "1",
        ))
    return out


def convert_helios(source: str | Path) -> tuple[str, int]:
    """Helios ``cluster_log.csv`` → (the twin's trace as CSV text, its number of jobs)."""
    source = Path(source)
    numbers, rows = _lines(source, "source")
    header = [h.strip() for h in rows[0]]
    missing = [c for c in HELIOS_COLUMNS if c not in header]
    if missing:
        raise ScenarioError("source", f"'{source}' is not a Helios cluster_log.csv: no column {missing[0]!r} "
                            f"(expected {', '.join(HELIOS_COLUMNS)})")
    jobs = []
    for number, cells in zip(numbers[1:], rows[1:]):
        row = dict(zip(header, (c.strip() for c in cells)))
        where = f"'{source}', line {number}"
        try:
            submit = datetime.strptime(row["submit_time"], "%Y-%m-%d %H:%M:%S")
        except ValueError:
            raise ScenarioError("source", f"{where}, column submit_time: {row['submit_time']!r} is not "
                                "YYYY-MM-DD HH:MM:SS") from None
        gpus = _number(row["gpu_num"], where, "gpu_num", integer=True)
        duration = _number(row["duration"] or "0", where, "duration")
        if gpus >= 1 and duration > 0:
            jobs.append((submit, row["job_id"], row["vc"], int(gpus), duration))
    if not jobs:
        raise ScenarioError("source", f"'{source}' holds no GPU job that ran")
    jobs.sort(key=lambda j: (j[0], j[1]))
    first = jobs[0][0]
    lines = ["name,tenant,submit_s,gpus,duration_s"]
    lines += [f"{job_id},{vc},{(submit - first).total_seconds():.0f},{gpus},{duration:.0f}"
              for submit, job_id, vc, gpus, duration in jobs]
    return "\n".join(lines) + "\n", len(jobs)
