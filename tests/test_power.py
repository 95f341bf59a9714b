"""Power, energy, racks, power cap, accounting and embodied carbon against independent truths."""

from __future__ import annotations

import math

import pytest
import yaml

from tests.conftest import BASE, ROOT, SCENARIOS, cli, with_
from twin.api import run_dict
from twin.engine.step import StepBreakdown
from twin.errors import ScenarioError
from twin.hardware.specs import gpu_spec, node_spec
from twin.jobs.model import Segment
from twin.power.capping import clock_factor, power_cap_factor
from twin.power.devices import gpu_power, node_power
from twin.power.embodied import embodied, embodied_spec, llmcarbon_gpu_kg
from twin.power.energy import facility_energy_kwh, gpu_tdp_energy_kwh, power_timeline, step_power
from twin.power.rack import cap_to_fit

# Its module fixtures are set up once: all its tests run on one worker (pytest-xdist).
pytestmark = pytest.mark.xdist_group("power")


def superpod() -> dict:
    """The reference SuperPOD, failure-free: these tests check power, not the job engine."""
    data = yaml.safe_load((SCENARIOS / "superpod.yaml").read_text(encoding="utf-8"))
    data["failures"] = {"enabled": False}
    return data


@pytest.fixture(scope="module")
def superpod_result():
    return run_dict(superpod())


# -- devices ------------------------------------------------------------------------------

def test_gpu_phase_power_is_anchored_on_idle_and_tdp():
    g = gpu_power(gpu_spec("h100-sxm"))
    assert g.phase_w("idle") == pytest.approx(69.0)
    assert g.phase_w("compute") == pytest.approx(700.0)
    # every phase lies between idle and TDP, and waiting draws less than computing
    for phase in g.activity:
        assert 69.0 <= g.phase_w(phase) <= 700.0
    assert g.phase_w("bubble") < g.phase_w("communication") < g.phase_w("memory") < g.phase_w("compute")
    assert gpu_power(gpu_spec("a100-80gb")).phase_w("idle") == pytest.approx(62.0)


@pytest.mark.parametrize("node, max_kw", [("dgx-h100", 10.2), ("dgx-a100-80gb", 6.5), ("dgx-b200", 14.3)])
def test_a_node_at_full_load_draws_its_vendor_maximum(node, max_kw):
    p = node_power(node_spec(node))
    assert p.peak_w == pytest.approx(max_kw * 1e3)
    assert 0 < p.idle_w < 0.3 * p.peak_w
    # any load in between stays within [idle, max]
    for a in (0.0, 0.3, 0.7, 1.0):
        assert p.idle_w - 1e-9 <= p.draw_w(a) <= max_kw * 1e3 + 1e-9


def test_dgx_h100_host_components_fit_inside_the_node_budget():
    host = node_power(node_spec("dgx-h100")).host
    assert sum(host.components_w.values()) == pytest.approx(10_200 - 8 * 700)
    assert host.components_w["cpus"] == pytest.approx(700)       # 2 x Xeon 8480C at 350 W TDP


def test_step_power_is_the_time_weighted_mean_of_its_phases():
    g = gpu_power(gpu_spec("h100-sxm"))
    step = StepBreakdown(step_s=4.0, compute_s=2.0, tp_comm_s=1.0, pp_comm_s=0.0, bubble_s=1.0,
                         dp_comm_s=0.0, overheads_s=0.0, optimizer_s=0.0, bottleneck_stage=0)
    sp = step_power(g, step)
    expected = (2.0 * 700 + 1.0 * g.phase_w("communication") + 1.0 * g.phase_w("bubble")) / 4.0
    assert sp.gpu_avg_w == pytest.approx(expected)


# -- cluster and racks ---------------------------------------------------------------------

def test_superpod_under_training_load_draws_about_1_2_mw(superpod_result):
    """The 127-node DGX H100 SuperPOD's published draw is about 1.2 MW; within 15%."""
    r = superpod_result
    assert r.avg_power_it_w == pytest.approx(1.2e6, rel=0.15)
    assert r.to_dict()["power"]["train_w"] == pytest.approx(1.2e6, rel=0.15)
    # switches per the reference architecture's 4-SU row: 32 leaves, 16 spines
    fabric = r.to_dict()["power"]["infrastructure"]["compute_fabric"]
    assert (fabric["leaf"], fabric["spine"]) == (32, 16)
    # peak bounds the average and the nodes alone cannot exceed 127 nodes x 10.2 kW
    assert r.avg_power_it_w < r.peak_power_it_w
    assert r.to_dict()["power"]["nodes_w"] <= 127 * 10_200


def test_energy_is_power_times_time_and_facility_is_it_times_pue(superpod_result):
    r = superpod_result
    assert r.energy_it_kwh == pytest.approx(r.avg_power_it_w * r.time_to_train_s / 3.6e6, rel=1e-9)
    assert r.energy_facility_kwh == pytest.approx(r.energy_it_kwh * 1.2)


def test_racks_count_and_the_reference_two_dgx_rack_fits_25_kw(superpod_result):
    p = superpod_result.to_dict()["power"]
    assert p["racks"] == math.ceil(127 / 2)
    assert p["rack_peak_w"] == pytest.approx(2 * 10_200)
    assert p["racks_over_limit"] == 0
    assert sum(g["racks"] for g in p["rack_groups"]) == p["racks"]
    assert not any("rack power" in w for w in superpod_result.warnings)


def test_four_dgx_per_rack_exceed_a_25_kw_limit_with_a_clear_warning():
    r = run_dict(with_(superpod(), cluster__nodes_per_rack=4))
    assert r.to_dict()["power"]["rack_peak_w"] == pytest.approx(4 * 10_200)
    warning = next(w for w in r.warnings if w.startswith("rack power"))
    assert "40.8 kW" in warning and "25.0 kW" in warning and "nodes_per_rack: 2" in warning


def test_cap_to_fit_makes_a_rack_peak_exactly_at_its_limit():
    from twin.api.specs import cluster_of as cluster_spec
    from twin.power.energy import cluster_power
    from twin.scenario import parse_scenario

    sc = parse_scenario(with_(superpod(), cluster__nodes_per_rack=4))
    cluster = cluster_spec(sc.cluster)
    step = StepBreakdown(1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0)
    cap = cap_to_fit(cluster_power(cluster, step, 8), 4, 25e3)
    capped = node_power(cluster.node, cap)
    assert 4 * capped.peak_w == pytest.approx(25e3)


def test_switch_power_counts_the_fabric_models_switches(superpod_result):
    """Power and topology describe one network: every leaf, spine, core and storage leaf of Result.fabric."""
    r = superpod_result
    infra, fab = r.to_dict()["power"]["infrastructure"], r.to_dict()["fabric"]
    counted = sum(infra[part][tier] for part in ("compute_fabric", "storage_fabric") for tier in ("leaf", "spine", "core"))
    assert counted == fab["leaves"] + fab["spines"] + fab["cores"] + fab["storage_leaves"]
    assert infra["storage_fabric"]["leaf"] == fab["storage_leaves"] == 4     # one storage leaf per 32-node pod
    assert infra["switches_w"] == pytest.approx(counted * infra["switch_w"])


# -- power cap -----------------------------------------------------------------------------

def test_clock_factor_follows_the_cubic_dynamic_power_law():
    h100 = gpu_spec("h100-sxm")
    assert clock_factor(h100, None) == 1.0
    assert clock_factor(h100, 800.0) == 1.0
    cap = 69 + (700 - 69) / 8                    # an eighth of the dynamic range: half the clock
    assert clock_factor(h100, cap) == pytest.approx(0.5)
    assert power_cap_factor(h100, 500.0) < power_cap_factor(h100, 600.0) < 1.0


def test_a_power_cap_lowers_energy_and_lengthens_time(superpod_result):
    capped = run_dict(with_(superpod(), cluster__gpu_power_cap="500 W"))
    assert capped.time_to_train_s > superpod_result.time_to_train_s
    assert capped.energy_it_kwh < superpod_result.energy_it_kwh
    assert capped.peak_power_it_w < superpod_result.peak_power_it_w
    assert capped.to_dict()["power"]["gpu_phase_w"]["compute"] == pytest.approx(500.0)
    # only tensor-core work slows: the step grows by less than 1/clock
    slow = capped.step_time_s / superpod_result.step_time_s
    assert 1.0 < slow < 1.0 / capped.to_dict()["power"]["power_cap_clock_factor"]


def test_a_cap_at_or_below_idle_is_rejected():
    with pytest.raises(ScenarioError, match="cluster.gpu_power_cap"):
        run_dict(with_(BASE, cluster__gpu_power_cap="60 W"))


# -- PUE and accounting --------------------------------------------------------------------

def test_higher_pue_never_lowers_facility_energy(base_scenario):
    energies = [run_dict(with_(base_scenario, site__pue=pue)).energy_facility_kwh for pue in (1.0, 1.1, 1.58, 2.0)]
    assert energies == sorted(energies)
    assert energies[-1] == pytest.approx(2.0 * energies[0])


def test_pue_below_one_is_rejected_with_exit_code_2(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(with_(BASE, site__pue=0.9)), encoding="utf-8")
    code, _, err, _ = cli("run", str(path))
    assert code == 2
    assert "site.pue" in err and "Traceback" not in err


def test_llama_65b_table_gpu_hours_times_400_w_times_pue_1_1():
    """Touvron et al. 2023, Table 15: 1,022,362 GPU-h x 400 W x 1.1 = 449 MWh; x 0.385 kg/kWh = 173 t."""
    it_kwh = gpu_tdp_energy_kwh(1_022_362, gpu_spec("a100-80gb").tdp_w)
    facility = facility_energy_kwh(it_kwh, 1.1)
    assert facility / 1e3 == pytest.approx(449, abs=1)
    assert facility * 0.385 / 1e3 == pytest.approx(173, abs=1)


def test_bloom_gpu_hours_times_400_w_and_57_g():
    """Luccioni et al. 2023: 1,082,990 GPU-h x 0.4 kW = 433 MWh; 24.7 t at 57 g/kWh."""
    it_kwh = gpu_tdp_energy_kwh(1_082_990, 400.0)
    assert it_kwh / 1e3 == pytest.approx(433, abs=1)
    assert it_kwh * 57 / 1e6 == pytest.approx(24.7, abs=0.05)


def test_a_scenario_asking_for_gpu_tdp_accounting_reproduces_the_llama_method():
    data = yaml.safe_load((SCENARIOS / "llama-65b-a100.yaml").read_text(encoding="utf-8"))
    r = run_dict(with_(data, site__accounting="gpu-tdp"))
    assert r.energy_it_kwh == pytest.approx(r.gpu_hours * 0.4)
    assert r.energy_facility_kwh == pytest.approx(r.gpu_hours * 0.4 * 1.1)
    assert r.carbon_kg["US"] == pytest.approx(r.gpu_hours * 0.4 * 1.1 * 0.385)
    full = run_dict(data)
    assert full.energy_it_kwh > r.energy_it_kwh      # hosts, switches and storage are real


# -- embodied carbon -----------------------------------------------------------------------

def test_bloom_embodied_carbon_is_11_2_tonnes():
    """Luccioni et al. 2023 §4.1: 150 kg/GPU, 2,500 kg/server, 6 years at 85% use -> 11.2 t for BLOOM."""
    spec = embodied_spec(gpu_spec("a100-80gb"), "bloom")
    e = embodied(spec, 1_082_990, gpus_per_node=8)
    assert e.total_kg / 1e3 == pytest.approx(11.2, abs=0.05)


def test_llmcarbon_h100_embodied_from_die_area_and_hbm():
    kg = llmcarbon_gpu_kg(gpu_spec("h100-sxm"))
    assert kg == pytest.approx(8.14 * 1.8 + 80 * 2**30 / 1e9 * 0.4)


def test_embodied_carbon_appears_only_when_enabled(base_scenario):
    assert run_dict(base_scenario).embodied_carbon_kg is None
    r = run_dict(with_(base_scenario, site__embodied={"enabled": True, "lifetime_years": 5}))
    hours = 16 * r.time_to_train_s / 3600
    expected = (150 * hours + 2500 * hours / 8) / (5 * 8760 * 0.85)
    assert r.embodied_carbon_kg == pytest.approx(expected)


# -- cost ----------------------------------------------------------------------------------

def test_rental_price_adds_to_the_energy_cost(base_scenario):
    r = run_dict(with_(base_scenario, site__gpu_hour_price="2 USD/GPU-h"))
    hours = 16 * r.time_to_train_s / 3600
    assert r.rental_cost_eur == pytest.approx(hours * 2 * 0.9248)
    for code in ("FR", "DE"):
        assert r.total_cost_eur[code] == pytest.approx(r.energy_cost_eur[code] + r.rental_cost_eur)


def test_a_provider_of_the_price_table_charges_its_instance_price_per_gpu(base_scenario):
    """aws's p5.48xlarge lists 98.32 USD/h for 8 H100: 12.29 USD per GPU-hour (at 0.9248 EUR/USD)."""
    r = run_dict(with_(base_scenario, site__gpu_hour_price="aws"))
    hours = 16 * r.time_to_train_s / 3600
    assert r.rental_cost_eur == pytest.approx(hours * 98.32 / 8 * 0.9248)
    assert "p5.48xlarge" in r.sources["gpu_hour_price"]


def test_list_is_the_median_of_the_on_demand_prices_and_a_written_price_overrides_it(base_scenario):
    from twin.power.prices import gpu_hour_price

    rows = [r for r in yaml.safe_load((ROOT / "twin/catalog/data/prices.yaml").read_text()).values()
            if r["gpu"] == "h100-sxm" and r["offer"] == "on-demand"]
    per_gpu = sorted(r["price"] / r["gpus"] * 0.9248 for r in rows)       # every row is in USD
    assert len(per_gpu) >= 3
    assert gpu_hour_price("h100-sxm", "list").amount == pytest.approx(per_gpu[len(per_gpu) // 2])
    listed = run_dict(with_(base_scenario, site__gpu_hour_price="list"))
    written = run_dict(with_(base_scenario, site__gpu_hour_price="1 EUR/GPU-h"))
    assert listed.rental_cost_eur == pytest.approx(written.rental_cost_eur * per_gpu[len(per_gpu) // 2])
    assert "gpu_hour_price" not in written.sources


def test_a_provider_without_the_gpu_is_refused_naming_those_with_it(base_scenario):
    from twin.errors import ScenarioError

    data = with_(base_scenario, site__gpu_hour_price="modal")
    data["cluster"]["node"] = "dgx-h200"
    with pytest.raises(ScenarioError, match=r"^site.gpu_hour_price: modal lists no h200 .*aws-capacity-block"):
        run_dict(data)


# -- timeline ------------------------------------------------------------------------------

def test_power_timeline_integrates_each_phase_at_its_power(superpod_result):
    from twin.api.specs import cluster_of as cluster_spec
    from twin.power.energy import cluster_power
    from twin.scenario import parse_scenario

    cluster = cluster_spec(parse_scenario(superpod()).cluster)
    step = StepBreakdown(4.0, 3.0, 0.5, 0.0, 0.5, 0.0, 0.0, 0.0, 0)
    power = cluster_power(cluster, step, 992, 100e3)
    segments = [Segment(0, 100, "train", checkpoint_s=10), Segment(100, 160, "restart"),
                Segment(160, 200, "repair_wait")]
    tl = power_timeline(power, segments)
    energy = sum((s.end_s - s.start_s) * s.it_w for s in tl)
    expected = 90 * power.it_w("train") + 10 * power.it_w("checkpoint") + 60 * power.it_w("restart") \
        + 40 * power.it_w("repair_wait")
    assert energy == pytest.approx(expected)
    assert power.it_w("repair_wait") < power.it_w("restart") < power.it_w("checkpoint") < power.it_w("train")
    # the result's own timeline covers the run
    tl = superpod_result.to_dict()["power"]["timeline"]
    assert tl[0]["start_s"] == 0 and tl[-1]["end_s"] == pytest.approx(superpod_result.time_to_train_s)


def test_power_figures_build_from_the_result_dict(superpod_result):
    from twin.figures.power import country_comparison_figure, power_timeline_figure, rack_power_figure

    d = superpod_result.to_dict()
    racks = rack_power_figure(d).data[0]
    cells = [z for row in racks.z for z in row if z == z]                  # one per rack below 100 racks
    assert len(cells) == d["power"]["racks"]
    assert max(cells) == pytest.approx(100 * d["power"]["rack_peak_w"] / d["power"]["rack_limit_w"])
    assert len(power_timeline_figure(d).data) >= 2
    countries = country_comparison_figure(d)
    assert list(countries.data[0].x)[0] == "FR (site)"


def test_a_run_with_failures_integrates_its_job_timeline(superpod_result):
    data = with_(superpod(), failures__enabled=True, failures__samples=3, failures__rate_scale=5.0)
    r = run_dict(data)
    tl = r.to_dict()["power"]["timeline"]
    assert r.interruptions > 0 and any(s["phase"] != "train" for s in tl)
    assert r.energy_it_kwh * 3.6e6 == pytest.approx(sum((s["end_s"] - s["start_s"]) * s["it_w"] for s in tl))
    by_phase = r.to_dict()["power"]["energy_by_phase_kwh"]
    assert sum(by_phase.values()) == pytest.approx(r.energy_it_kwh)
    assert by_phase.get("restart", 0) > 0
    # interruptions cost wall time but draw less than training while they last
    assert r.avg_power_it_w < r.to_dict()["power"]["train_w"]
    assert r.energy_it_kwh > superpod_result.energy_it_kwh


def test_storage_power_is_counted_only_for_a_named_storage_system(superpod_result):
    assert superpod_result.to_dict()["power"]["infrastructure"]["storage_w"] == pytest.approx(2.7e12 / 90e9 * 2400)
    data = superpod()
    del data["cluster"]["storage"]
    r = run_dict(data)
    assert r.to_dict()["power"]["infrastructure"]["storage_w"] == 0.0
    assert r.to_dict()["power"]["infrastructure"]["storage_fabric"]["leaf"] == 0
    assert r.peak_power_it_w < superpod_result.peak_power_it_w


def test_one_node_is_charged_no_switches_and_single_switch_one():
    one = run_dict(with_(BASE, cluster__nodes=1))
    infra = one.power.infrastructure
    assert infra.compute_switches.total == 0
    assert one.peak_power_it_w <= 10_200 + infra.storage_w + 1e-6          # the DGX alone, and its storage
    single = run_dict(with_(BASE, cluster__fabric={"topology": "single-switch"}))
    assert single.power.infrastructure.compute_switches.total == 1


def test_a_job_on_part_of_a_node_leaves_its_other_gpus_idle():
    """4 of a DGX H100's 8 GPUs: 4 GPUs busy, 4 at idle power, the host at half the GPUs' heat."""
    r = run_dict(with_(BASE, cluster__nodes=1, training__global_batch=64,
                       training__parallelism={"tensor": 1, "pipeline": 1, "data": 4}))
    p = r.power.cluster
    a = p.step.activity
    gpu, host = p.node.gpu, p.node.host
    expected = 4 * gpu.draw_w(a) + 4 * gpu.idle_w + host.draw_w(p.node.host_activity(a) / 2)
    assert r.gpus_used == 4 and p.partial_gpus == 4
    assert p.nodes_w == pytest.approx(expected)
    assert p.node.idle_w < p.nodes_w < p.busy_node_w("train")
