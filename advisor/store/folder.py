"""Files and folders of profiles: reading a file safely, listing a folder, its signature and watch, the cache of
each file's outcome, the folder's rows and kept frame through its index."""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import math
import os
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.errors import Problem, ProfileError
from advisor.format.schema import is_inference
from advisor.store import collection
from advisor.store.index import ProfileIndex, encode, problem_lists, problems_of
from advisor.store.parse import (
    MAX_FILE_BYTES,
    PROFILE_SUFFIXES,
    Profile,
    ProfileSet,
    parse_yaml,
    profile_from_bytes,
    profile_from_data,
)

# --------------------------------------------------------------------------- files and folders

_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _not_a_file(mode: int) -> str | None:
    """Why a file of this mode cannot be a profile (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a folder, not a profile file"
    if stat.S_ISLNK(mode):
        return "is a symbolic link; links in a profiles folder are not followed (copy the profile in instead)"
    for test, name in _SPECIAL_KINDS:
        if test(mode):
            return f"is {name}, not a regular file: refused"
    return "is not a regular file: refused"


def read_file_bytes(path: str | os.PathLike, follow_links: bool = True) -> bytes:
    """A profile file's bytes, refusing anything but a regular file of at most MAX_FILE_BYTES.

    Never blocks (a FIFO is refused, not opened for a writer) and, with ``follow_links`` false, never
    reads through a symbolic link (checked again on the open file, so a swapped-in link is refused too).
    """
    origin = str(path)
    try:
        mode = os.stat(path, follow_symlinks=follow_links).st_mode
        reason = _not_a_file(mode)
        if reason is not None:
            raise ProfileError([Problem(origin, "", reason)])
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        if not follow_links:
            flags |= getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(path, flags)
    except ProfileError:
        raise
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise ProfileError([Problem(origin, "", _not_a_file(stat.S_IFLNK) or "")]) from None
        raise ProfileError([Problem(origin, "", f"cannot be read: {error.strerror or error}")]) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        reason = _not_a_file(info.st_mode)
        if reason is not None:
            raise ProfileError([Problem(origin, "", reason)])
        if info.st_size > MAX_FILE_BYTES:
            raise ProfileError(
                [Problem(origin, "", f"file is {info.st_size:,} bytes; profiles are limited to {MAX_FILE_BYTES:,}")]
            )
        try:
            return handle.read(MAX_FILE_BYTES + 1)
        except OSError as error:
            raise ProfileError([Problem(origin, "", f"cannot be read: {error.strerror or error}")]) from None


def load_profile(path: str | os.PathLike, follow_links: bool = True) -> tuple[Profile, list[Problem]]:
    """Load one profile file; its id must match the file name."""
    path = Path(path)
    return profile_from_bytes(read_file_bytes(path, follow_links), str(path), expected_id=path.stem)


def load_file(path: str | os.PathLike, follow_links: bool = True) -> tuple[list[Profile], list[Problem]]:
    """Load a profile file, or a published collection (``collection_version``) as the profiles it holds.

    A collection's own problems (an unknown system, a bad row) reject it whole; a profile it expands to that
    fails validation is named by its id, and the others still load.
    """
    path = Path(path)
    data = parse_yaml(read_file_bytes(path, follow_links), str(path))
    if not collection.is_collection(data):
        profile, warnings = profile_from_data(data, str(path), expected_id=path.stem)
        return [profile], warnings
    problems = collection.validate(data, str(path))
    if problems:
        raise ProfileError(problems)
    profiles, warnings, bad = [], [], []
    for item in collection.expand(data):
        try:
            profile, found = profile_from_data(item, f"{path}#{item['id']}")
        except ProfileError as error:
            bad.extend(error.problems)
            continue
        profiles.append(profile)
        warnings.extend(found)
    if bad and not profiles:
        raise ProfileError(bad)
    return profiles, warnings + bad


@dataclass(frozen=True)
class FileEntry:
    """A profile file found in a folder (or named on the command line), with its cache key."""

    location: str  # the file's path as text (a Path is built only when asked for: a folder may hold 100,000)
    # size, modification time (ns), inode, status change time (ns): a change in any re-reads the file. The ctime is
    # there for the edit that keeps the size and puts the mtime back (touch -r, tools that preserve times): no user
    # can set it, and every write changes it.
    key: tuple[int, int, int, int]
    in_folder: bool  # found by listing a folder: links are not followed
    name: str = ""  # the file's name in its folder

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", os.path.basename(self.location))

    @functools.cached_property
    def path(self) -> Path:
        return Path(self.location)


def file_key(info: os.stat_result) -> tuple[int, int, int, int]:
    """A file's cache key (see :class:`FileEntry`)."""
    return info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns


def profile_files(paths: list[str | os.PathLike]) -> tuple[list[FileEntry], list[Problem]]:
    """Expand files and folders into profile files (sorted by name within a folder).

    In a folder, names ending in .yaml or .yml that are not regular files (links, folders, FIFOs,
    sockets, devices) become problems, never reads; hidden files are skipped. A path that does not
    exist is a problem too.
    """
    files: list[FileEntry] = []
    problems: list[Problem] = []
    for item in paths:
        path = Path(item)
        try:
            info = path.stat()
        except OSError:
            problems.append(Problem(str(path), "", "no such file or folder"))
            continue
        if stat.S_ISDIR(info.st_mode):
            found, bad = _folder_entries(path)
            files.extend(found)
            problems.extend(bad)
        else:
            files.append(FileEntry(str(path), file_key(info), in_folder=False))
    return files, problems


def _folder_entries(folder: Path) -> tuple[list[FileEntry], list[Problem]]:
    files: list[FileEntry] = []
    problems: list[Problem] = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as error:
        return [], [Problem(str(folder), "", f"cannot be listed: {error.strerror or error}")]
    for entry in entries:
        if entry.name.startswith(".") or not entry.name.endswith(PROFILE_SUFFIXES):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError as error:
            problems.append(Problem(str(folder / entry.name), "", f"cannot be read: {error.strerror or error}"))
            continue
        reason = _not_a_file(info.st_mode)
        if reason is not None:
            problems.append(Problem(str(folder / entry.name), "", reason))
            continue
        files.append(FileEntry(os.path.join(folder, entry.name), file_key(info), True, entry.name))
    return files, problems


def folder_signature(folder: str | os.PathLike) -> str:
    """A short digest of every profile file's (name, type, size, modification time, inode, ctime) in a folder: a
    cache key that changes with them, and cheap to hash (the app's cached loads are keyed on it at every re-run)."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as error:
        return f"unlistable: {error.strerror or error}"
    lines = []  # hashed once, joined: a digest update per file was a fifth of the signature's time
    for entry in entries:
        if entry.name.startswith(".") or not entry.name.endswith(PROFILE_SUFFIXES):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            lines.append(f"{entry.name}\0unreadable\n")
            continue
        lines.append(
            f"{entry.name}\0{info.st_mode}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ino}\0{info.st_ctime_ns}\n"
        )
    return hashlib.blake2b("".join(lines).encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()


class FolderWatch:
    """The folder's signature for the app's re-runs, at a cost that stays small as the folder grows.

    A file added, removed or renamed (how ``measure`` and ``add`` write: a new file moved into place) changes the
    folder's own modification time, which is checked at every call: the signature is taken again at once. An edit
    in place leaves the folder's time alone; it is caught by a full scan, taken at every call while a scan costs
    little and at most every ``RESCAN_FACTOR`` times its own duration once it does not (10,000 files: about every
    7 s; 100,000: about every minute), so the re-runs spend at most 1/``RESCAN_FACTOR`` of their time on it.
    """

    RESCAN_FACTOR = 20

    def __init__(self, folder: str | os.PathLike, clock: Callable[[], float] = time.monotonic) -> None:
        self.folder = Path(folder)
        self._clock = clock
        self._folder_key: tuple | None = None
        self._signature = ""
        self._next_scan = -math.inf

    def _own_key(self) -> tuple:
        try:
            info = self.folder.stat()
        except OSError as error:
            return ("missing", error.errno)
        return info.st_mtime_ns, info.st_ctime_ns, info.st_ino

    def signature(self) -> str:
        """The folder's signature (:func:`folder_signature`), taken again when it may have changed."""
        own = self._own_key()
        now = self._clock()
        if own != self._folder_key or now >= self._next_scan:
            started = time.perf_counter()
            self._signature = folder_signature(self.folder)
            self._folder_key = own
            self._next_scan = now + self.RESCAN_FACTOR * (time.perf_counter() - started)
        return self._signature


_Outcome = tuple[list[Profile], list[Problem], list[Problem]]  # the file's profiles, its problems, its warnings


class ProfileCache:
    """Remembers each file's outcome by path, size, modification time, inode and ctime, in memory and (for a folder) in
    its persistent index (:mod:`advisor.store.index`).

    Loading a folder again re-reads only the files that changed: adding one profile to 10,000 costs
    about one profile, and so does a cold start with the index present. Shared by the app's sessions.
    """

    def __init__(self) -> None:
        self._outcomes: dict[str, tuple[tuple[int, int, int, int], _Outcome]] = {}
        self._indexes: dict[str, ProfileIndex] = {}
        self.reads = 0  # files parsed so far (for tests and benchmarks)
        self.lock = threading.Lock()  # the app's sessions share one cache

    def index_for(self, folder: Path) -> ProfileIndex:
        name = str(folder)
        if name not in self._indexes:
            self._indexes[name] = ProfileIndex(folder)
        return self._indexes[name]

    def outcome(self, entry: FileEntry, index: ProfileIndex | None = None, remember: bool = True) -> _Outcome:
        """A file's profiles, problems and warnings: from memory, the index, or the file (``remember`` off: not kept
        in memory, for a load that keeps only rows)."""
        name = entry.location
        cached = self._outcomes.get(name)
        if cached is not None and cached[0] == entry.key:
            return cached[1]
        stored = index.get(entry.name, entry.key) if index is not None else None
        if stored is not None:
            result = _decode(stored)
        else:
            self.reads += 1
            try:
                profiles, warnings = load_file(entry.path, follow_links=not entry.in_folder)
                result = (profiles, [], warnings)
            except ProfileError as error:
                result = ([], error.problems, [])
            if index is not None:
                index.put(entry.name, entry.key, encode(*result))
        if remember:
            self._outcomes[name] = (entry.key, result)
        return result

    def forget_missing(self, seen: set[str]) -> None:
        for name in [n for n in self._outcomes if n not in seen]:
            del self._outcomes[name]


def _decode(stored: dict[str, Any]) -> _Outcome:
    return (
        [Profile(p["data"], p["origin"]) for p in stored["profiles"]],
        problems_of(stored["problems"]),
        problems_of(stored["warnings"]),
    )


def load_profiles(
    paths: list[str | os.PathLike] | str | os.PathLike, cache: ProfileCache | None = None, use_index: bool = True
) -> ProfileSet:
    """Load every profile under the given files and folders; bad files become problems, never exceptions.

    One folder is read through its persistent index (unless ``use_index`` is off, as ``validate`` does): only the
    files changed since the index was written are parsed.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files, problems = profile_files(list(paths))
    result = ProfileSet(problems=problems)
    cache = cache or ProfileCache()
    folder = Path(paths[0]) if len(paths) == 1 and Path(paths[0]).is_dir() else None
    with cache.lock:
        index = cache.index_for(folder) if folder is not None and use_index else None
        outcomes = [cache.outcome(entry, index if entry.in_folder else None) for entry in files]
        if len(paths) == 1:
            cache.forget_missing({entry.location for entry in files})
        if index is not None:
            _finish(index, files, result.warnings)
    seen: dict[str, str] = {}
    for entry, (profiles, bad, warnings) in zip(files, outcomes, strict=True):
        result.problems.extend(bad)
        result.warnings.extend(warnings)
        for profile in profiles:
            if profile.id in seen:
                result.problems.append(
                    Problem(entry.location, "id", f"{profile.id!r} is already used by {seen[profile.id]}")
                )
                continue
            seen[profile.id] = entry.location
            result.profiles.append(profile)
    return result


def _finish(index: ProfileIndex, files: list[FileEntry], warnings: list[Problem]) -> None:
    """Write what the load put in the index, forget the files gone, and say once that it was rebuilt."""
    index.flush()
    index.forget_missing({entry.name for entry in files})
    if index.warning:  # said once: the index was rebuilt (or is not used)
        warnings.append(Problem(str(index.path), "", index.warning.split(": ", 1)[1]))
        index.warning = None


# A profile's rows for a results frame, JSON-ready (the analysis layer's, passed in: the store knows files, not rows).
Derive = Callable[[Profile], list[Any]]


@dataclass
class RowSet:
    """The outcome of loading a folder as rows: every good profile's rows (in file order, a duplicate id's left out),
    the problems and warnings, and where each profile came from, so that one profile is decoded only when shown."""

    rows: list[Any] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    origins: dict[str, str] = field(default_factory=dict)  # profile id -> its file
    generations: list[str] = field(default_factory=list)  # the inference profiles' ids (no rows: read when shown)
    cache: ProfileCache | None = field(default=None, repr=False)
    folder: Path | None = None  # the folder whose index was read (None: files named one by one, no index)

    @property
    def bad_files(self) -> list[str]:
        return sorted({p.file for p in self.problems})

    def profile(self, profile_id: str) -> Profile | None:
        """One profile, read from the cache, the index or its file (None: it is gone or changed into a bad file)."""
        origin = self.origins.get(profile_id)
        if origin is None:
            return None
        path = Path(origin)
        in_folder = self.folder is not None
        try:
            entry = FileEntry(origin, file_key(path.stat(follow_symlinks=not in_folder)), in_folder=in_folder)
        except OSError:
            return None
        cache = self.cache or ProfileCache()
        with cache.lock:
            index = cache.index_for(self.folder) if self.folder is not None else None
            profiles, _, _ = cache.outcome(entry, index)
            if index is not None:
                index.flush()
        return next((p for p in profiles if p.id == profile_id), None)


def load_rows(folder: str | os.PathLike, derive: Derive, tag: str, cache: ProfileCache | None = None) -> RowSet:
    """Every profile of a folder as the rows ``derive`` gives it, through the folder's index.

    A file unchanged since the index took its rows under the same ``tag`` (the deriving code's version) is not
    decoded at all; one whose rows are older is derived again from its stored outcome; a changed file is parsed.
    """
    folder = Path(folder)
    files, problems = profile_files([folder])
    result = RowSet(problems=problems, cache=cache, folder=folder if folder.is_dir() else None)
    cache = result.cache = cache or ProfileCache()
    prefix = tag + "\n"
    with cache.lock:
        index = cache.index_for(folder) if result.folder is not None else None
        stored = index.stored_rows() if index is not None else {}
        found = []
        for entry in files:
            key, text = stored.get(entry.name, (None, None))
            if key == entry.key and text is not None and text.startswith(prefix):
                found.append(json.loads(text[len(prefix) :]))
                continue
            profiles, bad, warnings = cache.outcome(entry, index, remember=False)  # the rows are kept
            derived = {
                "profiles": [[p.id, derive(p)] for p in profiles],
                "generations": [p.id for p in profiles if is_inference(p.data)],
                "problems": problem_lists(bad),
                "warnings": problem_lists(warnings),
            }
            found.append(derived)
            if index is not None:
                with contextlib.suppress(TypeError, ValueError):  # rows JSON cannot hold are derived each time
                    index.put_rows(entry.name, prefix + json.dumps(derived))
        if index is not None:
            _finish(index, files, result.warnings)
    for entry, outcome in zip(files, found, strict=True):
        result.problems.extend(problems_of(outcome["problems"]))
        result.warnings.extend(problems_of(outcome["warnings"]))
        for profile_id, rows in outcome["profiles"]:
            if profile_id in result.origins:
                result.problems.append(
                    Problem(entry.location, "id", f"{profile_id!r} is already used by {result.origins[profile_id]}")
                )
                continue
            result.origins[profile_id] = entry.location
            result.rows.extend(rows)
        result.generations.extend(i for i in outcome.get("generations", ()) if result.origins.get(i) == entry.location)
    return result


def read_snapshot(folder: str | os.PathLike, key: str, cache: ProfileCache) -> tuple[bytes, RowSet] | None:
    """A folder's results as a whole, kept in its index under ``key`` by :func:`keep_snapshot` (None: none is)."""
    with cache.lock:
        index = cache.index_for(Path(folder))
        found = index.snapshot(key)
    if found is None:
        return None
    blob, extras = found
    try:
        rows = RowSet(
            problems=problems_of(extras["problems"]),
            warnings=problems_of(extras["warnings"]),
            origins=dict(extras["origins"]),
            generations=list(extras.get("generations", [])),
            cache=cache,
            folder=Path(folder),
        )
    except (KeyError, TypeError, ValueError):
        return None
    return blob, rows


def keep_snapshot(folder: str | os.PathLike, key: str, frame: bytes, rows: RowSet, cache: ProfileCache) -> None:
    """Keep a folder's results as a whole in its index, under ``key`` (the index's own warnings are not kept)."""
    with cache.lock:
        index = cache.index_for(Path(folder))
        own = str(index.path)
        index.put_snapshot(
            key,
            frame,
            {
                "problems": problem_lists(rows.problems),
                "warnings": problem_lists([p for p in rows.warnings if p.file != own]),
                "origins": rows.origins,
                "generations": rows.generations,
            },
        )
