"""The profile store: shipped profiles, migration, deterministic and atomic writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from advisor import store
from advisor.errors import AdvisorError, ProfileError
from advisor.format import schema
from helpers import SHIPPED, load_yaml, valid_profile, write_yaml


def test_shipped_profiles_are_valid():
    loaded = store.load_profiles(SHIPPED)
    assert loaded.problems == []
    assert loaded.warnings == []
    ids = {p.id for p in loaded.profiles}
    assert {"post-cpu-only", "post-gtx-1070-ti", "post-titan-rtx"} <= ids


def test_post_profiles_record_937_samples_and_the_938_note():
    data = load_yaml((SHIPPED / "post-gtx-1070-ti.yaml").read_text())
    assert data["workload"]["train_samples"] == 937
    assert "938" in data["workload"]["note"]


def test_dump_is_deterministic_and_round_trips(tmp_path: Path):
    data = valid_profile()
    shuffled = dict(reversed(list(data.items())))
    assert store.dump_profile(data) == store.dump_profile(shuffled)
    text = store.dump_profile(data)
    assert text.startswith("schema_version: 2\nid: test-gpu\n")
    path = store.write_profile(data, tmp_path)
    profile, warnings = store.load_profile(path)
    assert warnings == []
    assert profile.data["results"] == data["results"]


def test_write_never_overwrites_without_force(tmp_path: Path):
    data = valid_profile()
    path = store.write_profile(data, tmp_path)
    before = path.read_bytes()
    data["results"][0]["note"] = "changed"
    with pytest.raises(AdvisorError, match="already exists"):
        store.write_profile(data, tmp_path)
    assert path.read_bytes() == before
    store.write_profile(data, tmp_path, overwrite=True)
    assert b"changed" in path.read_bytes()
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left


def test_write_refuses_an_invalid_profile(tmp_path: Path):
    data = valid_profile()
    data["results"][0]["total_seconds"] = -1
    with pytest.raises(ProfileError, match="total_seconds"):
        store.write_profile(data, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_failed_write_leaves_no_temporary_file(tmp_path: Path, monkeypatch):
    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(AdvisorError, match="No space left"):
        store.write_atomic(tmp_path / "x.yaml", "text")
    assert list(tmp_path.iterdir()) == []


def test_older_schema_is_migrated(tmp_path: Path):
    old = valid_profile("old-one")
    old["schema_version"] = 0
    old["price_usd"] = old.pop("price")["usd"]
    old["results"][0]["seconds"] = old["results"][0].pop("total_seconds")
    profile, _ = store.load_profile(write_yaml(tmp_path / "old-one.yaml", old))
    assert profile.data["schema_version"] == schema.SCHEMA_VERSION
    assert profile.data["price"]["usd"] == 500.0
    assert profile.data["results"][0]["total_seconds"] == 100.0


def test_newer_schema_needs_a_newer_advisor(tmp_path: Path):
    data = valid_profile("future")
    data["schema_version"] = schema.SCHEMA_VERSION + 1
    with pytest.raises(ProfileError, match="this profile needs a newer advisor"):
        store.load_profile(write_yaml(tmp_path / "future.yaml", data))


def test_unknown_fields_warn_but_load(tmp_path: Path):
    data = valid_profile("extra")
    data["colour"] = "blue"
    data["device"]["bus"] = "pcie"
    profile, warnings = store.load_profile(write_yaml(tmp_path / "extra.yaml", data))
    assert profile.id == "extra"
    assert {w.field for w in warnings} == {"colour", "device.bus"}


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("NVIDIA GeForce RTX 4090", "nvidia-geforce-rtx-4090"),
        ("../../x", "x"),
        ("/etc/passwd", "etc-passwd"),
        ("a\x00b\nc", "a-b-c"),
        ("", "profile"),
        ("...", "profile"),
        ("x" * 500, "x" * schema.SLUG_MAX),  # the one limit: the schema's
        ("Ünïcödé GPU", "unicode-gpu"),
    ],
)
def test_slugs_stay_inside_the_folder(name: str, slug: str):
    assert store.slugify(name) == slug


def test_unique_slug_takes_the_next_free(tmp_path: Path):
    (tmp_path / "gpu.yaml").write_text("x")
    (tmp_path / "gpu-2.yaml").write_text("x")
    assert store.unique_slug(tmp_path, "GPU") == "gpu-3"


def test_unwritable_folder_is_a_clear_error(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(AdvisorError, match="cannot create the output folder"):
        store.check_writable_folder(blocker / "sub")


def test_a_changed_folder_rereads_only_the_changed_files(tmp_path: Path):
    for index in range(5):
        write_yaml(tmp_path / f"p{index}.yaml", valid_profile(f"p{index}"))
    cache = store.ProfileCache()
    assert len(store.load_profiles(tmp_path, cache).profiles) == 5 and cache.reads == 5
    assert len(store.load_profiles(tmp_path, cache).profiles) == 5 and cache.reads == 5  # nothing changed
    write_yaml(tmp_path / "p9.yaml", valid_profile("p9"))
    changed = valid_profile("p0", seconds=50.0)
    write_yaml(tmp_path / "p0.yaml", changed)
    os.utime(tmp_path / "p0.yaml", ns=(1, 1))  # a new size or modification time re-reads the file
    loaded = store.load_profiles(tmp_path, cache)
    assert cache.reads == 7
    assert {p.id: p.data["results"][0]["total_seconds"] for p in loaded.profiles}["p0"] == 50.0
    (tmp_path / "p1.yaml").unlink()
    assert {p.id for p in store.load_profiles(tmp_path, cache).profiles} == {"p0", "p2", "p3", "p4", "p9"}
    assert cache.reads == 7


def test_the_folder_signature_changes_with_the_files(tmp_path: Path):
    write_yaml(tmp_path / "a.yaml", valid_profile("a"))
    first = store.folder_signature(tmp_path)
    assert store.folder_signature(tmp_path) == first
    write_yaml(tmp_path / "b.yaml", valid_profile("b"))
    assert store.folder_signature(tmp_path) != first


def test_the_folder_watch_sees_a_new_file_at_once_and_an_edit_in_place_at_its_next_scan(tmp_path: Path):
    write_yaml(tmp_path / "a.yaml", valid_profile("a"))
    now = [0.0]
    watch = store.FolderWatch(tmp_path, clock=lambda: now[0])
    first = watch.signature()
    assert first == store.folder_signature(tmp_path)
    write_yaml(tmp_path / "b.yaml", valid_profile("b"))  # a new name: the folder's own time moves
    second = watch.signature()
    assert second != first and second == store.folder_signature(tmp_path)
    watch.RESCAN_FACTOR = 1e9  # as if a scan were slow: the next one is far away
    watch.signature()
    with (tmp_path / "a.yaml").open("a") as handle:  # an edit in place: the folder's time stays
        handle.write("# edited\n")
    assert watch.signature() == second  # not seen before the next scan is due...
    now[0] = 1e12
    assert watch.signature() == store.folder_signature(tmp_path) != second  # ...and seen then


def test_a_version_1_profile_is_migrated_to_an_lstm_workload(tmp_path: Path):
    old = valid_profile("version-one")
    old["schema_version"] = 1
    del old["workload"]["kind"]
    profile, warnings = store.load_profile(write_yaml(tmp_path / "version-one.yaml", old))
    assert warnings == [] and profile.data["schema_version"] == schema.SCHEMA_VERSION
    assert profile.data["workload"]["kind"] == "lstm"


def test_a_model_workload_needs_its_description_not_the_lstm_sizes(tmp_path: Path):
    data = valid_profile("a-model")
    data["workload"] = {
        "name": "cnn",
        "kind": "model",
        "train_samples": 8,
        "batch_size": 4,
        "epochs": 4,
        "optimizer": "adam",
    }
    with pytest.raises(ProfileError) as caught:
        store.load_profile(write_yaml(tmp_path / "a-model.yaml", data))
    missing = {p.field for p in caught.value.problems if p.message == "is missing"}
    assert missing == {
        "workload.model_hash",
        "workload.inputs",
        "workload.loss",
        "workload.parameters",
        "workload.flops_per_sample",
        "workload.layers",
    }
    lstm = valid_profile("an-lstm")
    del lstm["workload"]["units"]
    with pytest.raises(ProfileError, match=r"workload\.units: is missing"):
        store.load_profile(write_yaml(tmp_path / "an-lstm.yaml", lstm))
