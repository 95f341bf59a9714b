"""``trtllm-bench throughput`` report: the ``= PERFORMANCE OVERVIEW`` block it prints (NVIDIA/TensorRT-LLM,
docs/source/performance/perf-benchmarking.md).

Lines read: ``Request Throughput (req/sec):``, ``Total Output Throughput (tokens/sec):``,
``Total Latency (ms):``, ``Average time-to-first-token [TTFT] (ms):``, ``Average time-per-output-token
[TPOT] (ms):``, and the ``[TTFT] P50`` / ``P99``, ``[TPOT] P50`` / ``P99`` breakdown lines when present;
``Number of requests:`` and ``Model:`` from the request information block.
"""

from __future__ import annotations

import re
from pathlib import Path

from twin.calibrate.logs import LogError, number
from twin.calibrate.serving import ServingMeasurement
from twin.units import SECONDS_PER_MS

_LINE = re.compile(r"^\s*(\[?[A-Za-z][^:]*?)\s*:\s*(\S+)\s*$")


def looks_like(text: str) -> bool:
    return "PERFORMANCE OVERVIEW" in text and "Total Output Throughput (tokens/sec)" in text


def _values(path: Path, text: str) -> tuple[dict[str, float], dict[str, str], dict[str, int]]:
    values: dict[str, float] = {}
    words: dict[str, str] = {}
    where: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        m = _LINE.match(line)
        if not m:
            continue
        key, value = m.group(1).strip(), m.group(2)
        where[key] = n
        try:
            values[key] = float(value.replace(",", ""))
        except ValueError:
            words[key] = value
    return values, words, where


def parse(path: str | Path, text: str) -> ServingMeasurement:
    path = Path(path)
    values, words, where = _values(path, text)
    need = ("Request Throughput (req/sec)", "Total Output Throughput (tokens/sec)", "Total Latency (ms)")
    for key in need:
        if key not in values:
            raise LogError(path, len(text.splitlines()), f"no '{key}:' line (truncated trtllm-bench report?)")
        number(str(values[key]), path, where[key], key)
    ttft = {"mean": values.get("Average time-to-first-token [TTFT] (ms)"), "median": values.get("[TTFT] P50"),
            "p99": values.get("[TTFT] P99")}
    tpot = {"mean": values.get("Average time-per-output-token [TPOT] (ms)"), "median": values.get("[TPOT] P50"),
            "p99": values.get("[TPOT] P99")}
    duration = values["Total Latency (ms)"] * SECONDS_PER_MS
    rps = values["Request Throughput (req/sec)"]
    requests = int(values.get("Number of requests", round(rps * duration)))
    return ServingMeasurement(str(path), "trtllm-bench", words.get("Model", ""), requests, duration, rps,
                              values["Total Output Throughput (tokens/sec)"],
                              {k: None if v is None else v * SECONDS_PER_MS for k, v in ttft.items()},
                              {k: None if v is None else v * SECONDS_PER_MS for k, v in tpot.items()}, None)
