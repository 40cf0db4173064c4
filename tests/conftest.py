"""Shared fixtures: the shipped profiles, a valid profile to mutate, tiny workloads."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest
import yaml

from advisor.schema import DEFAULT_WORKLOAD

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "profiles"


def valid_profile(profile_id: str = "test-gpu", seconds: float = 100.0, price: float | None = 500.0) -> dict:
    """A small valid measured profile (schema 1)."""
    epochs = [seconds / 4] * 4
    return {
        "schema_version": 1,
        "id": profile_id,
        "name": f"Test {profile_id}",
        "device": {"kind": "gpu", "name": f"Test GPU {profile_id}", "count": 1},
        "host": {"cpu": "Test CPU", "cores": 2},
        "software": {"framework": "tensorflow", "framework_version": "2.21.0"},
        "price": {"usd": price, "date": "2026-11-30", "includes": "the GPU", "source": "test"},
        "workload": {
            "name": "tiny",
            "units": 4,
            "timesteps": 3,
            "features": 1,
            "train_samples": 8,
            "batch_size": 4,
            "epochs": 4,
            "optimizer": "adam",
            "learning_rate": 0.001,
        },
        "results": [
            {
                "precision": "float32",
                "total_seconds": seconds,
                "first_epoch_seconds": epochs[0],
                "steady": {"count": 3, "median": epochs[1], "min": epochs[1], "max": epochs[1], "stdev": 0.0},
                "epoch_seconds": epochs,
            }
        ],
        "provenance": {"method": "measured", "advisor_version": "0.1.0", "date": "2026-11-30"},
    }


def post_workload_profile(profile_id: str, seconds: float, price: float | None) -> dict:
    """A valid profile with one float32 result of the post's workload (comparable with the shipped ones)."""
    profile = valid_profile(profile_id, seconds=seconds, price=price)
    profile["workload"] = dict(DEFAULT_WORKLOAD)
    profile["results"] = [{"precision": "float32", "total_seconds": seconds}]
    return profile


def write_yaml(path: Path, data: object) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture
def profile_dict() -> dict:
    return copy.deepcopy(valid_profile())


@pytest.fixture
def shipped_copy(tmp_path: Path) -> Path:
    """A writable copy of the shipped profiles folder."""
    target = tmp_path / "profiles"
    shutil.copytree(SHIPPED, target)
    return target
