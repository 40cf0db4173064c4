"""Profiles from bytes: safe YAML (limits on size, depth and nodes, strict keys), one profile checked and
migrated, and the limits every reader keeps."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import yaml

from advisor.errors import Problem, ProfileError
from advisor.format import schema

MAX_FILE_BYTES = 1_000_000
MAX_DEPTH = 20
MAX_NODES = 100_000
PROFILE_SUFFIXES = (".yaml", ".yml")
MAX_SLUG_LENGTH = schema.SLUG_MAX  # one limit: the schema's


@dataclass(frozen=True)
class Profile:
    """One valid profile: its data (migrated, normalised) and where it came from."""

    data: dict[str, Any]
    origin: str

    @property
    def id(self) -> str:
        return self.data["id"]

    @functools.cached_property
    def typed(self) -> Any:
        """The profile as a frozen dataclass tree (:mod:`advisor.format.typed`): what the library and the app read."""
        from advisor.format import typed

        return typed.build(self.data)


def tree_of(profile: Any) -> Any:
    """The typed tree of a Profile (its cached one), of a profile dict, or the tree itself."""
    from advisor.format import typed  # as Profile.typed

    return profile.typed if isinstance(profile, Profile) else typed.of(profile)


@dataclass
class ProfileSet:
    """The outcome of loading many files: the good profiles, and problems with the rest."""

    profiles: list[Profile] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    @property
    def bad_files(self) -> list[str]:
        return sorted({p.file for p in self.problems})


# --------------------------------------------------------------------------- safe YAML

# A safe loader: libyaml's C parser when PyYAML was built with it (about 9x faster here), the pure-Python one
# otherwise. Both go through the same event check and the same limits (never yaml.Loader: no Python objects).
_HAS_LIBYAML = hasattr(yaml, "CSafeLoader")
_SAFE_LOADER: type = yaml.CSafeLoader if _HAS_LIBYAML else yaml.SafeLoader


def safe_load(text: str) -> Any:
    """``yaml.safe_load`` with libyaml's parser where PyYAML has it: the same values, about a tenth of the time. For
    the package's own data files; a user's file goes through :func:`parse_yaml` and its limits."""
    return yaml.load(text, Loader=yaml.CSafeLoader) if _HAS_LIBYAML else yaml.safe_load(text)


class _StrictKeys:
    """Mapping construction that refuses duplicate and non-string keys (mixed into a safe loader)."""

    def construct_mapping(self, node, deep=False):  # type: ignore[override]
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)  # type: ignore[attr-defined]
            if not isinstance(key, str):
                raise yaml.MarkedYAMLError(None, None, f"keys must be strings, got {key!r}", key_node.start_mark)
            if key in seen:
                raise yaml.MarkedYAMLError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)  # type: ignore[misc]


class _StrictLoader(_StrictKeys, _SAFE_LOADER):  # type: ignore[misc, valid-type]
    pass


class _StrictPureLoader(_StrictKeys, yaml.SafeLoader):
    pass


_COLLECTION_START = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_COLLECTION_END = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def _check_events(text: str, loader_class: type) -> None:
    """Walk the parser's events before anything is built: refuse aliases, explicit tags, deep nesting,
    too many values and more than one document (yaml.MarkedYAMLError, _TooManyDocuments, _Empty)."""
    loader = loader_class(text)
    try:
        depth = nodes = documents = 0
        while loader.check_event():
            event = loader.get_event()
            kind = type(event)
            if kind is yaml.AliasEvent:
                raise yaml.MarkedYAMLError(
                    None, None, "anchors and aliases (*name) are not allowed in profiles", event.start_mark
                )
            if kind is yaml.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    raise _TooManyDocuments
                continue
            if kind is yaml.ScalarEvent or kind in _COLLECTION_START:
                tag = event.tag
                explicit = tag is not None and (kind is not yaml.ScalarEvent or not any(event.implicit))
                if explicit and tag not in ("!", "tag:yaml.org,2002:str"):
                    raise yaml.MarkedYAMLError(
                        None,
                        None,
                        f"could not determine a constructor for the tag {tag!r}: tags are not allowed in profiles",
                        event.start_mark,
                    )
                nodes += 1
                if nodes > MAX_NODES:
                    raise yaml.MarkedYAMLError(None, None, f"more than {MAX_NODES} values", event.start_mark)
                if kind is not yaml.ScalarEvent:
                    depth += 1
                    if depth > MAX_DEPTH:
                        raise yaml.MarkedYAMLError(
                            None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark
                        )
            elif kind in _COLLECTION_END:
                depth -= 1
        if documents == 0:
            raise _Empty
    finally:
        loader.dispose()


class _TooManyDocuments(Exception):
    pass


class _Empty(Exception):
    pass


def _yaml_error_message(error: yaml.YAMLError) -> str:
    """The parser's problem and where; never the file's text around it."""
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return f"not valid YAML{where}: {problem}"


def parse_yaml(raw: bytes, file: str, pure_python: bool = False) -> Any:
    """Parse profile bytes safely; raise ProfileError with a clear message on any failure.

    The events are checked first (no aliases, no tags, at most MAX_DEPTH levels and MAX_NODES values,
    one document), then the document is built with duplicate and non-string keys refused.
    """
    if len(raw) > MAX_FILE_BYTES:
        raise ProfileError(
            [Problem(file, "", f"file is {len(raw):,} bytes; profiles are limited to {MAX_FILE_BYTES:,}")]
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ProfileError([Problem(file, "", f"not UTF-8 text (byte {error.start})")]) from None
    if "\x00" in text:
        raise ProfileError([Problem(file, "", "not a text file (contains NUL bytes)")])
    base, strict = (yaml.SafeLoader, _StrictPureLoader) if pure_python else (_SAFE_LOADER, _StrictLoader)
    try:
        _check_events(text, base)
        return yaml.load(text, Loader=strict)  # strict: a CSafeLoader or SafeLoader subclass
    except _TooManyDocuments:
        raise ProfileError([Problem(file, "", "holds more than one YAML document; one profile per file")]) from None
    except _Empty:
        raise ProfileError([Problem(file, "", "is empty")]) from None
    except yaml.YAMLError as error:
        raise ProfileError([Problem(file, "", _yaml_error_message(error))]) from None
    except RecursionError:
        raise ProfileError([Problem(file, "", f"nested deeper than {MAX_DEPTH} levels")]) from None


def profile_from_data(data: Any, origin: str, expected_id: str | None = None) -> tuple[Profile, list[Problem]]:
    """Check, migrate, validate and normalise parsed data. Returns the profile and its warnings."""
    problems = schema.check_version(data, origin)
    if problems:
        raise ProfileError(problems)
    data = schema.migrate(data)
    problems, warnings = schema.validate(data, origin, expected_id=expected_id)
    if problems:
        raise ProfileError(problems)
    return Profile(schema.normalise(data), origin), warnings


def profile_from_bytes(raw: bytes, origin: str, expected_id: str | None = None) -> tuple[Profile, list[Problem]]:
    """Parse and validate one profile's bytes (a file or an upload)."""
    return profile_from_data(parse_yaml(raw, origin), origin, expected_id)
