"""The slowest of N: a synchronous step waits for its slowest GPU.

Identical GPUs are not equally fast: manufacturing spread and each chip's power
management make some run their kernels slower than others at the same load.
Sinha et al. (SC'22, arXiv:2208.11035, abstract and §5) measured 8% average
performance variation (22% at most) across the GPUs of five large clusters of
one SKU, with outliers 1.5× slower than the median.

A training step is synchronous: tensor-parallel collectives inside the layers,
the pipeline's sends and the gradient reduction at the step's end all wait for
every rank, so the step's compute takes as long as its slowest GPU's. With each
GPU's kernel time ``C·(1 + σ·Z_i)``, Z_i standard normal and independent, the step
waits ``C·σ·E[max of N Z]``. Blom's approximation (Blom 1958, "Statistical
Estimates and Transformed Beta-Variables") gives the expected maximum of N
standard normals as

    E[max_N Z] ≈ Φ⁻¹((N − α) / (N − 2α + 1)),  α = 0.375,

0 for N = 1, 1.4 for 8, 3.2 for 1,000, 4.0 for 16,384 GPUs: it grows with N.

The spread σ is derived from Sinha's figure: an average variation of 8% between a
cluster's fastest and slowest GPU, taken as the expected range of a normal sample
of a cluster's size (about 2·E[max_N Z]), over ``SINHA_CLUSTER_GPUS`` GPUs.
"""

from __future__ import annotations

from statistics import NormalDist

# Sinha et al. SC'22 (arXiv:2208.11035), abstract: "8% (max 22%) average performance
# variation" across GPUs of one SKU on Summit, Vortex, Frontera, Longhorn and Corona.
SINHA_AVERAGE_VARIATION = 0.08
# Assumption: the size of the sample that range was measured over, taken as 1,000 GPUs
# (the clusters hold hundreds (Longhorn, Frontera's GPU nodes) to 27,648 (Summit) GPUs;
# the paper measured more than 90% of each).
SINHA_CLUSTER_GPUS = 1000
# Blom (1958): the plotting position constant for normal order statistics.
BLOM_ALPHA = 0.375


def expected_max_standard_normal(n: int) -> float:
    """Blom's approximation of E[max of n independent standard normals]; 0 for a single one."""
    if n <= 1:
        return 0.0
    return NormalDist().inv_cdf((n - BLOM_ALPHA) / (n - 2 * BLOM_ALPHA + 1))


def per_gpu_spread() -> float:
    """σ, the standard deviation of a GPU's kernel time relative to the median GPU's (about 1.2%)."""
    return SINHA_AVERAGE_VARIATION / (2 * expected_max_standard_normal(SINHA_CLUSTER_GPUS))


# σ as the twin uses it when stragglers are on (``training.stragglers``).
PER_GPU_SPREAD = per_gpu_spread()


def straggler_fraction(gpus: int, spread: float) -> float:
    """Extra time of a synchronous step's compute, per second of it, waiting for the slowest of ``gpus``."""
    return spread * expected_max_standard_normal(gpus)
