"""A MIG instance as a fraction of its GPU (catalog ``mig.yaml``).

A GPU splits into 7 compute slices (its SMs) and 8 memory slices (HBM capacity, the
memory controllers and so the bandwidth, and the L2 cache). A profile such as
``1g.10gb`` takes ``c`` compute and ``m`` memory slices: its dense peak is ``c/7`` of
the GPU's, its memory and memory bandwidth ``m/8`` (NVIDIA MIG user guide, Supported
MIG Profiles: "Fraction of SMs", "Fraction of Memory", "L2 Cache Size"). An instance
has no NVLink of its own: it is a GPU without peers.

Power: a GPU with MIG enabled draws its idle power whatever runs on it; each instance
adds its share ``c/7`` of the dynamic range (TDP − idle). ``MigSlice.gpu`` carries the
instance's share of both, so ``instances`` busy slices of one GPU sum to the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from twin import catalog
from twin.errors import ScenarioError, did_you_mean
from twin.hardware.specs import GPUSpec

COMPUTE_SLICES = 7
MEMORY_SLICES = 8


@dataclass(frozen=True)
class MigProfile:
    name: str
    compute_slices: int
    memory_slices: int
    instances: int               # instances of this profile that fit on one GPU
    source: str

    @property
    def compute_fraction(self) -> float:
        return self.compute_slices / COMPUTE_SLICES

    @property
    def memory_fraction(self) -> float:
        return self.memory_slices / MEMORY_SLICES


def mig_profile(gpu: GPUSpec, name: str, field: str = "serving.mig") -> MigProfile:
    """A profile of ``gpu`` by name; a GPU without MIG, or an unknown profile, is a ScenarioError."""
    row = catalog.table("mig").get(gpu.name)
    if row is None:
        with_mig = ", ".join(catalog.names("mig"))
        raise ScenarioError(field, f"'{name}': the {gpu.name} has no MIG; GPUs with MIG: {with_mig}")
    profiles = row["profiles"]
    if name not in profiles:
        raise ScenarioError(field, f"unknown MIG profile '{name}' for {gpu.name}{did_you_mean(name, profiles)}; "
                            f"known: {', '.join(profiles)}")
    compute, memory, instances = (int(v) for v in profiles[name])
    return MigProfile(name, compute, memory, instances, row["source"])


def slice_gpu(gpu: GPUSpec, profile: MigProfile) -> GPUSpec:
    """The instance seen as a GPU of its own: peaks by its compute share, memory and bandwidth by its memory share."""
    c, m = profile.compute_fraction, profile.memory_fraction
    return replace(
        gpu,
        description=f"{gpu.description}, MIG {profile.name}",
        peak_flops={k: v * c for k, v in gpu.peak_flops.items()},
        memory_bytes=gpu.memory_bytes * m,
        memory_Bps=gpu.memory_Bps * m,
        tdp_w=gpu.tdp_w * c,
        idle_w=gpu.idle_w * c,
        nvlink_Bps=0.0,
        mig={},
        host_memory_bytes=0.0,
        host_memory_Bps=0.0,
        source=f"{gpu.source}; {profile.source}",
    )
