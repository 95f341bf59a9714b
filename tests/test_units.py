"""Unit conversions at the scenario boundary: every dimension, bits vs bytes, decimal vs binary."""

import pytest

from twin.errors import ScenarioError
from twin.units import (JOULES_PER_KWH, fmt_amount, fmt_bytes, fmt_count, parse_energy_kwh, parse_mass_kg,
                        parse_money_eur, parse_price_per_kwh, parse_quantity)


@pytest.mark.parametrize("text, expected_Bps", [
    ("400 Gb/s", 50e9),            # a bit is an eighth of a byte
    ("400 Gbps", 50e9),
    ("400 GB/s", 400e9),
    ("2.7 TB/s", 2.7e12),
    ("1 GiB/s", 2**30),
    ("200 Gbit/s", 25e9),
    ("100 Mb/s", 12.5e6),
])
def test_bandwidth_bits_and_bytes(text, expected_Bps):
    assert parse_quantity(text, "bandwidth", "f") == pytest.approx(expected_Bps)


@pytest.mark.parametrize("text, expected_bytes", [
    ("80 GB", 80e9), ("80 GiB", 80 * 2**30), ("1.8 PB", 1.8e15), ("512 MiB", 512 * 2**20), ("1 TiB", 2**40),
])
def test_sizes_decimal_and_binary(text, expected_bytes):
    assert parse_quantity(text, "bytes", "f") == pytest.approx(expected_bytes)


def test_gib_is_larger_than_gb():
    assert parse_quantity("80 GiB", "bytes", "f") / parse_quantity("80 GB", "bytes", "f") == pytest.approx(1.073741824)


@pytest.mark.parametrize("text, expected", [
    ("25 kW", 25e3), ("700 W", 700.0), ("1.2 MW", 1.2e6),
])
def test_power(text, expected):
    assert parse_quantity(text, "power", "f") == pytest.approx(expected)


def test_energy_kwh_to_joules():
    assert parse_quantity("1 kWh", "energy", "f") == pytest.approx(JOULES_PER_KWH)
    assert parse_quantity("2 MWh", "energy", "f") == pytest.approx(2 * 3.6e9)


def test_flops():
    assert parse_quantity("989 TFLOP/s", "flops", "f") == pytest.approx(989e12)
    assert parse_quantity("1.979 PFLOP/s", "flops", "f") == pytest.approx(1.979e15)


@pytest.mark.parametrize("text, expected", [
    ("30 min", 1800.0), ("2 h", 7200.0), ("3 days", 259200.0), ("90 s", 90.0), (45, 45.0), ("500 ms", 0.5),
])
def test_durations(text, expected):
    assert parse_quantity(text, "time", "f") == pytest.approx(expected)


@pytest.mark.parametrize("text, expected", [
    ("2T", 2e12), ("1.4T", 1.4e12), ("300B", 300e9), ("500M", 500e6), ("2e12", 2e12), (1000, 1000.0),
])
def test_token_counts(text, expected):
    assert parse_quantity(text, "count", "f") == pytest.approx(expected)


def test_carbon_intensity_units():
    assert parse_quantity("56 g/kWh", "carbon_intensity", "f") == pytest.approx(56.0)
    assert parse_quantity("0.385 kg/kWh", "carbon_intensity", "f") == pytest.approx(385.0)


def test_prices():
    assert parse_price_per_kwh("0.10 EUR/kWh", "f") == (pytest.approx(0.10), "EUR")
    assert parse_price_per_kwh("80 eur/MWh", "f") == (pytest.approx(0.08), "EUR")


@pytest.mark.parametrize("value, dimension", [
    ("400", "bandwidth"), (400, "bandwidth"), ("80", "bytes"), ("25 kg", "power"), ("fast", "time"),
    ("400 Gb/s", "bytes"), (True, "count"),
])
def test_bad_units_name_the_field(value, dimension):
    with pytest.raises(ScenarioError) as err:
        parse_quantity(value, dimension, "cluster.fabric.link")
    assert str(err.value).startswith("cluster.fabric.link: ")


def test_fmt_bytes_uses_binary_prefixes():
    assert fmt_bytes(80 * 2**30) == "80.0 GiB"


@pytest.mark.parametrize("value,text", [(2e12, "2T"), (1.4e12, "1.4T"), (3e11, "300B"), (5e6, "5M"), (512, "512")])
def test_fmt_count_reads_back_as_the_scenario_writes_it(value, text):
    assert fmt_count(value) == text
    assert parse_quantity(text, "count", "x") == pytest.approx(value)


@pytest.mark.parametrize("value,text", [(4.24e7, "42.4 M GPU·h"), (999_600, "1 M GPU·h"), (999_400, "999 k GPU·h"),
                                        (512, "512 GPU·h"), (3.2e12, "3.2 T GPU·h")])
def test_fmt_amount_sets_the_prefix_apart_and_rounds_up_to_the_next_one(value, text):
    assert fmt_amount(value, "GPU·h") == text


@pytest.mark.parametrize("text, euros", [
    ("2M EUR", 2e6), ("1e5 EUR", 1e5), ("500k€", 5e5), ("500000", 5e5), ("1.5B", 1.5e9), (" 250 K EUR ", 2.5e5),
])
def test_money_in_euros(text, euros):
    assert parse_money_eur(text, "f") == pytest.approx(euros)


@pytest.mark.parametrize("text, kg", [("500t", 5e5), ("20000 kg", 2e4), ("1.5 kt", 1.5e6), ("20t", 2e4)])
def test_mass_in_kilograms(text, kg):
    assert parse_mass_kg(text, "f") == pytest.approx(kg)


@pytest.mark.parametrize("text, kwh", [("5 MWh", 5e3), ("5GWh", 5e6), ("10 kWh", 10.0), ("3.6 MJ", 1.0)])
def test_energy_in_kwh(text, kwh):
    assert parse_energy_kwh(text, "f") == pytest.approx(kwh)


@pytest.mark.parametrize("parse, value", [
    (parse_money_eur, "5 USD"), (parse_money_eur, "-5 EUR"), (parse_money_eur, "1e999 EUR"), (parse_money_eur, True),
    (parse_mass_kg, "500"), (parse_mass_kg, "5 lb"), (parse_mass_kg, "-5t"), (parse_mass_kg, "1e999 t"),
    (parse_mass_kg, 500), (parse_energy_kwh, "5 MW"), (parse_energy_kwh, 5),
])
def test_bad_money_mass_and_energy_name_the_field(parse, value):
    with pytest.raises(ScenarioError) as caught:
        parse(value, "--constraint")
    assert str(caught.value).startswith("--constraint: ") and "\n" not in str(caught.value)
