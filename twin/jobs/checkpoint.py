"""Checkpoints: their size and the time to write and read them.

A training checkpoint holds what a restart needs: the model weights in the
training precision and the optimizer states (fp32 master weights, Adam m and v:
12 bytes per parameter; Rajbhandari et al. 2020 §3). Gradients are not saved.
A 70B model in bf16 therefore checkpoints 70e9 · (2 + 12) = 980 GB.

Writes and reads are spread over every rank (distributed checkpointing, as
Megatron-LM's ``dist_checkpointing`` and PyTorch DCP do), so the time is the
checkpoint's bytes over the slower of the storage system's bandwidth
(``cluster.storage``) and the job's nodes' storage NICs at line rate.

Asynchronous checkpointing (``training.checkpoint.asynchronous``) stalls
training only while each GPU copies its share of the state to host memory over
PCIe; the write to storage then runs in the background and the checkpoint is
durable only when it ends.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.hardware.specs import ClusterSpec
from twin.workload.finetune import ADAPTER_STATE_BYTES
from twin.workload.memory import state_bytes_per_param


def checkpoint_bytes_per_param(precision: str, frozen: bool = False) -> float:
    """Bytes per trained parameter: weights in the training precision (fp8 runs keep bf16 weights) + fp32
    optimizer states. A frozen base is not saved again: only its adapters and their Adam states
    (LoRA, Hu et al. 2021 §4.2: 35 MB of adapters against a 350 GB model)."""
    if frozen:
        weights, _gradients, optimizer = ADAPTER_STATE_BYTES[precision in ("fp32", "tf32")]
    else:
        weights, _gradients, optimizer = state_bytes_per_param(precision)
    return weights + optimizer


@dataclass(frozen=True)
class CheckpointPolicy:
    """When and how checkpoints are written (``training.checkpoint``)."""
    interval_s: float | None = None  # None: Young/Daly's optimum
    asynchronous: bool = False


@dataclass(frozen=True)
class CheckpointCost:
    bytes: float
    write_Bps: float
    read_Bps: float
    write_s: float              # checkpoint written to storage
    read_s: float               # checkpoint read back at a restart
    stall_s: float              # training stopped per checkpoint: write_s (sync) or the host copy (async)
    asynchronous: bool


def checkpoint_cost(params: float, precision: str, cluster: ClusterSpec, nodes_used: int, gpus_used: int,
                    asynchronous: bool, frozen: bool = False) -> CheckpointCost:
    """Size and timing of one checkpoint of ``params`` trained parameters on ``nodes_used`` nodes."""
    size = params * checkpoint_bytes_per_param(precision, frozen)
    nic_Bps = nodes_used * cluster.node.storage_nics.total_Bps
    write_Bps = min(cluster.storage.write_Bps, nic_Bps)
    read_Bps = min(cluster.storage.read_Bps, nic_Bps)
    write_s = size / write_Bps
    read_s = size / read_Bps
    if asynchronous:
        stall_s = size / max(1, gpus_used) / cluster.node.pcie_Bps
    else:
        stall_s = write_s
    return CheckpointCost(size, write_Bps, read_Bps, write_s, read_s, stall_s, asynchronous)
