"""Profiles after validation are typed: a frozen dataclass tree made from the schema's tables, read by
attribute everywhere but the schema and the store."""

from __future__ import annotations

import dataclasses
import re

import pytest

from advisor.format import schema, typed
from helpers import ROOT, SHIPPED, valid_profile


def test_the_tree_has_every_field_of_the_tables_as_an_attribute():
    tree = typed.build(schema.normalise(valid_profile("typed-one")))
    assert tree.id == "typed-one" and tree.device.kind == "gpu" and tree.device.count == 1
    assert tree.price.usd == 500.0 and tree.host.cpu == "Test CPU"
    result = tree.results[0]
    assert isinstance(tree.results, tuple) and result.precision == "float32" and result.steady.median == 25.0
    assert result.epoch_seconds == (25.0, 25.0, 25.0, 25.0)
    assert result.scaling is None and tree.cluster is None  # absent: None
    assert tree.workload.raw["units"] == 4  # the workload's description, whole
    assert {f.name for f in dataclasses.fields(tree)} >= {f.name for f in schema.PROFILE}


def test_the_tree_is_read_only():
    tree = typed.build(schema.normalise(valid_profile()))
    with pytest.raises(dataclasses.FrozenInstanceError):
        tree.device.name = "another"  # type: ignore[misc]
    with pytest.raises(TypeError):
        tree.workload.raw["units"] = 8  # type: ignore[index]


def test_a_shipped_profile_reads_the_same_typed():
    from advisor.store import load_profiles

    for profile in load_profiles(SHIPPED, use_index=False).profiles[:50]:
        assert profile.typed.id == profile.id
        if profile.typed.job == "inference":
            assert [r.batch for r in profile.typed.generation_results] == [
                r["batch"] for r in profile.data["generation_results"]
            ]
            continue
        assert [r.precision for r in profile.typed.results] == [r["precision"] for r in profile.data["results"]]


PROFILE_KEYS = (
    "id",
    "name",
    "device",
    "host",
    "software",
    "price",
    "workload",
    "results",
    "provenance",
    "notes",
    "cluster",
)
# a read: data["device"] or profile["price"] not followed by an assignment (building a profile writes keys)
KEYS = "|".join(PROFILE_KEYS)
DICT_READ = re.compile(rf"""(\.data\[|\bprofile\[|\bdata\[)["'](?:{KEYS})["']\](?!\s*=[^=])""")
# where profiles are made and checked: the schema, the typed tree and the store layer (whose catalog.py reads the
# catalog's file, not a profile)
ALLOWED = {"advisor/format/schema.py", "advisor/format/typed.py", "advisor/store/*"}


def test_no_profile_is_read_by_key_outside_the_schema_and_the_store():
    found = []
    for path in [*sorted((ROOT / "advisor").rglob("*.py")), ROOT / "streamlit_app.py"]:
        if any(path.relative_to(ROOT).match(allowed) for allowed in ALLOWED):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if DICT_READ.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == [], "read the typed profile (advisor.format.typed) instead:\n" + "\n".join(found)
