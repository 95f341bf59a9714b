"""vLLM's ``benchmarks/benchmark_serving.py --save-result`` JSON (``vllm bench serve --save-result``).

Keys read: ``completed``, ``duration``, ``request_throughput``, ``output_throughput``,
``total_token_throughput``, ``total_input_tokens``, ``total_output_tokens``, ``request_rate``,
``{mean,median,p99}_{ttft,tpot,itl,e2el}_ms`` and, when present, ``model_id``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from twin.calibrate.logs import LogError
from twin.calibrate.serving import ServingMeasurement
from twin.units import SECONDS_PER_MS

REQUIRED = ("completed", "duration", "output_throughput", "request_throughput")


def looks_like(text: str) -> bool:
    head = text.lstrip()[:400000]
    return head.startswith("{") and '"output_throughput"' in head and '"request_throughput"' in head


def _ms(data: dict, key: str, path: Path) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise LogError(path, 1, f"{key} {value!r} is not a time in ms")
    return value * SECONDS_PER_MS


def parse(path: str | Path, text: str) -> ServingMeasurement:
    path = Path(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LogError(path, exc.lineno, f"not JSON (truncated?): {exc.msg}") from None
    if not isinstance(data, dict):
        raise LogError(path, 1, "a vLLM --save-result file is a JSON object")
    for key in REQUIRED:
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise LogError(path, 1, f"{key} {value!r} is missing or not a number (vLLM benchmark_serving.py "
                                    "--save-result)")
    if not data["completed"]:
        raise LogError(path, 1, "completed is 0: no request finished, nothing to compare")
    rate = data.get("request_rate")
    return ServingMeasurement(
        str(path), "vllm", str(data.get("model_id", "")), int(data["completed"]), float(data["duration"]),
        float(data["request_throughput"]), float(data["output_throughput"]),
        {q: _ms(data, f"{q}_ttft_ms", path) for q in ("mean", "median", "p99")},
        {q: _ms(data, f"{q}_tpot_ms", path) for q in ("mean", "median", "p99")},
        None if not isinstance(rate, (int, float)) or not math.isfinite(rate) else float(rate))
