"""Predict every validation case and measure the error.

error = predicted / published - 1; a group's MAPE is the mean of |error| over
its cases. A case that cannot run is reported as failed, not silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from twin import catalog
from twin.cores import one_core
from twin.api import build, parse_scenario, simulate
from twin.errors import ScenarioError, TwinError
from twin.units import parse_quantity
from twin.validation.cases import Case, deep_merge
from twin.validation.metrics import METRICS
from twin.workload.placement import GroupShape

# Collectives a case may measure (bus bandwidth as nccl-tests reports it).
COLLECTIVE_OPS = ("all_reduce", "reduce_scatter", "all_gather")


@dataclass(frozen=True)
class Outcome:
    case: Case
    predicted: float | None
    status: str = "ok"             # ok | failed
    detail: str = ""

    @property
    def error(self) -> float | None:
        """Signed relative error, predicted / published - 1."""
        if self.predicted is None:
            return None
        return self.predicted / self.case.published - 1.0


@dataclass(frozen=True)
class GroupStat:
    name: str
    role: str                      # calibration | check | mixed
    cases: int
    mape: float                    # fraction
    worst: str                     # id of the case with the largest |error|
    worst_error: float


@dataclass(frozen=True)
class Summary:
    groups: list[GroupStat]
    throughput_mape: dict[str, float] = field(default_factory=dict)   # calibration / check / all
    throughput_cases: dict[str, int] = field(default_factory=dict)
    overall_mape: float = 0.0      # every evaluated case, every metric
    failed: list[str] = field(default_factory=list)
    beyond_20: list[str] = field(default_factory=list)
    beyond_tolerance: list[str] = field(default_factory=list)   # cases with a stated tolerance they miss
    by_gpu: dict[str, tuple[int, float]] = field(default_factory=dict)    # check throughput: (cases, MAPE)


def _scenario(case: Case, efficiency: dict[str, float] | None) -> dict[str, Any]:
    data = dict(case.scenario)
    data.setdefault("name", case.id)
    if efficiency:
        data = deep_merge(data, {"efficiency": dict(efficiency)})
    return data


def _busbw_GBps(case: Case, efficiency: dict[str, float] | None) -> float:
    spec = case.collective or {}
    where = f"{case.id}.collective"
    op = spec.get("op", "all_reduce")
    if op not in COLLECTIVE_OPS:
        raise ScenarioError(f"{where}.op", f"{op!r} is not allowed; allowed: {', '.join(COLLECTIVE_OPS)}")
    ranks = int(spec["ranks"])
    group = GroupShape(ranks, int(spec.get("ranks_per_node", ranks)))
    size_bytes = parse_quantity(spec.get("size", "1 GiB"), "bytes", f"{where}.size")
    built = build(parse_scenario(_scenario(case, efficiency), case.id))
    return built.comm.busbw_Bps(group, op, size_bytes, spec.get("algorithm")) / 1e9      # GB/s


def run_case(case: Case, efficiency: dict[str, float] | None = None, closed_form: bool = False) -> Outcome:
    """Predict one case, optionally with efficiency overrides (the calibration's trial values).

    ``closed_form`` plays the step with the analytic schedule instead of the
    discrete-event engine: faster, for the inner loop of a fit.
    """
    metric = METRICS[case.metric]
    try:
        if metric.kind == "collective":
            value = _busbw_GBps(case, efficiency)
        else:
            scenario = parse_scenario(_scenario(case, efficiency), case.id)
            result = simulate(scenario, closed_form=closed_form)
            value = metric.extract(result)
    except TwinError as exc:
        return Outcome(case, None, "failed", str(exc))
    except Exception as exc:  # noqa: BLE001 - one broken case must not hide the others' results
        return Outcome(case, None, "failed", f"{type(exc).__name__}: {exc}")
    return Outcome(case, float(value))


def run_cases(cases: list[Case], efficiency: dict[str, float] | None = None,
              closed_form: bool = False, workers: int = 1) -> list[Outcome]:
    """Predict every case, in ``workers`` processes when more than one (cases are independent)."""
    if workers <= 1 or len(cases) < 2:
        return [run_case(c, efficiency, closed_form) for c in cases]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers, initializer=one_core) as pool:    # a process per core
        return list(pool.map(run_case, cases, [efficiency] * len(cases), [closed_form] * len(cases)))


def _mape(outcomes: list[Outcome]) -> float:
    errors = [abs(o.error) for o in outcomes if o.error is not None]
    return sum(errors) / len(errors) if errors else float("nan")


def _gpu(case: Case) -> str:
    """The GPU a case runs on (catalog name), from its node."""
    node = case.scenario.get("cluster", {}).get("node", "")
    return str(catalog.table("nodes").get(node, {}).get("gpu", node or "unknown"))


def summarize(outcomes: list[Outcome]) -> Summary:
    """MAPE per group, per role (throughput figures), and over every evaluated case."""
    done = [o for o in outcomes if o.status == "ok"]
    groups = []
    for name in dict.fromkeys(o.case.group for o in done):
        members = [o for o in done if o.case.group == name]
        roles = {o.case.role for o in members}
        worst = max(members, key=lambda o: abs(o.error))
        groups.append(GroupStat(name, roles.pop() if len(roles) == 1 else "mixed", len(members),
                                _mape(members), worst.case.id, worst.error))
    through: dict[str, float] = {}
    counts: dict[str, int] = {}
    for role in ("calibration", "check"):
        members = [o for o in done if o.case.throughput and o.case.role == role]
        through[role], counts[role] = _mape(members), len(members)
    members = [o for o in done if o.case.throughput]
    through["all"], counts["all"] = _mape(members), len(members)
    by_gpu: dict[str, tuple[int, float]] = {}
    checks = [o for o in done if o.case.throughput and o.case.role == "check"]
    for gpu in sorted({_gpu(o.case) for o in checks}):
        members = [o for o in checks if _gpu(o.case) == gpu]
        by_gpu[gpu] = (len(members), _mape(members))
    return Summary(
        by_gpu=by_gpu,
        groups=groups, throughput_mape=through, throughput_cases=counts, overall_mape=_mape(done),
        failed=[o.case.id for o in outcomes if o.status == "failed"],
        beyond_20=[o.case.id for o in done if abs(o.error) > 0.20],
        beyond_tolerance=[o.case.id for o in done if o.case.tolerance is not None and abs(o.error) > o.case.tolerance],
    )
