"""Physical invariants a planner relies on, checked with hypothesis over small scenarios.

Each property compares two runs that differ in one knob; hypothesis draws the knob's
two values (and the rest of the small scenario) and shrinks any counterexample.
"""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import with_
from twin.api import run_dict

BASE = {
    "name": "property",
    "cluster": {"node": "dgx-h100", "nodes": 2, "storage": {"read": "40 GB/s", "write": "30 GB/s"}},
    "site": {"country": "FR", "pue": 1.2},
    "training": {"model": "llama2-7b", "tokens": "20B", "seq_len": 2048, "global_batch": 512,
                 "parallelism": {"tensor": 1, "pipeline": 1, "zero": 1}},
}
PROPERTY = settings(max_examples=8, deadline=None, derandomize=True)


def scenario(**changes) -> dict:
    return with_(BASE, **changes)


models = st.sampled_from(["llama2-7b", "llama2-13b"])
tensors = st.sampled_from([1, 2, 4, 8])


@PROPERTY
@given(model=models, tensor=tensors, nodes=st.integers(1, 12), more=st.integers(1, 12))
def test_more_nodes_never_lengthen_training_when_data_parallelism_can_grow(model, tensor, nodes, more):
    """global_batch 512 = 2^9: every doubling of the replicas still divides it."""
    small = run_dict(scenario(cluster__nodes=nodes, training__model=model, training__parallelism__tensor=tensor))
    large = run_dict(scenario(cluster__nodes=nodes + more, training__model=model,
                              training__parallelism__tensor=tensor))
    assert large.plan.data >= small.plan.data
    assert large.time_to_train_s <= small.time_to_train_s * (1 + 1e-9)


@PROPERTY
@given(pue=st.floats(1.0, 4.0), more=st.floats(0.0, 2.0))
def test_a_higher_pue_never_lowers_facility_energy(pue, more):
    low = run_dict(scenario(site__pue=pue))
    high = run_dict(scenario(site__pue=min(4.0, pue + more)))
    assert high.energy_facility_kwh >= low.energy_facility_kwh
    assert high.energy_it_kwh == low.energy_it_kwh


@PROPERTY
@given(gbps=st.integers(1, 800), faster=st.integers(1, 800), nodes=st.integers(2, 8),
       zero=st.sampled_from([1, 3]))
def test_a_faster_link_never_slows_a_step(gbps, faster, nodes, zero):
    slow = run_dict(scenario(cluster__nodes=nodes, cluster__fabric={"link": f"{gbps} Gb/s"},
                             training__parallelism__zero=zero))
    fast = run_dict(scenario(cluster__nodes=nodes, cluster__fabric={"link": f"{gbps + faster} Gb/s"},
                             training__parallelism__zero=zero))
    assert fast.step_time_s <= slow.step_time_s * (1 + 1e-9)


@PROPERTY
@given(cap=st.integers(200, 700), lower=st.integers(1, 400))
def test_a_lower_power_cap_never_raises_average_power(cap, lower):
    high = run_dict(scenario(cluster__gpu_power_cap=f"{cap} W"))
    low = run_dict(scenario(cluster__gpu_power_cap=f"{max(150, cap - lower)} W"))
    assert low.avg_power_it_w <= high.avg_power_it_w * (1 + 1e-9)
    assert low.time_to_train_s >= high.time_to_train_s * (1 - 1e-9)


@settings(max_examples=6, deadline=None, derandomize=True)
@given(scale=st.floats(1.0, 20.0), factor=st.floats(1.5, 4.0), seed=st.integers(0, 2**32))
def test_a_higher_failure_rate_never_raises_goodput(scale, factor, seed):
    """Common random numbers: with the same seed, every failure of the faster process comes earlier.

    Lost work depends on where a failure lands in its checkpoint cycle, so single samples may
    cross; the mean over samples may not, beyond its noise.
    """
    def goodput(rate_scale: float) -> float:
        r = run_dict(scenario(cluster__nodes=32, training__tokens="2T",
                              failures={"enabled": True, "seed": seed, "samples": 30, "rate_scale": rate_scale}))
        return r.failures.goodput.mean

    assert goodput(scale * factor) <= goodput(scale) + 0.002


@settings(max_examples=4, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**63), nodes=st.integers(2, 16))
def test_the_same_seed_gives_the_same_bytes(seed, nodes):
    data = scenario(cluster__nodes=nodes, training__tokens="500B",
                    failures={"enabled": True, "seed": seed, "samples": 5, "rate_scale": 10})
    assert run_dict(data).to_json() == run_dict(copy.deepcopy(data)).to_json()
