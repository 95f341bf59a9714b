"""Power, energy, carbon and cost per million output tokens of a serving deployment.

A serving GPU spends its time in compute-bound work (prefill, large GEMMs: the
``compute`` phase), memory-bound work (decode streaming weights and KV: ``memory``),
communication and idle (between iterations and while no request waits), each at
its phase power (``devices.GPUPower``). Its average is the time-weighted mean over
the simulated replica's run. A MIG instance draws its share ``c/7`` of the GPU's
dynamic range; the GPU's idle power is paid whole, so instances left unused on a
GPU still cost their idle share. Hosts follow the GPUs' heat (``NodePower.host_activity``)
and are charged by the share of their GPUs the deployment uses: a deployment on one GPU
of an eight-GPU server pays an eighth of its host (the rest serves other work).

Energy per million output tokens = IT power ÷ output tokens/s × 10⁶, times PUE for
the facility; carbon and energy cost per country as for training (``cost``); rental
= the GPUs' hours per million tokens × the price per GPU-hour (``pricing``: rented or owned).

Input and output tokens share the GPU time of the window: prefill (input) is the
compute-bound work, decode (output) the memory-bound work, so the window's cost is split
in the ratio of the replica's compute-bound time to its memory-bound time (communication
follows the same ratio). With ``s`` that input share, ``C`` the cost of the window
(10⁶ output tokens) and ``n`` its input tokens::

    per million input tokens  = C · s / (n / 10⁶)
    per million output tokens = C · (1 − s)

so ``input tokens × per-million input + output tokens × per-million output`` is the whole cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from twin.hardware.mig import MigProfile
from twin.hardware.specs import GPUSpec, NodeSpec
from twin.power.cost import CountryFigures, country_figures, country_rates, rental_cost_eur
from twin.power.pricing import Cost, GpuHourPrice, cost
from twin.power.devices import gpu_power, node_power
from twin.serving.engine import EngineRun
from twin.units import JOULES_PER_KWH, SECONDS_PER_HOUR

TOKENS_PER_MILLION = 1e6


@dataclass(frozen=True)
class ServingPower:
    gpu_avg_w: float                   # one GPU, or one MIG instance's share
    avg_power_it_w: float              # the deployment's GPUs and their nodes' hosts
    energy_per_million_output_tokens_kwh: float      # IT
    facility_per_million_output_tokens_kwh: float
    rental_per_million_output_tokens_eur: float | None
    countries: list[CountryFigures]    # carbon and cost of one million output tokens
    cost: Cost | None = None           # the site's cost of one million output tokens, by part
    input_share: float = 0.0           # of the window's cost, charged to input tokens (module docstring)
    input_per_output_token: float = 0.0   # input tokens served per output token

    def per_million_tokens_eur(self) -> dict[str, float | None]:
        """The site's cost per million input and per million output tokens, GPU time and electricity in."""
        total = self.cost.total_eur if self.cost is not None else None
        if total is None:
            return {"input": None, "output": None}
        inputs = self.input_per_output_token
        return {"input": total * self.input_share / inputs if inputs > 0 else None,
                "output": total * (1.0 - self.input_share)}

    def carbon_kg(self) -> dict[str, float]:
        return {c.code: c.carbon_kg for c in self.countries}

    def cost_eur(self) -> dict[str, float | None]:
        return {c.code: c.total_cost_eur for c in self.countries}


def device_avg_w(gpu: GPUSpec, run: EngineRun, cap_w: float | None = None) -> float:
    """One device's average power over the replica's run (idle outside iterations)."""
    power = gpu_power(gpu, cap_w)
    span = run.makespan_s
    if span <= 0:
        return power.idle_w
    activity = (power.activity["compute"] * run.compute_s + power.activity["memory"] * run.memory_s
                + power.activity["communication"] * run.comm_s) / span
    return power.draw_w(min(1.0, activity))


def serving_power(node: NodeSpec, device: GPUSpec, profile: MigProfile | None, devices_used: int, gpus_used: int,
                  run: EngineRun, output_tokens_per_s: float, pue: float, countries: list[str],
                  intensity_override: float | None = None, price_override: tuple[float, str] | None = None,
                  price: GpuHourPrice | None = None, cap_w: float | None = None,
                  input_tokens_per_s: float = 0.0) -> ServingPower:
    device_w = device_avg_w(device, run, cap_w)
    gpus_w = devices_used * device_w
    if profile is not None:                   # instances left empty on the GPUs still idle
        gpus_w += (gpus_used * profile.instances - devices_used) * device.idle_w
    nodes = node_power(node, cap_w)
    whole = node.gpu
    gpu_activity = (gpus_w / gpus_used - whole.idle_w) / (whole.tdp_w - whole.idle_w) if gpus_used else 0.0
    host_w = gpus_used / node.gpus * nodes.host.draw_w(nodes.host_activity(max(0.0, min(1.0, gpu_activity))))
    it_w = gpus_w + host_w
    seconds = TOKENS_PER_MILLION / output_tokens_per_s if output_tokens_per_s > 0 else math.inf
    it_kwh = it_w * seconds / JOULES_PER_KWH
    facility = it_kwh * pue
    rental = rental_cost_eur(price, gpus_used * seconds / SECONDS_PER_HOUR)
    rates = country_rates(countries, intensity_override, price_override)
    figures = country_figures(rates, facility, rental)
    parts = None if price is None else cost(price, gpus_used * seconds / SECONDS_PER_HOUR, facility,
                                            rates[0].price_eur_per_kwh)
    work = run.compute_s + run.memory_s
    share = run.compute_s / work if work > 0 else 0.0
    per_output = input_tokens_per_s / output_tokens_per_s if output_tokens_per_s > 0 else 0.0
    return ServingPower(device_w, it_w, it_kwh, facility, rental, figures, parts, share, per_output)
