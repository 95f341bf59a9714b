"""torchtitan training logs: the metrics line ``train.py`` logs every ``--metrics.log_freq`` steps.

``step:  10  loss:  7.8412  memory: 41.23GiB(52.05%)  tps: 5,317  tflops: 307.89  mfu: 31.13%``
(with colour codes, which are dropped; newer versions add ``grad_norm:``). ``tps`` is tokens per
second per GPU; it is what is compared.
"""

from __future__ import annotations

import re
from pathlib import Path

from twin.calibrate.logs import LogError, number
from twin.calibrate.training_log import TrainingLog

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_STEP = re.compile(r"\bstep:\s*(\d+)\s+loss:")
_TPS = re.compile(r"\btps:\s*([0-9][0-9,]*(?:\.\d+)?)")


def looks_like(text: str) -> bool:
    return bool(_STEP.search(_ANSI.sub("", text[:2_000_000]))) and "tps:" in text


def parse(path: str | Path, text: str) -> TrainingLog:
    path = Path(path)
    tps, last = [], 0
    for n, line in enumerate(text.splitlines(), 1):
        line = _ANSI.sub("", line)
        m = _STEP.search(line)
        if not m:
            continue
        step = int(m.group(1))
        if step <= last:
            raise LogError(path, n, f"step {step} after {last}: two runs mixed in one log?")
        last = step
        rate = _TPS.search(line)
        if not rate:
            raise LogError(path, n, "a step line without 'tps: N' (truncated?)")
        tps.append(number(rate.group(1), path, n, "tps"))
    if not tps:
        raise LogError(path, 1, "no 'step: N  loss: ...  tps: N' line")
    return TrainingLog(str(path), "torchtitan", (), tuple(tps))
