"""``site.cooling:`` the building's cooling design, driven by the site's climate (docs/building.md)."""

from twin.scenario.fields import Strict, name_text

DesignName = name_text(80)
CountryCode = name_text(3)


class Cooling(Strict):
    design: DesignName                     # a design of catalog cooling_designs.yaml
    climate: CountryCode | None = None     # a country of catalog climates.yaml; unwritten: site.country
