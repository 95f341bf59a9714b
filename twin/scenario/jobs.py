"""``jobs:``: many jobs sharing the cluster, used instead of ``training:`` (docs/scenario.md, "jobs").

Templates are training sections; jobs name one, or write their own. The jobs come
from a list, a generator and a trace file, in any combination. Rules that need the
hardware (a template's plan on a job's GPUs, its memory) are checked by the API
with the same one-line messages.
"""

import typing
from typing import Annotated, Any, Union

from pydantic import Discriminator, Tag, model_validator

from twin.errors import ScenarioError, did_you_mean
from twin.options import Placement, SchedulerPolicy
from twin.scenario.fields import Flag, Strict, name_text, number, shown
from twin.scenario.serving import Serving
from twin.scenario.training import Training

# Limits (docs/scenario.md, "Limits").
Time = number("time", ge="0 s", le="36500 d", why="a century")
Duration = number("time", gt="0 s", le="36500 d", why="a century")
Weight = number(gt="0", le="1e9", why="a relative weight")
GPUs = number(integer=True, ge="1", le="262144", why="every GPU of the largest cluster cluster.nodes allows")
Nodes = number(integer=True, ge="1", le="32768", why="as cluster.nodes")
Horizon = number("time", gt="1 h", le="36500 d", why="the longest span the cluster simulation covers")
PowerLimit = number("power", gt="0 W", le="10 GW", why="above the largest data-centre campuses announced")
Name = name_text(80)
# A scenario lists at most this many jobs itself; a generator or a trace holds more.
MAX_LISTED_JOBS = 10_000
# Jobs a generator draws: a year of a busy cluster at ten submissions an hour is 87,600.
MAX_GENERATED_JOBS = 100_000
Priority = number(integer=True, ge="0", le="1000000", why="a relative priority")
LogSigma = number(ge="0", le="4", why="standard deviation of the log; 4 spans eight decades")
GeneratedJobs = number(integer=True, ge="1", le=str(MAX_GENERATED_JOBS),
                       why="a year of a busy cluster at ten submissions an hour is 87,600")
ArrivalRate = number("rate", gt="0/s", le="1/s", why="a submission a second, 3,600 an hour")
Share = number(ge="0", le="1", why="a share of the jobs")
TimeLimitFactor = number(ge="1", le="1000", why="a multiple of the job's duration")
BackfillDepth = number(integer=True, ge="1", le="100000", why="jobs a backfill pass tests; SLURM's default is 100")
HalfLife = number("time", gt="0 s", le="3650 d", why="decay of past usage; SLURM's default is 7 days")
Month = number(integer=True, ge="1", le="12", why="January to December")
MaxDelay = number("time", gt="0 s", le="30 d", why="a hold beyond a month is no deferral")
TracePath = name_text(4096)
Seed = number(integer=True, ge="0", le="18446744073709551615", why="a 64-bit seed")


def _template_kind(value: Any) -> str:
    return "serving-template" if isinstance(value, dict) and "load" in value else "training-template"


# A training section, or a serving one (it has a load): a job trains, or serves for its duration.
Template = Annotated[Union[Annotated[Training, Tag("training-template")], Annotated[Serving, Tag("serving-template")]],
                     Discriminator(_template_kind)]


class Job(Strict):
    """One job of the list: what it runs, how big, when, for whom."""
    name: Name | None = None
    tenant: Name = "default"
    submit: Time = 0.0
    template: Name | None = None
    training: Training | None = None
    serving: Serving | None = None         # a deployment that serves for the job's duration
    gpus: GPUs | None = None
    nodes: Nodes | None = None
    duration: Duration | None = None       # the run time alone, packed, without failures (default: its tokens)
    priority: Priority = 0
    time_limit: Duration | None = None
    deferrable: Flag = False

    @model_validator(mode="after")
    def _one_workload(self) -> "Job":
        if sum(x is not None for x in (self.template, self.training, self.serving)) != 1:
            raise ValueError("write template (a jobs.templates name), training or serving (a section of its own), "
                             "one of them")
        if self.gpus is not None and self.nodes is not None:
            raise ValueError("write gpus or nodes, not both")
        return self


class Durations(Strict):
    """Log-normal run times (alone, packed, without failures), capped at ``max``."""
    median: Duration
    sigma: LogSigma = 1.0
    max: Duration | None = None


class Generator(Strict):
    jobs: GeneratedJobs
    rate: ArrivalRate
    gpus: dict[GPUs, Weight]               # job size in GPUs → relative weight
    duration: Durations
    tenants: dict[Name, Weight] = {"default": 1.0}
    deferrable: Share = 0.0
    start: Time = 0.0                      # no arrival before this
    time_limit: TimeLimitFactor | None = None

    @model_validator(mode="after")
    def _bounded(self) -> "Generator":
        if not self.gpus:
            raise ValueError("gpus: write at least one size, e.g. {8: 1}")
        if len(self.gpus) > 1000 or len(self.tenants) > 1000:
            raise ValueError("at most 1,000 sizes and 1,000 tenants")
        if not self.tenants:
            raise ValueError("tenants: write at least one tenant")
        return self


class Reservation(Strict):
    """Nodes held for one listed job from a start time (a hero run)."""
    job: Name
    start: Time


class Scheduler(Strict):
    policy: SchedulerPolicy = "backfill"
    placement: Placement = "topology"
    depth: BackfillDepth = 100
    fair_share: dict[Name, Weight] = {}    # tenant → share (default: equal)
    half_life: HalfLife = 7 * 86400.0
    reservation: Reservation | None = None


class Carbon(Strict):
    hourly: Flag = False                   # hourly profiles where the catalog has one (grid_hourly.yaml)
    start_month: Month = 1
    aware: Flag = False                    # hold deferrable jobs for cleaner hours
    max_delay: MaxDelay = 12 * 3600.0


class Jobs(Strict):
    templates: dict[Name, Template]
    mix: dict[Name, Weight] = {}           # template weights for generated and trace jobs (default: equal)
    generator: Generator | None = None
    trace: TracePath | None = None   # a CSV file (docs/operations.md, "Traces"), relative to the scenario
    scheduler: Scheduler = Scheduler()
    horizon: Horizon = 365 * 86400.0
    seed: Seed = 0
    power_limit: PowerLimit | None = None
    carbon: Carbon = Carbon()
    list: typing.List[Job] = []            # noqa: A003 - the scenario key a user writes

    @model_validator(mode="after")
    def _bounded(self) -> "Jobs":
        if not self.templates:
            raise ValueError("templates: write at least one training section")
        if len(self.templates) > 100:
            raise ValueError(f"templates: {len(self.templates)} is too many: at most 100")
        if len(self.list) > MAX_LISTED_JOBS:
            raise ValueError(f"list: {len(self.list):,} jobs is too many here: at most {MAX_LISTED_JOBS:,} "
                             "(write a trace file for more)")
        if not self.list and self.generator is None and self.trace is None:
            raise ValueError("no jobs: write list, generator or trace")
        return self


def check_jobs(jobs: Jobs) -> None:
    """Names that refer to each other (templates, the mix, job names, the reservation) and what each kind
    of job needs: a training job its size, a serving job its replicas and duration."""
    known = ", ".join(jobs.templates)
    for name, template in jobs.templates.items():
        if isinstance(template, Serving):
            _check_service(template, f"jobs.templates.{name}")
    for name in jobs.mix:
        if name not in jobs.templates:
            raise ScenarioError(f"jobs.mix.{name}", f"unknown template{did_you_mean(name, jobs.templates)}; "
                                f"templates: {known}")
        if isinstance(jobs.templates[name], Serving):
            raise ScenarioError(f"jobs.mix.{name}", "a serving template: generated and trace jobs train (their size "
                                "is in GPUs); list serving jobs in jobs.list")
    if not jobs.mix and (jobs.generator is not None or jobs.trace is not None) and \
            all(isinstance(t, Serving) for t in jobs.templates.values()):
        raise ScenarioError("jobs.templates", "generated and trace jobs need a training template; every template "
                            "here serves")
    names: set[str] = set()
    for i, job in enumerate(jobs.list):
        where = f"jobs.list[{i}]"
        if job.template is not None and job.template not in jobs.templates:
            raise ScenarioError(f"{where}.template", f"unknown template {shown(job.template)}"
                                f"{did_you_mean(job.template, jobs.templates)}; templates: {known}")
        if job.serving is not None:
            _check_service(job.serving, f"{where}.serving")
        serves = job.serving is not None or isinstance(jobs.templates.get(job.template), Serving)
        if serves and (job.gpus is not None or job.nodes is not None):
            raise ScenarioError(f"{where}.{'gpus' if job.gpus is not None else 'nodes'}",
                                "a serving job's size is its template's replicas; leave gpus and nodes out")
        if serves and job.duration is None:
            raise ScenarioError(f"{where}.duration", "is required for a serving job: how long it serves")
        if not serves and job.gpus is None and job.nodes is None:
            raise ScenarioError(where, "write gpus or nodes: the size of the training job")
        if job.name is not None:
            if job.name in names:
                raise ScenarioError(f"{where}.name", f"{shown(job.name)} names an earlier job too; "
                                    "job names are unique")
            names.add(job.name)
    held = jobs.scheduler.reservation
    if held is not None and held.job not in names:
        raise ScenarioError("jobs.scheduler.reservation.job", f"{shown(held.job)} is not the name of a job of "
                            "jobs.list" + did_you_mean(held.job, sorted(names)))
    hero = next((job for job in jobs.list if held is not None and job.name == held.job), None)
    if hero is not None and (hero.serving is not None or isinstance(jobs.templates.get(hero.template), Serving)):
        raise ScenarioError("jobs.scheduler.reservation.job", f"{shown(held.job)} serves; a reservation holds "
                            "nodes for a training job")


def _check_service(sv: Serving, where: str) -> None:
    if sv.replicas == "auto":
        raise ScenarioError(f"{where}.replicas", "auto is not allowed in jobs: write how many replicas the job runs "
                            "(the cluster is shared)")
    if sv.compare:
        raise ScenarioError(f"{where}.compare", "is not allowed in jobs: a job runs one deployment")
