"""A validated profile as a tree of frozen dataclasses, generated from the schema's field tables.

The classes are made once from :mod:`advisor.format.schema`'s tables (``PROFILE`` and its sections), so a field added
there is an attribute here without another line: ``profile.device.name``, ``result.scaling.speedup``. A field
the file leaves out is ``None``; a list of sections is a tuple; each section keeps the mapping it was built
from as ``raw`` (read-only) for code that needs the whole of it (the workload's description). Built by the store
after validation (:attr:`advisor.store.Profile.typed`); the library and the app read attributes, not keys.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from advisor.format.fields import Field
from advisor.format.schema import PROFILE


def _class_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_")) or "Profile"


_NESTED = ("section", "sections", "mapping", "strings", "numbers", "text")  # values that may be containers


@dataclasses.dataclass(frozen=True)
class _Table:
    fields: tuple[Field, ...]  # kept alive with its class: the id the table is found by stays its own
    cls: type
    plain: frozenset[str]  # fields holding plain values: set when the tree is built
    nested: dict[str, None]  # the others, all None: a section the data has is built when first read


_TABLES: dict[int, _Table] = {}  # by the table's identity: hashing a table of fields is slow


def _table(name: str, fields: tuple[Field, ...]) -> _Table:
    found = _TABLES.get(id(fields))
    if found is not None and found.fields is fields:
        return found
    spec = [(f.name, Any, dataclasses.field(default=None)) for f in fields]
    spec.append(("raw", Mapping, dataclasses.field(default_factory=dict, repr=False, compare=False)))
    cls = dataclasses.make_dataclass(_class_name(name), spec, frozen=True)
    for f in fields:
        if f.kind in _NESTED:
            setattr(cls, f.name, _Lazy(f))  # built on first read: most readers never look at most sections
    table = _Table(
        fields,
        cls,
        frozenset(f.name for f in fields if f.kind not in _NESTED),
        {f.name: None for f in fields if f.kind in _NESTED},
    )
    _TABLES[id(fields)] = table
    return table


class _Lazy:
    """A section (or list) read from ``raw`` the first time it is asked for, then kept on the instance."""

    def __init__(self, field: Field) -> None:
        self.field = field

    def __get__(self, tree: Any, owner: type | None = None) -> Any:
        if tree is None:
            return None  # the class's default
        value = _value(self.field, tree.raw.get(self.field.name))
        tree.__dict__[self.field.name] = value  # the instance's own from now on (frozen: set, not assigned)
        return value


def _value(field: Field, raw: Any) -> Any:
    if isinstance(raw, dict):
        if field.kind == "section":
            return build(raw, field.fields, field.name)
        return MappingProxyType(raw)
    if isinstance(raw, list):
        if field.kind == "sections":
            return tuple(build(item, field.fields, field.name.removesuffix("s")) for item in raw)
        return tuple(raw)
    return raw


def build(data: Mapping[str, Any], fields: tuple[Field, ...] = PROFILE, name: str = "profile") -> Any:
    """The typed tree of a validated (migrated, normalised) profile, or of one of its sections."""
    table = _table(name, fields)
    tree = object.__new__(table.cls)
    # Filled in one step rather than through the frozen __init__'s per-field setattr, and only with the data's
    # plain values (an absent one reads the class's default, None; a section is built when first read): an app
    # restart builds 10,000 of these.
    values = dict(table.nested)
    for key, value in data.items():
        if key in table.plain:
            values[key] = value
        elif key in values:
            del values[key]  # present: the lazy attribute builds it
    values["raw"] = MappingProxyType(data if isinstance(data, dict) else dict(data))  # a read-only view, no copy
    tree.__dict__.update(values)
    return tree


def of(profile: Any) -> Any:
    """The typed tree of a profile dict, or the tree itself (a store Profile's cached tree: ``store.parse.tree_of``,
    so this layer never calls back into the store)."""
    if isinstance(profile, Mapping):
        return build(profile)
    if dataclasses.is_dataclass(profile) and hasattr(profile, "raw"):
        return profile
    raise TypeError(f"not a profile dict or its typed tree: {type(profile).__name__}")
