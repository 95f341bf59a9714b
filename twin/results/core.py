"""The core every result record shares, and the one way a record becomes JSON.

A record is a frozen dataclass. ``Result`` holds the fields every workload's answer has (the scenario's
name, its warnings and the sources of its figures); each workload's module adds its own fields and a
``Layout`` naming only what is not a plain field: values converted from the record, keys derived from
it (placed right after a field) and fields that appear only through derived keys. ``serialise`` walks
``dataclasses.fields``, so a field's name is written once, in its dataclass. ``Record`` gives every
record (run records here, study records in ``twin.studies.records``) its ``to_dict`` and ``to_json``;
``site_costs`` is the per-country carbon and energy cost block the training-like records share.

Values are SI (seconds, bytes, watts) except where the key names another unit (kWh, kg, EUR, TFLOP/s);
JSON has no inf or nan, so ``finite`` turns them into null.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from twin import collector

if TYPE_CHECKING:
    from twin.power.assess import PowerAssessment

# 2: cluster.nodes counts spares (gpus_total and fabric.nodes are the whole cluster); failures.finished_samples.
SCHEMA_VERSION = 2

# Separator of the texts of a list field (warnings, memory_advice) in a flat record.
LIST_SEPARATOR = " | "

Derive = Callable[[Any], dict[str, Any]]
# The field metadata key naming the nested mapping a field is shown in.
GROUP = "record_group"


@dataclass(frozen=True)
class Layout:
    """What of a record is not a plain field: the rest is each field's value, by its own name, in order."""
    convert: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)  # field → its value, from the record
    after: Mapping[str, Derive] = field(default_factory=dict)    # field → derived keys placed right after it
    omit: frozenset[str] = frozenset()                            # fields shown only through derived keys


# Values ``plain`` and ``finite`` pass through as they are, tested by exact type first: a record of 50,000
# jobs holds millions of them.
_SCALARS = frozenset({str, int, bool, type(None)})
# Field names of each class ``plain`` has met, in declared order (``dataclasses.fields``); None for a class
# that is not a dataclass.
_FIELD_NAMES: dict[type, tuple[str, ...] | None] = {}


def _field_names(cls: type) -> tuple[str, ...] | None:
    """The fields of a dataclass ``cls`` in declared order; None for any other class."""
    try:
        return _FIELD_NAMES[cls]
    except KeyError:
        names = _FIELD_NAMES[cls] = (tuple(f.name for f in dataclasses.fields(cls))
                                     if dataclasses.is_dataclass(cls) else None)
        return names


def plain(record: Any) -> Any:
    """A dataclass record (nested records, lists and maps of them) as plain JSON-able values."""
    cls = type(record)
    if cls in _SCALARS or cls is float:
        return record
    names = _field_names(cls)
    if names is not None:
        return {name: plain(getattr(record, name)) for name in names}
    if isinstance(record, dict):
        return {k: plain(v) for k, v in record.items()}
    if isinstance(record, (list, tuple)):
        return [plain(v) for v in record]
    return record


def serialise(record: Any, layout: Layout, names: list[str] | None = None) -> dict[str, Any]:
    """The keys of ``record`` (its dataclass fields in ``names`` order, default declared order), by ``layout``.

    A field whose metadata names a ``GROUP`` goes into a nested mapping of that name, placed where the
    group's first field stands.
    """
    fields = {f.name: f for f in dataclasses.fields(record)}
    out: dict[str, Any] = {}
    for name in names if names is not None else list(fields):
        group = fields[name].metadata.get(GROUP)
        if group is not None:
            out.setdefault(group, {})[name] = plain(getattr(record, name))
        elif name not in layout.omit:
            convert = layout.convert.get(name)
            out[name] = convert(record) if convert is not None else plain(getattr(record, name))
        derive = layout.after.get(name)
        if derive is not None:
            out |= derive(record)
    return out


def grouped(name: str) -> Any:
    """A dataclass field shown inside the record's nested mapping ``name`` (``field(metadata=...)``)."""
    return field(metadata={GROUP: name})


def finite(value: Any) -> Any:
    """JSON has no inf/nan: they become null."""
    cls = type(value)
    if cls in _SCALARS:
        return value
    if cls is float or isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return dict(zip(value, map(finite, value.values())))
    if isinstance(value, (list, tuple)):
        return list(map(finite, value))
    return value


def flatten(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Scalar fields of a JSON record, nested keys joined with dots (``plan.tensor``, ``carbon_kg.FR``).

    A list of texts becomes one text joined with ``LIST_SEPARATOR``; other lists (timelines,
    per-country rows, scalable units) are left out: the nested mappings hold their totals.
    """
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}."))
        elif isinstance(value, (list, tuple)):
            if all(isinstance(v, str) for v in value):
                out[name] = LIST_SEPARATOR.join(value)
        else:
            out[name] = value
    return out


def to_json(record: dict[str, Any]) -> str:
    """A JSON record as the CLI prints it."""
    return json.dumps(record, indent=2, sort_keys=False)


def site_costs(pw: PowerAssessment) -> dict[str, Any]:
    """A run's carbon and energy cost per country, the costs every training-like record shows."""
    return {"carbon_kg": pw.carbon_kg(), "energy_cost_eur": pw.energy_cost_eur()}


class Record:
    """A record with a JSON form: its keys by its class's ``layout`` (``serialise``)."""
    layout: ClassVar[Layout] = Layout()

    def record(self) -> dict[str, Any]:
        return serialise(self, self.layout)

    def banded(self, record: dict[str, Any]) -> dict[str, Any]:
        """``record`` with the error band of each headline number (``KEY_low``, ``KEY_high``, twin.bands);
        a record without a band is returned as it is."""
        return record

    def to_dict(self) -> dict[str, Any]:
        with collector.paused():       # a record of 50,000 jobs is millions of values that all live on
            return finite(self.banded(self.record()))

    def described(self) -> dict[str, Any]:
        """The record a text summary reads: ``to_dict``, or less where a band is dear to compute and the
        summary only names where it comes from (``OperationsResult``)."""
        return self.to_dict()

    def to_json(self) -> str:
        return to_json(self.to_dict())


@dataclass(frozen=True, kw_only=True)
class Result(Record):
    """The core of every workload's answer; each workload's record adds its fields between
    ``scenario`` (with ``workload`` after it) and ``warnings`` and ``sources``, which end the record."""
    workload: ClassVar[str]                     # training | serving | operations
    scenario: str
    warnings: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)

    def record(self, timelines: bool = True) -> dict[str, Any]:
        """The record's keys; ``timelines`` False leaves out lists that a table row does not hold."""
        return self.keys_by(self.layout_of(timelines))

    def keys_by(self, layout: Layout) -> dict[str, Any]:
        """The record's keys with the workload's own fields laid out by ``layout``."""
        head, *tail = (f.name for f in dataclasses.fields(Result))
        own = [f.name for f in dataclasses.fields(self) if f.name not in {head, *tail}]
        return ({head: getattr(self, head), "workload": self.workload}
                | serialise(self, layout, own) | serialise(self, Layout(), tail))

    def layout_of(self, timelines: bool) -> Layout:
        """The layout of the record, with (or, where a workload has one, without) its timelines."""
        return self.layout

    def to_flat(self) -> dict[str, Any]:
        """The record's scalar fields, one level deep (``flatten``), without timelines or sources, with
        the error bands of its headline numbers: a row of a study's table."""
        record = self.banded(self.record(timelines=False))
        del record["sources"]
        return flatten(finite(record))
