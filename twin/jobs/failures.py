"""Failure rates of a job, by component, from a catalog profile.

A profile (``catalog/data/failure_profiles.yaml``) counts unexpected
interruptions by root cause over an observed exposure; the rate of a component
is its count per device-hour (per GPU-hour or per node-hour). A job of G GPUs
on N nodes sees, for each component, a Poisson process of rate
``rate_per_device_hour · devices``; the superposition of independent Poisson
processes is one Poisson process of the summed rate whose events belong to a
component with probability proportional to its rate, which is how the job
engine draws them.

``failures.custom_rates`` sets the rate of named components of the profile (per
device-hour, 0 to remove one); ``failures.rate_scale`` then multiplies every rate.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from twin import catalog
from twin.errors import ScenarioError, did_you_mean
from twin.units import SECONDS_PER_DAY, SECONDS_PER_HOUR


@dataclass(frozen=True)
class FailurePolicy:
    """How failures are drawn and handled (``failures:`` and ``cluster.allow_shrink``), in SI units."""
    profile: str = "llama3-h100"
    seed: int = 0
    samples: int = 1
    rate_scale: float = 1.0
    custom_rates: tuple[tuple[str, float], ...] = ()    # (component, failures per device-hour)
    detection_s: float = 600.0       # failure → the job knows (collective timeout, health checks)
    relaunch_s: float = 300.0        # reschedule, start processes, initialise communicators
    repair_mean_s: float = 172800.0  # mean time to repair a node (exponential)
    horizon_s: float = 5 * 365 * SECONDS_PER_DAY    # the simulation stops here: "did not finish"
    allow_shrink: bool = False       # after a failure with no spare, go on with fewer replicas


@dataclass(frozen=True)
class Component:
    name: str
    kind: str                        # gpu | hbm | software | network | host
    per: str                         # gpu | node: the device the rate is counted per
    rate_per_device_hour: float
    replace: bool                    # the node leaves the job for repair


@dataclass(frozen=True)
class FailureProfile:
    name: str
    description: str
    source: str
    components: tuple[Component, ...]
    # mtbf_s by (gpus, nodes): a cluster's scheduler asks it for every job it sizes a checkpoint for
    _mtbf_s: dict[tuple[int, int], float] = field(default_factory=dict, init=False, repr=False, compare=False)
    # shares by (gpus, nodes): a Monte Carlo asks them for each of its samples
    _shares: dict[tuple[int, int], tuple] = field(default_factory=dict, init=False, repr=False, compare=False)

    def job_rates_per_s(self, gpus: int, nodes: int) -> tuple[float, ...]:
        """Failure rate of each component for a job of ``gpus`` GPUs on ``nodes`` nodes (per second)."""
        return tuple(c.rate_per_device_hour * (gpus if c.per == "gpu" else nodes) / SECONDS_PER_HOUR
                     for c in self.components)

    def shares(self, gpus: int, nodes: int) -> tuple[float, np.ndarray]:
        """(summed failure rate per second, each component's cumulative share of it) for ``gpus`` GPUs on
        ``nodes`` nodes: what a failure's time and component are drawn from (``drawn_component``). The shares
        are worked out once and shared: read-only."""
        found = self._shares.get((gpus, nodes))
        if found is None:
            rates = np.array(self.job_rates_per_s(gpus, nodes))
            total = float(rates.sum())
            cumulative = np.cumsum(rates) / total if total > 0 else rates
            cumulative.flags.writeable = False
            found = self._shares[(gpus, nodes)] = (total, cumulative)
        return found

    def mtbf_s(self, gpus: int, nodes: int) -> float:
        """Mean time between failures of the job (inf without failures)."""
        found = self._mtbf_s.get((gpus, nodes))
        if found is None:
            total = sum(self.job_rates_per_s(gpus, nodes))
            found = self._mtbf_s[(gpus, nodes)] = 1.0 / total if total > 0 else float("inf")
        return found


def failure_profile(name: str, rate_scale: float = 1.0, custom_rates: dict[str, float] | None = None,
                    field: str = "failures.profile") -> FailureProfile:
    """A catalog profile with its rates scaled and custom rates applied."""
    row = catalog.entry("failure_profiles", name, field)
    hours = float(row["days"]) * SECONDS_PER_DAY / SECONDS_PER_HOUR
    devices = {"gpu": float(row["gpus"]), "node": float(row["nodes"])}
    components = []
    for comp_name, c in row["components"].items():
        rate = float(c["count"]) / (devices[c["per"]] * hours)
        components.append(Component(comp_name, c["class"], c["per"], rate, bool(c["replace"])))
    known = [c.name for c in components]
    for comp_name, rate in (custom_rates or {}).items():
        if rate < 0:
            raise ScenarioError(f"failures.custom_rates.{comp_name}", f"{rate!r} is negative; a rate is failures "
                                "per device-hour, >= 0")
        if comp_name not in known:
            raise ScenarioError(f"failures.custom_rates.{comp_name}", f"unknown component"
                                f"{did_you_mean(comp_name, known)}; known in profile {name}: {', '.join(known)}")
        components = [Component(c.name, c.kind, c.per, rate, c.replace) if c.name == comp_name else c
                      for c in components]
    components = [Component(c.name, c.kind, c.per, c.rate_per_device_hour * rate_scale, c.replace)
                  for c in components]
    return FailureProfile(name, row["description"], row["source"], tuple(components))


def policy_profile(policy: FailurePolicy) -> FailureProfile:
    """The profile a failure policy names, with its scale and custom rates applied."""
    return failure_profile(policy.profile, policy.rate_scale, dict(policy.custom_rates))


def drawn_component(profile: FailureProfile, cumulative: Sequence[float], u: float) -> Component:
    """The component a failure belongs to, for a uniform draw ``u`` in [0, 1): the first whose cumulative
    share of the summed rate (``cumulative``, ending at 1) exceeds ``u``."""
    index = bisect.bisect_right(cumulative, u)
    return profile.components[min(index, len(cumulative) - 1)]
