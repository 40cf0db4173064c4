"""A persistent index of a profiles folder: each file's validated outcome, kept in SQLite beside the files.

The YAML files stay the source of truth. A row holds a file's name, its cache key (size, modification time in
nanoseconds, inode, status change time) and its outcome as JSON (the profiles it holds, or its problems), so that
a cold start parses only the files that changed since the index was written. An index that is missing, stale,
corrupt (truncated, zero bytes, random bytes), another program's SQLite file, an older version, or locked by
another process is never trusted: it is rebuilt from the files with a warning, or (locked, read-only folder) not
used at all.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

from advisor.errors import Problem
from advisor.schema import SCHEMA_VERSION

INDEX_NAME = ".advisor-index.sqlite"  # hidden: a folder listing never takes it for a profile
# Written in the meta table; anything else is rebuilt. The profile format's version is part of it: an outcome
# validated by an older format (its problems, its migration) is never served to a newer one.
FORMAT = f"advisor profile index 3, profiles of schema version {SCHEMA_VERSION}"
_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE files (name TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, inode INTEGER, ctime_ns INTEGER, "
    "outcome TEXT)",
)


class ProfileIndex:
    """The index of one folder; ``warning`` says why it was rebuilt or is not used (None when all went well)."""

    def __init__(self, folder: str | Path) -> None:
        self.path = Path(folder) / INDEX_NAME
        self.warning: str | None = None
        self.connection: sqlite3.Connection | None = None
        self._open()

    # ------------------------------------------------------------------ opening, checking, rebuilding

    def _open(self) -> None:
        existed = self.path.exists()
        try:
            self.connection = self._connect()
            if existed:
                reason = self._check()
                if reason is None:
                    return
                self.warning = f"{self.path}: {reason}: rebuilt from the profile files"
                self._rebuild()
            else:
                self._create()
        except sqlite3.OperationalError as error:
            if "locked" in str(error) or "busy" in str(error):
                self.warning = f"{self.path}: locked by another process: the files are read without it"
            self._close()
        except (sqlite3.DatabaseError, OSError) as error:  # corrupt beyond reading: start again from nothing
            self._close()
            self.warning = f"{self.path}: unreadable ({error}): rebuilt from the profile files"
            try:
                self.path.unlink(missing_ok=True)
                self.connection = self._connect()
                self._create()
            except (sqlite3.Error, OSError):  # a read-only folder: no index, the files alone
                self._close()

    def _connect(self) -> sqlite3.Connection:
        # check_same_thread off: the app's sessions share one index, behind the profile cache's lock
        connection = sqlite3.connect(self.path, timeout=0.5, check_same_thread=False)
        connection.execute("PRAGMA journal_mode=DELETE")
        return connection

    def _check(self) -> str | None:
        """Why the index cannot be trusted (None: it can)."""
        assert self.connection is not None
        tables = {row[0] for row in self.connection.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"meta", "files"} <= tables:
            return "not an advisor index (another SQLite file)"
        row = self.connection.execute("SELECT value FROM meta WHERE key='format'").fetchone()
        if row is None or row[0] != FORMAT:
            return f"written in another format ({row[0] if row else 'none'!s}, this advisor writes {FORMAT!r})"
        if self.connection.execute("PRAGMA quick_check").fetchone()[0] != "ok":
            return "damaged"
        return None

    def _create(self) -> None:
        assert self.connection is not None
        with self.connection:
            for statement in _SCHEMA:
                self.connection.execute(statement)
            self.connection.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT,))

    def _rebuild(self) -> None:
        self._close()
        self.path.unlink(missing_ok=True)
        self.connection = self._connect()
        self._create()

    def _close(self) -> None:
        if self.connection is not None:
            with contextlib.suppress(sqlite3.Error):
                self.connection.close()
        self.connection = None

    # ------------------------------------------------------------------ reading and writing outcomes

    def get(self, name: str, key: tuple[int, int, int, int]) -> dict[str, Any] | None:
        """A file's stored outcome when its key still matches (else None: parse the file)."""
        if self.connection is None:
            return None
        try:
            row = self.connection.execute(
                "SELECT outcome FROM files WHERE name=? AND size=? AND mtime_ns=? AND inode=? AND ctime_ns=?",
                (name, *key),
            ).fetchone()
            return json.loads(row[0]) if row else None
        except (sqlite3.Error, ValueError):
            return None  # a row that cannot be read is parsed again

    def put(self, name: str, key: tuple[int, int, int, int], outcome: dict[str, Any]) -> None:
        if self.connection is None:
            return
        # an index that cannot be written is skipped
        with contextlib.suppress(sqlite3.Error, TypeError, ValueError), self.connection:
            self.connection.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)",
                                    (name, *key, json.dumps(outcome)))  # fmt: skip

    def forget_missing(self, names: set[str]) -> None:
        if self.connection is None:
            return
        with contextlib.suppress(sqlite3.Error):
            stored = {row[0] for row in self.connection.execute("SELECT name FROM files")}
            with self.connection:
                self.connection.executemany("DELETE FROM files WHERE name=?", [(n,) for n in stored - names])

    def problem(self) -> Problem | None:
        return Problem(str(self.path), "", self.warning) if self.warning else None


def encode(profiles: list, problems: list[Problem], warnings: list[Problem]) -> dict[str, Any]:
    """A file's outcome as JSON-ready data."""
    return {
        "profiles": [{"data": p.data, "origin": p.origin} for p in profiles],
        "problems": [[p.file, p.field, p.message] for p in problems],
        "warnings": [[p.file, p.field, p.message] for p in warnings],
    }
