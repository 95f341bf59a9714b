"""A GPU power cap: lower power, and in compute-bound work, lower throughput.

Under a cap the GPU lowers its clock until its power fits. Dynamic CMOS power is
``a·C·V²·f`` and, over the DVFS range, voltage scales with frequency, so dynamic
power goes as ``f^k`` (``k`` = ``capping.dynamic_power_exponent`` in
``catalog/data/power.yaml``, 3 for V ∝ f). Idle (static) power does not scale.
A compute-bound kernel that drew the full TDP at clock ``f0`` therefore runs at

    f / f0 = ((cap - idle) / (TDP - idle)) ** (1 / k)

and its throughput scales with ``f``. Memory-bound kernels follow the HBM clock,
which the cap does not lower; communication follows the links. The factor is
applied through ``OperatorModel.power_cap_factor`` (tensor-core work only).
"""

from __future__ import annotations

from twin import catalog
from twin.errors import ScenarioError
from twin.hardware.specs import GPUSpec


def dynamic_power_exponent() -> float:
    return float(catalog.table("power")["capping"]["dynamic_power_exponent"])


def check_cap(gpu: GPUSpec, cap_w: float | None, field: str = "cluster.gpu_power_cap") -> None:
    """A cap at or below idle power cannot run anything."""
    if cap_w is not None and cap_w <= gpu.idle_w:
        raise ScenarioError(field, f"{cap_w:.0f} W is at or below the {gpu.name} idle power ({gpu.idle_w:.0f} W); "
                            f"allowed: between {gpu.idle_w:.0f} W and its TDP {gpu.tdp_w:.0f} W")


def clock_factor(gpu: GPUSpec, cap_w: float | None) -> float:
    """Sustained clock under the cap as a share of the uncapped clock (1 when the cap is at or above TDP)."""
    if cap_w is None or cap_w >= gpu.tdp_w:
        return 1.0
    check_cap(gpu, cap_w)
    share = (cap_w - gpu.idle_w) / (gpu.tdp_w - gpu.idle_w)
    return share ** (1.0 / dynamic_power_exponent())


def power_cap_factor(gpu: GPUSpec, cap_w: float | None) -> float:
    """Throughput factor of compute-bound (tensor-core) work under the cap."""
    return clock_factor(gpu, cap_w)
