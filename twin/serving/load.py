"""Requests: arrival times and token counts, drawn from the scenario's seeded generator."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from twin.serving.specs import LengthSpec, LoadSpec


@dataclass(frozen=True)
class Requests:
    arrival_s: np.ndarray        # sorted
    input_tokens: np.ndarray     # int
    output_tokens: np.ndarray    # int

    def __len__(self) -> int:
        return len(self.arrival_s)


def lengths(spec: LengthSpec, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` token counts: fixed, exponential or lognormal with the given mean, clipped to [1, max]."""
    if spec.distribution == "fixed":
        drawn = np.full(count, spec.mean)
    elif spec.distribution == "exponential":
        drawn = rng.exponential(spec.mean, count)
    else:  # lognormal with this mean: mu = ln(mean) - sigma²/2
        drawn = rng.lognormal(math.log(spec.mean) - spec.sigma**2 / 2, spec.sigma, count)
    return np.clip(np.rint(drawn), 1, spec.max).astype(np.int64)


def requests(load: LoadSpec, count: int, rate_per_s: float | None) -> Requests:
    """``count`` requests at ``rate_per_s`` (Poisson), or all at t = 0 when the rate is None."""
    rng = np.random.default_rng(load.seed)
    inputs = lengths(load.input_tokens, count, rng)
    outputs = lengths(load.output_tokens, count, rng)
    if rate_per_s is None:
        arrivals = np.zeros(count)
    else:
        arrivals = np.cumsum(rng.exponential(1.0 / rate_per_s, count))
    return Requests(arrivals, inputs, outputs)
