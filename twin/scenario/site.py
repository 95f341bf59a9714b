"""``site:``: where the cluster runs: country, PUE, grid carbon, prices and embodied carbon."""


from typing import Annotated, Any, Literal

from pydantic import BeforeValidator

from twin.errors import ScenarioError
from twin.scenario.fields import Flag, Strict, number, shown
from twin.units import parse_price_per_gpu_hour, parse_price_per_kwh

# Prices above these are typing slips (docs/scenario.md, "Limits").
MAX_ELECTRICITY_PRICE_PER_KWH = 10.0     # 20x the highest EU industrial prices of 2022 (about 0.5 EUR/kWh)
MAX_GPU_HOUR_PRICE = 1000.0              # 100x the list price of an H100 GPU-hour (about 10 USD)


def _price(parser, ceiling: float, unit: str, example: str):
    def parse(value: Any) -> tuple[float, str]:
        if isinstance(value, bool) or not isinstance(value, str):
            raise ValueError(f"{shown(value)} is not allowed: write an amount with a currency, e.g. '{example}'")
        try:
            amount, currency = parser(value, "")
        except ScenarioError as exc:
            raise ValueError(str(exc)) from None
        if not 0 <= amount <= ceiling:        # also refuses NaN
            raise ValueError(f"{shown(value)} is not allowed: allowed 0 to {ceiling:g} {currency}{unit}")
        return amount, currency

    return Annotated[tuple[float, str], BeforeValidator(parse)]


Fraction = number(gt="0", le="1", why="a fraction")


class Embodied(Strict):
    enabled: Flag = False
    method: Literal["bloom", "llmcarbon"] = "bloom"        # per-device figures (docs/power.md)
    gpu_kg: number(ge="0", le="10000", why="kg CO2e per GPU; published figures are 15-150") | None = None
    server_kg: number(ge="0", le="100000", why="kg CO2e per server; published figures are about 2,500") | None = None
    lifetime_years: number(gt="0", le="30", why="service life in years") | None = None    # default 6 (BLOOM)
    utilization: Fraction | None = None                    # default 0.85 (BLOOM)


class Site(Strict):
    country: str = "US"
    pue: number(ge="1", le="4", why="facility power / IT power; surveyed data centres average 1.56") = 1.58
    compare: Annotated[list[str], BeforeValidator(lambda v: _short_list(v, 50))] = []
    carbon_intensity: number("carbon_intensity", ge="0", le="2000 g/kWh",
                             why="lignite power is about 1,100 g CO2e/kWh over its life cycle") | None = None
    electricity_price: _price(parse_price_per_kwh, MAX_ELECTRICITY_PRICE_PER_KWH, "/kWh", "0.10 EUR/kWh") | None = None
    gpu_hour_price: _price(parse_price_per_gpu_hour, MAX_GPU_HOUR_PRICE, "/GPU-h", "2.50 USD/GPU-h") | None = None
    accounting: Literal["full", "gpu-tdp"] = "full"        # gpu-tdp: GPU-hours x TDP (LLaMA, BLOOM papers)
    embodied: Embodied = Embodied()


def _short_list(value: Any, most: int) -> Any:
    if isinstance(value, list) and len(value) > most:
        raise ValueError(f"{len(value)} countries is not allowed: at most {most}")
    return value
