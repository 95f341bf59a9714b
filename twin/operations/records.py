"""What the cluster simulation takes and returns: its run spec, each job's outcome, the cluster's series.

Plain frozen records; ``cluster.py`` fills them, ``accounting.py`` and ``metrics.py`` read them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.operations.scheduler import Policy
from twin.units import SECONDS_PER_HOUR

# How a job ended: ran its steps, hit its time limit, still running or queued at the horizon.
FINISHED, TIMEOUT, UNFINISHED = "finished", "timeout", "unfinished"


@dataclass(frozen=True)
class OperationsSpec:
    """How the cluster is run, in SI units."""
    policy: Policy = Policy()
    horizon_s: float = 365 * 86400.0
    seed: int = 0                                # of the failure draws (failures.seed)
    hold: tuple[str, float] | None = None        # (job name, start) of a hero reservation
    max_delay_s: float = 12 * SECONDS_PER_HOUR   # the carbon-aware policy's longest hold


@dataclass(frozen=True)
class NodeSpan:
    node: int
    start_s: float
    end_s: float


@dataclass(frozen=True)
class JobOutcome:
    """One job, as it ran (``OperationsResult.jobs``)."""
    name: str
    tenant: str
    template: str
    origin: str
    gpus: int                        # asked for
    gpus_used: int                   # by its plan
    gpus_allocated: float            # held: whole nodes for a multi-node job, a GPU's share per MIG instance
    submit_s: float
    release_s: float                 # entered the queue (after a carbon-aware hold or at its reservation)
    carbon_hold_s: float             # held by the carbon-aware policy
    start_s: float | None
    end_s: float | None
    status: str                      # finished | timeout | unfinished
    iterations: float
    iterations_done: float
    packed_step_s: float             # step time alone on the cluster's first nodes (a service: 1 s of serving)
    ideal_s: float                   # its steps at that step time: the run time alone, without failures
    mean_step_s: float               # time-weighted step time while training (placement and contention)
    placement: tuple[int, ...]       # nodes per SU at its first start; () inside one node
    scalable_units: int
    interruptions: int
    lost_work_s: float
    restart_s: float
    repair_wait_s: float
    node_spans: tuple[NodeSpan, ...]
    gpu_hours: float                 # GPUs held × time held
    reserved_start_s: float | None   # its reserved start when it was the blocked head (EASY backfill)

    @property
    def wait_s(self) -> float | None:
        return None if self.start_s is None else self.start_s - self.submit_s

    @property
    def turnaround_s(self) -> float | None:
        return None if self.end_s is None else self.end_s - self.submit_s


@dataclass(frozen=True)
class Series:
    """The cluster after each event: a step function, value held until the next time."""
    t_s: np.ndarray
    gpus_allocated: np.ndarray
    gpus_busy: np.ndarray            # used by a job's plan while it trains, or serving
    queued: np.ndarray
    running: np.ndarray
    it_w: np.ndarray                 # IT power of the whole cluster
    fragmented_gpus: np.ndarray      # free GPUs that none of the waiting jobs can use


@dataclass(frozen=True)
class PowerSegments:
    """Each job's attributed IT power, piecewise constant: job index, start, end, watts."""
    job: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray
    w: np.ndarray


@dataclass(frozen=True)
class ClusterRun:
    """What the cluster simulation returns."""
    jobs: tuple[JobOutcome, ...]
    series: Series
    segments: PowerSegments
    end_s: float                     # the last event (all jobs done) or the horizon
    horizon_s: float
    gpus_total: int                  # every GPU of the cluster, spares included
    node_su: tuple[int, ...]         # scalable unit of each node
    base_it_w: float                 # every node idle, plus switches and storage
    node_idle_w: float
    infrastructure_w: float
    failures: int                    # node failures (on up nodes)
    failures_by_component: dict[str, int]
    spare_swaps: int                 # nodes taken from the spare pool
    replacements: int                # failed nodes of running jobs replaced
    events: int
    steps_priced: int                # engine runs (distinct shape, class and share)
