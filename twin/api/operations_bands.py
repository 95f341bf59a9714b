"""The error band of a ``jobs:`` record: each template's band, propagated by playing the cluster again.

A training template's band comes from the validation cases nearest to its stack on the cluster's GPU, a
serving template's from the serving engine's (or both from the site profile): the same bands as a run of
that template alone (``twin.api.bands``). The band of a queue's numbers cannot be read off one factor (a
job that runs longer delays the jobs behind it, a job of fixed duration does not move at all), so the
cluster is played twice more, with every job's step at the fast edge (step ÷ factor) and at the slow edge
(step × factor) of its template's band; each headline number's band runs from its lowest to its highest
value over the three runs (docs/calibrate.md, "Error bands").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from twin.api.bands import calibration_of
from twin.bands import Calibration, Edges
from twin.cores import split_map
from twin.engine.step import StepBreakdown
from twin.network.collectives import CommModel
from twin.operations.accounting import Accounts
from twin.operations.cluster import ClusterRun
from twin.operations.jobs import PricedStep, Shape
from twin.operations.metrics import completion, power_use, utilisation, waits
from twin.results import OperationsResult
from twin.results.core import serialise
from twin.results.operations import HEADLINE_FIELDS
from twin.scenario import Scenario, Training
from twin.serving.profiles import engine_family
from twin.workload.placement import Placement

# How the edges are played, as the record's ``band.method`` says it.
METHOD = ("the cluster played again with every job's step at the fast and at the slow edge of its "
          "template's band; each number from its lowest to its highest value over the three runs")

Play = Callable[[dict[tuple[str, int], Shape]], tuple[ClusterRun, Accounts]]


def template_bands(scenario: Scenario, gpu: str, trainings: dict[str, Training],
                   services: dict[str, tuple[str, int]]) -> dict[str, Calibration]:
    """Each job template's band: its stack's on ``gpu`` for training, its serving engine's at its tensor-parallel
    size for a service (``services``: each service's engine profile and tensor-parallel size, by its template)."""
    bands = {}
    for name, training in trainings.items():
        bands[name] = calibration_of(scenario, "training", gpu, training.stack_name)
    for name, (profile, tensor) in services.items():
        bands[name] = calibration_of(scenario, "serving", gpu, engine_family(profile), tensor)
    return bands


def _scaled(step: StepBreakdown, factor: float) -> StepBreakdown:
    """Every time of ``step`` × ``factor``: the same step, its shares unchanged, at another speed."""
    return replace(step, **{f.name: getattr(step, f.name) * factor for f in dataclasses.fields(step)
                            if f.name.endswith("_s")})


def _at_edge(shape: Shape, factor: float) -> Shape:
    price = shape.step

    def step(comm: CommModel, placement: Placement) -> PricedStep:
        return _scaled(price(comm, placement), factor)
    return replace(shape, step=step)


def played_at_edges(result: OperationsResult, bands: dict[str, Calibration], built: dict[tuple[str, int], Shape],
                    play: Play, pue: float, power_limit_w: float | None) -> OperationsResult:
    """``result`` with its templates' bands, and the runs at their fast and slow edges to be played when a
    record asks for them (``OperationsResult.edges``): one edge here, the other on a second core
    (``twin/cores.py``), each sending back its headline numbers alone."""
    def edge(sign: int) -> dict[str, Any]:
        """The headline numbers of the jobs played at the fast (``sign`` −1) or the slow (+1) edge."""
        shapes = {key: _at_edge(shape, bands[shape.template].band.factor ** sign) for key, shape in built.items()}
        run, accounts = play(shapes)
        played = replace(result, run=run, accounts=accounts, waits=waits(run.jobs), completion=completion(run.jobs),
                         utilisation=utilisation(run), power=power_use(run, pue, power_limit_w), carbon_aware=None,
                         warnings=[], play_edges=None)
        return serialise(played, played.layout, HEADLINE_FIELDS)

    def edges() -> tuple[dict[str, Any], ...]:
        return tuple(split_map(edge, (-1, 1), worth=True))
    return replace(result, band=Edges(bands, METHOD), play_edges=edges)
