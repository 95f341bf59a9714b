"""Hosted API prices per million tokens (catalog ``api_prices.yaml``) against self-hosting the same model.

An API charges ``input tokens × input price + output tokens × output price``. For a workload that
reads ``k`` input tokens per output token, the API's charge per million output tokens is::

    A = k · input price + output price

and self-hosting's is the deployment's whole cost over the time it takes to produce a million
output tokens (GPU time as the site pays for it, plus electricity: ``power/serving.py``), ``C``.
A deployment's cost per hour hardly moves with its load (its GPUs are held either way), so at a
fraction of its capacity ``R`` it costs the same per hour and ``C`` grows as the rate falls:
self-hosting is cheaper from the arrival rate ``R · C / A`` up (its break-even rate), and never
with this deployment when ``C > A`` at capacity.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin import catalog
from twin.power.country import to_eur


@dataclass(frozen=True)
class ApiPrice:
    """One hosted API's price for a catalog model, in euros per million tokens."""
    name: str
    provider: str
    model: str
    input_eur_per_million: float
    output_eur_per_million: float
    date: str
    source: str


@dataclass(frozen=True)
class ApiComparison:
    """Self-hosting against one API for the same workload, per million output tokens."""
    api: ApiPrice
    api_eur_per_million_output: float          # A: the API's charge for the workload's mix
    self_hosted_eur_per_million_output: float  # C
    cheaper: str                               # self-hosted | api
    break_even_rate_per_s: float | None        # R · C / A, where the capacity R is known and C ≤ A


def api_prices(model: str) -> list[ApiPrice]:
    """The catalog's API prices for ``model``, in file order."""
    out = []
    for name, row in catalog.table("api_prices").items():
        if row["model"] != model:
            continue
        where = f"catalog api_prices ({name})"
        out.append(ApiPrice(name, row["provider"], row["model"],
                            to_eur(float(row["input_per_million"]), row["currency"], where),
                            to_eur(float(row["output_per_million"]), row["currency"], where),
                            str(row["date"]), row["source"]))
    return out


def compare_apis(model: str, input_per_output_token: float, self_hosted_eur_per_million_output: float,
                 capacity_rate_per_s: float | None = None) -> list[ApiComparison]:
    """Self-hosting at ``self_hosted_eur_per_million_output`` against each API that serves ``model``;
    with the deployment's ``capacity_rate_per_s``, the rate from which self-hosting is cheaper."""
    out = []
    for api in api_prices(model):
        charge = input_per_output_token * api.input_eur_per_million + api.output_eur_per_million
        own = self_hosted_eur_per_million_output
        cheaper = "self-hosted" if own <= charge else "api"
        even = None
        if capacity_rate_per_s is not None and charge > 0 and own <= charge:
            even = capacity_rate_per_s * own / charge
        out.append(ApiComparison(api, charge, own, cheaper, even))
    return out
