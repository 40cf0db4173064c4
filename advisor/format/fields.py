"""Tables of fields, and the one walker that validates data against them.

A format (a profile, the GPU catalog) is described once, as tuples of :class:`Field`. From that one
description come the validation (``check_section``, with file/field/reason messages), the canonical
key order (``key_order``), the field reference of docs/reference.md (``markdown_reference``) and a JSON Schema
(``json_schema``). Pure functions over plain data (as parsed from YAML); no I/O here.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from dataclasses import dataclass
from typing import Any

from advisor.errors import Problem

MAX_NUMBER = 1e300  # beyond this an integer cannot become a float
ISO_DATE_PATTERN = r"^\d{4}-\d{2}(-\d{2})?$"
CONTROL_CHARACTERS = "\\u0000-\\u0008\\u000b-\\u001f"  # a regular expression's class: tab and newline allowed
NO_CONTROL_CHARACTERS = f"^[^{CONTROL_CHARACTERS}]*$"
_ISO_DATE = re.compile(ISO_DATE_PATTERN)

KINDS = (
    "string",  # text without control characters; ``pattern`` optional
    "date",  # YYYY-MM-DD or YYYY-MM (YAML dates are accepted and kept as text)
    "integer",
    "number",
    "boolean",
    "choice",  # one of ``choices``
    "strings",  # a list of strings
    "numbers",  # a non-empty list of numbers (with the field's range)
    "mapping",  # any mapping (free-form)
    "section",  # a mapping described by ``fields``
    "sections",  # a non-empty list of mappings described by ``fields``
    "text",  # a string or a list of strings
)


@dataclass(frozen=True)
class Field:
    """One field of a format: its type, range, whether it is required, and what it means."""

    name: str
    kind: str
    doc: str
    required: bool = False
    null_allowed: bool = False  # with ``required``: the key must be there, but may be null (``price.usd``)
    missing_hint: str = ""  # appended to "is missing"
    minimum: float | None = None
    maximum: float | None = None
    positive: bool = False  # greater than 0
    choices: tuple[str, ...] = ()
    pattern: str | None = None
    pattern_hint: str = ""  # what the pattern means, for the message
    fields: tuple[Field, ...] = ()  # for section and sections
    required_if: tuple[str, Any] | None = None  # required when the sibling field has this value (or one of a tuple)
    required_unless: tuple[str, Any] | None = None  # required unless the sibling has this value (or one of a tuple)
    only_if: tuple[str, Any] | None = None  # allowed only when the sibling field has this value
    unit: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.name}: unknown field kind {self.kind!r}")

    @property
    def integer(self) -> bool:
        return self.kind == "integer"

    def range_text(self) -> str:
        """The allowed values in words (for the field reference)."""
        if self.kind == "choice":
            return ", ".join(f"`{c}`" for c in self.choices)
        parts = []
        if self.positive:
            parts.append("> 0")
        if self.minimum is not None:
            parts.append(f">= {self.minimum:g}")
        if self.maximum is not None:
            parts.append(f"<= {self.maximum:g}")
        if self.pattern_hint:
            parts.append(self.pattern_hint)
        return ", ".join(parts)


def describe(value: Any) -> str:
    """A value in a few words for a message (strings cut to 40 characters)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"a string ({shown!r})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def is_iso_date(text: str) -> bool:
    if not _ISO_DATE.match(text):
        return False
    parts = [int(p) for p in text.split("-")]
    try:
        _dt.date(parts[0], parts[1], parts[2] if len(parts) > 2 else 1)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- validation


def valid_number(value: Any, integer: bool = False) -> float | None:
    """The value when it is a finite (integer) number, else None: cross-field checks use valid values only."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        return None
    if abs(value) > MAX_NUMBER:  # before isfinite: a huge int cannot become a float
        return None
    return value if math.isfinite(value) else None


class Checker:
    """Collects the problems and warnings of one file."""

    def __init__(self, file: str):
        self.file = file
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []

    def problem(self, field: str, message: str) -> None:
        self.problems.append(Problem(self.file, field, message))

    def warn(self, field: str, message: str) -> None:
        self.warnings.append(Problem(self.file, field, message))

    def ok(self, since: int) -> bool:
        """True when no problem was added since ``len(self.problems) == since``."""
        return len(self.problems) == since


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def check_section(c: Checker, mapping: dict, fields: tuple[Field, ...], path: str = "") -> dict[str, Any]:
    """Check ``mapping`` against ``fields``; returns the valid values by name (a field with a problem is left out).

    Unknown keys warn (a newer advisor may have written them); they are not problems.
    """
    known = _names(fields)
    for key in mapping:
        if key not in known:
            c.warn(_join(path, str(key)), "unknown field (ignored; written by a newer advisor?)")
    values: dict[str, Any] = {}
    for f in fields:
        name = f.name
        value = mapping.get(name)
        if value is None:  # absent or null: most fields of a profile are (the path is built only for a problem)
            if f.null_allowed and name in mapping:
                values[name] = None
                continue
            sibling = f.required_if and mapping.get(f.required_if[0]) in _values(f.required_if[1])
            unless = f.required_unless and mapping.get(f.required_unless[0]) not in _values(f.required_unless[1])
            if f.required or sibling or unless:
                c.problem(_join(path, name), "is missing" + (f" ({f.missing_hint})" if f.missing_hint else ""))
            continue
        where = _join(path, name)
        if f.only_if and mapping.get(f.only_if[0]) != f.only_if[1]:
            c.problem(where, f"is given but {f.only_if[0]} is not {_yaml_word(f.only_if[1])}")
        value = check_value(c, value, f, where)
        if value is not None:
            values[name] = value
    return values


# A section's field names by the identity of its fields, which the entry holds (so the identity is never reused):
# hashing the fields themselves would cost more than the set saves.
_NAMES: dict[int, tuple[tuple[Field, ...], frozenset[str]]] = {}


def _names(fields: tuple[Field, ...]) -> frozenset[str]:
    entry = _NAMES.get(id(fields))
    if entry is None:
        entry = _NAMES[id(fields)] = (fields, frozenset(f.name for f in fields))
    return entry[1]


def check_mapping_of(c: Checker, mapping: Any, fields: tuple[Field, ...], path: str) -> None:
    """Check every value of a free-form mapping (by key: sources, providers, systems...) against ``fields``."""
    for key, item in mapping.items() if isinstance(mapping, dict) else ():
        if isinstance(item, dict):
            check_section(c, item, fields, f"{path}.{key}")
        else:
            c.problem(f"{path}.{key}", f"must be a mapping, got {describe(item)}")


def _values(value: Any) -> tuple:
    """A condition's value(s) as a tuple: ``required_unless`` may name several."""
    return value if isinstance(value, tuple) else (value,)


def _yaml_word(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def check_value(c: Checker, value: Any, f: Field, where: str) -> Any:
    """Check one (non-null) value against its field; returns it (normalised) or None after a problem."""
    kind = f.kind
    if kind in ("string", "date", "choice"):
        return _check_string(c, value, f, where)
    if kind in ("integer", "number"):
        return _check_number(c, value, f, where)
    if kind == "boolean":
        if not isinstance(value, bool):
            c.problem(where, f"must be true or false, got {describe(value)}")
            return None
        return value
    if kind == "strings":
        if not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
            c.problem(where, "must be a list of strings")
            return None
        return value
    if kind == "numbers":
        if not isinstance(value, list) or not value:
            c.problem(where, f"must be a non-empty list of numbers, got {describe(value)}")
            return None
        for index, item in enumerate(value):
            if _check_number(c, item, f, f"{where}[{index}]") is None:
                return None
        return value
    if kind == "text":
        if isinstance(value, str):
            return _check_string(c, value, f, where)
        if not isinstance(value, list):
            c.problem(where, f"must be a string or a list of strings, got {describe(value)}")
            return None
        since = len(c.problems)
        for index, item in enumerate(value):
            _check_string(c, item, f, f"{where}[{index}]")
        return value if c.ok(since) else None
    if kind in ("mapping", "section"):
        if not isinstance(value, dict):
            c.problem(where, f"must be a mapping, got {describe(value)}")
            return None
        if kind == "section":
            check_section(c, value, f.fields, where)
        return value
    # sections
    if not isinstance(value, list) or not value:
        c.problem(where, f"must be a non-empty list, got {describe(value)}")
        return None
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            c.problem(f"{where}[{index}]", f"must be a mapping, got {describe(item)}")
            continue
        check_section(c, item, f.fields, f"{where}[{index}]")
    return value


_CONTROL = re.compile(f"[{CONTROL_CHARACTERS}]")


def _check_string(c: Checker, value: Any, f: Field, where: str) -> str | None:
    if isinstance(value, (_dt.date, _dt.datetime)):
        value = value.isoformat()
    if not isinstance(value, str):
        hint = " (quote it)" if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
        c.problem(where, f"must be a string{hint}, got {describe(value)}")
        return None
    if f.required and not value.strip():
        c.problem(where, "must not be empty")
        return None
    if _CONTROL.search(value):
        c.problem(where, "must not contain control characters")
        return None
    if f.kind == "date" and not is_iso_date(value):
        c.problem(where, f"must be a date like 2020-12-31 (or 2020-12), got {value!r}")
        return None
    if f.kind == "choice" and value not in f.choices:
        c.problem(where, f"must be one of {', '.join(f.choices)}; got {value!r}")
        return None
    if f.pattern is not None and not re.match(f.pattern, value):
        c.problem(where, f"must be {f.pattern_hint}, got {value!r}")
        return None
    return value


def _check_number(c: Checker, value: Any, f: Field, where: str) -> float | None:
    kind = "an integer" if f.integer else "a number"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (f.integer and not isinstance(value, int)):
        c.problem(where, f"must be {kind}, got {describe(value)}")
        return None
    if isinstance(value, float) and not math.isfinite(value):
        c.problem(where, f"must be a finite number, got {value}")
        return None
    if abs(value) > MAX_NUMBER:
        c.problem(where, f"is implausibly large (over {MAX_NUMBER:g})")
        return None
    if f.positive and value <= 0:
        c.problem(where, f"must be greater than 0, got {value}")
        return None
    if f.minimum is not None and value < f.minimum:
        c.problem(where, f"must be at least {f.minimum:g}, got {value}")
        return None
    if f.maximum is not None and value > f.maximum:
        c.problem(where, f"must be at most {f.maximum:g}, got {value}")
        return None
    return value


# --------------------------------------------------------------------------- key order


def key_order(fields: tuple[Field, ...]) -> tuple[str, ...]:
    return tuple(f.name for f in fields)


def ordered(mapping: dict[str, Any], fields: tuple[Field, ...]) -> dict[str, Any]:
    """``mapping`` with its keys in the table's order (unknown keys sorted after), nested sections too."""
    by_name = {f.name: f for f in fields}
    out: dict[str, Any] = {}
    for name in key_order(fields):
        if name in mapping:
            out[name] = _ordered_value(mapping[name], by_name[name])
    for key in sorted((k for k in mapping if k not in by_name), key=str):
        out[key] = mapping[key]
    return out


def known_only(mapping: dict[str, Any], fields: tuple[Field, ...], path: str = "") -> tuple[dict[str, Any], list[str]]:
    """``mapping`` without the keys its table does not describe (nested sections too; a free-form ``mapping`` field is
    kept whole), and the paths of those it dropped."""
    by_name = {f.name: f for f in fields}
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in mapping.items():
        here = _join(path, str(key))
        f = by_name.get(key)
        if f is None:
            dropped.append(here)
        elif f.kind == "section" and isinstance(value, dict):
            kept[key], more = known_only(value, f.fields, here)
            dropped += more
        elif f.kind == "sections" and isinstance(value, list):
            items = []
            for index, item in enumerate(value):
                if isinstance(item, dict):
                    item, more = known_only(item, f.fields, f"{here}[{index}]")
                    dropped += more
                items.append(item)
            kept[key] = items
        else:
            kept[key] = value
    return kept, dropped


def _ordered_value(value: Any, f: Field) -> Any:
    if f.kind == "section" and isinstance(value, dict):
        return ordered(value, f.fields)
    if f.kind == "sections" and isinstance(value, list):
        return [ordered(item, f.fields) if isinstance(item, dict) else item for item in value]
    if f.kind == "mapping" and isinstance(value, dict):
        return dict(sorted(value.items(), key=lambda kv: str(kv[0])))
    return value


# --------------------------------------------------------------------------- JSON Schema


def json_schema_of(f: Field) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one field's value. Optional fields also accept null (= missing)."""
    kind = f.kind
    schema: dict[str, Any]
    if kind in ("string", "date", "choice"):
        schema = {"type": "string"}
        if kind == "date":
            schema["pattern"] = ISO_DATE_PATTERN
        if kind == "choice":
            schema = {"enum": list(f.choices)}
        if kind == "string":
            schema["pattern"] = f.pattern or NO_CONTROL_CHARACTERS
        if f.required:
            schema["minLength"] = 1
    elif kind in ("integer", "number"):
        schema = {"type": kind, **_number_bounds(f)}
    elif kind == "boolean":
        schema = {"type": "boolean"}
    elif kind == "strings":
        schema = {"type": "array", "items": {"type": "string"}}
    elif kind == "numbers":
        schema = {"type": "array", "minItems": 1, "items": {"type": "number", **_number_bounds(f)}}
    elif kind == "text":
        schema = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
    elif kind == "mapping":
        schema = {"type": "object"}
    elif kind == "section":
        schema = section_schema(f.fields)
    else:  # sections
        schema = {"type": "array", "minItems": 1, "items": section_schema(f.fields)}
    schema = {"description": f.doc, **schema}
    if not f.required or f.null_allowed:
        schema = {"description": f.doc, "anyOf": [_without_description(schema), {"type": "null"}]}
    return schema


def _without_description(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != "description"}


def _number_bounds(f: Field) -> dict[str, Any]:
    bounds: dict[str, Any] = {}
    if f.positive:
        bounds["exclusiveMinimum"] = 0
    if f.minimum is not None:
        bounds["minimum"] = f.minimum
    bounds["maximum"] = f.maximum if f.maximum is not None else MAX_NUMBER
    if f.minimum is None and not f.positive:
        bounds["minimum"] = -MAX_NUMBER
    return bounds


def section_schema(fields: tuple[Field, ...]) -> dict[str, Any]:
    """An object of these fields. Unknown keys are allowed (the advisor warns about them, it does not refuse)."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {f.name: json_schema_of(f) for f in fields},
        "required": [f.name for f in fields if f.required],
    }
    conditions = []
    for f in fields:
        if f.required_if:
            sibling, value = f.required_if
            conditions.append(
                {
                    "if": {"properties": {sibling: {"enum": list(_values(value))}}, "required": [sibling]},
                    "then": {"required": [f.name], "properties": {f.name: {"not": {"type": "null"}}}},
                }
            )
        if f.required_unless:
            sibling, value = f.required_unless
            conditions.append(
                {
                    "if": {"properties": {sibling: {"enum": list(_values(value))}}, "required": [sibling]},
                    "else": {"required": [f.name], "properties": {f.name: {"not": {"type": "null"}}}},
                }
            )
        if f.only_if:
            sibling, value = f.only_if
            conditions.append(
                {
                    "if": {"properties": {f.name: {"not": {"type": "null"}}}, "required": [f.name]},
                    "then": {"properties": {sibling: {"const": value}}, "required": [sibling]},
                }
            )
    if conditions:
        schema["allOf"] = conditions
    return schema


# --------------------------------------------------------------------------- documentation


def markdown_reference(fields: tuple[Field, ...], path: str = "") -> list[str]:
    """Markdown tables of the fields: one table per section, nested sections after their parent."""
    title = f"`{path}`" if path else "top level"
    lines = [
        f"**{title}**",
        "",
        "| field | type | required | allowed | meaning |",
        "|---|---|---|---|---|",
    ]
    nested: list[tuple[str, Field]] = []
    for f in fields:
        kind = {"section": "mapping", "sections": "list of mappings", "numbers": "list of numbers"}.get(f.kind, f.kind)
        if f.unit:
            kind += f" ({f.unit})"
        required = "yes" if f.required else ""
        if f.required_if:
            required = f"when {f.required_if[0]} is {' or '.join(map(str, _values(f.required_if[1])))}"
        elif f.required_unless:
            required = f"unless {f.required_unless[0]} is {' or '.join(map(str, _values(f.required_unless[1])))}"
        if f.null_allowed:
            required = "yes (null if unknown)"
        lines.append(f"| `{f.name}` | {kind} | {required} | {f.range_text()} | {f.doc} |")
        if f.kind in ("section", "sections"):
            nested.append((_join(path, f.name) + ("[]" if f.kind == "sections" else ""), f))
    for nested_path, f in nested:
        lines += ["", *markdown_reference(f.fields, nested_path)]
    return lines
