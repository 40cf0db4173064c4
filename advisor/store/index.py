"""A persistent index of a profiles folder: each file's validated outcome, kept in SQLite beside the files.

The YAML files stay the source of truth. A row holds a file's name, its cache key (size, modification time in
nanoseconds, inode, status change time), its outcome as JSON (the profiles it holds, or its problems) and the rows
its profiles give the results frame (JSON, tagged with the code that derived them), so that a cold start parses only
the files that changed since the index was written, and a restart reads the frame's rows without decoding a profile.
Writes are buffered and committed in one transaction per load (:meth:`ProfileIndex.flush`).

An index that is missing, stale, corrupt (truncated, zero bytes, random bytes), another program's SQLite file, an
older version, or locked by another process is never trusted: it is rebuilt from the files with a warning, or
(locked, read-only folder) not used at all.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

from advisor import __version__
from advisor.errors import Problem
from advisor.format.schema import SCHEMA_VERSION

INDEX_NAME = ".advisor-index.sqlite"  # hidden: a folder listing never takes it for a profile
# Written in the meta table; anything else is rebuilt. The profile format's version is part of it: an outcome
# validated by an older format (its problems, its migration) is never served to a newer one; so is the advisor's own
# version (an upgrade may read a file otherwise: a collection's workloads gained model_family in index 8).
FORMAT = f"advisor profile index 8 of advisor {__version__}, profiles of schema version {SCHEMA_VERSION}"
_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE files (name TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, inode INTEGER, ctime_ns INTEGER, "
    "outcome TEXT, rows TEXT)",
    "CREATE TABLE snapshot (key TEXT PRIMARY KEY, frame BLOB, extras TEXT)",
)
_Key = tuple[int, int, int, int]
QUICK_CHECK_BYTES = 64 * 1024 * 1024  # an index up to this size is checked whole when opened


class ProfileIndex:
    """The index of one folder; ``warning`` says why it was rebuilt or is not used (None when all went well)."""

    def __init__(self, folder: str | Path) -> None:
        self.path = Path(folder) / INDEX_NAME
        self.warning: str | None = None
        self.connection: sqlite3.Connection | None = None
        self._pending: dict[str, tuple] = {}  # name -> a whole row to write
        self._pending_rows: dict[str, str] = {}  # name -> rows to set on a stored row
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
        if not {"meta", "files", "snapshot"} <= tables:
            return "not an advisor index (another SQLite file)"
        row = self.connection.execute("SELECT value FROM meta WHERE key='format'").fetchone()
        if row is None or row[0] != FORMAT:
            return f"written in another format ({row[0] if row else 'none'!s}, this advisor writes {FORMAT!r})"
        pages = self.connection.execute("PRAGMA page_count").fetchone()[0]
        page_size = self.connection.execute("PRAGMA page_size").fetchone()[0]
        if self.path.stat().st_size < pages * page_size:
            return "damaged (shorter than its pages)"
        # SQLite's own check reads the whole file: done while that is quick. A larger index (100,000 profiles: half
        # a gigabyte) is checked by its size alone; a page damaged inside it fails its query, which is then read
        # from the files (every read of the index falls back to them).
        if pages * page_size > QUICK_CHECK_BYTES:
            return None
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

    def get(self, name: str, key: _Key) -> dict[str, Any] | None:
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

    def stored_rows(self) -> dict[str, tuple[_Key, str | None]]:
        """Every file's key and its stored rows text (None: not derived yet), in one query."""
        if self.connection is None:
            return {}
        try:
            found = self.connection.execute("SELECT name, size, mtime_ns, inode, ctime_ns, rows FROM files")
            return {row[0]: (tuple(row[1:5]), row[5]) for row in found}
        except sqlite3.Error:
            return {}

    def put(self, name: str, key: _Key, outcome: dict[str, Any], rows: str | None = None) -> None:
        """Remember a file's outcome (and its rows); written at the next :meth:`flush`."""
        if self.connection is None:
            return
        with contextlib.suppress(TypeError, ValueError):  # an outcome JSON cannot hold is not indexed
            self._pending[name] = (name, *key, json.dumps(outcome), rows)
            self._pending_rows.pop(name, None)

    def put_rows(self, name: str, rows: str) -> None:
        """Remember the rows derived again from a stored outcome (their code changed); written at the next flush."""
        if self.connection is None:
            return
        if name in self._pending:  # the outcome is being written too: the rows go with it
            self._pending[name] = (*self._pending[name][:-1], rows)
        else:
            self._pending_rows[name] = rows

    def flush(self) -> None:
        """Write what was put since the last flush, in one transaction (an index that cannot be written is
        skipped: the files stay the truth)."""
        if self.connection is None or not (self._pending or self._pending_rows):
            return
        with contextlib.suppress(sqlite3.Error), self.connection:
            self.connection.executemany(
                "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?)", list(self._pending.values())
            )
            self.connection.executemany(
                "UPDATE files SET rows=? WHERE name=?", [(rows, name) for name, rows in self._pending_rows.items()]
            )
        self._pending.clear()
        self._pending_rows.clear()

    def snapshot(self, key: str) -> tuple[bytes, dict[str, Any]] | None:
        """The whole folder's results, stored under ``key`` (the folder's signature and the rows' tag), or None."""
        if self.connection is None:
            return None
        try:
            row = self.connection.execute("SELECT frame, extras FROM snapshot WHERE key=?", (key,)).fetchone()
            return (bytes(row[0]), json.loads(row[1])) if row else None
        except (sqlite3.Error, ValueError, TypeError):
            return None

    def put_snapshot(self, key: str, frame: bytes, extras: dict[str, Any]) -> None:
        """Keep one snapshot: the folder's results as they are now (a failed write keeps none)."""
        if self.connection is None:
            return
        with contextlib.suppress(sqlite3.Error, TypeError, ValueError), self.connection:
            self.connection.execute("DELETE FROM snapshot")
            self.connection.execute("INSERT INTO snapshot VALUES (?, ?, ?)", (key, frame, json.dumps(extras)))

    def forget_missing(self, names: set[str]) -> None:
        if self.connection is None:
            return
        with contextlib.suppress(sqlite3.Error):
            stored = {row[0] for row in self.connection.execute("SELECT name FROM files")}
            with self.connection:
                self.connection.executemany("DELETE FROM files WHERE name=?", [(n,) for n in stored - names])

    def problem(self) -> Problem | None:
        return Problem(str(self.path), "", self.warning) if self.warning else None


def problem_lists(problems: list[Problem]) -> list[list[str]]:
    """Problems as JSON-ready lists (:func:`problems_of` reads them back)."""
    return [[p.file, p.field, p.message] for p in problems]


def problems_of(lists: list) -> list[Problem]:
    """Problems written by :func:`problem_lists`."""
    return [Problem(*p) for p in lists]


def encode(profiles: list, problems: list[Problem], warnings: list[Problem]) -> dict[str, Any]:
    """A file's outcome as JSON-ready data."""
    return {
        "profiles": [{"data": p.data, "origin": p.origin} for p in profiles],
        "problems": problem_lists(problems),
        "warnings": problem_lists(warnings),
    }
