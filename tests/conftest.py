"""Shared fixtures: a valid profile to mutate, a writable copy of the shipped profiles."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest

from advisor.store import catalog
from helpers import SHIPPED, valid_profile


@pytest.fixture
def profile_dict() -> dict:
    return copy.deepcopy(valid_profile())


@pytest.fixture
def shipped_copy(tmp_path: Path) -> Path:
    """A writable copy of the shipped profiles folder."""
    target = tmp_path / "profiles"
    shutil.copytree(SHIPPED, target)
    return target


@pytest.fixture(scope="session")
def shipped_catalog() -> catalog.Catalog:
    """The shipped GPU catalog, loaded once (read-only)."""
    return catalog.load_catalog()
