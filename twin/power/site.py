"""Where a cluster runs: the site's country, facility and prices, as the power layer takes them."""

from __future__ import annotations

from dataclasses import dataclass

from twin.options import Accounting, EmbodiedMethod
from twin.power.pricing import GpuHourPrice


@dataclass(frozen=True)
class EmbodiedRequest:
    """Which embodied-carbon figures to charge (``site.embodied``); None keeps the method's default."""
    method: EmbodiedMethod = "bloom"
    gpu_kg: float | None = None
    server_kg: float | None = None
    lifetime_years: float | None = None
    utilization: float | None = None


@dataclass(frozen=True)
class SiteSpec:
    country: str = "US"                      # ISO 3166 alpha-2 or alpha-3
    pue: float = 1.58                        # facility power / IT power (Uptime Institute survey average)
    compare: tuple[str, ...] = ()            # further countries to report carbon and cost for
    carbon_intensity_g_per_kwh: float | None = None      # overrides the dataset for the site
    electricity_price: tuple[float, str] | None = None   # (amount per kWh, currency), site only
    price: GpuHourPrice | None = None        # one GPU-hour, rented or owned (power/pricing.py); None: not priced
    price_warning: str | None = None         # why the GPUs are not priced, for the result's warnings
    accounting: Accounting = "full"          # gpu-tdp: (GPU-hours x TDP, as the LLaMA and BLOOM papers)
    embodied: EmbodiedRequest | None = None  # None: embodied carbon not charged
