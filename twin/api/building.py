"""``site.cooling`` → the building's year at the site's climate (docs/building.md)."""

from __future__ import annotations

from twin.power.cooling import BuildingYear, building_year
from twin.scenario import Scenario


def building_of(scenario: Scenario) -> BuildingYear | None:
    """PUE per hour and per year of the site's cooling design, when ``site.cooling`` asks for it."""
    c = scenario.site.cooling
    return None if c is None else building_year(c.climate or scenario.site.country, c.design)
