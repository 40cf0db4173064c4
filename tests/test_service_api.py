"""The collection service's API description is the API: schemathesis (every check, tests/schemathesis.toml) against
the real `advisor serve` process on SQLite and on PostgreSQL, with a keeper's token (it may submit and review)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from helpers import needs
from servers import Service

pytestmark = [needs("fastapi"), needs("uvicorn"), needs("schemathesis"), pytest.mark.slow]
CONFIG = Path(__file__).parent / "schemathesis.toml"


def test_schemathesis_with_every_check_finds_nothing(database_url, reference, tmp_path):
    running = Service(database_url, reference, submits_per_minute=100_000).start()
    try:
        token = running.token(keeper=True)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "schemathesis.cli",
                "--config-file",
                str(CONFIG),
                "--no-color",
                "run",
                f"{running.url}/openapi.json",
                "--checks",
                "all",
                "--max-examples",
                "25",
                "--seed",
                "1",
                "-H",
                f"Authorization: Bearer {token}",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
        assert "passed" in done.stdout and "failures" not in done.stdout.splitlines()[-1]
    finally:
        running.stop()


def test_a_405_names_every_method_of_the_path(reference, tmp_path):
    """/api/v1/results has a GET route and a POST route: a DELETE's Allow names both (and HEAD), not the first."""
    import urllib.error
    import urllib.request

    running = Service(f"sqlite:///{tmp_path / 'c.sqlite'}", reference).start()
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(f"{running.url}/api/v1/results", method="DELETE"))
        assert refused.value.code == 405
        assert set(refused.value.headers["allow"].split(", ")) == {"GET", "HEAD", "POST"}
    finally:
        running.stop()
