"""Where a cluster runs: the site's country, facility and prices, as the power layer takes them."""

from __future__ import annotations

from dataclasses import dataclass

from twin.options import Accounting, EmbodiedMethod


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
    gpu_hour_price: tuple[float, str] | None = None      # (amount per GPU-hour, currency)
    gpu_hour_price_source: str | None = None             # where a price from the price table comes from
    accounting: Accounting = "full"          # gpu-tdp: (GPU-hours x TDP, as the LLaMA and BLOOM papers)
    embodied: EmbodiedRequest | None = None  # None: embodied carbon not charged
