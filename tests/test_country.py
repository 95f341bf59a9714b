"""Carbon intensity and electricity prices per country."""

from __future__ import annotations

import copy

import pytest

from tests.conftest import BASE
from twin import catalog
from twin.api import run_dict
from twin.errors import ScenarioError
from twin.power.country import carbon_intensity, country, electricity_price

REQUIRED = "FR DE US SE PL GB NL IE NO ES IT FI DK BE CH CA JP".split()


def test_france_and_germany_differ_by_the_ratio_of_their_intensities():
    data = copy.deepcopy(BASE)
    data["site"] = {"country": "FR", "pue": 1.2, "compare": ["DE"]}
    r = run_dict(data)
    ratio = r.carbon_kg["DE"] / r.carbon_kg["FR"]
    assert ratio == pytest.approx(r.power.intensity()["DE"] / r.power.intensity()["FR"])
    assert ratio == pytest.approx(6.8, abs=0.05)                    # 380.95 / 56.04 g/kWh (Ember 2023)


def test_intensity_comes_with_its_data_year_and_iso3_works():
    fr = carbon_intensity(country("FRA", "site.country"))
    assert fr.g_per_kwh == pytest.approx(56.0, abs=0.1)
    assert fr.year == 2023


def test_override_applies_to_the_site_only():
    data = copy.deepcopy(BASE)
    data["site"] = {"country": "FR", "pue": 1.2, "compare": ["DE"], "carbon_intensity": "100 g/kWh"}
    r = run_dict(data)
    assert r.power.intensity()["FR"] == 100.0
    assert r.power.intensity()["DE"] == pytest.approx(380.95, abs=0.1)
    assert "override" in r.sources["carbon_intensity.FR"]


def test_unknown_country_gets_a_suggestion():
    with pytest.raises(ScenarioError, match="site.country: unknown country code 'Frnace' .did you mean 'FR' for France"):
        country("Frnace", "site.country")
    with pytest.raises(ScenarioError, match="did you mean 'FR'"):
        country("FRA1", "site.country")


def test_unknown_compared_country_names_its_position():
    data = copy.deepcopy(BASE)
    data["site"]["compare"] = ["DE", "XX"]
    with pytest.raises(ScenarioError, match=r"site\.compare\[1\]"):
        run_dict(data)


@pytest.mark.parametrize("code", REQUIRED)
def test_price_table_covers_the_planning_countries_with_year_and_source(code):
    row = catalog.table("electricity_prices")[code]
    assert row["year"] in (2023, 2024) and row["source"]
    price = electricity_price(country(code, "site.country"))
    assert 0.03 < price.eur_per_kwh < 0.40                          # plausible business prices in EUR/kWh
    assert price.year == row["year"]


def test_eu_members_without_a_row_fall_back_to_the_eu_average():
    at = electricity_price(country("AT", "site.country"))
    assert at.eur_per_kwh == pytest.approx(catalog.table("electricity_prices")["EU"]["price"])
    assert "EU average used for AT" in at.source
    assert electricity_price(country("BR", "site.country")) is None


def test_prices_in_other_currencies_are_converted_at_sourced_rates():
    us = electricity_price(country("US", "site.country"))
    assert us.eur_per_kwh == pytest.approx(0.0806 * 0.9248)
    override = electricity_price(country("US", "site.country"), (100.0, "GBP"))
    assert override.eur_per_kwh == pytest.approx(100.0 * 1.1497)
