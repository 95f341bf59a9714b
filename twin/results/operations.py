"""The record of a ``jobs:`` scenario: many jobs on one cluster (docs/results.md, "Operations records").

``OperationsResult``'s fields are the simulation's typed records; its ``Layout`` says which keys each
of them gives, in the record's order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, ClassVar

from twin import collector
from twin.bands import OPERATIONS_KEYS, SERVICE_KEYS, Edges, edges_record, with_band, with_edges
from twin.hardware.specs import ClusterSpec
from twin.network.records import FabricSummary
from twin.operations.accounting import Accounts, Charge
from twin.operations.cluster import ClusterRun, JobOutcome
from twin.operations.jobs import Service
from twin.operations.metrics import Completion, PowerUse, Timeline, Utilisation, Waits
from twin.power.pricing import cost_parts
from twin.results.core import SCHEMA_VERSION, Layout, Result, finite, plain

# Completion counts shown as ``jobs_<name>`` next to the number of jobs submitted.
JOB_COUNTS = ("finished", "timed_out", "unfinished")
# The fields whose keys hold the headline numbers (``OPERATIONS_KEYS``): what a run at a band's edge is read for.
HEADLINE_FIELDS = ["seed", "utilisation", "waits", "power", "accounts"]


@dataclass(frozen=True)
class CarbonAware:
    """The carbon-aware policy against the same jobs played without it."""
    deferred_jobs: int
    mean_hold_s: float
    window_s: float                          # both runs counted over this span (the longer makespan)
    carbon_kg: dict[str, float]              # the whole cluster over the window, per country
    baseline_carbon_kg: dict[str, float]
    saved_kg: dict[str, float]
    mean_wait_s: float | None
    baseline_mean_wait_s: float | None
    makespan_s: float
    baseline_makespan_s: float


def _job(j: JobOutcome, c: Charge) -> dict[str, Any]:
    return {
        "name": j.name, "tenant": j.tenant, "template": j.template, "origin": j.origin, "status": j.status,
        "gpus": j.gpus, "gpus_used": j.gpus_used, "gpus_allocated": j.gpus_allocated,
        "submit_s": j.submit_s, "release_s": j.release_s, "carbon_hold_s": j.carbon_hold_s, "start_s": j.start_s,
        "end_s": j.end_s,
        "wait_s": j.wait_s, "turnaround_s": j.turnaround_s, "ideal_s": j.ideal_s,
        "slowdown": j.turnaround_s / j.ideal_s if j.turnaround_s is not None else None,
        "iterations": j.iterations, "iterations_done": j.iterations_done,
        "packed_step_s": j.packed_step_s, "mean_step_s": j.mean_step_s,
        "placement": list(j.placement), "scalable_units": j.scalable_units,
        "interruptions": j.interruptions, "lost_work_s": j.lost_work_s, "restart_s": j.restart_s,
        "repair_wait_s": j.repair_wait_s, "reserved_start_s": j.reserved_start_s,
        "nodes": [[s.node, s.start_s, s.end_s] for s in j.node_spans],
    } | plain(c)


def _sum(charges: tuple[Charge, ...], like: Charge) -> Charge:
    """The jobs' charges added up."""
    return Charge(
        energy_it_kwh=sum(c.energy_it_kwh for c in charges),
        energy_facility_kwh=sum(c.energy_facility_kwh for c in charges),
        gpu_hours=sum(c.gpu_hours for c in charges),
        carbon_kg={k: sum(c.carbon_kg[k] for c in charges) for k in like.carbon_kg},
        energy_cost_eur={k: None if like.energy_cost_eur[k] is None else sum(c.energy_cost_eur[k] for c in charges)
                         for k in like.energy_cost_eur},
        rental_cost_eur=None if like.rental_cost_eur is None else sum(c.rental_cost_eur for c in charges),
    )


def _cluster(r: OperationsResult) -> dict[str, Any]:
    c = r.cluster
    return {"schema_version": SCHEMA_VERSION, "gpus_total": c.gpus, "nodes": c.nodes, "spare_nodes": c.spare_nodes,
            "gpus_per_node": c.node.gpus, "node": c.node.name}


def _fabric(r: OperationsResult) -> dict[str, Any]:
    f = r.fabric
    return {"scalable_units": f.scalable_units, "nodes_per_su": f.nodes_per_su, "oversubscription": f.oversubscription,
            "topology": f.topology, "node_su": list(r.run.node_su)}


def _counts(r: OperationsResult) -> dict[str, Any]:
    return {"makespan_s": r.run.end_s, "jobs_submitted": len(r.run.jobs)} | {
        f"jobs_{name}": getattr(r.completion, name) for name in JOB_COUNTS}


def _waits(r: OperationsResult) -> dict[str, Any]:
    done = {k: v for k, v in plain(r.completion).items() if k not in JOB_COUNTS}
    return {"wait_s": plain(r.waits)} | done


def _cost(a: Accounts, charge: Charge) -> dict[str, Any] | None:
    """``charge`` at the site by part (docs/results.md, "cost_eur")."""
    parts = a.cost(charge)
    return None if parts is None else cost_parts(parts)


def _energy(r: OperationsResult) -> dict[str, Any]:
    a = r.accounts
    return {
        "energy": {"cluster": plain(a.cluster), "jobs": plain(_sum(a.jobs, a.cluster)), "overhead": plain(a.overhead)},
        "tenants": plain(a.tenants),
        "cost_eur": _cost(a, a.cluster),
        "countries": [{"code": g.code, "name": g.name, "intensity_g_per_kwh": g.annual_g_per_kwh,
                       "intensity_source": g.intensity_source, "hourly": g.hourly,
                       "price_eur_per_kwh": g.price_eur_per_kwh, "price_source": g.price_source}
                      for g in a.countries],
    }


def _failures(r: OperationsResult) -> dict[str, Any]:
    run = r.run
    return {"failures": {"enabled": r.failures_enabled, "node_failures": run.failures,
                         "by_component": dict(run.failures_by_component), "replacements": run.replacements,
                         "spare_swaps": run.spare_swaps,
                         "interruptions": sum(j.interruptions for j in run.jobs),
                         "lost_work_s": sum(j.lost_work_s for j in run.jobs)}}


def _power(r: OperationsResult) -> dict[str, Any]:
    run = r.run
    return plain(r.power) | {"base_it_w": run.base_it_w, "infrastructure_w": run.infrastructure_w,
                             "node_idle_w": run.node_idle_w}


def _services(r: OperationsResult) -> dict[str, Any]:
    return {name: plain(svc) | {"devices": svc.devices, "gpus": svc.gpus} for name, svc in r.services.items()}


def _simulation(run: ClusterRun) -> dict[str, Any]:
    return {"events": run.events, "steps_priced": run.steps_priced}


def _jobs(r: OperationsResult) -> dict[str, Any]:
    return {"simulation": _simulation(r.run), "jobs": [_job(j, ch) for j, ch in zip(r.run.jobs, r.accounts.jobs)]}


def _tenants_of_jobs(r: OperationsResult) -> dict[str, Any]:
    """``_jobs`` with each job's tenant alone: what the terminal summary reads of them (it counts them by tenant)."""
    return {"simulation": _simulation(r.run), "jobs": [{"tenant": j.tenant} for j in r.run.jobs]}


@dataclass(frozen=True, kw_only=True)
class OperationsResult(Result):
    """The answer for a ``jobs:`` scenario: many jobs on one cluster."""
    workload: ClassVar[str] = "operations"
    layout: ClassVar[Layout] = Layout(
        convert={"power": _power, "services": _services},
        after={"cluster": _cluster, "fabric": _fabric, "seed": _counts, "waits": _waits, "accounts": _energy,
               "failures_enabled": _failures, "run": _jobs},
        omit=frozenset({"cluster", "fabric", "waits", "completion", "accounts", "failures_enabled", "run", "band",
                        "play_edges"}))
    cluster: ClusterSpec
    fabric: FabricSummary
    policy: str
    placement: str
    horizon_s: float
    seed: int
    utilisation: Utilisation
    waits: Waits
    completion: Completion
    power: PowerUse
    accounts: Accounts
    country: str
    carbon_aware: CarbonAware | None
    failures_enabled: bool
    timeline: Timeline
    services: dict[str, Service] = field(default_factory=dict)    # serving templates the jobs ran
    run: ClusterRun
    band: Edges | None = None                      # each template's band (twin.bands), set by twin.api
    # Plays the same jobs at the edges of those bands; run once, when a record first asks (``edges``).
    play_edges: Callable[[], tuple[dict[str, Any], ...]] | None = field(default=None, repr=False, compare=False)

    @cached_property
    def edges(self) -> tuple[dict[str, Any], ...]:
        """The headline numbers (``HEADLINE_FIELDS``, serialised) of the same jobs played at the fast and at the
        slow edge of their templates' bands (none without a band).

        Played on first use: a text report does not need them, a record (``banded``) does."""
        return self.play_edges() if self.play_edges is not None else ()

    @property
    def jobs(self) -> tuple[JobOutcome, ...]:
        return self.run.jobs

    def banded(self, record: dict[str, Any]) -> dict[str, Any]:
        """``record`` with ``KEY_low``/``KEY_high`` beside each headline number: its lowest and highest value
        over this run and the runs at the band's edges; each service's rates and latencies by its serving
        band (docs/calibrate.md, "Error bands")."""
        if self.band is None:
            return record
        out = with_edges(record, list(self.edges), OPERATIONS_KEYS)
        out["services"] = {name: with_band(svc, self.band.templates[name].band.factor, SERVICE_KEYS)
                           for name, svc in out["services"].items()}
        return out | edges_record(self.band)

    def described(self) -> dict[str, Any]:
        """The record without its numbers' bands, with where they come from (the summary prints no more, and
        the bands would play the cluster twice again), and each job as its tenant alone (``_tenants_of_jobs``)."""
        with collector.paused():       # a record of 50,000 jobs is millions of values that all live on
            record = self.keys_by(DESCRIBED_LAYOUT)
            return finite(record if self.band is None else record | edges_record(self.band))


# The layout of ``OperationsResult.described``: the record's, each job its tenant alone.
DESCRIBED_LAYOUT = replace(OperationsResult.layout,
                          after=dict(OperationsResult.layout.after) | {"run": _tenants_of_jobs})


def operations_record(r: OperationsResult) -> dict[str, Any]:
    """The JSON record of a cluster-operations result (docs/results.md, "Operations records")."""
    return r.record()
