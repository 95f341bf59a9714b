"""Data and storage: data stalls, staging, checkpoints against capacity, data preparation (hand arithmetic)."""

import math

import pytest

from twin.hardware.specs import node_spec
from twin.storage.checkpoints import (Retention, async_checkpoint, checkpoints_that_fit, kept_after, storage_use)
from twin.storage.datasets import dataset_spec
from twin.storage.loading import data_feed, staging
from twin.storage.preparation import prepare_job
from twin.storage.tiers import tier_spec

DGX = node_spec("dgx-h100")


def test_tiers_carry_the_seed_figures():
    nabu, jero, nvme = tier_spec("ddn-nabuchodonosor"), tier_spec("ddn-jeroboam"), tier_spec("dgx-h100-nvme")
    assert (nabu.capacity_bytes, nabu.read_Bps, nabu.write_Bps) == (1.8e15, 2.7e12, 1.95e12)
    assert (jero.read_Bps, jero.write_Bps) == (40e9, 30e9)
    assert nvme.capacity_bytes == pytest.approx(8 * 3.84e12)
    # Shared tiers stop at the nodes' storage NICs (2 x 400 Gb/s = 100 GB/s a DGX H100); NVMe adds up per node.
    assert nabu.read_for(DGX, 2) == pytest.approx(200e9)
    assert nabu.read_for(DGX, 127) == pytest.approx(2.7e12)
    assert jero.read_for(DGX, 2) == pytest.approx(40e9)
    assert nvme.read_for(DGX, 4) == pytest.approx(4 * nvme.read_Bps)


def test_video_starves_the_two_node_cluster_but_not_the_superpod_file_system():
    """256 clips of 40 MB a step (10.24 GB) against a 0.1 s step on 2 DGX H100."""
    video = dataset_spec(100e12, "video", "ddn-jeroboam", 4096, sample_bytes=40e6, cpu_s_per_sample=0.02)
    jero = data_feed(video, tier_spec("ddn-jeroboam"), DGX, 2, 256, 0.1)
    assert jero.bytes_per_step == pytest.approx(10.24e9)
    assert jero.read_s == pytest.approx(10.24e9 / 40e9)                 # 0.256 s
    assert jero.limit == "read" and jero.wait_s == pytest.approx(0.256 - 0.1)
    nabu = data_feed(video, tier_spec("ddn-nabuchodonosor"), DGX, 2, 256, 0.1)
    assert nabu.read_s == pytest.approx(10.24e9 / 200e9)                # 0.0512 s: the NICs bound it
    assert nabu.wait_s == 0.0 and not nabu.starved
    assert jero.demand_Bps == pytest.approx(102.4e9)


def test_decoding_bounds_the_loader_when_cpus_are_short():
    video = dataset_spec(1e12, "video", "ddn-nabuchodonosor", 4096, sample_bytes=1e6, cpu_s_per_sample=1.0)
    feed = data_feed(video, tier_spec("ddn-nabuchodonosor"), DGX, 1, 1120, 1.0, cpu_cores_per_node=112)
    assert feed.limit == "decode" and feed.decode_s == pytest.approx(10.0) and feed.wait_s == pytest.approx(9.0)


def test_token_shards_read_four_bytes_a_token():
    text = dataset_spec(10e12, "tokens", "ddn-nabuchodonosor", 4096)
    assert text.sample_bytes == 4 * 4096 and text.opens_per_sample == 0


def test_staging_from_object_storage():
    video = dataset_spec(100e12, "video", "ddn-jeroboam", 4096)
    s = staging(video, tier_spec("object-storage"), tier_spec("ddn-jeroboam"), DGX, 2)
    assert s.rate_Bps == pytest.approx(25e9)                   # 2 nodes x 12.5 GB/s from the object store
    assert s.time_s == pytest.approx(4000) and not s.fits      # 100 TB does not fit on 60 TB


def test_checkpoints_of_405b_beside_100_tb_on_the_superpod():
    """405e9 parameters x (2 bytes bf16 + 12 bytes of fp32 Adam states) = 5.67 TB a checkpoint;
    (1.8 PB - 100 TB) / 5.67 TB = 299.8 -> 299 checkpoints."""
    ckpt = 405e9 * 14
    assert checkpoints_that_fit(1.8e15, 100e12, ckpt) == 299
    assert checkpoints_that_fit(100e12, 100e12, ckpt) == 0


def test_retention_keeps_the_last_and_every_nth():
    keep = Retention(keep_last=3, every_nth=10)
    assert [kept_after(k, keep) for k in (1, 3, 4, 13, 23)] == [1, 3, 3, 4, 5]
    assert kept_after(50, Retention()) == 50
    use = storage_use(40, 1.0, 10.0, 14.0, keep)
    assert use.fit == 4 and use.used_bytes[2] == 13.0 and use.full_at == 23   # 23 keeps 3 + {10, 20} = 5 > 4


def test_async_checkpoint_to_nvme_then_drained():
    ckpt = 405e9 * 14
    a = async_checkpoint(ckpt, tier_spec("dgx-h100-nvme"), tier_spec("ddn-nabuchodonosor"), DGX, 124)
    nvme = tier_spec("dgx-h100-nvme")
    assert a.stall_s == pytest.approx(ckpt / (124 * nvme.write_Bps))
    assert a.drain_s == pytest.approx(ckpt / 1.95e12)
    assert a.restart_read_s == pytest.approx(ckpt / 2.7e12) and a.nvme_fits


def test_data_preparation_on_ten_thousand_vcpus():
    job = prepare_job("tokenize", 100e12, 10_000, price_per_core_hour=0.01)
    assert job.time_s == pytest.approx(100e12 / (10_000 * 50e6 / 16))      # 3,200 s
    assert job.energy_j == pytest.approx(10_000 * job.time_s * 2 * 2 * 350 / 224)
    assert job.cost == pytest.approx(10_000 * job.time_s / 3600 * 0.01)
    assert math.isclose(prepare_job("filter", 1e12, 100).time_s, 1e4)
