"""Real servers for the service's tests: a PostgreSQL server of its own (``initdb`` into a temporary folder, started on
a free loopback port, stopped and removed at the end) and ``advisor serve`` as a process. Nothing is mocked at the
database or the HTTP layer.

PostgreSQL refuses to run as root: where the tests run as root (CI, these machines), its folder belongs to the
``postgres`` user and its programs run as that user.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from helpers import ROOT

POSTGRES_URL_VARIABLE = "ADVISOR_TEST_POSTGRES_URL"  # an existing server to use instead of starting one


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def postgres_bin() -> Path | None:
    """The folder of PostgreSQL's server programs (on PATH, or Debian's /usr/lib/postgresql/N/bin, newest)."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    folders = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name), reverse=True)
    return next((f for f in folders if (f / "initdb").exists()), None) if Path("/usr/lib/postgresql").is_dir() else None


def _as_owner(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A fresh PostgreSQL server and database; yields its URL."""
    if os.environ.get(POSTGRES_URL_VARIABLE):
        yield os.environ[POSTGRES_URL_VARIABLE]
        return
    binaries = postgres_bin()
    if binaries is None:
        raise RuntimeError("PostgreSQL is not installed (scripts/setup.sh installs it for the tests)")
    root = Path(tempfile.mkdtemp(prefix="advisor-pg-"))
    data, sockets = root / "data", root / "sockets"
    sockets.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sockets, "postgres")
    port = free_port()
    try:
        subprocess.run(
            _as_owner(
                [str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]
            ),
            check=True,
            capture_output=True,
        )
        options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=on -c max_connections=100"
        subprocess.run(
            _as_owner(
                [
                    str(binaries / "pg_ctl"),
                    "-D",
                    str(data),
                    "-o",
                    options,
                    "-l",
                    str(root / "log"),
                    "-w",
                    "-t",
                    "60",
                    "start",
                ]
            ),
            check=True,
            capture_output=True,
        )
        subprocess.run(
            _as_owner([str(binaries / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "advisor"]),
            check=True,
            capture_output=True,
        )
        yield f"postgresql://postgres@127.0.0.1:{port}/advisor"
    finally:
        subprocess.run(
            _as_owner([str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
            capture_output=True,
            check=False,
        )
        shutil.rmtree(root, ignore_errors=True)


def new_database(url: str, name: str) -> str:
    """Another empty database on the same PostgreSQL server (each test its own)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + f"/{name}"


class Service:
    """``advisor serve`` as a process on a free loopback port: started, waited for, killed."""

    def __init__(self, database: str, profiles: Path, submits_per_minute: int = 1000) -> None:
        self.database, self.profiles, self.port = database, profiles, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = Path(tempfile.mkstemp(prefix="advisor-serve-", suffix=".log")[1])
        self.submits_per_minute = submits_per_minute
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 60.0) -> Service:
        command = [
            sys.executable,
            "-m",
            "advisor",
            "--profiles",
            str(self.profiles),
            "serve",
            "--database",
            self.database,
            "--port",
            str(self.port),
            "--submits-per-minute",
            str(self.submits_per_minute),
        ]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"advisor serve stopped: {self.log.read_text()}")
            with contextlib.suppress(OSError, urllib.error.URLError):
                if get(f"{self.url}/api/v1/health")[0] == 200:
                    return self
            time.sleep(0.1)
        raise RuntimeError(f"advisor serve did not answer in {timeout:.0f} s: {self.log.read_text()}")

    def kill(self) -> None:
        """kill -9: no clean shutdown."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()

    def token(self, keeper: bool = False) -> str:
        """A new contributor token (or a keeper's), made as the service's keeper would."""
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "advisor",
                "serve",
                "--database",
                self.database,
                "--new-token",
                "tests",
                *(["--keeper"] if keeper else []),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()


def request(
    url: str, data: bytes | None = None, headers: dict[str, str] | None = None, method: str | None = None
) -> tuple[int, bytes]:
    """Any request: (status, body), a 4xx or 5xx included."""
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, data=data, headers=headers or {}, method=method), timeout=60
        ) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def get(url: str) -> tuple[int, bytes]:
    return request(url)


def submit(
    service_url: str, text: bytes, token: str | None, private: bool = False, headers: dict[str, str] | None = None
) -> tuple[int, dict]:
    """POST a profile's bytes: (status, the JSON answer)."""
    sent = {
        "Content-Type": "application/yaml",
        **({"Authorization": f"Bearer {token}"} if token else {}),
        **(headers or {}),
    }
    status, body = request(f"{service_url}/api/v1/results{'?private=true' if private else ''}", text, sent, "POST")
    return status, json.loads(body)
