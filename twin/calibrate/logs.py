"""What every reader shares: bounded reading of a log file and the one-line error naming file and line."""

from __future__ import annotations

import math
from pathlib import Path

from twin.errors import ScenarioError

# A log the twin reads is at most this large (nccl-tests, sacct and DCGM dumps of a busy week are a few MB).
MAX_LOG_BYTES = 64 << 20
# Files in a calibration folder read at most (a folder of a site's logs, not a file system).
MAX_FILES = 2000


class LogError(ScenarioError):
    """A log the twin cannot read: names the file and line."""

    def __init__(self, path: str | Path, line: int | None, message: str):
        super().__init__(f"{path}:{line}" if line else str(path), message)


def read_log(path: str | Path) -> str:
    """The UTF-8 text of a log file, at most ``MAX_LOG_BYTES``; anything else is a LogError."""
    p = Path(path)
    try:
        if not p.is_file():
            raise LogError(p, None, "is not a file")
        with p.open("rb") as handle:
            raw = handle.read(MAX_LOG_BYTES + 1)
    except OSError as exc:
        raise LogError(p, None, f"cannot be read: {exc.strerror}") from None
    if len(raw) > MAX_LOG_BYTES:
        raise LogError(p, None, f"is larger than {MAX_LOG_BYTES >> 20} MiB; split it or keep the part to calibrate on")
    if b"\x00" in raw[:4096]:
        raise LogError(p, 1, "is a binary file, not a log the twin reads (docs/calibrate.md lists the formats)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise LogError(p, line, "is not UTF-8 text") from None


def number(text: str, path: str | Path, line: int, what: str, low: float = 0.0) -> float:
    """A finite number >= ``low`` from a log field (thousands separators allowed), else a LogError."""
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        raise LogError(path, line, f"{what} {text!r} is not a number") from None
    if not math.isfinite(value) or value < low:
        raise LogError(path, line, f"{what} {text!r} is not allowed: a finite number >= {low:g}")
    return value
