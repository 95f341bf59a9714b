"""``site:``: where the cluster runs: country, PUE, grid carbon, prices and embodied carbon."""


from typing import Annotated, Any

from pydantic import BeforeValidator, model_validator

from twin import catalog
from twin.errors import ScenarioError, did_you_mean
from twin.options import Accounting, EmbodiedMethod, Pricing
from twin.scenario.building import Cooling
from twin.scenario.fields import Flag, Strict, name_text, number, price, price_parser, shown
from twin.units import parse_money, parse_price_per_gpu_hour, parse_price_per_kw_month, parse_price_per_kwh

# Prices above these are typing slips (docs/scenario.md, "Limits").
MAX_ELECTRICITY_PRICE_PER_KWH = 10.0     # 20x the highest EU industrial prices of 2022 (about 0.5 EUR/kWh)
MAX_GPU_HOUR_PRICE = 1000.0              # 100x the list price of an H100 GPU-hour (about 10 USD)
MAX_HARDWARE_PRICE = 1e8                 # 100x a DGX SuperPOD rack; a node costs 0.2-0.5 M USD (catalog ownership.yaml)
MAX_SPACE_PRICE_PER_KW_MONTH = 10_000.0  # 54x the CBRE 2024 average of 184.06 USD/kW-month


MAX_COMPARED_COUNTRIES = 50

Fraction = number(gt="0", le="1", why="a fraction")
GpuKg = number(ge="0", le="10000", why="kg CO2e per GPU; published figures are 15-150")
ServerKg = number(ge="0", le="100000", why="kg CO2e per server; published figures are about 2,500")
LifetimeYears = number(gt="0", le="30", why="service life in years")
Pue = number(ge="1", le="4", why="facility power / IT power; surveyed data centres average 1.56")
CarbonIntensity = number("carbon_intensity", ge="0", le="2000 g/kWh",
                         why="lignite power is about 1,100 g CO2e/kWh over its life cycle")
ElectricityPrice = price(parse_price_per_kwh, MAX_ELECTRICITY_PRICE_PER_KWH, "/kWh", "0.10 EUR/kWh")
HardwarePrice = price(parse_money, MAX_HARDWARE_PRICE, " per node", "270000 USD")
SpacePrice = price(parse_price_per_kw_month, MAX_SPACE_PRICE_PER_KW_MONTH, "/kW-month", "184 USD/kW-month")
MaintenancePerYear = number(ge="0", le="1", why="a fraction of the purchase price a year")


def _short_list(value: Any) -> Any:
    if isinstance(value, list) and len(value) > MAX_COMPARED_COUNTRIES:
        raise ValueError(f"{len(value)} countries is not allowed: at most {MAX_COMPARED_COUNTRIES}")
    return value


Countries = Annotated[list[str], BeforeValidator(_short_list)]


_parse_gpu_hour_amount = price_parser(parse_price_per_gpu_hour, MAX_GPU_HOUR_PRICE, "/GPU-h", "2.50 USD/GPU-h")


def _gpu_hour_price(value: Any) -> tuple[float, str] | str:
    """'2.50 USD/GPU-h', or the name of a provider in the price table (or 'list', their median)."""
    if isinstance(value, str) and not any(ch.isdigit() for ch in value):
        name = value.strip().lower()
        known = list(dict.fromkeys(row["provider"] for row in catalog.table("prices").values())) + ["list"]
        if name not in known:
            raise ValueError(f"{shown(value)} is not allowed: write a price (e.g. '2.50 USD/GPU-h') or a provider of "
                             f"the price table{did_you_mean(name, known)}: {', '.join(known)}")
        return name
    return _parse_gpu_hour_amount(value)


GpuHourPrice = Annotated[tuple[float, str] | str, BeforeValidator(_gpu_hour_price)]


# A site profile's file name (docs/calibrate.md); read by twin.scenario.profile before validation.
ProfilePath = name_text(4096)


class Embodied(Strict):
    enabled: Flag = False
    method: EmbodiedMethod = "bloom"                   # per-device figures (docs/power.md)
    gpu_kg: GpuKg | None = None
    server_kg: ServerKg | None = None
    lifetime_years: LifetimeYears | None = None            # default 6 (BLOOM)
    utilization: Fraction | None = None                    # default 0.85 (BLOOM)


class Site(Strict):
    country: str = "US"
    pue: Pue = 1.58
    compare: Countries = []
    carbon_intensity: CarbonIntensity | None = None        # overrides the dataset for the site
    electricity_price: ElectricityPrice | None = None      # (amount per kWh, currency)
    gpu_hour_price: GpuHourPrice | None = None             # per GPU-hour, or a provider of catalog prices.yaml or list
    pricing: Pricing = "rental"                            # owned: purchase written off (docs/power.md, "Cost")
    hardware_price: HardwarePrice | None = None            # per node, owned; default catalog ownership.yaml
    hardware_life: LifetimeYears | None = None             # years, owned; default 6
    maintenance: MaintenancePerYear | None = None          # fraction of the price a year, owned; default 0.10
    space_price: SpacePrice | None = None                  # per kW of node power and month, owned
    accounting: Accounting = "full"                  # gpu-tdp: GPU-hours x TDP (LLaMA, BLOOM papers)
    embodied: Embodied = Embodied()
    cooling: Cooling | None = None                         # PUE from the climate, replacing pue (docs/building.md)
    profile: ProfilePath | None = None                     # a site profile (twin calibrate, docs/calibrate.md)


    @model_validator(mode="after")
    def _pricing_keys(self) -> "Site":
        """A GPU-hour price is rental's; purchase price, life, maintenance and space are ownership's."""
        owned_keys = {"hardware_price", "hardware_life", "maintenance", "space_price"} & self.model_fields_set
        if self.pricing == "owned" and self.gpu_hour_price is not None:
            raise ValueError("gpu_hour_price is a rental price: with pricing: owned write hardware_price, "
                             "hardware_life, maintenance, space_price instead")
        if self.pricing == "rental" and owned_keys:
            raise ValueError(f"{', '.join(sorted(owned_keys))} apply to owned hardware: set pricing: owned, "
                             "or remove them (rental uses gpu_hour_price)")
        return self

    @model_validator(mode="after")
    def _pue_from_cooling(self) -> "Site":
        """With ``cooling``, the PUE is the building's yearly PUE at the site's climate (docs/building.md)."""
        if self.cooling is None:
            return self
        if "pue" in self.model_fields_set:
            raise ValueError("write pue or cooling, not both: with cooling the PUE is a result")
        from twin.power.cooling import building_year       # numpy: only for scenarios that ask

        try:
            year = building_year(self.cooling.climate or self.country, self.cooling.design)
        except ScenarioError as exc:
            raise ValueError(str(exc)) from None
        return self.model_copy(update={"pue": year.pue})
