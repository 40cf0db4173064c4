"""Reading and writing profile files: safe YAML, limits, folders, atomic writes."""

from __future__ import annotations

import os
import re
import tempfile
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from advisor import schema
from advisor.errors import AdvisorError, Problem, ProfileError

MAX_FILE_BYTES = 1_000_000
MAX_DEPTH = 20
MAX_NODES = 100_000
PROFILE_SUFFIXES = (".yaml", ".yml")
MAX_SLUG_LENGTH = 60


@dataclass(frozen=True)
class Profile:
    """One valid profile: its data (migrated, normalised) and where it came from."""

    data: dict[str, Any]
    origin: str

    @property
    def id(self) -> str:
        return self.data["id"]


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


class _LimitedSafeLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases, deep nesting, huge documents and duplicate keys."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent, index):  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.MarkedYAMLError(
                None, None, "anchors and aliases (*name) are not allowed in profiles", event.start_mark
            )
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise yaml.MarkedYAMLError(None, None, f"more than {MAX_NODES} values", self.peek_event().start_mark)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.MarkedYAMLError(
                    None, None, f"nested deeper than {MAX_DEPTH} levels", self.peek_event().start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):  # type: ignore[override]
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise yaml.MarkedYAMLError(None, None, f"keys must be strings, got {key!r}", key_node.start_mark)
            if key in seen:
                raise yaml.MarkedYAMLError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _yaml_error_message(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return f"not valid YAML{where}: {problem}"


def parse_yaml(raw: bytes, file: str) -> Any:
    """Parse profile bytes safely; raise ProfileError with a clear message on any failure."""
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
    try:
        loader = _LimitedSafeLoader(text)
        try:
            documents = []
            while loader.check_data():
                documents.append(loader.get_data())
                if len(documents) > 1:
                    raise ProfileError([Problem(file, "", "holds more than one YAML document; one profile per file")])
        finally:
            loader.dispose()
    except yaml.YAMLError as error:
        raise ProfileError([Problem(file, "", _yaml_error_message(error))]) from None
    except RecursionError:
        raise ProfileError([Problem(file, "", f"nested deeper than {MAX_DEPTH} levels")]) from None
    if not documents:
        raise ProfileError([Problem(file, "", "is empty")])
    return documents[0]


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


def load_profile(path: str | os.PathLike) -> tuple[Profile, list[Problem]]:
    """Load one profile file; its id must match the file name."""
    path = Path(path)
    origin = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ProfileError(
                [Problem(origin, "", f"file is {size:,} bytes; profiles are limited to {MAX_FILE_BYTES:,}")]
            )
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise ProfileError([Problem(origin, "", f"cannot be read: {error.strerror or error}")]) from None
    return profile_from_bytes(raw, origin, expected_id=path.stem)


def profile_files(paths: list[str | os.PathLike]) -> tuple[list[Path], list[Problem]]:
    """Expand files and folders into profile files (sorted), with problems for paths that do not exist."""
    files: list[Path] = []
    problems: list[Problem] = []
    for item in paths:
        path = Path(item)
        if path.is_dir():
            files.extend(
                sorted(
                    p
                    for p in path.iterdir()
                    if p.suffix in PROFILE_SUFFIXES and not p.name.startswith(".") and p.is_file()
                )
            )
        elif path.is_file():
            files.append(path)
        else:
            problems.append(Problem(str(path), "", "no such file or folder"))
    return files, problems


def folder_signature(folder: str | os.PathLike) -> tuple[tuple[str, int, int], ...]:
    """(name, size, modification time) of every profile file in a folder: a cache key that changes with them."""
    files, _ = profile_files([folder])
    signature = []
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            continue
        signature.append((path.name, stat.st_size, stat.st_mtime_ns))
    return tuple(signature)


def load_profiles(paths: list[str | os.PathLike] | str | os.PathLike) -> ProfileSet:
    """Load every profile under the given files and folders; bad files become problems, never exceptions."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files, problems = profile_files(list(paths))
    result = ProfileSet(problems=problems)
    seen: dict[str, str] = {}
    for path in files:
        try:
            profile, warnings = load_profile(path)
        except ProfileError as error:
            result.problems.extend(error.problems)
            continue
        result.warnings.extend(warnings)
        if profile.id in seen:
            result.problems.append(Problem(str(path), "id", f"{profile.id!r} is already used by {seen[profile.id]}"))
            continue
        seen[profile.id] = str(path)
        result.profiles.append(profile)
    return result


# --------------------------------------------------------------------------- writing


def slugify(name: str) -> str:
    """A file-name-safe slug: lower-case ASCII letters, digits and single dashes; never empty."""
    text = unicodedata.normalize("NFKD", str(name)).encode("ascii", "ignore").decode("ascii").lower()
    text = re.sub(r"[^a-z0-9]+", "-", text).strip("-")
    text = text[:MAX_SLUG_LENGTH].rstrip("-")
    return text or "profile"


def unique_slug(folder: str | os.PathLike, name: str, taken: set[str] | None = None) -> str:
    """The slug of ``name``, or ``name-2``, ``name-3``... when a profile of that slug exists in ``folder``."""
    folder = Path(folder)
    base = slugify(name)
    taken = set(taken or ())

    def exists(slug: str) -> bool:
        return slug in taken or any((folder / f"{slug}{suffix}").exists() for suffix in PROFILE_SUFFIXES)

    if not exists(base):
        return base
    counter = 2
    while True:
        suffix = f"-{counter}"
        slug = base[: MAX_SLUG_LENGTH - len(suffix)].rstrip("-") + suffix
        if not exists(slug):
            return slug
        counter += 1


def dump_profile(data: dict[str, Any]) -> str:
    """Deterministic YAML text of a profile (canonical key order, block style, UTF-8)."""
    return yaml.safe_dump(
        schema.canonical(data), sort_keys=False, allow_unicode=True, default_flow_style=False, width=100
    )


def check_writable_folder(folder: str | os.PathLike) -> Path:
    """Create the folder if needed and prove it is writable; raise AdvisorError otherwise (before any long run)."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise AdvisorError(f"{folder}: cannot create the output folder: {error.strerror or error}") from None
    if not folder.is_dir():
        raise AdvisorError(f"{folder}: is not a folder")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".advisor-probe-", delete=True):
            pass
    except OSError as error:
        raise AdvisorError(f"{folder}: cannot write to the output folder: {error.strerror or error}") from None
    return folder


def write_atomic(path: str | os.PathLike, text: str, overwrite: bool = False) -> Path:
    """Write text to path through a temporary file in the same folder, then rename.

    Without ``overwrite`` an existing file is never replaced (the final step is a hard link, which
    fails when the name exists). The temporary file is removed on any failure.
    """
    path = Path(path)
    if not overwrite and path.exists():
        raise AdvisorError(f"{path}: already exists (use --force to overwrite it)")
    handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 (closed below, kept for the rename)
        "w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False
    )
    temp = Path(handle.name)
    try:
        with handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if overwrite:
            os.replace(temp, path)
        else:
            try:
                os.link(temp, path)
            except FileExistsError:
                raise AdvisorError(f"{path}: already exists (use --force to overwrite it)") from None
            except OSError:  # a file system without hard links: check then rename
                if path.exists():
                    raise AdvisorError(f"{path}: already exists (use --force to overwrite it)") from None
                os.replace(temp, path)
    except OSError as error:
        raise AdvisorError(f"{path}: cannot write: {error.strerror or error}") from None
    finally:
        temp.unlink(missing_ok=True)
    return path


def write_profile(data: dict[str, Any], folder: str | os.PathLike, overwrite: bool = False) -> Path:
    """Validate and write a profile as ``folder/<id>.yaml``, atomically."""
    folder = Path(folder)
    profile_id = data.get("id", "")
    if not isinstance(profile_id, str) or slugify(profile_id) != profile_id:
        raise AdvisorError(f"profile id {profile_id!r} is not a safe file name")
    target = folder / f"{profile_id}.yaml"
    problems, _ = schema.validate(data, str(target), expected_id=profile_id)
    if problems:
        raise ProfileError(problems)
    return write_atomic(target, dump_profile(data), overwrite=overwrite)
