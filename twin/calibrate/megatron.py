"""Megatron-LM training logs: ``training_log`` lines of ``megatron/training/training.py``.

``iteration       10/  500000 | consumed samples:  5120 | elapsed time per iteration (ms): 1234.5 |
learning rate: ... | global batch size:   512 | lm loss: ... |``: the iteration time of each logged
interval. With ``--timing-log-level 1`` or more, the timers follow: ``(min, max) time across ranks
(ms):`` then ``    forward-compute ......: (120.31, 125.02)`` lines (the max is read), or in older
versions one line ``time (ms) | forward-compute: 120.3 | backward-compute: 250.1 | ...``.
"""

from __future__ import annotations

import re
from pathlib import Path

from twin.calibrate.logs import LogError, number
from twin.calibrate.training_log import TrainingLog
from twin.units import SECONDS_PER_MS

_ITERATION = re.compile(r"iteration\s+(\d+)\s*/\s*(\d+)\s*\|(.*)")
_ELAPSED = re.compile(r"elapsed time per iteration \(ms\):\s*([^\s|]+)")
_TIMER_NEW = re.compile(r"^\s*([a-z][a-z0-9-]+)\s*\.{2,}\s*:\s*\(\s*([^,\s]+)\s*,\s*([^)\s]+)\s*\)")
_TIMER_OLD = re.compile(r"\|\s*([a-z][a-z0-9-]+):\s*([0-9.]+)")


def looks_like(text: str) -> bool:
    return "elapsed time per iteration (ms)" in text


def parse(path: str | Path, text: str) -> TrainingLog:
    path = Path(path)
    times, timers, last = [], {}, 0
    for n, line in enumerate(text.splitlines(), 1):
        m = _ITERATION.search(line)
        if m:
            elapsed = _ELAPSED.search(m.group(3))
            if not elapsed:
                raise LogError(path, n, "an iteration line without 'elapsed time per iteration (ms): N' (truncated?)")
            iteration = int(m.group(1))
            if iteration <= last:
                raise LogError(path, n, f"iteration {iteration} after {last}: two runs mixed in one log?")
            last = iteration
            times.append(number(elapsed.group(1), path, n, "elapsed time per iteration (ms)") * SECONDS_PER_MS)
            continue
        new = _TIMER_NEW.match(line)
        if new:
            timers.setdefault(new.group(1), []).append(number(new.group(3), path, n, new.group(1)) * SECONDS_PER_MS)
            continue
        if line.lstrip().startswith("time (ms)"):
            for name, value in _TIMER_OLD.findall(line):
                timers.setdefault(name, []).append(number(value, path, n, name) * SECONDS_PER_MS)
    if not times:
        raise LogError(path, 1, "no 'iteration N/ M | ... | elapsed time per iteration (ms): T' line")
    return TrainingLog(str(path), "megatron", tuple(times), (), {k: _median(v) for k, v in timers.items()})


def _median(values: list[float]) -> float:
    values = values[1:] if len(values) > 1 else values
    return sorted(values)[len(values) // 2]
