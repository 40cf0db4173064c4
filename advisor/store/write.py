"""Writing profiles: slugs, atomic writes that never overwrite unasked, adding files from elsewhere, an upload's
copy."""

from __future__ import annotations

import os
import re
import tempfile
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from advisor.errors import AdvisorError, Problem, ProfileError
from advisor.format import schema
from advisor.store.folder import load_profiles, read_file_bytes
from advisor.store.parse import MAX_SLUG_LENGTH, PROFILE_SUFFIXES, profile_from_bytes

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


@dataclass
class AddReport:
    """What ``add_profiles`` did: the files it wrote, the files it refused and why."""

    added: list[Path] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def add_profiles(files: list[str | os.PathLike], folder: str | os.PathLike, overwrite: bool = False) -> AddReport:
    """Validate profiles from elsewhere and copy the valid ones into ``folder`` as ``<id>.yaml``, atomically.

    The file's text is kept as it is (comments included). An id already used in the folder is refused
    unless ``overwrite`` (and even then only when it is the file of that name that would be replaced).
    """
    folder = check_writable_folder(folder)
    in_folder = load_profiles(folder)
    owners = {p.id: Path(p.origin) for p in in_folder.profiles}
    report = AddReport()
    for item in files:
        origin = str(item)
        try:
            raw = read_file_bytes(item, follow_links=True)
            profile, _ = profile_from_bytes(raw, origin)
            target = folder / f"{profile.id}.yaml"
            owner = owners.get(profile.id)
            if owner is not None and owner.resolve() == Path(item).resolve():
                raise ProfileError([Problem(origin, "", "is already in the profiles folder")])
            if owner is not None and (not overwrite or owner.name != target.name):
                hint = " (use --force to replace it)" if owner.name == target.name else ""
                raise ProfileError([Problem(origin, "id", f"{profile.id!r} is already used by {owner}{hint}")])
            report.added.append(write_atomic(target, raw.decode("utf-8-sig"), overwrite=overwrite))
            owners[profile.id] = target
        except ProfileError as error:
            report.refused.append(origin)
            report.problems.extend(error.problems)
        except AdvisorError as error:
            report.refused.append(origin)
            report.problems.append(Problem(origin, "", str(error)))
    return report


def as_upload(data: dict[str, Any], taken_ids: set[str]) -> dict[str, Any]:
    """A validated profile uploaded to the app (never saved): named "(uploaded)", its id made unique among
    ``taken_ids`` by a suffix (cut to the slug's limit)."""
    data = dict(data)
    if data["id"] in taken_ids:
        suffix = "-upload"
        data["id"] = data["id"][: MAX_SLUG_LENGTH - len(suffix)].rstrip("-") + suffix
    data["name"] = f"{data.get('name', data['device']['name'])} (uploaded)"
    return data


def submit_hint(path: str | os.PathLike) -> str:
    """How to contribute a profile just written: the line ``measure`` and ``advisor.track`` end with."""
    return f"to contribute it: advisor submit {path} (it shows what is sent, scrubbed of names and paths, and asks)"
