"""Cluster operations (``jobs:``): templates → job shapes → jobs → the cluster simulation → accounts → result.

Each template is compiled once per job size with the training pipeline's own code
(``training.compile_training``); the cluster simulation prices every job's step on
its real placement with the single-job engines. With the carbon-aware policy on,
the same jobs are also played without it, and the result shows the carbon saved
against the delay added.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from twin.api.operations_bands import played_at_edges, template_bands
from twin.api.bounds import capped_lognormal_mean, check_generator_work, check_queue_work
from twin.api.specs import checkpoint_policy_of, cluster_of, failure_policy_of, serving_spec_of, site_of
from twin.api.training import compile_training
from twin.calibration import Efficiency, ServingEfficiency
from twin.cores import split_map
from twin.engine.iteration import simulate_iteration
from twin.engine.stage_costs import StepCosts
from twin.engine.step import StepBreakdown
from twin.errors import InfeasibleError, ScenarioError
from twin.hardware.specs import ClusterSpec
from twin.jobs.failures import FailurePolicy
from twin.network.collectives import CommModel
from twin.network.fabric import Fabric
from twin.network.fabric_cache import cluster_graph
from twin.network.records import FabricSummary
from twin.operations.accounting import Accounts, CountryGrid, account, country_grids, idle_tail_kg
from twin.operations.cluster import ClusterRun, OperationsSpec, simulate_cluster
from twin.operations.jobs import GeneratorSpec, JobRequest, Service, Shape, generate
from twin.operations.metrics import PowerUse, completion, power_use, timeline, utilisation, waits
from twin.operations.scheduler import Policy
from twin.operations.steps import StepTimes
from twin.operations.traces import read_trace
from twin.power.capping import power_cap_factor
from twin.power.country import site_and_compared
from twin.power.devices import gpu_power, node_power
from twin.power.site import SiteSpec
from twin.power.hourly import CarbonClock, hourly_shape
from twin.power.infrastructure import infrastructure
from twin.results import CarbonAware, OperationsResult
from twin.scenario import Jobs, Scenario, Serving, Training
from twin.units import fmt_duration
from twin.workload.finetune import trainable_params
from twin.workload.placement import Placement
from twin.workload.plan import ParallelPlan


def _sized(cluster: ClusterSpec, gpus: int) -> ClusterSpec:
    """The cluster as a job's plan sees it: exactly the job's GPUs (``data: auto`` fills them)."""
    return replace(cluster, node=replace(cluster.node, gpus=gpus), nodes=1, spare_nodes=0)


def _stepper(costs: Callable[[CommModel, Placement], StepCosts],
             plan: ParallelPlan) -> Callable[[CommModel, Placement], StepBreakdown]:
    """The training engine's step of ``plan`` wherever its groups land: what the cluster prices placements with."""
    return lambda comm, placement: simulate_iteration(costs(comm, placement), plan).breakdown


@dataclass
class _Shapes:
    """Templates compiled per job size, each once; sizes a template cannot run are remembered with why."""
    cluster: ClusterSpec
    efficiency: Efficiency
    templates: dict[str, Training]
    built: dict[tuple[str, int], Shape]
    refused: dict[tuple[str, int], ScenarioError]

    def get(self, template: str, gpus: int) -> Shape:
        key = (template, gpus)
        if key in self.refused:
            raise self.refused[key]
        if key not in self.built:
            tr = self.templates[template]
            try:
                c = compile_training(tr, _sized(self.cluster, gpus), self.efficiency, f"jobs.templates.{template}")
            except InfeasibleError as exc:
                self.refused[key] = exc
                raise
            needed = c.memory.required_bytes
            self.built[key] = Shape(
                template=template, gpus=gpus, plan=c.plan, order=tr.parallelism.order,
                params=trainable_params(c.model, c.finetune), frozen=c.finetune.frozen, precision=tr.precision,
                checkpoint=checkpoint_policy_of(tr.checkpoint), memory_bytes=needed,
                memory_fits=needed <= self.cluster.node.gpu.memory_bytes, step=_stepper(c.costs, c.plan))
        return self.built[key]

    def runs(self, template: str, gpus: int) -> bool:
        """The template's plan runs on ``gpus`` GPUs and fits their memory."""
        try:
            return self.get(template, gpus).memory_fits
        except InfeasibleError:
            return False


def _service(name: str, sv: Serving, cluster: ClusterSpec, efficiency: Efficiency, where: str) -> Service:
    """A serving section as a job runs it: its replicas, and their steady state at its load (the serving twin)."""
    from twin.power.serving import device_avg_w     # the serving engine, only for a scenario with services
    from twin.serving.capacity import saturated_rate_per_s, sustained
    from twin.serving.deployment import memory_problem, replica
    from twin.serving.deployment import simulate as serve

    spec = serving_spec_of(sv)
    rep = replica(spec, cluster, ServingEfficiency.calibrated(), efficiency, where,
                  power_cap_factor(cluster.node.gpu, cluster.gpu_power_cap_w))
    if rep.profile is None and rep.devices > cluster.node.gpus:
        raise ScenarioError(f"{where}.parallelism", f"a replica of {rep.devices} GPUs spans nodes; a serving job's "
                            f"replicas run within one node of {cluster.node.gpus} GPUs")
    problem = memory_problem(spec, rep.memory)
    if problem:
        raise ScenarioError(where, f"does not fit: {problem}")
    run = serve(spec, rep)
    saturated = None if run.rate_per_s is None else saturated_rate_per_s(spec, rep)
    device = gpu_power(rep.gpu, cluster.gpu_power_cap_w)
    span = device.limit_w - device.idle_w
    activity = (device_avg_w(rep.gpu, run.engine, cluster.gpu_power_cap_w) - device.idle_w) / span if span else 0.0
    return Service(template=name, replicas=rep.replicas, devices_per_replica=rep.devices,
                   profile=rep.profile.name if rep.profile else None,
                   instances_per_gpu=rep.profile.instances if rep.profile else 1,
                   compute_share=rep.profile.compute_fraction if rep.profile else 1.0, activity=activity,
                   requests_per_s=run.requests_per_s, output_tokens_per_s=run.output_tokens_per_s,
                   ttft_p99_s=run.ttft_s.p99, tpot_p99_s=run.tpot_s.p99, slo_met=run.slo_met,
                   sustained=sustained(run.rate_per_s, saturated))


def _section(jobs: Jobs, i: int) -> tuple[str, Serving | Training, str]:
    """The ``i``-th listed job's template name, the section it runs, and where a serving section is written."""
    job = jobs.list[i]
    template = job.template or f"list[{i}]"
    section = job.serving or job.training or jobs.templates[template]
    return template, section, f"jobs.list[{i}].serving" if job.serving else f"jobs.templates.{template}"


def _engines(jobs: Jobs, services: dict[str, Service]) -> dict[str, tuple[str, int]]:
    """The engine profile each service runs and its replicas' tensor-parallel size, by its template."""
    sections = (_section(jobs, i) for i in range(len(jobs.list)))
    engines = {template: (section.engine.profile, section.parallelism.tensor)
               for template, section, _ in sections if isinstance(section, Serving)}
    return {name: engines[name] for name in services}


def _services(jobs: Jobs, cluster: ClusterSpec, efficiency: Efficiency) -> dict[str, Service]:
    """The listed serving jobs' services, each template once, up to the first that cannot run: ``_listed`` finds
    that one again and says why, in its place among the jobs."""
    out: dict[str, Service] = {}
    for i in range(len(jobs.list)):
        template, section, where = _section(jobs, i)
        if isinstance(section, Serving) and template not in out:
            try:
                out[template] = _service(template, section, cluster, efficiency, where)
            except Exception:  # noqa: BLE001 - raised again by _listed, in its place among the jobs
                break
    return out


def _fabric_and_services(jobs: Jobs, cluster: ClusterSpec,
                         efficiency: Efficiency) -> tuple[Fabric, FabricSummary, dict[str, Service]]:
    """The cluster's fabric and its summary, built here while a second core plays the listed serving jobs'
    engines (``_services``; twin/cores.py), when there are some."""
    def built() -> tuple[Fabric, FabricSummary]:
        fabric = Fabric(cluster_graph(cluster), efficiency)
        return fabric, CommModel.on_fabric(fabric, cluster, efficiency).summary()

    serving = any(isinstance(_section(jobs, i)[1], Serving) for i in range(len(jobs.list)))
    (fabric, summary), services = split_map(lambda work: work(), [built, lambda: _services(jobs, cluster, efficiency)],
                                            worth=serving)
    return fabric, summary, services


def _message(exc: ScenarioError) -> str:
    return str(exc)[len(exc.field) + 2:] if exc.field else str(exc)


def _listed(jobs: Jobs, shapes: _Shapes, services: dict[str, Service], gpn: int, work_gpus: int,
            warnings: list[str]) -> list[JobRequest]:
    out = []
    for i, job in enumerate(jobs.list):
        where = f"jobs.list[{i}]"
        template, section, serving_where = _section(jobs, i)
        if isinstance(section, Serving):
            if template not in services:
                services[template] = _service(template, section, shapes.cluster, shapes.efficiency, serving_where)
            out.append(JobRequest(name=job.name or f"job-{i + 1}", tenant=job.tenant, submit_s=job.submit,
                                  template=template, gpus=services[template].gpus, duration_s=job.duration,
                                  priority=job.priority, time_limit_s=job.time_limit or math.inf,
                                  deferrable=job.deferrable, origin="list"))
            continue
        if job.training is not None:
            shapes.templates[template] = job.training
        gpus = job.gpus if job.gpus is not None else job.nodes * gpn
        if gpus > work_gpus:
            raise ScenarioError(f"{where}.{'gpus' if job.gpus is not None else 'nodes'}",
                                f"{gpus} GPUs is more than the cluster's {work_gpus} (spares held back)")
        try:
            shape = shapes.get(template, gpus)
        except InfeasibleError as exc:
            raise ScenarioError(exc.field.replace("training", f"{where}.training" if job.training else
                                                  f"jobs.templates.{template}", 1),
                                f"{_message(exc)} (job {job.name or i + 1} on {gpus} GPUs)") from None
        if not shape.memory_fits:
            warnings.append(f"{where} ({job.name or template}): does not fit: needs "
                            f"{shape.memory_bytes / 2**30:.1f} GiB per GPU on {gpus} GPUs; run as written")
        tokens = None if job.duration is not None else shapes.templates[template].tokens
        out.append(JobRequest(name=job.name or f"job-{i + 1}", tenant=job.tenant, submit_s=job.submit,
                              template=template, gpus=gpus, tokens=tokens, duration_s=job.duration,
                              priority=job.priority, time_limit_s=job.time_limit or math.inf,
                              deferrable=job.deferrable, origin="list"))
    return out


def _training(jobs: Jobs) -> list[str]:
    """The training templates: generated and trace jobs draw among them."""
    return [name for name, t in jobs.templates.items() if isinstance(t, Training)]


def _mix(jobs: Jobs, shapes: _Shapes, gpus: int) -> tuple[tuple[str, float], ...]:
    """Training templates a size may run, with their weights (``jobs.mix``, equal by default)."""
    weights = jobs.mix or {name: 1.0 for name in _training(jobs)}
    return tuple((name, w) for name, w in weights.items() if shapes.runs(name, gpus))


def _why_none(jobs: Jobs, shapes: _Shapes, gpus: int) -> str:
    reasons = []
    for name in (jobs.mix or _training(jobs)):
        try:
            shape = shapes.get(name, gpus)
            reasons.append(f"{name} needs {shape.memory_bytes / 2**30:.0f} GiB per GPU")
        except InfeasibleError as exc:
            reasons.append(f"{name}: {_message(exc)}")
    return "; ".join(reasons)


def _generated(jobs: Jobs, shapes: _Shapes, work_gpus: int, rng: np.random.Generator) -> list[JobRequest]:
    g = jobs.generator
    for size in g.gpus:
        if size > work_gpus:
            raise ScenarioError(f"jobs.generator.gpus.{size}", f"more than the cluster's {work_gpus} GPUs "
                                "(spares held back)")
        if not _mix(jobs, shapes, size):
            raise ScenarioError(f"jobs.generator.gpus.{size}", f"no template runs on {size} GPUs: "
                                f"{_why_none(jobs, shapes, size)}")
    if jobs.trace is None:
        _every_template_runs(jobs, shapes)
    d = g.duration
    mean_gpus = sum(size * w for size, w in g.gpus.items()) / sum(g.gpus.values())
    check_generator_work(g.jobs, g.rate, mean_gpus * capped_lognormal_mean(
        d.median, d.sigma, d.max if d.max is not None else math.inf), work_gpus)
    spec = GeneratorSpec(jobs=g.jobs, rate_per_s=g.rate, sizes=tuple(g.gpus.items()), duration_median_s=d.median,
                         duration_sigma=d.sigma, duration_max_s=d.max if d.max is not None else math.inf,
                         tenants=tuple(g.tenants.items()), deferrable=g.deferrable, start_s=g.start,
                         time_limit_factor=g.time_limit)
    mixes = {size: _mix(jobs, shapes, size) for size in g.gpus}       # each job's draw reads its size's
    return generate(spec, mixes.__getitem__, rng)


def _every_template_runs(jobs: Jobs, shapes: _Shapes) -> None:
    """A template of the mix that runs on none of the generator's sizes would be dropped without a word."""
    sizes = list(jobs.generator.gpus)
    for name in jobs.mix or _training(jobs):
        if not any(shapes.runs(name, size) for size in sizes):
            key = f"jobs.mix.{name}" if jobs.mix else f"jobs.templates.{name}"
            raise ScenarioError(key, f"runs on none of the generator's sizes ({', '.join(map(str, sizes))} GPUs): "
                                f"{_why_none(jobs.model_copy(update={'mix': {name: 1.0}}), shapes, sizes[-1])}; leave it "
                                "out of jobs.mix, or add a size it runs on")


def _traced(jobs: Jobs, shapes: _Shapes, work_gpus: int, rng: np.random.Generator,
            warnings: list[str]) -> list[JobRequest]:
    rows = read_trace(jobs.trace)
    out, too_big, no_template = [], 0, 0
    draws = rng.random(len(rows))
    for row, draw in zip(rows, draws):
        if row.gpus > work_gpus:
            too_big += 1
            continue
        if row.template is not None:
            if row.template not in shapes.templates:
                raise ScenarioError("jobs.trace", f"'{jobs.trace}', line {row.line}, column template: "
                                    f"{row.template!r} is not a training template; training templates: "
                                    f"{', '.join(_training(jobs))}")
            if not shapes.runs(row.template, row.gpus):
                raise ScenarioError("jobs.trace", f"'{jobs.trace}', line {row.line}: template {row.template} does "
                                    f"not run on {row.gpus} GPUs: {_why_none(jobs, shapes, row.gpus)}")
            template = row.template
        else:
            options = _mix(jobs, shapes, row.gpus)
            if not options:
                no_template += 1
                continue
            weights = np.cumsum([w for _, w in options])
            template = options[min(int(np.searchsorted(weights / weights[-1], draw, side="right")),
                                   len(options) - 1)][0]
        out.append(JobRequest(name=row.name, tenant=row.tenant, submit_s=row.submit_s, template=template,
                              gpus=row.gpus, duration_s=row.duration_s, priority=row.priority,
                              time_limit_s=row.time_limit_s, deferrable=row.deferrable, origin="trace"))
    if too_big:
        warnings.append(f"jobs.trace: {too_big:,} jobs ask for more than the cluster's {work_gpus:,} GPUs "
                        "(spares held back): left out")
    if no_template:
        warnings.append(f"jobs.trace: {no_template:,} jobs have a size no template of jobs.mix runs on: left out")
    return out


def _grids(scenario: Scenario, site: SiteSpec, warnings: list[str]) -> list[CountryGrid]:
    """The site and compared countries: intensity (hour by hour where asked and shipped) and price."""
    carbon = scenario.jobs.carbon
    codes = [site.country, *site.compare]
    hourly = {}
    if carbon.hourly:
        hourly = {place.alpha2: hourly_shape(place.alpha2) for place in site_and_compared(codes)}
        missing = [c for c, shape in hourly.items() if shape is None]
        if missing:
            warnings.append(f"jobs.carbon.hourly: no hourly profile for {', '.join(missing)} (the catalog has "
                            "grid_hourly.yaml rows for a few countries): the annual average is used there")
    return country_grids(codes, hourly, site.carbon_intensity_g_per_kwh, site.electricity_price)


def _compared(run: ClusterRun, accounts: Accounts, base_run: ClusterRun, base_accounts: Accounts,
              grids: list[CountryGrid], pue: float, start_month: int) -> CarbonAware:
    """The carbon-aware run against the same jobs without the policy, both over the same span of the
    cluster's life (the idle cluster after the shorter run's end counts too)."""
    window = max(run.end_s, base_run.end_s)
    tail = idle_tail_kg(run, pue, grids, start_month, window)
    base_tail = idle_tail_kg(base_run, pue, grids, start_month, window)
    kg = {c: v + tail[c] for c, v in accounts.cluster.carbon_kg.items()}
    base_kg = {c: v + base_tail[c] for c, v in base_accounts.cluster.carbon_kg.items()}
    held = [j.carbon_hold_s for j in run.jobs if j.carbon_hold_s > 0]
    return CarbonAware(deferred_jobs=len(held), mean_hold_s=float(np.mean(held)) if held else 0.0, window_s=window,
                       carbon_kg=kg, baseline_carbon_kg=base_kg, saved_kg={c: base_kg[c] - kg[c] for c in kg},
                       mean_wait_s=waits(run.jobs).all.mean, baseline_mean_wait_s=waits(base_run.jobs).all.mean,
                       makespan_s=run.end_s, baseline_makespan_s=base_run.end_s)


def _sources(cluster: ClusterSpec, grids: list[CountryGrid], failures: FailurePolicy | None) -> dict[str, str]:
    sources = {"node": cluster.node.source, "gpu": cluster.node.gpu.source}
    for g in grids:
        year = f", {g.intensity_year}" if g.intensity_year else ""
        sources[f"carbon_intensity.{g.code}"] = g.intensity_source + year
        if g.hourly:
            sources[f"hourly_carbon.{g.code}"] = g.shape.source
        sources[f"electricity_price.{g.code}"] = g.price_source
    if failures is not None:
        sources["failures"] = failures.profile
    return sources


def simulate_operations(scenario: Scenario) -> OperationsResult:
    """Answer a ``jobs:`` scenario: the jobs on the shared cluster, and what they cost."""
    jb, carbon = scenario.jobs, scenario.jobs.carbon
    cluster = cluster_of(scenario.cluster)
    efficiency = Efficiency.calibrated(scenario.efficiency)
    warnings: list[str] = []
    shapes = _Shapes(cluster, efficiency, {k: t for k, t in jb.templates.items() if isinstance(t, Training)}, {}, {})
    seeds = np.random.SeedSequence(jb.seed).spawn(2)
    fabric, summary, services = _fabric_and_services(jb, cluster, efficiency)
    requests = _listed(jb, shapes, services, cluster.node.gpus, cluster.work_gpus, warnings)
    if jb.generator is not None:
        requests += _generated(jb, shapes, cluster.work_gpus, np.random.default_rng(seeds[0]))
    if jb.trace is not None:
        requests += _traced(jb, shapes, cluster.work_gpus, np.random.default_rng(seeds[1]), warnings)
    if not requests:
        raise ScenarioError("jobs", "no job left to run (see the warnings: every trace job was left out)")
    check_queue_work(requests, cluster.work_gpus, "jobs.generator" if jb.generator is not None else "jobs")

    site = site_of(scenario.site, cluster.node)
    grids = _grids(scenario, site, warnings)
    site_clock = CarbonClock(grids[0].shape, carbon.start_month) if carbon.aware and grids[0].hourly else None
    if carbon.aware and site_clock is None:
        warnings.append("jobs.carbon.aware: the site has no hourly profile (set jobs.carbon.hourly with a country "
                        "of grid_hourly.yaml): no job is held")
    infra_w = infrastructure(cluster, summary).total_w
    power = node_power(cluster.node, cluster.gpu_power_cap_w)
    steps = StepTimes(cluster, efficiency, fabric)
    policy = Policy(jb.scheduler.policy, jb.scheduler.placement, jb.scheduler.depth,
                    tuple(jb.scheduler.fair_share.items()), jb.scheduler.half_life)
    held = jb.scheduler.reservation
    spec = OperationsSpec(policy=policy, horizon_s=jb.horizon, seed=scenario.failures.seed,
                          hold=(held.job, held.start) if held else None, max_delay_s=carbon.max_delay)
    failures = failure_policy_of(scenario.failures, scenario.cluster) if scenario.failures.enabled else None

    def play(clock: CarbonClock | None, built: dict | None = None) -> tuple[ClusterRun, Accounts]:
        times = steps if built is None else steps.repriced()       # the edge's steps priced anew, per edge
        run = simulate_cluster(cluster, times, requests, shapes.built if built is None else built, services, spec,
                               failures, power, infra_w, clock)
        return run, account(run, site.pue, grids, carbon.start_month, site.price)

    aware = None
    if site_clock is None:
        run, accounts = play(None)
    else:       # the carbon-aware play here, the same jobs without the policy on a second core (twin/cores.py)
        (run, accounts), baseline = split_map(play, [site_clock, None], worth=True)
        aware = _compared(run, accounts, *baseline, grids, site.pue, carbon.start_month)
    use = power_use(run, site.pue, jb.power_limit)
    _warn(run, use, jb, warnings)
    result = OperationsResult(
        scenario=scenario.name, cluster=cluster, fabric=summary, policy=policy.name, placement=policy.placement,
        horizon_s=jb.horizon, seed=jb.seed, run=run, accounts=accounts, waits=waits(run.jobs),
        completion=completion(run.jobs), utilisation=utilisation(run), power=use, timeline=timeline(run, site.pue),
        carbon_aware=aware, failures_enabled=failures is not None, country=grids[0].code, services=services,
        warnings=warnings, sources=_sources(cluster, grids, failures))
    bands = template_bands(scenario, cluster.node.gpu.name, shapes.templates, _engines(jb, services))
    return played_at_edges(result, bands, shapes.built, lambda built: play(site_clock, built), site.pue, jb.power_limit)


def _warn(run: ClusterRun, use: PowerUse, jb: Jobs, warnings: list[str]) -> None:
    """Jobs the horizon stopped, and facility power above the limit."""
    unfinished = sum(j.status == "unfinished" for j in run.jobs)
    if unfinished:
        warnings.append(f"{unfinished:,} jobs had not finished at the {fmt_duration(jb.horizon)} horizon "
                        "(jobs.horizon): their waits and energy stop there")
    if jb.power_limit is not None and use.hours_over_limit > 0:
        warnings.append(f"facility power above jobs.power_limit for {use.hours_over_limit:,.1f} h "
                        f"(peak {use.peak_facility_w / 1e6:.2f} MW against {jb.power_limit / 1e6:.2f} MW)")
