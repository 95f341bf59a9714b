"""GPU-hour list prices of public clouds, from ``catalog/data/prices.yaml``.

A provider's price for a GPU is its instance price divided by the instance's GPUs
(the cheapest of its rows for that GPU when it lists several); ``list`` is the median
of every provider's on-demand price for the GPU, in euros. A price written in the
scenario (``site.gpu_hour_price: 2.50 USD/GPU-h``) is used instead of the table.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from twin import catalog
from twin.errors import ScenarioError, did_you_mean
from twin.power.country import to_eur

# The keyword for the median of the on-demand list prices of a GPU.
LIST = "list"


@dataclass(frozen=True)
class GPUHourPrice:
    amount: float                # per GPU-hour
    currency: str
    source: str


def providers() -> list[str]:
    """Provider names of the price table, in file order."""
    return list(dict.fromkeys(row["provider"] for row in catalog.table("prices").values()))


def listed_gpus() -> set[str]:
    """The GPUs with at least one on-demand price in the table (``list`` has a median for them)."""
    return {row["gpu"] for row in catalog.table("prices").values() if row["offer"] == "on-demand"}


def _per_gpu_hour(row: dict) -> float:
    return float(row["price"]) / int(row["gpus"])


def gpu_hour_price(gpu: str, provider: str, field: str = "site.gpu_hour_price") -> GPUHourPrice:
    """What ``provider`` (or ``list``: the median of on-demand prices) charges per hour of one ``gpu``."""
    rows = [r for r in catalog.table("prices").values() if r["gpu"] == gpu]
    if provider == LIST:
        offers = [r for r in rows if r["offer"] == "on-demand"]
        if not offers:
            raise ScenarioError(field, f"'{LIST}': the price table lists no on-demand price for {gpu}; write a "
                                "price (e.g. '2.50 USD/GPU-h')")
        euros = [to_eur(_per_gpu_hour(r), r["currency"], f"catalog prices ({r['instance']})") for r in offers]
        names = ", ".join(f"{r['provider']} {r['instance']}" for r in offers)
        which = (f"median of {len(offers)} on-demand list prices" if len(offers) > 1
                 else "the one on-demand list price")
        return GPUHourPrice(statistics.median(euros), "EUR", f"{which} of {gpu} ({names}; catalog prices.yaml)")
    known = providers()
    if provider not in known:
        raise ScenarioError(field, f"unknown provider '{provider}'{did_you_mean(provider, known + [LIST])}; "
                            f"known: {', '.join(known + [LIST])}, or a price such as '2.50 USD/GPU-h'")
    own = [r for r in rows if r["provider"] == provider]
    if not own:
        listed = sorted({r["provider"] for r in rows})
        raise ScenarioError(field, f"{provider} lists no {gpu} in the price table"
                            + (f"; providers with {gpu}: {', '.join(listed)}" if listed else "")
                            + "; write a price (e.g. '2.50 USD/GPU-h')")
    row = min(own, key=_per_gpu_hour)
    return GPUHourPrice(_per_gpu_hour(row), row["currency"],
                        f"{row['source']}: {row['instance']} at {row['price']} {row['currency']}/h for {row['gpus']} "
                        f"GPUs, {row['date']}")
