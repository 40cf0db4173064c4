"""Shared fixtures: a valid profile to mutate, writable copies of the shipped profiles, the catalog."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest

from advisor import store
from advisor.decision import analysis
from advisor.store import catalog
from helpers import SHIPPED, valid_profile

LARGE_COLLECTION = "published-lambda-pytorch.yaml"


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
    """A writable copy of the shipped profiles without the large published collection: the index's tests need files,
    a collection and edits, not its 1,137 profiles (0.7 s a cold load; this folder: 0.06 s)."""
    target = tmp_path / "profiles"
    shutil.copytree(SHIPPED, target, ignore=shutil.ignore_patterns(".*", LARGE_COLLECTION))
    return target


@pytest.fixture(scope="session")
def shipped_frame():
    """The results frame of the shipped profiles, built once a session (read-only: a test that changes rows copies
    them)."""
    return analysis.results_frame(store.load_profiles(SHIPPED).profiles)


@pytest.fixture(scope="session")
def shipped_catalog() -> catalog.Catalog:
    """The shipped GPU catalog, loaded once (read-only)."""
    return catalog.load_catalog()
