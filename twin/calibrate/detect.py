"""Which reader a log needs, from its text; a file no reader knows is refused naming the file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Union

from twin.calibrate import dcgm, megatron, nccl, nvidia_smi, operator_rates, sacct, torchtitan, trtllm, vllm
from twin.calibrate.logs import MAX_FILES, LogError, read_log
from twin.calibrate.nccl import NcclRun
from twin.calibrate.operator_rates import OperatorTimings
from twin.calibrate.power import PowerLog
from twin.calibrate.sacct import Accounting
from twin.calibrate.serving import ServingMeasurement
from twin.calibrate.training_log import TrainingLog

Reading = Union[NcclRun, OperatorTimings, ServingMeasurement, PowerLog, Accounting, TrainingLog]
# In this order: the JSON formats, then the most specific text markers.
READERS = (("vllm benchmark_serving --save-result", vllm), ("benchmarks/operator_rates.py", operator_rates),
           ("trtllm-bench report", trtllm), ("nccl-tests", nccl), ("nvidia-smi CSV", nvidia_smi),
           ("DCGM exporter", dcgm), ("sacct --parsable2", sacct), ("Megatron-LM log", megatron),
           ("torchtitan log", torchtitan))
FORMATS = ", ".join(name for name, _ in READERS)


def read(path: str | Path) -> Reading:
    """The reading of one log file in whichever format it is."""
    text = read_log(path)
    if not text.strip():
        raise LogError(path, 1, "is empty")
    for _, reader in READERS:
        if reader.looks_like(text):
            return reader.parse(path, text)
    raise LogError(path, 1, f"is none of the formats the twin reads ({FORMATS}; docs/calibrate.md)")


def read_folder(folder: str | Path, field: str = "DIR") -> list[Reading]:
    """Every log in ``folder`` and its subfolders (hidden files left out), in name order."""
    root = Path(folder)
    if not root.is_dir():
        raise LogError(root, None, f"is not a folder ({field}: a folder of logs)")
    files = []
    for path in sorted(root.rglob("*")):
        if any(part.startswith(".") for part in path.relative_to(root).parts) or not path.is_file():
            continue
        files.append(path)
        if len(files) > MAX_FILES:
            raise LogError(root, None, f"holds more than {MAX_FILES} files; point {field} at the logs to calibrate on")
    if not files:
        raise LogError(root, None, f"holds no log ({FORMATS})")
    return [read(p) for p in files]
