"""A validated profile as a tree of frozen dataclasses, generated from the schema's field tables.

The classes are made once from :mod:`advisor.schema`'s tables (``PROFILE`` and its sections), so a field added
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

from advisor.fields import Field
from advisor.schema import PROFILE


def _class_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_")) or "Profile"


_CLASSES: dict[int, tuple[tuple[Field, ...], type]] = {}  # by the table's identity: hashing a table is slow


def section_class(name: str, fields: tuple[Field, ...]) -> type:
    """The frozen dataclass of a section: one attribute per field (None when absent), and ``raw``."""
    found = _CLASSES.get(id(fields))
    if found is not None and found[0] is fields:
        return found[1]
    spec = [(f.name, Any, dataclasses.field(default=None)) for f in fields]
    spec.append(("raw", Mapping, dataclasses.field(default_factory=dict, repr=False, compare=False)))
    cls = dataclasses.make_dataclass(_class_name(name), spec, frozen=True)
    _CLASSES[id(fields)] = (fields, cls)  # the table is kept alive with its class: its id stays its own
    return cls


def _value(field: Field, raw: Any) -> Any:
    if raw is None:
        return None
    if field.kind == "section" and isinstance(raw, Mapping):
        return build(raw, field.fields, field.name)
    if field.kind == "sections" and isinstance(raw, list):
        return tuple(build(item, field.fields, field.name.removesuffix("s")) for item in raw)
    if isinstance(raw, list):
        return tuple(raw)
    if isinstance(raw, Mapping):
        return MappingProxyType(dict(raw))
    return raw


def build(data: Mapping[str, Any], fields: tuple[Field, ...] = PROFILE, name: str = "profile") -> Any:
    """The typed tree of a validated (migrated, normalised) profile, or of one of its sections."""
    cls = section_class(name, fields)
    return cls(**{f.name: _value(f, data.get(f.name)) for f in fields}, raw=MappingProxyType(dict(data)))


def of(profile: Any) -> Any:
    """The typed tree of a store Profile (cached there), of a profile dict, or the tree itself."""
    if isinstance(profile, Mapping):
        return build(profile)
    if dataclasses.is_dataclass(profile) and hasattr(profile, "raw"):
        return profile
    return profile.typed
