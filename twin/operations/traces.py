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
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from twin.errors import ScenarioError

COLUMNS = ("name", "tenant", "submit_s", "gpus", "duration_s", "template", "priority", "time_limit_s", "deferrable")
REQUIRED = ("submit_s", "gpus", "duration_s")
# Rows a trace may hold: a year of a busy cluster at ten submissions an hour is 87,600.
MAX_TRACE_ROWS = 100_000
# Bytes a trace file may hold: 100,000 rows of a few hundred characters, with room for comments.
MAX_TRACE_BYTES = 64 << 20
# Characters in one line of a trace or a source (a row of the twin's format is under 200; Helios's under 150).
MAX_LINE_CHARS = 4096
# A Helios source: its four clusters logged 3.36 million jobs in six months (Hu et al., SC '21, section 2);
# one cluster_log.csv is a few hundred MB.
MAX_SOURCE_ROWS = 4_000_000
MAX_SOURCE_BYTES = 1 << 30
# Limits of a row, as the scenario's own jobs.list (docs/scenario.md, "Limits"): a century of time,
# every GPU of the largest cluster (32,768 nodes of 8), a relative priority of at most a million.
MAX_TIME_S = 36500 * 86400.0
MAX_GPUS = 262_144
MAX_PRIORITY = 1_000_000
# Characters of a name, a tenant or a template (as jobs.list[].name).
MAX_NAME_CHARS = 80
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


def _regular(path: Path, field: str, max_bytes: int) -> None:
    """A regular file of at most ``max_bytes``, checked before it is opened (a FIFO or a device would block
    or never end)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ScenarioError(field, f"'{path}': no such file") from None
    except OSError as exc:
        raise ScenarioError(field, f"cannot read '{path}': {exc.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise ScenarioError(field, f"'{path}' is a directory, not a CSV file")
    if not stat.S_ISREG(info.st_mode):
        raise ScenarioError(field, f"'{path}' is not a regular file (a device, a pipe or a socket); "
                            "write the trace to a file first")
    if info.st_size > max_bytes:
        raise ScenarioError(field, f"'{path}' holds {info.st_size:,} bytes; at most {max_bytes:,}")


def _records(path: Path, field: str, max_rows: int, max_bytes: int) -> Iterator[tuple[int, list[str]]]:
    """(line number, cells) of every row that is not blank or a comment, the header first; streamed
    line by line, so memory stays bounded whatever the file holds."""
    _regular(path, field, max_bytes)
    rows = read = 0
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            for number, line in enumerate(iter(lambda: handle.readline(MAX_LINE_CHARS + 1), ""), start=1):
                read += len(line)
                if len(line) > MAX_LINE_CHARS:
                    raise ScenarioError(field, f"'{path}', line {number}: longer than {MAX_LINE_CHARS:,} characters")
                if read > max_bytes:
                    raise ScenarioError(field, f"'{path}' holds more than {max_bytes:,} bytes")
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                rows += 1
                if rows > max_rows + 1:
                    raise ScenarioError(field, f"'{path}' holds more than {max_rows:,} jobs; at most {max_rows:,}")
                yield number, _cells(line, path, field, number)
    except UnicodeDecodeError:
        raise ScenarioError(field, f"'{path}' is not UTF-8 text") from None
    except OSError as exc:
        raise ScenarioError(field, f"cannot read '{path}': {exc.strerror}") from None
    if rows == 0:
        raise ScenarioError(field, f"'{path}' holds no header row")


def _cells(line: str, path: Path, field: str, number: int) -> list[str]:
    try:
        return [c.strip() for c in next(csv.reader([line.rstrip("\r\n")]), [])]
    except csv.Error as exc:
        raise ScenarioError(field, f"'{path}', line {number}: not a CSV row ({exc})") from None


def _number(text: str, where: str, column: str, *, integer: bool = False, low: float = 0.0,
            above: bool = False, high: float = math.inf, field: str = "jobs.trace") -> float:
    try:
        value = float(text) if len(text) <= 64 else math.nan
    except ValueError:
        value = math.nan
    kind = "a whole number" if integer else "a number"
    if not math.isfinite(value) or (integer and value != int(value)):
        raise ScenarioError(field, f"{where}, column {column}: {text[:64]!r} is not {kind}")
    if value < low or (above and value == low) or value > high:
        most = "a century" if high == MAX_TIME_S else f"{high:,.0f}"
        raise ScenarioError(field, f"{where}, column {column}: {text[:64]!r} is not allowed: "
                            f"{'above' if above else 'at least'} {low:g} and at most {most}")
    return value


def _header(path: Path, number: int, cells: list[str]) -> list[str]:
    """The columns of a trace in the twin's format: known ones only, the required ones present."""
    unknown = [h for h in cells if h not in COLUMNS]
    if unknown:
        raise ScenarioError("jobs.trace", f"'{path}', line {number}: unknown column {unknown[0][:40]!r}; "
                            f"allowed: {', '.join(COLUMNS)}")
    missing = [c for c in REQUIRED if c not in cells]
    if missing:
        raise ScenarioError("jobs.trace", f"'{path}', line {number}: missing column {missing[0]!r} "
                            f"(required: {', '.join(REQUIRED)})")
    return cells


def _row(header: list[str], cells: list[str], where: str, field: str) -> dict[str, str]:
    if len(cells) != len(header):
        raise ScenarioError(field, f"{where}: {len(cells)} cells for {len(header)} columns")
    return dict(zip(header, cells))


def read_trace(path: str | Path) -> list[TraceRow]:
    """Rows of a trace in the twin's format; a bad cell is a ScenarioError naming its line and column."""
    path = Path(path)
    records = _records(path, "jobs.trace", MAX_TRACE_ROWS, MAX_TRACE_BYTES)
    number, cells = next(records)
    header = _header(path, number, cells)
    return [_trace_row(_row(header, cells, f"'{path}', line {number}", "jobs.trace"), number, f"'{path}', line {number}")
            for number, cells in records]


def _trace_row(row: dict[str, str], number: int, where: str) -> TraceRow:
    deferrable = row.get("deferrable", "0") or "0"
    if deferrable not in ("0", "1"):
        raise ScenarioError("jobs.trace", f"{where}, column deferrable: {deferrable[:40]!r} is not 0 or 1")
    limit = row.get("time_limit_s") or ""
    for column in ("name", "tenant", "template"):
        if len(row.get(column) or "") > MAX_NAME_CHARS:
            raise ScenarioError("jobs.trace", f"{where}, column {column}: longer than {MAX_NAME_CHARS} characters")
    return TraceRow(
        line=number,
        name=row.get("name") or f"trace-{number}",
        tenant=row.get("tenant") or "default",
        submit_s=_number(row["submit_s"], where, "submit_s", high=MAX_TIME_S),
        gpus=int(_number(row["gpus"], where, "gpus", integer=True, low=1, high=MAX_GPUS)),
        duration_s=_number(row["duration_s"], where, "duration_s", above=True, high=MAX_TIME_S),
        template=row.get("template") or None,
        priority=int(_number(row.get("priority") or "0", where, "priority", integer=True, high=MAX_PRIORITY)),
        time_limit_s=_number(limit, where, "time_limit_s", above=True, high=MAX_TIME_S) if limit else math.inf,
        deferrable=deferrable == "1",
    )


def convert_helios(source: str | Path) -> tuple[str, int]:
    """Helios ``cluster_log.csv`` → (the twin's trace as CSV text, its number of jobs)."""
    source = Path(source)
    records = _records(source, "source", MAX_SOURCE_ROWS, MAX_SOURCE_BYTES)
    number, cells = next(records)
    missing = [c for c in HELIOS_COLUMNS if c not in cells]
    if missing:
        raise ScenarioError("source", f"'{source}' is not a Helios cluster_log.csv: no column {missing[0]!r} "
                            f"(expected {', '.join(HELIOS_COLUMNS)})")
    header = cells
    jobs = [job for number, cells in records
            if (job := _helios_job(_row(header, cells, f"'{source}', line {number}", "source"),
                                   f"'{source}', line {number}")) is not None]
    if not jobs:
        raise ScenarioError("source", f"'{source}' holds no GPU job that ran")
    jobs.sort(key=lambda j: (j[0], j[1]))
    first = jobs[0][0]
    lines = ["name,tenant,submit_s,gpus,duration_s"]
    lines += [f"{job_id},{vc},{(submit - first).total_seconds():.0f},{gpus},{duration:.0f}"
              for submit, job_id, vc, gpus, duration in jobs]
    return "\n".join(lines) + "\n", len(jobs)


def _helios_job(row: dict[str, str], where: str) -> tuple[datetime, str, str, int, float] | None:
    """(submit time, job id, virtual cluster, GPUs, duration) of a Helios row, or None for a job that used
    no GPU or did not run."""
    try:
        submit = datetime.strptime(row["submit_time"], "%Y-%m-%d %H:%M:%S")
    except ValueError:
        raise ScenarioError("source", f"{where}, column submit_time: {row['submit_time'][:40]!r} is not "
                            "YYYY-MM-DD HH:MM:SS") from None
    gpus = _number(row["gpu_num"], where, "gpu_num", integer=True, high=MAX_GPUS, field="source")
    duration = _number(row["duration"] or "0", where, "duration", high=MAX_TIME_S, field="source")
    for column in ("job_id", "vc"):
        if len(row[column]) > MAX_NAME_CHARS or any(c in row[column] for c in ',"\n'):
            raise ScenarioError("source", f"{where}, column {column}: {row[column][:40]!r} is not allowed: "
                                f"at most {MAX_NAME_CHARS} characters, no comma or quote")
    return (submit, row["job_id"], row["vc"], int(gpus), duration) if gpus >= 1 and duration > 0 else None
