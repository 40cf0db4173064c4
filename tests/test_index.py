"""The persistent index beside a profiles folder: a cold start parses only what changed, and an index that cannot be
trusted is rebuilt from the files, never believed."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
import yaml

from advisor import store
from advisor.cli import main
from advisor.store import index, results
from helpers import load_yaml


def snapshot(found: store.ProfileSet) -> dict:
    return {p.id: p.data for p in found.profiles}


def load(folder: Path) -> tuple[store.ProfileSet, int]:
    """A cold start: a new cache, as a new process has."""
    cache = store.ProfileCache()
    found = store.load_profiles(folder, cache)
    return found, cache.reads


def edit_first_total(path: Path, seconds: float) -> Path:
    """Rewrite a profile file with its first result's total time changed (an edit made behind the index's back)."""
    data = load_yaml(path.read_text())
    data["results"][0]["total_seconds"] = seconds
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_a_cold_start_with_the_index_parses_nothing(small_copy: Path):
    first, reads = load(small_copy)
    assert reads == len(list(small_copy.glob("*.yaml"))) and (small_copy / index.INDEX_NAME).exists()
    second, reads = load(small_copy)
    assert reads == 0 and snapshot(second) == snapshot(first) and not second.warnings


def test_a_profile_edited_behind_its_back_is_read_again(small_copy: Path):
    load(small_copy)
    path = edit_first_total(small_copy / "post-titan-rtx.yaml", 99.5)
    os.utime(path, ns=(1, 1))  # even with an old modification time: its size and key changed
    found, reads = load(small_copy)
    assert reads == 1
    assert snapshot(found)["post-titan-rtx"]["results"][0]["total_seconds"] == 99.5
    (small_copy / "post-gtx-1070-ti.yaml").unlink()
    found, reads = load(small_copy)
    assert reads == 0 and "post-gtx-1070-ti" not in snapshot(found)


def test_an_edit_that_keeps_the_size_and_restores_the_time_is_seen(small_copy: Path, capsys):
    """The stale edit of the issue: the same size, the modification time put back (touch -r): list, the library and
    the app see the new figure (the file's ctime changed; no user can set it)."""
    path = small_copy / "post-gtx-1070-ti.yaml"
    assert main(["list", "--profiles", str(small_copy)]) == 0
    assert "float32 150 s" in capsys.readouterr().out
    before, signature = path.stat(), store.folder_signature(small_copy)  # the app's cached load is keyed on it
    text = path.read_text()
    assert "total_seconds: 150" in text
    path.write_text(text.replace("total_seconds: 150", "total_seconds: 950"))  # one digit for another
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert main(["list", "--profiles", str(small_copy)]) == 0
    assert "float32 950 s" in capsys.readouterr().out
    found, _ = load(small_copy)
    assert round(snapshot(found)["post-gtx-1070-ti"]["results"][0]["total_seconds"]) == 950
    assert store.folder_signature(small_copy) != signature  # so the app loads the folder again


def _other_sqlite(path: Path) -> None:
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE notes (text TEXT)")
    connection.commit()
    connection.close()


def _older_version(path: Path) -> None:
    connection = sqlite3.connect(path)
    connection.execute("UPDATE meta SET value='advisor profile index 0' WHERE key='format'")
    connection.commit()
    connection.close()


CORRUPTIONS = {
    "truncated": lambda path: path.write_bytes(path.read_bytes()[:200]),
    "zero bytes": lambda path: path.write_bytes(b""),
    "random bytes": lambda path: path.write_bytes(os.urandom(4096)),
    "another SQLite file": lambda path: (path.unlink(), _other_sqlite(path)),
    "an older index version": _older_version,
}


@pytest.mark.parametrize("damage", list(CORRUPTIONS))
def test_a_damaged_index_is_rebuilt_and_the_files_win(small_copy: Path, capsys, damage):
    truth, _ = load(small_copy)
    CORRUPTIONS[damage](small_copy / index.INDEX_NAME)
    found, reads = load(small_copy)
    assert snapshot(found) == snapshot(truth)
    assert reads == len(list(small_copy.glob("*.yaml")))  # every file read again
    assert any("rebuilt from the profile files" in w.message for w in found.warnings), damage  # every damage said
    again, reads = load(small_copy)
    assert reads == 0 and snapshot(again) == snapshot(truth)  # the rebuilt index serves the next start
    assert main(["list", "--profiles", str(small_copy)]) == 0
    assert "post-titan-rtx: NVIDIA TITAN RTX" in capsys.readouterr().out


def test_a_locked_or_impossible_index_is_left_alone(small_copy: Path):
    truth, _ = load(small_copy)
    holder = sqlite3.connect(small_copy / index.INDEX_NAME)
    holder.execute("BEGIN EXCLUSIVE")
    found, reads = load(small_copy)
    holder.rollback()
    holder.close()
    assert snapshot(found) == snapshot(truth) and reads > 0
    assert any("locked by another process" in w.message for w in found.warnings)
    # no index can be written (a folder in its place, as a read-only folder would refuse it): the files alone
    (small_copy / index.INDEX_NAME).unlink()
    (small_copy / index.INDEX_NAME).mkdir()
    found, _ = load(small_copy)
    assert snapshot(found) == snapshot(truth)


def test_validate_reads_every_file_not_the_index(small_copy: Path, capsys):
    load(small_copy)
    lie = json.dumps({"profiles": [], "problems": [["x.yaml", "", "a problem only the index knows"]], "warnings": []})
    with sqlite3.connect(small_copy / index.INDEX_NAME) as connection:  # an index that lies about every file
        connection.execute("UPDATE files SET outcome=?", (lie,))
    assert main(["validate", str(small_copy)]) == 0
    assert "a problem only the index knows" not in capsys.readouterr().out + capsys.readouterr().err


# --------------------------------------------------------------------------- the results frame kept in the index


def load_frame(folder: Path) -> tuple:
    """The app's cold start: a new cache; the frame, what the load found, and how many files it parsed."""
    cache = store.ProfileCache()
    loaded = results.load_frame(folder, cache)
    return loaded, cache.reads


def same_frame(first, second) -> None:
    pd.testing.assert_frame_equal(first.reset_index(drop=True), second.reset_index(drop=True), check_dtype=False)


def test_the_frame_through_the_index_is_the_frame_of_the_profiles(shipped_copy: Path):
    truth = results.results_frame(store.load_profiles(shipped_copy, use_index=False).profiles)
    first, reads = load_frame(shipped_copy)
    assert reads == len(list(shipped_copy.glob("*.yaml")))
    same_frame(first.frame, truth)
    second, reads = load_frame(shipped_copy)  # a restart: the kept frame, nothing parsed
    assert reads == 0 and not second.problems and not second.warnings
    same_frame(second.frame, truth)
    assert second.profile("post-titan-rtx").device.name == "NVIDIA TITAN RTX"  # one profile, read when asked for
    assert second.profile("no-such-profile") is None


def test_a_restart_reads_the_kept_frame_and_decodes_no_profile(small_copy: Path, monkeypatch):
    first, _ = load_frame(small_copy)

    def no_rows(*args, **kwargs):
        raise AssertionError("the rows were loaded: the kept frame was not used")

    monkeypatch.setattr(store, "load_rows", no_rows)
    again, reads = load_frame(small_copy)
    assert reads == 0
    same_frame(again.frame, first.frame)


def test_a_changed_file_and_a_damaged_snapshot_are_loaded_again(small_copy: Path):
    load_frame(small_copy)
    edit_first_total(small_copy / "post-titan-rtx.yaml", 99.5)
    changed, reads = load_frame(small_copy)
    assert reads == 1  # that file alone is parsed; the others' rows come from the index
    rows = changed.frame[changed.frame["profile"] == "post-titan-rtx"]
    assert 99.5 in set(rows["seconds"])
    with sqlite3.connect(small_copy / index.INDEX_NAME) as connection:  # a snapshot that is garbage
        connection.execute("UPDATE snapshot SET frame=?", (os.urandom(2000),))
    again, reads = load_frame(small_copy)
    assert reads == 0  # the rows of every file, from the index
    same_frame(again.frame, changed.frame)


def test_rows_of_older_code_are_derived_again_from_the_kept_profiles(small_copy: Path, monkeypatch):
    first, _ = load_frame(small_copy)
    monkeypatch.setattr(results, "ROWS_TAG", results.ROWS_TAG + " (changed)")
    again, reads = load_frame(small_copy)
    assert reads == 0  # no file parsed: the stored profiles give the new rows
    same_frame(again.frame, first.frame)


def test_a_duplicate_id_is_a_problem_in_the_frame_as_in_the_profiles(small_copy: Path):
    text = (small_copy / "post-titan-rtx.yaml").read_text()
    (small_copy / "post-titan-rtx.yml").write_text(text)  # the same name, the other suffix: the same id
    loaded, _ = load_frame(small_copy)
    assert [p.field for p in loaded.problems] == ["id"] and "already used" in loaded.problems[0].message
    assert loaded.frame["profile"].value_counts()["post-titan-rtx"] == len(load_yaml(text)["results"])
    again, _ = load_frame(small_copy)  # the kept frame keeps the problem too
    assert [str(p) for p in again.problems] == [str(p) for p in loaded.problems]


def test_a_large_index_is_checked_by_its_size_and_a_truncated_one_still_rebuilt(small_copy: Path, monkeypatch):
    """Past QUICK_CHECK_BYTES SQLite's whole-file check is skipped (100,000 profiles: half a gigabyte read at every
    start); a truncated index is still seen, by its size against its pages."""
    monkeypatch.setattr(index, "QUICK_CHECK_BYTES", 0)
    truth, _ = load(small_copy)
    path = small_copy / index.INDEX_NAME
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    found, reads = load(small_copy)
    assert snapshot(found) == snapshot(truth) and reads == len(list(small_copy.glob("*.yaml")))
    assert any("rebuilt from the profile files" in w.message for w in found.warnings)
