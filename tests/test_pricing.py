"""One price for an hour of GPUs: rental as listed, ownership written off by hand."""

from __future__ import annotations

import pytest

from twin.errors import ScenarioError
from twin.power.pricing import (HOURS_PER_YEAR, GpuHourPrice, OwnershipTerms, cost, owned_price, ownership_terms,
                                rental_price)

USD_EUR = 0.9248                       # catalog currencies.yaml, ECB 2023 average


def test_an_owned_dgx_h100_hour_by_hand():
    """270,000 USD over 6 years, 10% a year of support, 184.06 USD per kW-month for 10.2 kW, per GPU of 8."""
    price = owned_price(ownership_terms("dgx-h100"), gpus_per_node=8, node_max_power_w=10_200.0)
    node_eur = 270_000 * USD_EUR
    assert price.gpu_eur == pytest.approx(node_eur / (6 * 8766) / 8, rel=1e-12)                  # 0.5934
    assert price.maintenance_eur == pytest.approx(node_eur * 0.10 / 8766 / 8, rel=1e-12)         # 0.3561
    assert price.space_eur == pytest.approx(184.06 * USD_EUR * 10.2 / 730.5 / 8, rel=1e-12)      # 0.2971
    assert price.total_eur == pytest.approx(1.2466, abs=1e-4)
    assert price.pricing == "owned" and len(price.sources) == 4


def test_the_scenarios_terms_replace_the_catalogs():
    terms = ownership_terms("dgx-h100", node_price_eur=100_000.0, life_s=4 * HOURS_PER_YEAR * 3600.0,
                            maintenance_per_year=0.0, space_eur_per_w_month=0.0)
    assert terms.sources == ()
    price = owned_price(terms, 8, 10_200.0)
    assert price.gpu_eur == pytest.approx(100_000 / (4 * 8766) / 8) and price.maintenance_eur == 0 == price.space_eur


def test_a_node_without_a_purchase_price_is_one_line_naming_the_key():
    with pytest.raises(ScenarioError) as err:
        ownership_terms("l4-8")
    assert "site.hardware_price" in str(err.value) and "dgx-h100" in str(err.value)


def test_a_cost_is_its_parts_and_says_which():
    rented = cost(rental_price(2.0, "test"), gpu_hours=1000.0, facility_kwh=500.0, eur_per_kwh=0.2)
    assert (rented.gpu_eur, rented.maintenance_eur, rented.space_eur, rented.electricity_eur) == (2000.0, 0, 0, 100.0)
    assert rented.total_eur == 2100.0 and rented.includes == ("gpu", "electricity")
    owned = cost(GpuHourPrice("owned", 0.5, 0.25, 0.25), 1000.0, 500.0, None)
    assert owned.total_eur is None and owned.includes == ("gpu", "maintenance", "space")


def test_more_hours_never_cost_less():
    price = owned_price(OwnershipTerms(2e5, 5 * HOURS_PER_YEAR * 3600.0, 0.1, 0.15), 8, 10_200.0)
    costs = [cost(price, h, 10 * h, 0.1).total_eur for h in (0.0, 1.0, 10.0, 1e6)]
    assert costs == sorted(costs) and costs[0] == 0.0
