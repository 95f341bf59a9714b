"""Data preparation as a job before training: tokenising or filtering N bytes of text on M CPU cores.

    time_s   = N / (M · r)            r: bytes per second one core processes (per kind of work)
    energy_j = M · P_core · time_s    P_core: a server's power shared over its cores
    cost     = M · time_s / 3600 · price per core-hour   (when a price is given)

Runs on a Spark or Ray cluster scale out across cores with no shared state (tokenising and
filtering are embarrassingly parallel over documents), so the rate per core is taken as constant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from twin.units import SECONDS_PER_HOUR

PrepareKind = Literal["tokenize", "filter", "deduplicate"]

# Bytes of raw text one CPU core processes per second.
# tokenize: Hugging Face tokenizers README: "less than 20 seconds to tokenize a GB of text on a
#   server's CPU" (huggingface/tokenizers, 2020-2024) = 50 MB/s per server, taken over 16 cores
#   (estimate: the README does not state the core count) -> 3.1 MB/s per core.
# filter: (estimate) heuristic quality filters and language ID of CCNet/FineWeb-style pipelines
#   run several times slower than tokenising: 1 MB/s per core.
# deduplicate: (estimate) MinHash signatures with 5-gram shingles and LSH bands: 0.5 MB/s per core.
PREPARE_BYTES_PER_CORE_S: dict[str, float] = {"tokenize": 50e6 / 16, "filter": 1e6, "deduplicate": 0.5e6}
# Power per CPU core (vCPU) of a loaded server: a 2-socket Xeon Platinum 8480C server (2 x 350 W TDP,
# Intel ARK) with memory, disks and fans at about twice the CPUs' power, over its 224 threads
# (estimate) -> 6.25 W per vCPU.
WATTS_PER_VCPU = 2 * 2 * 350.0 / 224


@dataclass(frozen=True)
class PrepareJob:
    """One data-preparation job and what it costs."""
    kind: PrepareKind
    input_bytes: float
    cores: int
    rate_Bps_per_core: float
    time_s: float
    energy_j: float
    cost: float | None                    # in the price's currency, when a price per core-hour is given


def prepare_job(kind: str, input_bytes: float, cores: int, price_per_core_hour: float | None = None,
                rate_Bps_per_core: float | None = None, watts_per_core: float = WATTS_PER_VCPU) -> PrepareJob:
    """Time, energy and cost of preparing ``input_bytes`` on ``cores`` cores (module docstring)."""
    rate = PREPARE_BYTES_PER_CORE_S[kind] if rate_Bps_per_core is None else rate_Bps_per_core
    time_s = input_bytes / (cores * rate)
    energy = cores * watts_per_core * time_s
    cost = None if price_per_core_hour is None else cores * time_s / SECONDS_PER_HOUR * price_per_core_hour
    return PrepareJob(kind, input_bytes, cores, rate, time_s, energy, cost)
