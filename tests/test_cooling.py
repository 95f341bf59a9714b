"""The building: hourly temperatures from climate normals, PUE per hour and per year by cooling design."""

import numpy as np
import pytest

from twin.power.cooling import (Climate, building_year, chiller_cop, climate, cooling_design, hourly_pue,
                                hourly_temperatures_c)


def test_hourly_temperatures_keep_the_monthly_means_and_ranges():
    c = climate("FR")
    t = hourly_temperatures_c(c)
    assert t.shape == (8760,)
    january = t[:31 * 24]
    assert january.mean() == pytest.approx(c.mean_c[0])
    assert january.max() - january.min() == pytest.approx(c.range_c[0])
    assert np.argmax(january[:24]) == 15 and np.argmin(january[:24]) == 3


def test_chiller_cop_near_half_carnot():
    # 6.7 C chilled water against 19.4 C outdoor + 10 C condenser approach: Carnot 279.85 / 22.7 = 12.33
    assert chiller_cop(np.array([19.4]), 6.7)[0] == pytest.approx(0.5 * 279.85 / 22.7)
    assert chiller_cop(np.array([-40.0]), 20.0)[0] == 15.0


def test_cold_hour_is_free_and_hot_hour_runs_the_chiller():
    d = cooling_design("air-economizer")
    cold, hot = hourly_pue(d, np.array([0.0, 35.0]))
    assert cold == pytest.approx(1 + d.fan_w_per_w + d.loss_w_per_w)
    cop = 0.5 * (d.supply_c - 8 + 273.15) / (35 + 10 - (d.supply_c - 8))
    assert hot == pytest.approx(1 + d.fan_w_per_w + d.loss_w_per_w + 1 / cop)


def test_france_below_spain_and_chiller_less_below_chillers():
    fr, es = building_year("FR", "air-economizer"), building_year("ES", "air-economizer")
    assert fr.pue < es.pue
    assert fr.free_cooling_hours > es.free_cooling_hours
    assert building_year("FR", "chiller-less").pue < fr.pue < building_year("FR", "air-chiller").pue
    assert all("1991-2020" in s for s in (climate("FR").source, climate("ES").source))
    assert len(fr.hourly_pue) == 8760 and fr.pue == pytest.approx(np.mean(fr.hourly_pue), abs=1e-5)


def test_warmer_climate_never_lowers_the_pue():
    d = cooling_design("liquid-dlc")
    base = climate("FR")
    warm = Climate("XX", "test", tuple(m + 5 for m in base.mean_c), base.range_c, "")
    assert np.all(hourly_pue(d, hourly_temperatures_c(warm)) >= hourly_pue(d, hourly_temperatures_c(base)) - 1e-12)


def test_unknown_country_names_the_field():
    from twin.errors import ScenarioError
    with pytest.raises(ScenarioError, match="site.country"):
        climate("ZZ")


def test_climate_rows_name_their_record_or_say_unverified():
    """GB and IE are computed from the services' monthly station records; every other row keeps its mark."""
    from twin import catalog
    for code in ("GB", "IE"):
        row = catalog.entry("climates", code, "site.country")
        assert "1991-2020 (360 months" in row["source"] and "unverified" not in row["source"]
    heathrow = climate("GB")
    # Heathrow 1991-2020, tmax and tmin averaged over 30 Julys: 23.90 and 14.17 deg C
    assert heathrow.mean_c[6] == pytest.approx(19.0) and heathrow.range_c[6] == pytest.approx(9.7)
    for code in ("FR", "ES", "DE", "US", "SE", "PL", "NL", "NO", "FI", "IT"):
        assert "unverified" in catalog.entry("climates", code, "site.country")["source"]
