"""``nvidia-smi --query-gpu=timestamp,name,power.draw,clocks.sm,utilization.gpu --format=csv -l 1`` output.

The first line names the fields with their units (``power.draw [W]``, ``utilization.gpu [%]``); each
later line is one GPU at one time, values with units (``312.45 W``, ``98 %``); ``--format=csv,nounits``
drops the units. Fields read: ``name``, ``power.draw``, ``utilization.gpu`` and, when present,
``clocks.sm``; any other queried field is ignored. ``[N/A]`` values are skipped.
"""

from __future__ import annotations

import csv
from pathlib import Path

from twin.calibrate.gpus import catalog_gpu
from twin.calibrate.logs import LogError, number
from twin.calibrate.power import PowerLog, PowerSample
from twin.units import HZ_PER_MHZ



def looks_like(text: str) -> bool:
    first = text.lstrip("\ufeff").split("\n", 1)[0]
    return "power.draw" in first and "utilization.gpu" in first


def _field(header: list[str], name: str) -> int | None:
    for i, col in enumerate(header):
        if col.strip().split(" ")[0] == name:
            return i
    return None


def _value(text: str, path: Path, line: int, what: str) -> float | None:
    text = text.strip()
    if text in {"[N/A]", "N/A", "[Not Supported]", "[Unknown Error]"}:
        return None
    return number(text.split(" ")[0], path, line, what)


def parse(path: str | Path, text: str) -> PowerLog:
    path = Path(path)
    rows = list(csv.reader(text.lstrip("\ufeff").splitlines()))
    header = rows[0] if rows else []
    at = {name: _field(header, name) for name in ("name", "power.draw", "utilization.gpu", "clocks.sm")}
    if at["power.draw"] is None or at["utilization.gpu"] is None:
        raise LogError(path, 1, "an nvidia-smi CSV needs a header with power.draw and utilization.gpu "
                                "(--query-gpu=timestamp,name,power.draw,clocks.sm,utilization.gpu --format=csv)")
    samples, device = [], ""
    for n, row in enumerate(rows[1:], 2):
        if not row:
            continue
        if len(row) != len(header):
            raise LogError(path, n, f"{len(row)} fields under a header of {len(header)} (truncated or mixed-up?)")
        power = _value(row[at["power.draw"]], path, n, "power.draw")
        util = _value(row[at["utilization.gpu"]], path, n, "utilization.gpu")
        if power is None or util is None:
            continue
        if util > 100:
            raise LogError(path, n, f"utilization.gpu {util:g} is not allowed: a percentage, 0 to 100")
        clock = _value(row[at["clocks.sm"]], path, n, "clocks.sm") if at["clocks.sm"] is not None else None
        if at["name"] is not None and not device:
            device = row[at["name"]].strip()
        samples.append(PowerSample(power, util / 100.0, None if clock is None else clock * HZ_PER_MHZ))
    if not samples:
        raise LogError(path, len(rows), "no power sample (every value N/A, or only a header)")
    return PowerLog(str(path), "nvidia-smi", device, catalog_gpu(device), tuple(samples))
