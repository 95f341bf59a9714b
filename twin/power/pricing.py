"""One price for an hour of GPUs, rented or owned, broken into its parts.

A job holds GPUs for some hours; what an hour of one GPU costs depends on how the site pays for it
(``site.pricing``):

- **rental**: the provider's price per GPU-hour (``power/prices.py``: a provider of the catalog's price list,
  the median of the on-demand list prices, or the scenario's own), all of it in the ``gpu`` part;
- **owned**: the node's purchase price written off over its life, plus its support contract and the space
  (colocation: power infrastructure and cooling) it takes, per node-hour and shared by the node's GPUs::

      gpu         = price / (life · 8,766 h)                       / gpus per node
      maintenance = price · maintenance_per_year / 8,766 h          / gpus per node
      space       = space_price (per kW-month) · max_power / 730.5 h / gpus per node

Electricity comes on top in both cases, from the facility energy and the country's price. A cost is then
``gpu_hours · (gpu + maintenance + space) + facility_kwh · price_per_kwh``, the same sum in every command.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from twin import catalog
from twin.errors import ScenarioError
from twin.power.country import to_eur
from twin.units import SECONDS_PER_HOUR

HOURS_PER_YEAR = 8766.0                  # 365.25 days
HOURS_PER_MONTH = HOURS_PER_YEAR / 12    # 730.5 h
# The parts a cost is made of, in the order they are shown.
PARTS = ("gpu", "maintenance", "space", "electricity")


@dataclass(frozen=True)
class GpuHourPrice:
    """What one GPU held for one hour costs, by part, in euros (electricity apart: it follows the energy)."""
    pricing: str                      # rental | owned
    gpu_eur: float                    # the rental price, or the hardware's write-off
    maintenance_eur: float = 0.0
    space_eur: float = 0.0
    sources: tuple[str, ...] = ()

    @property
    def total_eur(self) -> float:
        return self.gpu_eur + self.maintenance_eur + self.space_eur


@dataclass(frozen=True)
class OwnershipTerms:
    """How an owned node is paid for, in SI units and euros."""
    node_price_eur: float
    life_s: float
    maintenance_per_year: float       # fraction of the purchase price
    space_eur_per_w_month: float      # colocation price per watt of provisioned power and month
    sources: tuple[str, ...] = field(default=())


def rental_price(price_eur_per_gpu_hour: float, source: str) -> GpuHourPrice:
    """A rented GPU-hour, all of it in the ``gpu`` part; ``source`` empty for a price the scenario writes."""
    return GpuHourPrice("rental", price_eur_per_gpu_hour, sources=(source,) if source else ())


def owned_price(terms: OwnershipTerms, gpus_per_node: int, node_max_power_w: float) -> GpuHourPrice:
    """An owned node's hour, shared by its GPUs: write-off, support and space (module docstring)."""
    life_h = terms.life_s / SECONDS_PER_HOUR
    write_off = terms.node_price_eur / life_h
    maintenance = terms.node_price_eur * terms.maintenance_per_year / HOURS_PER_YEAR
    space = terms.space_eur_per_w_month * node_max_power_w / HOURS_PER_MONTH
    return GpuHourPrice("owned", write_off / gpus_per_node, maintenance / gpus_per_node, space / gpus_per_node,
                        terms.sources)


def ownership_terms(node: str, node_price_eur: float | None = None, life_s: float | None = None,
                    maintenance_per_year: float | None = None,
                    space_eur_per_w_month: float | None = None) -> OwnershipTerms:
    """The catalog's terms for owning ``node``, each replaced by the scenario's where it gives one."""
    data = catalog.table("ownership")
    terms, sources = data["terms"], []
    if node_price_eur is None:
        row = data["nodes"].get(node)
        if row is None:
            listed = ", ".join(data["nodes"])
            raise ScenarioError("site.hardware_price", f"the catalog has no purchase price for node '{node}' "
                                f"(it has: {listed}); write one, e.g. '250000 USD'")
        node_price_eur = to_eur(float(row["price"]), row["currency"], f"catalog ownership ({node})")
        sources.append(f"purchase price: {row['source']}")
    if life_s is None:
        life_s = float(terms["life"]["years"]) * HOURS_PER_YEAR * SECONDS_PER_HOUR
        sources.append(f"life: {terms['life']['source']}")
    if maintenance_per_year is None:
        maintenance_per_year = float(terms["maintenance_per_year"]["fraction"])
        sources.append(f"maintenance: {terms['maintenance_per_year']['source']}")
    if space_eur_per_w_month is None:
        space = terms["space_price"]
        space_eur_per_w_month = to_eur(float(space["price"]), space["currency"], "catalog ownership") / 1e3
        sources.append(f"space: {space['source']}")
    return OwnershipTerms(node_price_eur, life_s, maintenance_per_year, space_eur_per_w_month, tuple(sources))


def owned_nodes() -> list[str]:
    """The nodes the catalog has a purchase price for (``site.pricing: owned`` without ``hardware_price``)."""
    return list(catalog.table("ownership")["nodes"])


@dataclass(frozen=True)
class Cost:
    """A cost by part, in euros; ``electricity_eur`` is None where the country's price is unknown."""
    pricing: str
    gpu_eur: float
    maintenance_eur: float
    space_eur: float
    electricity_eur: float | None

    @property
    def total_eur(self) -> float | None:
        """Every part; None when electricity is unknown (a total without it would read as complete)."""
        if self.electricity_eur is None:
            return None
        return self.gpu_eur + self.maintenance_eur + self.space_eur + self.electricity_eur

    @property
    def includes(self) -> tuple[str, ...]:
        """The parts that are in the total, for labels ("GPU rental + electricity")."""
        held = ("gpu",) + (("maintenance", "space") if self.pricing == "owned" else ())
        return held + (("electricity",) if self.electricity_eur is not None else ())


def cost(price: GpuHourPrice, gpu_hours: float, facility_kwh: float, eur_per_kwh: float | None) -> Cost:
    """``gpu_hours`` held at ``price`` and ``facility_kwh`` drawn at ``eur_per_kwh``."""
    electricity = None if eur_per_kwh is None else facility_kwh * eur_per_kwh
    return Cost(price.pricing, gpu_hours * price.gpu_eur, gpu_hours * price.maintenance_eur,
                gpu_hours * price.space_eur, electricity)


@dataclass(frozen=True)
class NodeForPrice:
    """What owning a node's hour depends on: its catalog name, its GPUs and its provisioned power."""
    name: str
    gpu: str
    gpus: int
    max_power_w: float


@dataclass(frozen=True)
class PricingRequest:
    """``site.pricing`` and its keys as the scenario writes them (amounts with their currencies)."""
    pricing: str = "rental"
    gpu_hour_price: tuple[float, str] | str | None = None     # a price, a provider, 'list', or None: 'list'
    hardware_price: tuple[float, str] | None = None           # per node
    hardware_life_years: float | None = None
    maintenance_per_year: float | None = None
    space_price_per_kw_month: tuple[float, str] | None = None


# What a result says when the site's GPUs have no price: rental by default, and the list has none for the GPU.
UNPRICED = ("the price list has no on-demand price for {gpu}, and site.gpu_hour_price is not written: GPU time "
            "is not counted in the cost (write a price, e.g. '2.50 USD/GPU-h', or set site.pricing: owned)")


def _rented(node: NodeForPrice, written: tuple[float, str] | str | None) -> GpuHourPrice | None:
    from twin.power.prices import LIST, gpu_hour_price, listed_gpus     # the price list: only where rental asks

    if isinstance(written, tuple):
        return rental_price(to_eur(written[0], written[1], "site.gpu_hour_price"), "")
    if written is None and node.gpu not in listed_gpus():
        return None
    listed = gpu_hour_price(node.gpu, written or LIST)
    return rental_price(to_eur(listed.amount, listed.currency, "catalog prices"), listed.source)


def hour_price(request: PricingRequest, node: NodeForPrice) -> GpuHourPrice | None:
    """The site's price of one GPU-hour of ``node``: rented (default: the list median) or owned; None when
    rental is left to the list and the list has no on-demand price for the GPU (``UNPRICED`` says so)."""
    if request.pricing == "rental":
        return _rented(node, request.gpu_hour_price)
    hw, space = request.hardware_price, request.space_price_per_kw_month
    terms = ownership_terms(
        node.name,
        node_price_eur=None if hw is None else to_eur(hw[0], hw[1], "site.hardware_price"),
        life_s=None if request.hardware_life_years is None
        else request.hardware_life_years * HOURS_PER_YEAR * SECONDS_PER_HOUR,
        maintenance_per_year=request.maintenance_per_year,
        space_eur_per_w_month=None if space is None else to_eur(space[0], space[1], "site.space_price") / 1e3)
    return owned_price(terms, node.gpus, node.max_power_w)


def cost_parts(c: Cost) -> dict:
    """A cost as the records show it: each part, the total, which parts it includes and how GPUs are paid."""
    return {"gpu": c.gpu_eur, "maintenance": c.maintenance_eur, "space": c.space_eur,
            "electricity": c.electricity_eur, "total": c.total_eur, "includes": list(c.includes),
            "pricing": c.pricing}
