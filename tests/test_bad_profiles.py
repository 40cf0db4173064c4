"""The bad-profile corpus: every kind of bad file gives its documented message, and nothing else breaks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from advisor import store
from advisor.cli import main
from advisor.errors import ProfileError
from helpers import ROOT, copy_small_shipped, load_yaml, make_special_files, valid_profile, write_yaml

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "bad_profiles"
ALL_CASES = load_yaml((HERE / "bad_profiles_expected.yaml").read_text(encoding="utf-8"))
EXPECTED = [c for c in ALL_CASES if "make" not in c]  # committed files
SPECIAL = [c for c in ALL_CASES if "make" in c]  # links, a FIFO, a socket, a device, a folder: made by the tests
PASSWD_FIRST_LINE = Path("/etc/passwd").read_text(errors="replace").splitlines()[0]


def test_the_corpus_is_large_enough():
    assert len(EXPECTED) >= 25 and len(SPECIAL) >= 6
    assert {case["file"] for case in EXPECTED} == {p.name for p in CORPUS.glob("*.yaml")}


def assert_message(problems, case, file: str) -> None:
    assert all(p.file == file for p in problems)
    matching = [p for p in problems if p.field == case["field"] and case["message"] in p.message]
    assert matching, f"expected {case['field']}: {case['message']!r}; got {[str(p) for p in problems]}"


@pytest.mark.parametrize("case", EXPECTED, ids=[c["file"] for c in EXPECTED])
def test_each_bad_profile_gives_its_message(case):
    path = CORPUS / case["file"]
    with pytest.raises(ProfileError) as caught:
        store.load_profile(path)
    assert_message(caught.value.problems, case, str(path))


@pytest.mark.parametrize("case", EXPECTED, ids=[c["file"] for c in EXPECTED])
def test_the_pure_python_parser_gives_the_same_message(case):
    """Where libyaml is missing the pure-Python parser runs, with the same limits and messages."""
    path = CORPUS / case["file"]
    with pytest.raises(ProfileError) as caught:
        data = store.parse_yaml(path.read_bytes(), str(path), pure_python=True)
        store.profile_from_data(data, str(path), expected_id=path.stem)
    assert_message(caught.value.problems, case, str(path))


@pytest.fixture
def special_folder(tmp_path: Path) -> tuple[Path, list[dict]]:
    """The shipped profiles (less the large collection) beside every special file of the corpus."""
    folder = copy_small_shipped(tmp_path / "profiles")
    return folder, make_special_files(folder, SPECIAL)


def test_special_files_are_refused_by_name_and_never_read(special_folder):
    folder, made = special_folder
    assert {c["make"] for c in made} >= {"symlink-outside", "symlink-inside", "fifo", "socket", "folder"}
    loaded = store.load_profiles(folder)
    for case in made:
        problems = [p for p in loaded.problems if p.file == str(folder / case["file"])]
        assert_message(problems, case, str(folder / case["file"]))
    assert {"post-cpu-only", "post-titan-rtx", "linked-target"} <= {p.id for p in loaded.profiles}
    assert PASSWD_FIRST_LINE not in " ".join(map(str, loaded.problems + loaded.warnings))


def test_validate_and_list_name_special_files_without_their_content(special_folder, capsys):
    folder, made = special_folder
    status = main(["validate", str(folder)])
    out, err = capsys.readouterr()
    assert status == 1
    for case in made:
        assert f"{folder / case['file']}: {case['message']}" in out
    assert PASSWD_FIRST_LINE not in out + err and "root:" not in out + err
    status = main(["list", "--profiles", str(folder)])
    out, err = capsys.readouterr()
    assert status == 0 and "post-titan-rtx" in out
    assert err.count("warning: skipped") == len(made)
    assert "root:" not in out + err


def test_a_fifo_never_blocks_the_command_line(tmp_path: Path):
    folder = tmp_path / "profiles"
    folder.mkdir()
    write_yaml(folder / "test-gpu.yaml", valid_profile())
    os.mkfifo(folder / "zz-pipe.yaml")
    completed = subprocess.run(
        [sys.executable, "-m", "advisor", "list", "--profiles", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,  # a blocked open would hang here until killed
    )
    assert completed.returncode == 0
    assert "zz-pipe.yaml: is a FIFO (named pipe), not a regular file: refused" in completed.stderr


def test_an_explicit_file_argument_may_be_a_link_but_not_a_fifo(tmp_path: Path, capsys):
    target = write_yaml(tmp_path / "real.yaml", valid_profile("real"))
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "real.yaml").symlink_to(target)
    assert main(["validate", str(tmp_path / "elsewhere" / "real.yaml")]) == 0
    os.mkfifo(tmp_path / "pipe.yaml")
    assert main(["validate", str(tmp_path / "pipe.yaml")]) == 1
    assert "is a FIFO (named pipe)" in capsys.readouterr().out


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
    folder = copy_small_shipped(tmp_path / "mixed")
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
