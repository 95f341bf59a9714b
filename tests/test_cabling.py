"""Every cable and the quoted peaks: the three networks counted by rule, peaks as vendors print them."""

import pytest

from twin.api import fabric_file
from twin.hardware.cabling import APPLIANCE_FABRIC_PORTS, APPLIANCE_READ_Bps, inband_fabric, network_cables
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
    """The shipped SuperPOD (127 DGX H100, 2 per rack, 2.7 TB/s of storage), counted by hand."""
    n = fabric_file("scenarios/superpod.yaml").networks
    assert n.compute == 1020 + 1024                      # RA Table 4, 4 SUs
    assert n.storage_appliances == 30                    # 2.7 TB/s over 90 GB/s appliances
    appliance_cables = 30 * APPLIANCE_FABRIC_PORTS // 2  # 2 x 200 Gb/s per cable: 120, as many uplinks
    assert n.storage == 127 * 2 + 128 * 2 * 3 // 4 + 2 * appliance_cables + 2 + 4 == 692
    # leaves: 2 per SU for 64 node ports + 48 uplinks, 4 for 240 + 6 appliance/UFM/server ports; 5 spines
    assert n.storage_switches == 4 * 2 + 4 + 5
    assert n.inband == (127 * 2 + 4 * 2 + 8) + 3 * 2 + 6 * 4 + 4 == 304 and n.inband_switches == 6 + 2
    assert n.pdus == 64 * 2 + 6 * 2                      # 64 racks of 2 DGX, 6 management racks
    oob_ports = 127 + (48 + n.storage_switches + 8) + 8 + 30 * 2 + n.pdus + 2
    assert n.oob_switches == 9 and n.oob == oob_ports + 9 * 2 == 428
    assert n.power == 127 * 6 + (48 + 17 + 8 + 9) * 2 + 8 * 2 + 30 * 4 + n.pdus == 1202
    assert n.networks == n.compute + n.storage + n.inband + n.oob == 3468 and n.total == 3468 + 1202


def test_the_reference_pod_gives_the_ra_table_8_counts():
    """RA-11333-001 V11 Table 8 for its own pod: 127 DGX H100, 4 per rack (32 racks), and 48 storage cables
    of 2 x 200 Gb/s (12 appliances of 8 ports)."""
    n = network_cables(node_spec("dgx-h100"), 127, 32, 1020 + 1024, 32 + 16, 254, 4, 12 * APPLIANCE_READ_Bps, 128)
    assert 127 * 8 + 32 * 32 == 2040                     # Table 8: NDR 400 Gb/s nodes to leaf, leaf to spine
    assert n.storage == 494 + 48 + 2 + 4                 # 254 node + 240 leaf-spine, storage, UFM, servers
    assert n.inband == 254 + 8 + 4 + 6 + 8 + 24 and n.inband_switches == 8   # Table 7: 8 SN4600C
    assert n.pdus == 96 + 12                             # Table 7 rack PDUs
    # Table 8: 127 + 64 + 8 + 8 + 2 + 108 + 16 = 333 with storage "varies"; here 14 storage switches
    # (Table 7: 16) and the 12 appliances' 2 controller ports each
    assert n.storage_switches == 14 and n.oob_switches == 8
    assert n.oob == 333 - 2 + 12 * 2


def test_inband_without_pod_services_or_core():
    """A single storage leaf: no management servers, NFS or site uplinks counted; one leaf pair needs no core."""
    assert inband_fabric(20, False) == (40 + 2, 2)
    assert inband_fabric(100, False) == (200 + 3 * 2 + 6 * 4, 8)


def test_one_node_has_no_fabric_switches_to_cable():
    n = network_cables(node_spec("dgx-h100"), 1, 1, 0, 0, 2, 1, None)
    assert (n.compute, n.storage, n.inband, n.storage_appliances) == (0, 2, 2, 0)
    assert n.power == 6 + (1 + 1) * 2 + 2                # 6 PSU cords, the storage leaf and OOB switch, 2 feeds


def test_cli_prints_networks_and_peaks(capsys):
    from twin.cli import main
    assert main(["topology", "scenarios/superpod.yaml"]) == 0
    out = capsys.readouterr().out
    assert "Networks" in out and "FP8 Tensor Core with sparsity" in out and "4.02 EFLOPS" in out
    assert "RA-11333-001" in out and "Table 8" in out
    assert "NVIDIA H100 Tensor Core GPU datasheet" in out     # the source of the FP8 peaks


def test_a_cluster_smaller_than_a_scalable_unit_is_its_own_unit():
    rows = peak_rows(node_spec("dgx-h100"), 1, 32)
    assert all(r.scalable_unit == r.cluster == r.node for r in rows)
