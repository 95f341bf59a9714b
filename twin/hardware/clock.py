"""The clock a GPU holds at a power, and the matmul ceiling that follows from it.

Under a power limit a GPU lowers its clock until its power fits. Dynamic CMOS power is
``a·C·V²·f`` and, over the DVFS range, voltage scales with frequency, so dynamic power goes
as ``f^k`` (``k`` = ``capping.dynamic_power_exponent`` in ``catalog/data/power.yaml``, 3 for
V ∝ f); idle (static) power does not scale. A compute-bound kernel that holds clock ``f0``
at power ``P0`` holds

    f / f0 = ((P - idle) / (P0 - idle)) ** (1 / k)

at power ``P``. Two uses: a power cap below a GPU's TDP (``power/capping.py``), and a GPU
built to a lower power than the one whose matmul ceiling was measured (the GH200 of
four-superchip nodes at 680 W, measured at 900 W: ``achievable_matmul_share``).
"""

from __future__ import annotations

from twin import catalog
from twin.calibration import achievable_matmul_fraction, measured_at_other_power
from twin.hardware.specs import GPUSpec


def dynamic_power_exponent() -> float:
    return float(catalog.table("power")["capping"]["dynamic_power_exponent"])


def clock_share(power_w: float, full_w: float, idle_w: float) -> float:
    """Clock a compute-bound kernel holds at ``power_w`` as a share of the clock it holds at ``full_w``
    (``idle_w``: the power that does not scale)."""
    return ((power_w - idle_w) / (full_w - idle_w)) ** (1.0 / dynamic_power_exponent())


def achievable_matmul_share(gpu: GPUSpec, precision: str) -> float:
    """Maximum achievable matmul FLOP/s of ``gpu`` ÷ its dense peak: measured (catalog ``calibration.yaml``
    ``achievable_matmul``), or for a GPU built to another power than the one measured, the measured one's at
    the clock the GPU's own TDP allows (never above the measured one: more power than the measurement had
    does not raise the clock past the boost clock it may already have held)."""
    other = measured_at_other_power(gpu.name)
    if other is None:
        return achievable_matmul_fraction(gpu.name, precision)
    measured, measured_w = other
    share = min(1.0, clock_share(gpu.tdp_w, measured_w, gpu.idle_w))
    return achievable_matmul_fraction(measured, precision) * share
