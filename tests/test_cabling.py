"""Every cable and the quoted peaks: the three networks counted by rule, peaks as vendors print them."""

import pytest

from twin.api import fabric_file
from twin.hardware.cabling import APPLIANCE_FABRIC_PORTS, network_cables
from twin.hardware.peaks import peak_rows, quoted
from twin.hardware.specs import node_spec


def test_superpod_peaks_as_the_seed_quotes_them():
    """32 DGX H100 x 8 GPUs x 3,958 TFLOP/s FP8 with sparsity = 1.01 EFLOPS per SU; 4 SUs (127 DGX) ~4 EFLOPS."""
    f = fabric_file("scenarios/superpod.yaml")
    fp8 = {r.sparse: r for r in f.peaks if r.precision == "fp8"}
    assert fp8[True].scalable_unit == pytest.approx(32 * 8 * 2 * 1979e12)
    assert quoted(fp8[True].scalable_unit, "fp8") == "1.01 EFLOPS"
    assert quoted(fp8[True].cluster, "fp8") == "4.02 EFLOPS" and quoted(fp8[False].cluster, "fp8") == "2.01 EFLOPS"
    assert not [r for r in f.peaks if r.precision == "fp64" and r.sparse]


def test_jeroboam_quotes_63_pflops_fp8():
    """The seed's Jeroboam: 'up to 63.2 PFLOPS (FP8 Tensor Core)' for 16 H100 = 16 x 3,958 TFLOP/s (sparse)."""
    f = fabric_file("scenarios/jeroboam.yaml")
    sparse = next(r for r in f.peaks if r.precision == "fp8" and r.sparse)
    assert sparse.cluster == pytest.approx(63.3e15, rel=1e-3)


def test_superpod_networks_counted_by_rule():
    n = fabric_file("scenarios/superpod.yaml").networks
    assert n.compute == 1020 + 1024                      # RA Table 4, 4 SUs
    assert n.storage_appliances == 30                    # 2.7 TB/s over 90 GB/s appliances
    assert n.storage == 254 + 30 * APPLIANCE_FABRIC_PORTS + 254
    assert n.inband >= 2 * 127 and n.oob >= 127
    assert n.networks == n.compute + n.storage + n.inband + n.oob and n.total > n.networks


def test_one_node_has_no_fabric_switches_to_cable():
    n = network_cables(node_spec("dgx-h100"), 1, 1, 0, 0, 2, 1, None)
    assert (n.compute, n.storage, n.inband, n.storage_appliances) == (0, 2, 2, 0)
    assert n.power == 6 + (1 + 1) * 2 + 2                # 6 PSU cords, the storage leaf and OOB switch, 2 feeds


def test_cli_prints_networks_and_peaks(capsys):
    from twin.cli import main
    assert main(["topology", "scenarios/superpod.yaml"]) == 0
    out = capsys.readouterr().out
    assert "Networks" in out and "FP8 Tensor Core with sparsity" in out and "4.02 EFLOPS" in out
    assert "RA-11333-001" in out


def test_a_cluster_smaller_than_a_scalable_unit_is_its_own_unit():
    rows = peak_rows(node_spec("dgx-h100"), 1, 32)
    assert all(r.scalable_unit == r.cluster == r.node for r in rows)
