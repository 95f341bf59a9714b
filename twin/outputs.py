"""Files the twin writes: checked before any work starts, written whole or not at all.

A result file is written to a temporary file beside it and renamed into place, so
a reader never sees half a file and a failure leaves the old one untouched; it
gets the permissions of any new file (0666 less the umask, 0644 usually).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from twin.errors import ScenarioError


def check_directory(text: str | None, field: str) -> Path:
    """A directory to write into: existing and writable, or creatable; refused in one line otherwise."""
    if text is None or not str(text).strip():
        raise ScenarioError(field, "an empty path is not allowed; name a directory")
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise ScenarioError(field, f"'{text}' is not allowed: it exists and is not a directory")
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise ScenarioError(field, f"'{text}' is not allowed: '{existing}' is not a writable directory")
    return path


def check_file(text: str | None, field: str) -> Path:
    """A file to (re)write: its directory must be writable and the path must not be a directory or device."""
    if text is None or not str(text).strip():
        raise ScenarioError(field, "an empty path is not allowed; name a file")
    path = Path(text)
    if path.exists() and not path.is_file():
        raise ScenarioError(field, f"'{text}' is not allowed: it exists and is not a regular file")
    check_directory(str(path.parent), field)
    return path


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write ``text`` (or bytes, such as a PNG) to ``path`` whole or not at all, with the permissions of a new file."""
    def write(tmp: str) -> None:
        with open(tmp, "wb") if isinstance(text, bytes) else open(tmp, "w", encoding="utf-8") as f:
            f.write(text)

    replace_atomic(path, write)


def replace_atomic(path: Path, write: Callable[[str], None]) -> None:
    """``write(tmp)`` into a temporary file beside ``path``, then rename it over ``path``: the file
    is whole or untouched, with the permissions of a new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
