"""A study on disk: ``results.parquet`` (one row per point), ``results.csv`` (the same table) and ``study.yaml``.

Rows hold the point's index, the varied keys, the hash of the point's scenario, its
error (or null) and the flat result fields (``Result.to_flat``). Each column has one
type: booleans, integers or floats when every value is one, else text (lists and
mappings as YAML flow text). Files are written whole or not at all (a temporary file
renamed into place), so an interrupted study leaves the last complete table, and a
resumed one skips the points whose scenario hash is already there.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import yaml

from twin.errors import ScenarioError
from twin.outputs import replace_atomic, write_atomic

RESULTS = "results.parquet"
TABLE = "results.csv"
STUDY = "study.yaml"
# Columns every row has, before the varied keys and the result fields.
INDEX, HASH, ERROR = "point", "scenario_hash", "error"
# The last column: whether the row is on the study's Pareto front (``sweep``).
FRONT = "pareto_front"
# Held (flock) by the study writing the directory; it names the holder. The kernel releases it when the
# holder ends, however it ends, so a killed study never leaves the directory locked.
LOCK = ".study.lock"
# Seconds a study waits for the holder of a directory to write who it is (it writes it right after locking).
HOLDER_WAIT_S = 2.0


def scenario_hash(data: dict[str, Any]) -> str:
    """SHA-256 of a scenario's data as canonical JSON (sorted keys): the key that resumes a study."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _column(values: list[Any]) -> pa.Array:
    """One typed column: bool, int64 or float64 when every value allows it, else text."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return pa.array(values, type=pa.bool_())
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        if all(isinstance(v, int) for v in present) and all(abs(v) < 2**63 for v in present):
            return pa.array(values, type=pa.int64())
        return pa.array([None if v is None else float(v) for v in values], type=pa.float64())
    return pa.array([None if v is None else _text(v) for v in values], type=pa.string())


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (list, dict)):
        return yaml.safe_dump(value, default_flow_style=True, width=10**9).strip()
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def table(rows: list[dict[str, Any]], first: list[str]) -> pa.Table:
    """Rows as a typed table: ``first`` columns in order, then every other column in first-seen order."""
    names = list(first)
    seen = set(names)
    for row in rows:
        for key in row:
            if key not in seen:
                seen.add(key)
                names.append(key)
    return pa.table({name: _column([row.get(name) for row in rows]) for name in names})


def _common_type(types: list[pa.DataType]) -> pa.DataType:
    """The type a column takes across chunks: as ``_column`` decides for values."""
    known = {t for t in types if t != pa.null()}
    if not known:
        return pa.null()
    if len(known) == 1:
        return known.pop()
    if known <= {pa.int64(), pa.float64()}:
        return pa.float64()
    return pa.string()


def combine(tables: list[pa.Table], first: list[str], order: list[str] = ()) -> pa.Table:
    """Chunks of rows as one table sorted by point index, each column of one type (a column that is text
    in one chunk and a number in another becomes text). Columns: ``first``, then ``order``, then the
    others by name, so that the table does not depend on the order the chunks came in."""
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return table([], first)
    present = {n for t in tables for n in t.column_names}
    names = list(dict.fromkeys([*first, *(n for n in order if n in present), *sorted(present)]))
    types = {n: _common_type([t.schema.field(n).type for t in tables if n in t.column_names]) for n in names}
    parts = []
    for t in tables:
        columns = [t.column(n).cast(types[n]) if n in t.column_names else pa.nulls(t.num_rows, types[n])
                   for n in names]
        parts.append(pa.table(columns, names=names))
    whole = pa.concat_tables(parts)
    return whole.sort_by(INDEX) if INDEX in names else whole


def read_table(directory: Path) -> pa.Table | None:
    """The results of an earlier run of a study in ``directory`` (None when it holds none)."""
    path = directory / RESULTS
    if not path.exists():
        return None
    try:
        earlier = pq.read_table(path)
    except (OSError, pa.ArrowException):
        raise ScenarioError("--out", f"'{path}' is not a study's Parquet table; remove it or write into another "
                            "directory") from None
    if HASH not in earlier.column_names:
        raise ScenarioError("--out", f"'{path}' has no {HASH} column: not a study's table; write into another "
                            "directory")
    return earlier


def write_results(directory: Path, data: pa.Table, csv: bool = True) -> None:
    """``results.parquet`` (and ``results.csv``) from a combined table."""
    replace_atomic(directory / RESULTS, lambda tmp: pq.write_table(data, tmp))
    if csv:
        replace_atomic(directory / TABLE, lambda tmp: pa_csv.write_csv(data, tmp))


def write_study(directory: Path, study: dict[str, Any]) -> None:
    """``study.yaml``: what was run (scenario, varied keys, mode, counts, engine, version)."""
    write_atomic(directory / STUDY, yaml.safe_dump(study, sort_keys=False, allow_unicode=True, width=100))


def read_study(directory: Path) -> dict[str, Any]:
    path = directory / STUDY
    return yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else {}


@contextlib.contextmanager
def locked(directory: Path, study: dict[str, Any]) -> Iterator[None]:
    """Hold ``directory`` for one study while it writes: another study is refused in one line naming the
    holder; the same study (same scenario, keys, values and mode) waits for it, then resumes from its rows.
    A directory that already holds the study of another scenario is refused too: it is never overwritten."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise ScenarioError("--out", f"cannot hold '{directory}' for this study: {exc.strerror}") from None
    try:
        _acquire(fd, directory, study)
        _check_owner(directory, study)
        record = json.dumps({"study": _identity(study), "pid": os.getpid(), "what": _what(study)}).encode()
        os.pwrite(fd, record, 0)                   # written, then cut to length: never an empty record
        os.ftruncate(fd, len(record))
        clean_temporary(directory)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)                    # no holder any more (a killed one leaves a dead pid)
    finally:
        os.close(fd)                               # releases the lock


def _acquire(fd: int, directory: Path, study: dict[str, Any]) -> None:
    """Take the lock; when another holds it, wait if it runs the same study, else refuse naming it. A holder
    that has not yet written its record (or an earlier holder's record) is read again for up to
    ``HOLDER_WAIT_S``."""
    deadline = time.monotonic() + HOLDER_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            holder = _holder(fd)
        if holder.get("study") == _identity(study):
            fcntl.flock(fd, fcntl.LOCK_EX)         # the same study: wait for it, then reuse its rows
            return
        if _alive(holder.get("pid")) or time.monotonic() > deadline:
            raise ScenarioError("--out", f"'{directory}' is being written by another study (process "
                                f"{holder.get('pid', '?')}: {holder.get('what', 'unknown')}); write this one "
                                "into another directory")
        time.sleep(0.02)


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _identity(study: dict[str, Any]) -> str:
    return scenario_hash({k: study.get(k) for k in ("scenario_sha256", "mode", "vary")})


def _what(study: dict[str, Any]) -> str:
    return f"{study.get('scenario')} with {' '.join('--vary ' + v for v in study.get('vary', []))}"[:200]


def _holder(fd: int) -> dict[str, Any]:
    try:
        return json.loads(os.pread(fd, 4096, 0).decode("utf-8") or "{}")
    except (ValueError, OSError):
        return {}


def _check_owner(directory: Path, study: dict[str, Any]) -> None:
    """A directory written by a study of another scenario is not reused: its rows would be lost."""
    try:
        earlier = read_study(directory)
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        raise ScenarioError("--out", f"'{directory / STUDY}' is not a study file; write into another directory") \
            from None
    if isinstance(earlier, dict) and earlier.get("scenario_sha256") not in (None, study["scenario_sha256"]):
        raise ScenarioError("--out", f"'{directory}' holds the study of another scenario ({earlier.get('scenario')}, "
                            f"{earlier.get('rows', '?')} rows); write this one into another directory")


def clean_temporary(directory: Path) -> list[Path]:
    """Remove the temporary files a killed writer left (``.results.csv.*.tmp``); the caller holds the lock."""
    stale = [p for name in (RESULTS, TABLE, STUDY) for p in directory.glob(f".{name}.*.tmp")]
    for path in stale:
        path.unlink(missing_ok=True)
    return stale
