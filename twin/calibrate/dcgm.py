"""DCGM exporter metrics (Prometheus text exposition format), one scrape or many appended.

Lines read: ``DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-…",modelName="NVIDIA H100 80GB HBM3",
Hostname="node-01",...} 312.5`` (W) with ``DCGM_FI_DEV_GPU_UTIL`` (%) and, when present,
``DCGM_FI_DEV_SM_CLOCK`` (MHz) of the same GPU; ``# HELP`` / ``# TYPE`` lines and other metrics are
skipped. The k-th power sample of a GPU pairs with its k-th utilisation sample.
"""

from __future__ import annotations

import re
from pathlib import Path

from twin.calibrate.gpus import catalog_gpu
from twin.calibrate.logs import LogError, number
from twin.calibrate.power import PowerLog, PowerSample
from twin.units import HZ_PER_MHZ

METRICS = {"DCGM_FI_DEV_POWER_USAGE": "power", "DCGM_FI_DEV_GPU_UTIL": "util", "DCGM_FI_DEV_SM_CLOCK": "clock"}
_SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)(\s+\d+)?\s*$')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def looks_like(text: str) -> bool:
    return "DCGM_FI_DEV_POWER_USAGE" in text[:200000]


def parse(path: str | Path, text: str) -> PowerLog:
    path = Path(path)
    series: dict[tuple[str, str], dict[str, list[float]]] = {}
    device = ""
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise LogError(path, n, "not a Prometheus sample line ('NAME{labels} VALUE')")
        kind = METRICS.get(m.group(1))
        if kind is None:
            continue
        labels = dict(_LABEL.findall(m.group(2) or ""))
        key = (labels.get("Hostname", labels.get("instance", "")), labels.get("gpu", labels.get("UUID", "")))
        series.setdefault(key, {"power": [], "util": [], "clock": []})[kind].append(
            number(m.group(3), path, n, m.group(1)))
        device = device or labels.get("modelName", "")
    samples = []
    for values in series.values():
        for i, power in enumerate(values["power"][:len(values["util"])]):
            clock = values["clock"][i] * HZ_PER_MHZ if i < len(values["clock"]) else None
            samples.append(PowerSample(power, min(values["util"][i], 100.0) / 100.0, clock))
    if not samples:
        raise LogError(path, 1, "no GPU with both DCGM_FI_DEV_POWER_USAGE and DCGM_FI_DEV_GPU_UTIL samples")
    return PowerLog(str(path), "dcgm", device, catalog_gpu(device), tuple(samples))
