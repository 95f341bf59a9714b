"""Validation: the twin against published training runs.

Each case (``cases/*.yaml``) is a published measurement — a training run's
throughput or iteration time, an NCCL bus bandwidth, a cluster's power, a
failure rate — with the scenario that reproduces its setup, the figure, the
metric it is compared on, its source, a group, and a role: ``calibration``
(used by ``benchmarks/calibrate.py`` to fit the named efficiencies) or
``check`` (never fitted on). ``run_cases`` predicts every case and
``summarize`` gives the mean absolute percentage error (MAPE) per group and
per role. ``python -m twin validate`` prints the report.
"""

from twin.validation.cases import Case, load_cases
from twin.validation.runner import Outcome, Summary, run_case, run_cases, summarize

__all__ = ["Case", "Outcome", "Summary", "load_cases", "run_case", "run_cases", "summarize"]
