"""Slurm job accounting: ``sacct --parsable2 --allocations --format=JobID,JobName,State,ExitCode,Elapsed,
Submit,Start,End,NNodes,AllocTRES`` (``|``-separated, a header line first).

Fields read: ``JobID``, ``State`` (``NODE_FAIL``, ``FAILED``, ``TIMEOUT``, ``OUT_OF_MEMORY``, ``COMPLETED``,
``CANCELLED by N``...), ``Elapsed`` (``[D-]HH:MM:SS``) or ``ElapsedRaw`` (s), ``NNodes`` and the GPUs of
``AllocTRES`` (``gres/gpu=8``) or ``AllocGRES``; ``Submit`` and ``Start`` give the queue wait when present.
Job steps (``123.batch``, ``123.0``) are skipped: the allocation counts once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from twin.calibrate.logs import LogError, number

# Job states that end a job on a failure, by what failed (Slurm's sacct(1) JOB STATE CODES).
FAILURE_CAUSES = {"NODE_FAIL": "node", "FAILED": "job", "OUT_OF_MEMORY": "memory", "BOOT_FAIL": "node"}
STATES = ("COMPLETED", "FAILED", "NODE_FAIL", "TIMEOUT", "CANCELLED", "OUT_OF_MEMORY", "PREEMPTED", "RUNNING",
          "PENDING", "BOOT_FAIL", "DEADLINE", "REQUEUED", "SUSPENDED", "REVOKED", "RESIZING")
_GPUS = re.compile(r"gres/gpu(?::[^=,]+)?=(\d+)|gpu(?::[^:,(]+)?:(\d+)")


@dataclass(frozen=True)
class JobRecord:
    job_id: str
    state: str
    elapsed_s: float
    nodes: int
    gpus: int
    wait_s: float | None


@dataclass(frozen=True)
class Accounting:
    path: str
    jobs: tuple[JobRecord, ...]

    def gpu_hours(self) -> float:
        return sum(j.gpus * j.elapsed_s for j in self.jobs) / 3600.0

    def node_hours(self) -> float:
        return sum(j.nodes * j.elapsed_s for j in self.jobs) / 3600.0

    def failures(self) -> dict[str, int]:
        """Jobs ended by a failure, by cause (node, job, memory)."""
        out: dict[str, int] = {}
        for j in self.jobs:
            cause = FAILURE_CAUSES.get(j.state)
            if cause:
                out[cause] = out.get(cause, 0) + 1
        return out


def looks_like(text: str) -> bool:
    first = text.split("\n", 1)[0]
    return "|" in first and "JobID" in first and "State" in first


def elapsed_s(text: str, path: Path, line: int) -> float:
    """Slurm's ``[D-]HH:MM:SS`` (or ``MM:SS.mmm``) in seconds."""
    m = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)", text.strip())
    if not m:
        raise LogError(path, line, f"Elapsed {text!r} is not [D-]HH:MM:SS")
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in m.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def _time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        return None          # Unknown, None (a job that never started)


def _gpus(row: dict[str, str]) -> int:
    for key in ("AllocTRES", "AllocGRES", "ReqTRES"):
        m = _GPUS.search(row.get(key, ""))
        if m:
            return int(m.group(1) or m.group(2))
    return 0


def parse(path: str | Path, text: str) -> Accounting:
    path = Path(path)
    lines = text.splitlines()
    header = lines[0].split("|") if lines else []
    missing = [f for f in ("JobID", "State", "NNodes") if f not in header]
    if missing or not ({"Elapsed", "ElapsedRaw"} & set(header)):
        raise LogError(path, 1, f"an sacct --parsable2 header needs JobID, State, Elapsed and NNodes "
                                f"(missing: {', '.join(missing) or 'Elapsed'})")
    jobs = []
    for n, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) != len(header):
            raise LogError(path, n, f"{len(fields)} fields under a header of {len(header)} (truncated, or not "
                                    "--parsable2?)")
        row = dict(zip(header, fields))
        if "." in row["JobID"]:
            continue
        state = row["State"].split(" ")[0].rstrip("+")
        if state not in STATES:
            raise LogError(path, n, f"State {row['State']!r} is not a Slurm job state")
        elapsed = (number(row["ElapsedRaw"], path, n, "ElapsedRaw") if "ElapsedRaw" in row
                   else elapsed_s(row["Elapsed"], path, n))
        submit, start = _time(row.get("Submit", "")), _time(row.get("Start", ""))
        wait = (start - submit).total_seconds() if submit and start and start >= submit else None
        jobs.append(JobRecord(row["JobID"], state, elapsed, int(number(row["NNodes"], path, n, "NNodes")),
                              _gpus(row), wait))
    if not jobs:
        raise LogError(path, len(lines), "no job allocation in the accounting (only a header, or only steps)")
    return Accounting(str(path), tuple(jobs))
