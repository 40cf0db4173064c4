"""Shared fixtures: a valid profile to mutate, writable copies of the shipped profiles, the catalog."""

from __future__ import annotations

import copy
import os
import shutil
import sys
import tempfile
from pathlib import Path

import hypothesis.configuration
import pytest

import helpers
import servers
from advisor import store
from advisor.store import catalog, results
from helpers import CHECKOUT_PROFILES, SHIPPED, copy_small_shipped, valid_profile

# Where Python is told to write no bytecode (PYTHONDONTWRITEBYTECODE, as on these machines), every test run compiles
# the test files again and rewrites their assertions, and pytest rewrites Hypothesis's modules too: 1.3 s a process,
# in each worker and each subprocess. The tests keep their bytecode in the temporary folder instead, never beside the
# sources (sys.pycache_prefix, which pytest's rewriting honours); the subprocesses they start inherit it.
if sys.dont_write_bytecode:
    PYCACHE = Path(tempfile.gettempdir()) / "advisor-tests-pycache"
    sys.pycache_prefix, sys.dont_write_bytecode = str(PYCACHE), False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(PYCACHE)


# Hypothesis keeps its example database and its caches in .hypothesis/ of the working folder: the tests keep them
# in the temporary folder instead, so that no test writes into the checkout.
hypothesis.configuration.set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "advisor-tests-hypothesis")


# What Python and pytest themselves keep beside the sources (bytecode, pytest's cache): not a test's writing.
TOOLS_OWN = {"__pycache__", ".pytest_cache"}


def _checkout_profiles_state() -> dict[str, tuple[int, int]]:
    """The checkout's profiles folder, hidden files included: each name's size and modification time; and the names
    at the checkout's top and in its tests folder (a test's output left there: a screenshot folder, a database)."""
    state = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in CHECKOUT_PROFILES.iterdir() if p.is_file()}
    for folder in (helpers.ROOT, helpers.ROOT / "tests"):
        state |= {str(p.relative_to(helpers.ROOT)): (0, 0) for p in folder.iterdir() if p.name not in TOOLS_OWN}
    return state


def pytest_configure(config: pytest.Config) -> None:
    """The fast part (``-m "not slow"``) runs the property tests on fewer examples (``helpers.examples``); the
    checkout's profiles folder is noted, to check at the end that no test wrote into it."""
    helpers.quick_examples = "not slow" in (config.option.markexpr or "")
    config.stash[CHECKOUT_STATE] = _checkout_profiles_state()


CHECKOUT_STATE = pytest.StashKey[dict]()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """No test writes into the checkout: a file added to or changed in its profiles folder (an index, a profile), or
    a new entry at its top or in its tests folder, fails the run, naming it."""
    before, after = session.config.stash[CHECKOUT_STATE], _checkout_profiles_state()
    changed = sorted(name for name in after if before.get(name) != after[name])
    if changed:
        print(f"\ntests wrote into the checkout: {', '.join(changed)}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def _in_the_sessions_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs in the folder of the session's copy of the shipped profiles: a command given no --profiles
    reads ``./profiles``, that copy, never the checkout's."""
    monkeypatch.chdir(SHIPPED.parent)


@pytest.fixture
def profile_dict() -> dict:
    return copy.deepcopy(valid_profile())


@pytest.fixture
def shipped_copy(tmp_path: Path) -> Path:
    """A writable copy of the shipped profiles folder."""
    target = tmp_path / "profiles"
    shutil.copytree(SHIPPED, target)
    return target


@pytest.fixture
def small_copy(tmp_path: Path) -> Path:
    """A writable copy of the shipped profiles without the large published collection (``copy_small_shipped``)."""
    return copy_small_shipped(tmp_path / "profiles")


@pytest.fixture(scope="session")
def shipped_frame():
    """The results frame of the shipped profiles, built once a session (read-only: a test that changes rows copies
    them)."""
    return results.results_frame(store.load_profiles(SHIPPED).profiles)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """The reference collection a collection service's plausibility checks use: the shipped profiles, small."""
    return copy_small_shipped(tmp_path_factory.mktemp("reference") / "profiles")


@pytest.fixture(scope="module")
def postgres():
    """A PostgreSQL server of the module's own (tests/servers.py), its URL; skipped where it is not installed."""
    pytest.importorskip("psycopg_pool")
    if servers.postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed here (scripts/setup.sh installs it for the tests)")
    with servers.postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path) -> str:
    """A new, empty collection database: an SQLite file, then a database on the module's PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'collection.sqlite'}"
    return servers.new_database(request.getfixturevalue("postgres"), f"t{abs(hash(request.node.name)) % 10**8}")


@pytest.fixture(scope="session")
def shipped_catalog() -> catalog.Catalog:
    """The shipped GPU catalog, loaded once (read-only)."""
    return catalog.load_catalog()
