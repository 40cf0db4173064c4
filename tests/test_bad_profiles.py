"""The bad-profile corpus: every kind of bad file gives its documented message, and nothing else breaks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from advisor import store
from advisor.cli import main
from advisor.errors import ProfileError
from conftest import SHIPPED, valid_profile, write_yaml

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "bad_profiles"
EXPECTED = yaml.safe_load((HERE / "bad_profiles_expected.yaml").read_text(encoding="utf-8"))


def test_the_corpus_is_large_enough():
    assert len(EXPECTED) >= 25
    assert {case["file"] for case in EXPECTED} == {p.name for p in CORPUS.glob("*.yaml")}


@pytest.mark.parametrize("case", EXPECTED, ids=[c["file"] for c in EXPECTED])
def test_each_bad_profile_gives_its_message(case):
    path = CORPUS / case["file"]
    with pytest.raises(ProfileError) as caught:
        store.load_profile(path)
    problems = caught.value.problems
    assert all(p.file == str(path) for p in problems)
    matching = [p for p in problems if p.field == case["field"] and case["message"] in p.message]
    assert matching, f"expected {case['field']}: {case['message']!r}; got {[str(p) for p in problems]}"


def test_oversized_file_is_refused_before_parsing(tmp_path: Path):
    path = tmp_path / "huge.yaml"
    path.write_text("notes: '" + "x" * 1_100_000 + "'\n")
    with pytest.raises(ProfileError, match="profiles are limited to 1,000,000"):
        store.load_profile(path)


def test_duplicate_ids_across_folders(tmp_path: Path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    write_yaml(tmp_path / "a" / "same.yaml", valid_profile("same"))
    write_yaml(tmp_path / "b" / "same.yaml", valid_profile("same"))
    loaded = store.load_profiles([tmp_path / "a", tmp_path / "b"])
    assert len(loaded.profiles) == 1
    assert [str(p) for p in loaded.problems] == [
        f"{tmp_path / 'b' / 'same.yaml'}: id: 'same' is already used by {tmp_path / 'a' / 'same.yaml'}"
    ]


def test_validate_lists_every_bad_file_and_exits_1(capsys):
    status = main(["validate", str(CORPUS)])
    out, err = capsys.readouterr()
    assert status == 1
    assert "Traceback" not in out + err
    for case in EXPECTED:
        assert str(CORPUS / case["file"]) in out
    assert f"{len(EXPECTED)} invalid" in err


def test_good_files_keep_working_beside_the_whole_corpus(capsys, tmp_path: Path):
    folder = tmp_path / "mixed"
    shutil.copytree(SHIPPED, folder)
    for case in EXPECTED:
        shutil.copy(CORPUS / case["file"], folder / case["file"])
    status = main(["recommend", "--profiles", str(folder), "--current", "post-titan-rtx"])
    out, err = capsys.readouterr()
    assert status == 0
    assert "Switch to mixed_float16" in out
    assert err.count("warning: skipped") >= len(EXPECTED)
    assert "Traceback" not in err


def test_a_tag_never_runs_code(tmp_path: Path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.yaml"
    path.write_text(f"schema_version: !!python/object/apply:os.system ['touch {marker}']\n")
    with pytest.raises(ProfileError):
        store.load_profile(path)
    assert not marker.exists()
