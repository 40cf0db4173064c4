"""The collection's database: one interface (:class:`Storage`) over SQLite (one file, nothing to set up: a single
user or a lab) and PostgreSQL (many writers, several service processes), one schema with numbered migrations
applied at start (:data:`MIGRATIONS`); a database newer than this code is refused.

Every submit is one transaction: the result and its comparison keys are written together or not at all, and the
result's id (its content hash) is the primary key, so a repeated or concurrent submit of the same profile stores it
once. No uploader address is kept with a result: only the hash of the contributor's token.

SQL is written once, with ``?`` placeholders; PostgreSQL's driver gets ``%s``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError, InputError

# The schema, one numbered step at a time: a database at version N gets the steps after N, in order, at start.
MIGRATIONS: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (
        1,
        "results, their comparison keys, contributor tokens and rate windows",
        (
            """CREATE TABLE results (
            id TEXT PRIMARY KEY,              -- the SHA-256 of the profile's content
            profile_id TEXT NOT NULL UNIQUE,  -- the profile's id as served: the contributor's and the hash's start
            workload TEXT NOT NULL,           -- the workload's key (JSON)
            workload_name TEXT NOT NULL,
            device TEXT NOT NULL,             -- catalog id (or normalised name) : count x
            catalog_id TEXT,
            status TEXT NOT NULL,             -- listed | held | private (and, since 2, rejected)
            reason TEXT,                      -- why it is held
            document TEXT NOT NULL,           -- the profile as stored (canonical YAML)
            token_hash TEXT NOT NULL,
            received_at TEXT NOT NULL
        )""",
            "CREATE INDEX results_by_workload ON results (status, workload, id)",
            "CREATE INDEX results_by_device ON results (status, device, id)",
            "CREATE INDEX results_listed ON results (status, id)",
            """CREATE TABLE comparisons (
            result_id TEXT NOT NULL REFERENCES results (id),
            precision TEXT NOT NULL,
            comparison_key TEXT NOT NULL,
            seconds DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (result_id, precision)
        )""",
            "CREATE INDEX comparisons_by_key ON comparisons (comparison_key)",
            """CREATE TABLE tokens (
            hash TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            created_at TEXT NOT NULL
        )""",
            """CREATE TABLE rate_windows (
            token_hash TEXT NOT NULL,
            window_start BIGINT NOT NULL,
            submits INTEGER NOT NULL,
            PRIMARY KEY (token_hash, window_start)
        )""",
        ),
    ),
    (
        2,
        "keeper tokens (who reviews held results) and when a result was decided",
        (
            "ALTER TABLE tokens ADD COLUMN role TEXT NOT NULL DEFAULT 'contributor'",  # contributor | keeper
            "ALTER TABLE results ADD COLUMN decided_at TEXT",
        ),
    ),
)
LATEST = MIGRATIONS[-1][0]
STATUSES = ("listed", "held", "private", "rejected")  # a held result becomes listed (approved) or rejected
DECISIONS = {"approve": "listed", "reject": "rejected"}
VERSION_TABLE = "advisor_schema"
PAGE_MAX = 500  # results in one page
TOKEN_PREFIX = "adv_"  # a contributor token's start (URL-safe base64 alone may start with '-', read as an option)


@dataclass(frozen=True)
class StoredResult:
    """One result as a reader gets it."""

    id: str
    profile_id: str
    workload: str
    workload_name: str
    device: str
    catalog_id: str | None
    status: str
    reason: str | None
    document: str
    received_at: str

    def summary(self) -> dict[str, Any]:
        """The result in a page of a listing (its profile is fetched by id)."""
        return {
            "id": self.id,
            "profile_id": self.profile_id,
            "workload": json.loads(self.workload),
            "workload_name": self.workload_name,
            "device": self.device,
            "catalog_id": self.catalog_id,
            "received_at": self.received_at,
        }


_COLUMNS = "id, profile_id, workload, workload_name, device, catalog_id, status, reason, document, received_at"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class Storage:
    """The collection's database. :func:`open_storage` opens one by its URL and applies the migrations."""

    placeholder = "?"

    def __init__(self) -> None:
        self.version = 0

    # -- what a backend provides: a transaction whose cursor runs SQL with ? placeholders
    @contextlib.contextmanager
    def transaction(self, write: bool = True) -> Iterator[Any]:  # pragma: no cover - each backend has its own
        """A transaction's cursor: committed at the end, rolled back on an error. ``write`` False: it only reads
        (SQLite lets it read beside a writer, under WAL, instead of waiting for the write lock)."""
        raise NotImplementedError
        yield

    def close(self) -> None:
        """Close the connections."""

    def _lock_for_migrations(self, cursor: Any) -> None:
        """Keep other processes from migrating at the same time (inside the migration's transaction)."""

    def _sql(self, text: str) -> str:
        return text if self.placeholder == "?" else text.replace("?", self.placeholder)

    def _run(self, cursor: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        cursor.execute(self._sql(sql), tuple(params))
        return cursor

    # -- the schema
    def migrate(self) -> int:
        """Apply the migrations this database lacks; refuse one newer than this code. Returns the version."""
        with self.transaction() as cursor:
            self._lock_for_migrations(cursor)
            self._run(cursor, f"CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (version INTEGER NOT NULL)")
            current = self._run(cursor, f"SELECT MAX(version) FROM {VERSION_TABLE}").fetchone()[0] or 0
            if current > LATEST:
                raise AdvisorError(
                    f"the database's schema is version {current}, newer than this advisor's "
                    f"({LATEST}): upgrade advisor to serve it"
                )
            for version, _, statements in MIGRATIONS:
                if version > current:
                    for statement in statements:
                        self._run(cursor, statement)
                    self._run(cursor, f"INSERT INTO {VERSION_TABLE} (version) VALUES (?)", (version,))
        self.version = max(current, LATEST)
        return self.version

    # -- tokens
    def add_token(self, name: str, role: str = "contributor") -> str:
        """A new token (shown once; only its hash is kept): a contributor's, or a keeper's, who reviews held
        results."""
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)  # never starting with '-': `--token T` takes it whole
        with self.transaction() as cursor:
            self._run(
                cursor,
                "INSERT INTO tokens (hash, name, created_at, role) VALUES (?, ?, ?, ?)",
                (token_hash(token), name, _now(), role),
            )
        return token

    def token_role(self, hashed: str) -> str | None:
        """The token's role (contributor or keeper); None for a token the service does not know."""
        with self.transaction(write=False) as cursor:
            row = self._run(cursor, "SELECT role FROM tokens WHERE hash = ?", (hashed,)).fetchone()
        return None if row is None else str(row[0])

    def token_known(self, hashed: str) -> bool:
        with self.transaction(write=False) as cursor:
            return self._run(cursor, "SELECT 1 FROM tokens WHERE hash = ?", (hashed,)).fetchone() is not None

    def count_submit(self, hashed: str, window_start: int) -> int:
        """Count one submit in the token's window; returns the window's submits so far."""
        with self.transaction() as cursor:
            row = self._run(
                cursor,
                "INSERT INTO rate_windows (token_hash, window_start, submits) VALUES (?, ?, 1) "
                "ON CONFLICT (token_hash, window_start) DO UPDATE SET submits = "
                "rate_windows.submits + 1 RETURNING submits",
                (hashed, window_start),
            ).fetchone()
            self._run(cursor, "DELETE FROM rate_windows WHERE window_start < ?", (window_start - 60,))
        return int(row[0])

    # -- results
    def add(self, accepted: Any, document: str, hashed: str, private: bool) -> tuple[StoredResult, bool]:
        """Store an accepted profile (and its comparison keys) in one transaction; the same content again is the
        stored one. Returns the result and whether it is new. The insert yields to a conflict on any unique key, not
        the id alone: PostgreSQL checks an ``ON CONFLICT (id)`` target before inserting, and two submits of the same
        content racing past that check met on ``profile_id``'s index with a unique violation (a 500, seen once in
        200 concurrent submits)."""
        status = "private" if private else ("held" if accepted.held else "listed")
        with self.transaction() as cursor:
            inserted = (
                self._run(
                    cursor,
                    f"INSERT INTO results ({_COLUMNS}, token_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT DO NOTHING RETURNING id",
                    (
                        accepted.id,
                        accepted.profile_id,
                        accepted.workload,
                        accepted.workload_name,
                        accepted.device,
                        accepted.catalog_id,
                        status,
                        accepted.held,
                        document,
                        _now(),
                        hashed,
                    ),
                ).fetchone()
                is not None
            )
            if inserted:
                for precision, key, seconds in accepted.comparisons:
                    self._run(
                        cursor,
                        "INSERT INTO comparisons (result_id, precision, comparison_key, seconds) VALUES (?, ?, ?, ?)",
                        (accepted.id, precision, key, seconds),
                    )
            row = self._run(cursor, f"SELECT {_COLUMNS} FROM results WHERE id = ?", (accepted.id,)).fetchone()
        if row is None:  # its served id is another content's (the same contributor id and hash start): not stored
            raise RuntimeError(f"the profile id {accepted.profile_id} is taken by another result")
        return StoredResult(*row), inserted

    def held(self, limit: int = PAGE_MAX) -> list[StoredResult]:
        """The results waiting for a keeper's decision, oldest first."""
        with self.transaction(write=False) as cursor:
            rows = self._run(
                cursor,
                f"SELECT {_COLUMNS} FROM results WHERE status = 'held' ORDER BY received_at, id LIMIT ?",
                (max(1, min(limit, PAGE_MAX)),),
            ).fetchall()
        return [StoredResult(*row) for row in rows]

    def decide(self, result_id: str, decision: str) -> StoredResult | None:
        """A keeper's decision on a held result (``approve``: listed; ``reject``: never shown), made once: None when
        the result is not held (or not there)."""
        status = DECISIONS[decision]
        with self.transaction() as cursor:
            changed = self._run(
                cursor,
                "UPDATE results SET status = ?, decided_at = ? WHERE id = ? AND status = 'held' RETURNING id",
                (status, _now(), result_id),
            ).fetchone()
            if changed is None:
                return None
            row = self._run(cursor, f"SELECT {_COLUMNS} FROM results WHERE id = ?", (result_id,)).fetchone()
        return StoredResult(*row)

    def submitted_by(self, result_id: str, hashed: str) -> bool:
        """Whether the token of this hash sent the result."""
        with self.transaction(write=False) as cursor:
            row = self._run(cursor, "SELECT 1 FROM results WHERE id = ? AND token_hash = ?", (result_id, hashed))
            return row.fetchone() is not None

    def get(self, result_id: str) -> StoredResult | None:
        """A result by its id or its profile's id, whatever its status (the caller decides what to show)."""
        with self.transaction(write=False) as cursor:
            row = self._run(
                cursor, f"SELECT {_COLUMNS} FROM results WHERE id = ? OR profile_id = ?", (result_id, result_id)
            ).fetchone()
        return StoredResult(*row) if row else None

    def page(
        self, workload: str | None = None, device: str | None = None, after: str = "", limit: int = 100
    ) -> list[StoredResult]:
        """Listed results (never held or private ones) in id order after ``after``, of a workload (its key's JSON)
        and a device (``rtx-4090:1x``) where given."""
        where, params = ["status = 'listed'", "id > ?"], [after]
        for column, value in (("workload", workload), ("device", device)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        params.append(max(1, min(int(limit), PAGE_MAX)))
        with self.transaction(write=False) as cursor:
            rows = self._run(
                cursor, f"SELECT {_COLUMNS} FROM results WHERE {' AND '.join(where)} ORDER BY id LIMIT ?", params
            ).fetchall()
        return [StoredResult(*row) for row in rows]

    def comparison_keys(self, result_id: str) -> list[str]:
        """A result's comparison keys, one per precision."""
        with self.transaction(write=False) as cursor:
            rows = self._run(
                cursor, "SELECT comparison_key FROM comparisons WHERE result_id = ? ORDER BY precision", (result_id,)
            ).fetchall()
        return [str(row[0]) for row in rows]

    def comparable(self, comparison_key: str, limit: int = 100) -> list[tuple[str, str, float]]:
        """Listed results that may be put beside each other: (result id, precision, seconds), fastest first."""
        with self.transaction(write=False) as cursor:
            return [
                tuple(row)
                for row in self._run(
                    cursor,
                    "SELECT c.result_id, c.precision, c.seconds FROM comparisons c JOIN results r ON "
                    "r.id = c.result_id WHERE c.comparison_key = ? AND r.status = 'listed' ORDER BY c.seconds, "
                    "c.result_id LIMIT ?",
                    (comparison_key, max(1, min(int(limit), PAGE_MAX))),
                ).fetchall()
            ]

    def counts(self) -> dict[str, int]:
        """Results by status."""
        with self.transaction(write=False) as cursor:
            rows = self._run(cursor, "SELECT status, COUNT(*) FROM results GROUP BY status").fetchall()
        return {str(status): int(count) for status, count in rows}


class SQLiteStorage(Storage):
    """One SQLite file: a connection per thread, WAL (readers never wait for the writer), every commit synced."""

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = str(path)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def _connection(self) -> sqlite3.Connection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=FULL")  # an acknowledged submit survives the process's end
            connection.execute("PRAGMA foreign_keys=ON")
            self._local.connection = connection
            with self._lock:
                self._connections.append(connection)
        return connection

    @contextlib.contextmanager
    def transaction(self, write: bool = True) -> Iterator[sqlite3.Cursor]:
        connection = self._connection()
        cursor = connection.cursor()
        cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")  # one writer at a time; readers beside it
        try:
            yield cursor
        except BaseException:
            connection.rollback()
            raise
        else:
            connection.commit()
        finally:
            cursor.close()

    def close(self) -> None:
        with self._lock:
            for connection in self._connections:
                with contextlib.suppress(sqlite3.Error):
                    connection.close()
            self._connections.clear()


class PostgresStorage(Storage):
    """A PostgreSQL database through a psycopg 3 connection pool."""

    placeholder = "%s"

    def __init__(self, url: str, max_connections: int = 10) -> None:
        super().__init__()
        # psycopg and its pool are imported here: only a PostgreSQL collection needs them (the `serve` extra)
        import psycopg
        from psycopg_pool import ConnectionPool

        with psycopg.connect(url, connect_timeout=10):  # a server that is down or refuses the login: said at once
            pass
        self.pool = ConnectionPool(url, min_size=1, max_size=max_connections, open=True, timeout=30.0)

    @contextlib.contextmanager
    def transaction(self, write: bool = True) -> Iterator[Any]:
        with self.pool.connection() as connection, connection.transaction(), connection.cursor() as cursor:
            yield cursor

    def _lock_for_migrations(self, cursor: Any) -> None:
        cursor.execute("SELECT pg_advisory_xact_lock(726157)")  # any fixed number: the advisor's migrations

    def close(self) -> None:
        self.pool.close()


def open_storage(url: str) -> Storage:
    """The database at ``url`` (``sqlite:///path/to/file.sqlite``, a plain path, or ``postgresql://...``), its
    migrations applied."""
    if url.startswith(("postgresql://", "postgres://")):
        try:
            storage: Storage = PostgresStorage(url)
        except ImportError:
            raise InputError(
                "database",
                "install the service's extra (pip install 'advisor[serve]'): psycopg and psycopg-pool",
                "postgresql://...",
            ) from None
        except Exception as error:  # the server is down, refuses the login...: one line, not a traceback
            reason = " ".join(str(error).split())  # libpq's message spans lines
            raise InputError("database", f"cannot connect to PostgreSQL: {reason}") from None
    else:
        path = Path(url.removeprefix("sqlite:///").removeprefix("sqlite://"))
        if not path.parent.is_dir():
            raise InputError("database", f"the folder {path.parent} does not exist", str(url))
        storage = SQLiteStorage(path)
    try:
        storage.migrate()
    except AdvisorError:
        storage.close()
        raise
    except Exception as error:  # not a database, a read-only file...: one line
        storage.close()
        raise InputError("database", f"cannot use it: {' '.join(str(error).split())}", str(url)) from None
    return storage
