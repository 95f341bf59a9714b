"""Embodied carbon of the hardware a run uses, amortised over its service life.

A device's manufacturing emissions are spread over the hours it serves:
``lifetime × utilisation``. A run charges each GPU and each server for the hours
it occupies them (BLOOM's method, Luccioni et al. 2023 §4.1):

    kg = (gpu_kg · GPU-hours + server_kg · node-hours) / (lifetime_h · utilisation)

Per-device figures: ``bloom`` (150 kg per GPU, 2,500 kg per server), or
``llmcarbon`` for GPUs (1.8 kg per cm² of die + 0.4 kg per GB of HBM; Faiz et al.
2024) with BLOOM's server figure; a scenario may set both.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin import catalog
from twin.errors import ScenarioError
from twin.hardware.specs import GPUSpec

HOURS_PER_YEAR = 8760.0
BYTES_PER_GB = 1e9


@dataclass(frozen=True)
class EmbodiedSpec:
    gpu_kg: float
    server_kg: float
    lifetime_years: float
    utilization: float
    source: str


@dataclass(frozen=True)
class Embodied:
    gpu_kg: float                # amortised share for this run
    server_kg: float
    spec: EmbodiedSpec

    @property
    def total_kg(self) -> float:
        return self.gpu_kg + self.server_kg


def _kg(value: object) -> float:
    return float(str(value).replace("kg", "").strip())


def llmcarbon_gpu_kg(gpu: GPUSpec) -> float:
    """Die area × kg/cm² + HBM capacity × kg/GB (LLMCarbon)."""
    table = catalog.table("power")["embodied"]
    areas, row = table["die_area_mm2"], table["llmcarbon"]
    if gpu.name not in areas:
        known = ", ".join(k for k in areas if k != "source")
        raise ScenarioError("site.embodied.method", f"llmcarbon needs the die area of {gpu.name}, which the catalog "
                            f"lacks (known: {known}); use method: bloom or set site.embodied.gpu_kg")
    die_cm2 = float(areas[gpu.name]) / 100.0
    return die_cm2 * float(row["kg_per_cm2_die"]) + gpu.memory_bytes / BYTES_PER_GB * float(row["kg_per_gb_dram"])


def embodied_spec(gpu: GPUSpec, method: str = "bloom", gpu_kg: float | None = None, server_kg: float | None = None,
                  lifetime_years: float | None = None, utilization: float | None = None) -> EmbodiedSpec:
    table = catalog.table("power")["embodied"]
    bloom = table["bloom"]
    sources = [bloom["source"]]
    if gpu_kg is None:
        if method == "llmcarbon":
            gpu_kg = llmcarbon_gpu_kg(gpu)
            sources.insert(0, table["llmcarbon"]["source"])
        else:
            gpu_kg = _kg(bloom["gpu"])
    return EmbodiedSpec(
        gpu_kg=gpu_kg,
        server_kg=_kg(bloom["server"]) if server_kg is None else server_kg,
        lifetime_years=float(bloom["lifetime_years"]) if lifetime_years is None else lifetime_years,
        utilization=float(bloom["utilization"]) if utilization is None else utilization,
        source="; ".join(sources),
    )


def embodied(spec: EmbodiedSpec, gpu_hours: float, gpus_per_node: int) -> Embodied:
    service_h = spec.lifetime_years * HOURS_PER_YEAR * spec.utilization
    node_hours = gpu_hours / gpus_per_node
    return Embodied(spec.gpu_kg * gpu_hours / service_h, spec.server_kg * node_hours / service_h, spec)
