"""Serving scenarios: deployment → replica (memory, iteration model) → request engine → power → ServingResult.

A ``serving:`` section describes one deployment and, under ``compare``, alternatives
of the same model and load; each is answered the same way. ``capacity`` answers
``python -m twin capacity``: the highest rate within the SLO and the GPUs a target
rate needs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from twin.api.bands import calibration_of
from twin.api.specs import alternative_cluster_of, cluster_of, serving_spec_of, site_of
from twin.bands import Calibration
from twin.calibration import Efficiency, ServingEfficiency
from twin.cores import shared_map, split_map
from twin.hardware.specs import ClusterSpec
from twin.power.api_prices import ApiComparison, compare_apis
from twin.power.capping import power_cap_factor
from twin.power.serving import ServingPower, serving_power
from twin.power.site import SiteSpec
from twin.results import CapacityResult, ServingResult
from twin.scenario import Scenario
from twin.serving.capacity import capacity as capacity_search
from twin.serving.capacity import LENGTHEN, MAX_TRIAL_REQUESTS, Sizing, saturated_rate_per_s, sizing, sustained
from twin.serving.deployment import (Replica, ServingRun, ServingSpec, fitting_changes, memory_problem, replica,
                                     simulate)
from twin.serving.profiles import engine_family


@dataclass(frozen=True)
class Deployment:
    """One deployment of a serving scenario, built and ready to run."""
    where: str                   # the scenario key it comes from: serving, serving.compare[0], ...
    name: str | None             # the alternative's own name, if it has one
    spec: ServingSpec
    cluster: ClusterSpec
    replica: Replica

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        s, rep, gpu = self.spec, self.replica, self.cluster.node.gpu.name
        parallel = f", TP{s.tensor}" * (s.tensor > 1) + f", PP{s.pipeline}" * (s.pipeline > 1)
        where = (f"MIG {s.mig} instances of {rep.gpus_used} {gpu}" if s.mig else f"{rep.devices_used} {gpu}")
        return f"{_count(rep.replicas, 'replica')} of {s.model.name} ({s.precision}{parallel}) on {where}"


def deployments(scenario: Scenario) -> list[Deployment]:
    """The scenario's deployment and its alternatives, in the order written."""
    sv = scenario.serving
    efficiency = Efficiency.calibrated(scenario.efficiency)
    serving_eff = ServingEfficiency.calibrated()
    out = []
    for i, alternative in enumerate([None, *sv.compare]):
        where = "serving" if alternative is None else f"serving.compare[{i - 1}]"
        spec = serving_spec_of(sv, alternative)
        cluster = (cluster_of(scenario.cluster) if alternative is None
                   else alternative_cluster_of(scenario.cluster, alternative))
        clock = power_cap_factor(cluster.node.gpu, cluster.gpu_power_cap_w)
        rep = replica(spec, cluster, serving_eff, efficiency, where, clock)
        out.append(Deployment(where, alternative.name if alternative else None, spec, cluster, rep))
    return out


def simulate_serving(scenario: Scenario) -> ServingResult:
    """Answer a serving scenario: its deployment over the load, and each alternative beside it with the
    serving band of its own GPU."""
    def answered(numbered: tuple[int, Deployment]) -> ServingResult:
        i, d = numbered
        answer = _answer(scenario, d)
        return answer if i == 0 else replace(answer, calibration=_band(scenario, d))

    numbered = list(enumerate(deployments(scenario)))      # half of them answered on a second core (twin/cores.py)
    first, *others = split_map(answered, numbered, worth=len(numbered) > 1)
    return replace(first, alternatives=tuple(others))


def _band(scenario: Scenario, d: Deployment) -> Calibration:
    """The serving band of a deployment: its engine's validation rows on its GPU at its tensor-parallel size (or
    the site profile)."""
    return calibration_of(scenario, "serving", d.cluster.node.gpu.name, engine_family(d.spec.engine.profile),
                          d.spec.tensor)


def _answer(scenario: Scenario, d: Deployment) -> ServingResult:
    spec, rep, cluster = d.spec, d.replica, d.cluster
    node, site = cluster.node, site_of(scenario.site, cluster.node)
    problem = memory_problem(spec, rep.memory)
    warnings, advice = [f"{d.where}: {site.price_warning}"] if site.price_warning else [], []
    run = power = saturated = None
    if problem:
        advice = fitting_changes(spec, node.gpu, node.gpus)
        warnings.append(f"{d.where}: does not fit: {problem}; "
                        + ("; ".join(advice) if advice else "no single change of tensor, precision or MIG fits"))
    else:
        run = simulate(spec, rep)
        power = _power(d, site, run)
        if spec.slo.any and not run.slo_met:
            warnings.append(f"{d.where}: the SLO is not met at {_rate(run.rate_per_s)}: p99 TTFT "
                            f"{run.ttft_s.p99:.3g} s, p99 TPOT {run.tpot_s.p99 * 1e3:.3g} ms; "
                            "python -m twin capacity gives the highest rate that meets it")
        if run.rate_per_s is not None:
            saturated = saturated_rate_per_s(spec, rep)
            if sustained(run.rate_per_s, saturated) is False:
                warnings.append(f"{d.where}: {_rate(run.rate_per_s)} is more than the "
                                f"{saturated:.3g} requests/s it completes when saturated, so it is not sustained: a "
                                "queue that a burst builds never drains, which a run of "
                                f"{_count(spec.load.requests, 'request')} may not show; python -m twin capacity "
                                "gives the highest rate it sustains within the SLO")
    idle = cluster.gpus - rep.gpus_used
    if idle > 0:
        unit = "MIG instance" if rep.profile else "GPU"
        warnings.append(f"{d.where}: {idle:,} of {cluster.gpus:,} GPUs idle ({_count(rep.replicas, 'replica')} of "
                        f"{_count(rep.devices, unit)}); they are not charged")
    sources = {"gpu": node.gpu.source, "node": node.source, "model": spec.model.source}
    if rep.profile:
        sources["mig"] = rep.profile.source
    return ServingResult(
        scenario=scenario.name, label=d.label, model=spec.model.name, node=node.name, gpu=node.gpu.name,
        mig=spec.mig, precision=spec.precision, kv_cache=spec.kv_cache, tensor=spec.tensor, pipeline=spec.pipeline,
        replicas=rep.replicas, devices_per_replica=rep.devices, gpus_total=cluster.gpus, gpus_used=rep.gpus_used,
        instances_used=rep.devices_used, memory=rep.memory, memory_fits=problem is None,
        rate_per_s=spec.load.rate_per_s, slo=spec.slo, saturated_requests_per_s=saturated,
        country=site.country, pue=site.pue, run=run, power=power, memory_advice=advice, warnings=warnings,
        sources=sources, api_comparison=_apis(spec, power),
    )


def _power(d: Deployment, site: SiteSpec, run: ServingRun) -> ServingPower:
    """Power, energy, carbon and cost per million output tokens of ``d`` over ``run``, at ``site``."""
    rep, cluster = d.replica, d.cluster
    return serving_power(cluster.node, rep.gpu, rep.profile, rep.devices_used, rep.gpus_used, run.engine,
                         run.output_tokens_per_s, site.pue, [site.country, *site.compare],
                         site.carbon_intensity_g_per_kwh, site.electricity_price, site.price,
                         cluster.gpu_power_cap_w, run.tokens_per_s - run.output_tokens_per_s)


def _apis(spec: ServingSpec, power: ServingPower | None,
          capacity_rate_per_s: float | None = None) -> tuple[ApiComparison, ...]:
    """Self-hosting against the hosted APIs of the model, where the site's total is known."""
    total = power.cost.total_eur if power is not None and power.cost is not None else None
    if total is None:
        return ()
    return tuple(compare_apis(spec.model.name, power.input_per_output_token, total, capacity_rate_per_s))


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + "s" * (n != 1)


def _rate(rate_per_s: float | None) -> str:
    return "offline load (every request at t = 0)" if rate_per_s is None else f"{rate_per_s:g} requests/s"


def capacity(scenario: Scenario, target_rate_per_s: float | None = None,
             grid: tuple[float, ...] = ()) -> CapacityResult:
    """The highest rate within the SLO of the scenario's deployment (and of each alternative);
    with ``target_rate_per_s``, the replicas and GPUs that rate needs; ``grid`` adds trial rates at
    these fractions of the offline throughput to the first deployment's sweep (a curve to draw)."""
    def searched(numbered: tuple[int, Deployment]) -> CapacityResult:
        i, d = numbered
        found = _capacity(scenario, d, target_rate_per_s, grid if i == 0 else ())
        return replace(found, calibration=_band(scenario, d))

    # each taken by whichever core is free (twin/cores.py): a search's length is not known before it runs
    numbered = list(enumerate(deployments(scenario)))
    first, *others = shared_map(searched, numbered, worth=len(numbered) > 1)
    return replace(first, alternatives=tuple(others))


def gpus_for_rate(record: dict, target_rate_per_s: float) -> Sizing:
    """Replicas and GPUs a capacity record's deployment needs for ``target_rate_per_s``."""
    return sizing(record["per_replica_rate_per_s"], record["devices_per_replica"], record["instances_per_gpu"],
                  target_rate_per_s)


def _capacity(scenario: Scenario, d: Deployment, target_rate_per_s: float | None,
              grid: tuple[float, ...]) -> CapacityResult:
    rep = d.replica
    instances = rep.profile.instances if rep.profile else 1
    problem = memory_problem(d.spec, rep.memory)
    warnings = [f"{d.where}: does not fit: {problem}"] if problem else []
    cap = None if problem else capacity_search(d.spec, rep, grid)
    size = (sizing(cap.per_replica_rate_per_s, rep.devices, instances, target_rate_per_s)
            if cap and target_rate_per_s else None)
    if cap is not None and not cap.slo_bound:
        warnings.append(f"{d.where}: no SLO (serving.slo): the capacity is the offline throughput")
    if cap is not None and cap.slo_bound and cap.rate_per_s <= 0:
        warnings.append(f"{d.where}: the SLO is not met even at the lowest trial rate: a single request "
                        "already takes longer than the targets")
    if size is not None and size.replicas > rep.replicas:
        warnings.append(f"{d.where}: {_rate(target_rate_per_s)} needs {size.replicas:,} replicas; the cluster "
                        f"holds {rep.replicas:,}")
    if cap is not None and not cap.converged:
        warnings.append(f"{d.where}: the capacity is not converged: it meets the SLO over "
                        f"{_count(cap.requests_per_trial, 'request')} a trial, and trials of "
                        f"{_count(cap.requests_per_trial * LENGTHEN, 'request')} would pass the "
                        f"{MAX_TRIAL_REQUESTS:,} the search allows; over longer runs it may be lower")
    best = cap.at_capacity if cap else None
    power = None if best is None else _power(d, site_of(scenario.site, d.cluster.node), best)
    apis = _apis(d.spec, power, cap.rate_per_s if cap else None)
    return CapacityResult(scenario=scenario.name, label=d.label, capacity=cap, replicas=rep.replicas,
                          devices_per_replica=rep.devices, instances_per_gpu=instances, slo=d.spec.slo,
                          sizing=size, warnings=warnings, power=power, api_comparison=apis)

