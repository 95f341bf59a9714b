"""The jobs a shared cluster runs: what each asks for, when, and how much work it holds.

A job names a *template* (a training section of the scenario), a tenant, a submit
time and a size in GPUs. A serving job names a serving section instead: it holds its
replicas (whole GPUs, or MIG instances packed onto GPUs) for its duration. A training
job's work is a number of steps: the template's tokens, or,
for generated and trace jobs, a *duration*: the time the job would take alone on a
packed placement without failures, which the cluster turns into steps at that
placement's step time. The same steps then run wherever the scheduler puts the job,
as fast as its placement and the other jobs let it.

Sizes. A job of ``g`` GPUs with ``g`` at most a node's GPUs runs on one node, which
it may share with other jobs (the scheduler allocates GPUs); a larger job takes
``ceil(g / gpus_per_node)`` whole nodes, as SLURM allocates exclusive nodes.

Generators draw Poisson arrivals at a rate, sizes from a weighted list (public
GPU-cluster traces show many small jobs and few large ones: Jeon et al. 2019 for
Philly, Hu et al. 2021 for Helios), log-normal durations and tenants from weights,
all from one ``numpy.random.Generator`` seeded by the scenario.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from twin.jobs.checkpoint import CheckpointPolicy
from twin.network.collectives import CommModel
from twin.workload.placement import Placement
from twin.workload.plan import ParallelPlan

class PricedStep(Protocol):
    """A training step priced by the training engine (its ``StepBreakdown``); the cluster reads its time and
    hands it on whole to the power model."""

    @property
    def step_s(self) -> float: ...


@dataclass(frozen=True)
class Shape:
    """A template compiled for a job size: its plan, and its step priced wherever its groups land (``step``:
    the training engine's iteration on a communication model and placement, given by the API)."""
    template: str
    gpus: int                        # GPUs the job asks for
    plan: ParallelPlan               # resolved over those GPUs (it may leave some idle)
    order: str                       # rank order (training.parallelism.order)
    params: float                    # trained parameters, which checkpoints hold
    frozen: bool                     # a frozen base (LoRA, QLoRA): checkpoints hold the adapters alone
    precision: str
    checkpoint: CheckpointPolicy
    memory_bytes: float              # per GPU
    memory_fits: bool
    step: Callable[[CommModel, Placement], PricedStep]

    @property
    def key(self) -> tuple[str, int]:
        return self.template, self.gpus


@dataclass(frozen=True)
class Service:
    """A serving template as a job runs it: replicas on whole GPUs or on MIG instances, and their steady state
    from the serving twin (its request-level engine at the template's load)."""
    template: str
    replicas: int
    devices_per_replica: int         # GPUs (within one node), or one MIG instance
    profile: str | None              # MIG profile, or None for whole GPUs
    instances_per_gpu: int           # instances of the profile on one GPU (1 without MIG)
    compute_share: float             # a device's share of a GPU's compute (c/7 for a MIG instance)
    activity: float                  # a device's mean share of its dynamic range while serving
    requests_per_s: float
    output_tokens_per_s: float
    ttft_p99_s: float
    tpot_p99_s: float
    slo_met: bool
    sustained: bool | None = None    # its rate not above what it completes when saturated (None: offline)

    @property
    def devices(self) -> int:
        return self.replicas * self.devices_per_replica

    @property
    def gpus(self) -> int:
        """Whole GPUs the devices fill when packed."""
        return -(-self.devices // self.instances_per_gpu)


@dataclass(frozen=True)
class JobRequest:
    """One job as submitted."""
    name: str
    tenant: str
    submit_s: float
    template: str
    gpus: int
    tokens: float | None = None      # work in tokens (list jobs), or
    duration_s: float | None = None  # work as the time alone on a packed placement, without failures
    priority: int = 0
    time_limit_s: float = math.inf   # killed when its run time reaches it (SLURM --time)
    deferrable: bool = False         # the carbon-aware policy may hold it for cleaner hours
    origin: str = "list"             # list | generator | trace


def nodes_needed(gpus: int, gpus_per_node: int) -> int:
    """Whole nodes a job holds (1 for a job that fits in a node)."""
    return max(1, -(-gpus // gpus_per_node))


def allocated_gpus(gpus: int, gpus_per_node: int) -> int:
    """GPUs a job holds: its own within one node, or every GPU of its whole nodes."""
    return gpus if gpus <= gpus_per_node else nodes_needed(gpus, gpus_per_node) * gpus_per_node


# ---------------------------------------------------------------------------
# Generated jobs


@dataclass(frozen=True)
class GeneratorSpec:
    """Jobs drawn at random (``jobs.generator``), in SI units."""
    jobs: int
    rate_per_s: float                          # Poisson arrivals
    sizes: tuple[tuple[int, float], ...]       # (GPUs, weight)
    duration_median_s: float                   # log-normal runtime alone, without failures
    duration_sigma: float                      # standard deviation of its log
    duration_max_s: float
    tenants: tuple[tuple[str, float], ...]     # (tenant, weight)
    deferrable: float = 0.0                    # share of jobs the carbon-aware policy may hold
    start_s: float = 0.0                       # first arrival no earlier than this
    time_limit_factor: float | None = None     # time limit = factor × duration (None: no limit)


def _pick(rng: np.random.Generator, options: tuple[tuple[object, float], ...], count: int) -> list:
    names = [o for o, _ in options]
    weights = np.array([w for _, w in options], dtype=float)
    index = rng.choice(len(names), size=count, p=weights / weights.sum())
    return [names[i] for i in index]


def generate(spec: GeneratorSpec, templates: Callable[[int], tuple[tuple[str, float], ...]],
             rng: np.random.Generator) -> list[JobRequest]:
    """``spec.jobs`` jobs; ``templates(gpus)`` gives the templates a size may run, with their weights."""
    n = spec.jobs
    submit = spec.start_s + np.cumsum(rng.exponential(1.0 / spec.rate_per_s, size=n))
    sizes = _pick(rng, spec.sizes, n)
    tenants = _pick(rng, spec.tenants, n)
    # math.exp, not numpy's: numpy's vectorised exp differs in the last bit between CPUs with and without
    # AVX-512, and a job's duration must not depend on the machine (docs/architecture.md, "Same numbers on
    # every machine").
    durations = np.minimum(spec.duration_max_s, spec.duration_median_s * np.array(
        [math.exp(x) for x in (spec.duration_sigma * rng.standard_normal(n)).tolist()]))
    deferrable = rng.random(n) < spec.deferrable
    choice = rng.random(n)
    jobs = []
    for i in range(n):
        options = templates(int(sizes[i]))
        weights = np.cumsum([w for _, w in options])
        template = options[int(np.searchsorted(weights / weights[-1], choice[i], side="right"))][0]
        limit = math.inf if spec.time_limit_factor is None else spec.time_limit_factor * float(durations[i])
        jobs.append(JobRequest(name=f"gen-{i + 1}", tenant=str(tenants[i]), submit_s=float(submit[i]),
                               template=template, gpus=int(sizes[i]), duration_s=float(durations[i]),
                               time_limit_s=limit, deferrable=bool(deferrable[i]), origin="generator"))
    return jobs
