"""What a job is, for every engine that runs one: its kinds, its phases, its timeline's records."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, StrEnum


class JobKind(Enum):
    """A job trains (steps of work, checkpoints) or serves (seconds of service, nothing to checkpoint)."""
    TRAINING = "training"
    SERVICE = "service"


class Phase(StrEnum):
    """Where a job's wall time goes. The values are the names records and figures use."""
    QUEUED = "queued"                # waiting for the scheduler (cluster)
    TRAIN = "train"                  # making progress (a service: serving)
    CHECKPOINT = "checkpoint"        # stopped for a checkpoint (single-job timeline)
    RESTART = "restart"              # detection, relaunch and the checkpoint read back
    REPAIR_WAIT = "repair_wait"      # waiting for a node to replace a failed one
    DONE = "done"                    # finished, timed out (cluster)


@dataclass(frozen=True)
class Segment:
    """A stretch of the job's wall time in one phase (train, checkpoint, restart, repair_wait)."""
    start_s: float
    end_s: float
    phase: Phase
    checkpoints: int = 0             # checkpoints folded inside a long train segment
    checkpoint_s: float = 0.0        # their time


@dataclass(frozen=True)
class Event:
    """A moment of the job's timeline."""
    t_s: float
    kind: str                        # failure | checkpoint | restart
    component: str = ""
