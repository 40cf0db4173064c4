"""Each CLI command in-process, and one real ``python -m advisor`` subprocess."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from readme_examples import docs_text

from advisor import __version__, store
from advisor.cli import build_parser, main
from advisor.store.index import INDEX_NAME  # the folder's persistent index, written beside the profiles
from helpers import ROOT, SHIPPED, valid_profile, write_yaml


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_version_and_help(capsys):
    status, out, _ = run(capsys, "--version")
    assert status == 0 and __version__ in out
    status, out, _ = run(capsys, "--help")
    assert status == 0 and "recommend" in out and "measure" in out


def test_list(capsys):
    status, out, _ = run(capsys, "list", "--profiles", str(SHIPPED))
    assert status == 0
    assert "post-gtx-1070-ti: NVIDIA GeForce GTX 1070 Ti [gpu], $550, quoted" in out
    status, out, _ = run(capsys, "list", "--profiles", str(SHIPPED), "--json")
    ids = {item["id"] for item in json.loads(out)}
    assert {"post-cpu-only", "post-titan-rtx"} <= ids


def test_validate_ok(capsys):
    status, out, err = run(capsys, "validate", "--profiles", str(SHIPPED))
    assert status == 0, out
    assert "invalid" in err and " 0 invalid" in err


def test_compare_json(capsys):
    status, out, _ = run(capsys, "compare", "--profiles", str(SHIPPED), "--json")
    assert status == 0
    rows = json.loads(out)
    assert set(rows[0]) == {
        "profile",
        "device",
        "devices",
        "machines",
        "precision",
        "backend",
        "seconds",
        "price_usd",
        "price_kind",
        "memory_gb",
        "fits",
        "speedup",
        "dollars_per_speedup",
        "runs_per_hour",
        "source",
    }
    gtx = next(r for r in rows if r["profile"] == "post-gtx-1070-ti")
    assert round(gtx["speedup"], 1) == 16.3 and gtx["source"] == "quoted"


def test_compare_text_with_baseline(capsys):
    status, out, _ = run(
        capsys, "compare", "--profiles", str(SHIPPED), "--baseline", "post-gtx-1070-ti", "--precision", "float32"
    )
    assert status == 0
    assert "Baseline: post-gtx-1070-ti (float32)" in out
    assert "4.42x" in out and "mixed_float16" not in out


def test_recommend_text_and_json(capsys):
    status, out, _ = run(capsys, "recommend", "--profiles", str(SHIPPED), "--current", "post-titan-rtx")
    assert status == 0
    assert "Switch to mixed_float16" in out and "2.13x faster for $0" in out
    status, out, _ = run(
        capsys, "recommend", "--profiles", str(SHIPPED), "--current", "post-cpu-only", "--budget", "600", "--json"
    )
    data = json.loads(out)
    assert data["best"]["profile"] == "post-gtx-1070-ti"
    gtx = next(o for o in data["options"] if o["profile"] == "post-gtx-1070-ti")
    assert gtx["hours_saved_per_week"] == pytest.approx(10 * (2449.41867685318 - 150.32436347007751) / 3600)
    assert data["current"]["profile"] == "post-cpu-only"
    assert "dollars_per_added_run_per_hour" in data["options"][0]


def test_every_option_record_says_its_devices_and_machines_as_numbers(capsys):
    status, out, _ = run(
        capsys, "recommend", "--profiles", str(SHIPPED), "--current", "post-cpu-only", "--estimates", "--json"
    )
    assert status == 0
    options = json.loads(out)["options"]
    assert all(isinstance(o["devices"], int) and isinstance(o["machines"], int) for o in options)
    pair = next(o for o in options if o["device"].startswith("2x "))
    assert (pair["devices"], pair["machines"]) == (2, 1)  # not only inside the name
    assert {o["devices"] for o in options} == {1, 2}


def test_recommend_hours_saved_per_week(capsys):
    status, out, _ = run(
        capsys, "recommend", "--profiles", str(SHIPPED), "--current", "post-cpu-only", "--runs-per-week", "5", "--json"
    )
    assert status == 0
    gtx = next(o for o in json.loads(out)["options"] if o["profile"] == "post-gtx-1070-ti")
    assert gtx["hours_saved_per_week"] == pytest.approx(5 * (2449.41867685318 - 150.32436347007751) / 3600)
    status, out, _ = run(
        capsys, "recommend", "--profiles", str(SHIPPED), "--current", "post-cpu-only", "--runs-per-week", "5"
    )
    assert "h saved/week" in out and "3.19" in out and "5 runs a week" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["recommend"], "--current ID is required"),
        (["recommend", "--current", "nope"], "no profile named like 'nope'"),
        (["recommend", "--current", "post-cpu-only", "--budget", "-5"], "must be a number of dollars"),
        (["compare", "--precision", "float64"], "invalid choice"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_user_mistakes_are_one_line_errors(capsys, argv, message):
    status, _, err = run(capsys, *argv, *(["--profiles", str(SHIPPED)] if argv[0] != "frobnicate" else []))
    assert status == 1
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_missing_profiles_folder(capsys, tmp_path):
    status, _, err = run(capsys, "list", "--profiles", str(tmp_path / "none"))
    assert status == 1 and "no valid profiles found" in err


def test_validate_reports_each_bad_file(capsys, tmp_path: Path):
    write_yaml(tmp_path / "good.yaml", valid_profile("good"))
    missing = valid_profile("missing")
    del missing["device"]
    write_yaml(tmp_path / "missing.yaml", missing)
    negative = valid_profile("negative")
    negative["results"][0]["total_seconds"] = -3
    write_yaml(tmp_path / "negative.yaml", negative)
    wrong_type = valid_profile("wrong-type")
    wrong_type["price"]["usd"] = "cheap"
    write_yaml(tmp_path / "wrong-type.yaml", wrong_type)
    status, out, _ = run(capsys, "validate", str(tmp_path))
    assert status == 1
    lines = out.strip().splitlines()
    assert f"{tmp_path / 'missing.yaml'}: device: is missing" in lines
    assert f"{tmp_path / 'negative.yaml'}: results[0].total_seconds: must be greater than 0, got -3" in lines
    assert f"{tmp_path / 'wrong-type.yaml'}: price.usd: must be a number, got a string ('cheap')" in lines
    assert not any("good.yaml" in line for line in lines)


def test_commands_use_good_files_and_warn_about_bad(capsys, small_copy: Path):
    (small_copy / "broken.yaml").write_text("schema_version: [unclosed\n")
    status, out, err = run(capsys, "compare", "--profiles", str(small_copy))
    assert status == 0
    assert "post-gtx-1070-ti" in out
    assert "warning: skipped" in err and "broken.yaml" in err
    status, out, err = run(capsys, "estimate", "--gpu", "rtx-4090", "--profiles", str(small_copy))
    assert status == 0 and "RTX 4090" in out  # estimate reads the folder as the others do, and says so
    assert "warning: skipped" in err and "broken.yaml" in err


def test_python_dash_m_subprocess():
    completed = subprocess.run(
        [sys.executable, "-m", "advisor", "recommend", "--current", "post-gtx-1070-ti", "--precision", "float32"],
        cwd=SHIPPED.parent,  # its ./profiles: the session's copy of the shipped ones
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert "4.42x faster" in completed.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "advisor", "recommend", "--current", "x"],
        cwd=SHIPPED.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 1
    assert bad.stderr.startswith("advisor: error: no profile named like 'x'") and "Traceback" not in bad.stderr


def test_profiles_and_json_work_before_or_after_the_command(capsys, small_copy: Path):
    (small_copy / "post-cpu-only.yaml").unlink()
    status, before, _ = run(capsys, "--profiles", str(small_copy), "--json", "list")
    assert status == 0
    status, after, _ = run(capsys, "list", "--profiles", str(small_copy), "--json")
    assert status == 0 and json.loads(before) == json.loads(after)
    assert "post-cpu-only" not in {item["id"] for item in json.loads(before)}


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["frobnicate"], "advisor: error: argument COMMAND: invalid choice: 'frobnicate'"),
        (["recommend"], "advisor: error: recommend: --current ID is required"),
        (["list", "--nope"], "advisor: error: unrecognized arguments: --nope"),
    ],
)
def test_a_usage_error_names_the_program_once(capsys, argv, line):
    status, _, err = run(capsys, *argv)
    assert status == 1
    assert err.startswith(line) and err.count("advisor:") == 1 and err.count("\n") == 1


def test_add_copies_valid_profiles_and_refuses_clashes(capsys, tmp_path: Path):
    folder = tmp_path / "profiles"
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    good = incoming / "from-a-friend.yaml"
    good.write_text("# measured by a friend\n" + yaml.safe_dump(valid_profile("friends-gpu")), encoding="utf-8")
    bad = valid_profile("broken-one")
    bad["results"][0]["total_seconds"] = -1
    write_yaml(incoming / "broken-one.yaml", bad)
    status, out, err = run(capsys, "add", str(good), str(incoming / "broken-one.yaml"), "--profiles", str(folder))
    assert status == 1
    assert out == f"added {folder / 'friends-gpu.yaml'}\n"
    assert "broken-one.yaml: results[0].total_seconds: must be greater than 0, got -1" in err
    assert (folder / "friends-gpu.yaml").read_text(encoding="utf-8").startswith("# measured by a friend\n")
    assert sorted(p.name for p in folder.iterdir() if p.name != INDEX_NAME) == ["friends-gpu.yaml"]

    # The same id again: refused, the file in the folder untouched; --force replaces it.
    changed = valid_profile("friends-gpu", seconds=50.0)
    write_yaml(incoming / "again.yaml", changed)
    before = (folder / "friends-gpu.yaml").read_bytes()
    status, _, err = run(capsys, "--profiles", str(folder), "add", str(incoming / "again.yaml"))
    assert status == 1 and "'friends-gpu' is already used by" in err and "--force" in err
    assert (folder / "friends-gpu.yaml").read_bytes() == before
    status, _, _ = run(capsys, "--profiles", str(folder), "add", "--force", str(incoming / "again.yaml"))
    assert status == 0
    assert store.load_profile(folder / "friends-gpu.yaml")[0].data["results"][0]["total_seconds"] == 50.0
    assert sorted(p.name for p in folder.iterdir() if p.name != INDEX_NAME) == ["friends-gpu.yaml"]  # no temporary file


def test_a_rented_sessions_start_up_and_runs_change_the_rent_advice(capsys):
    """--session-minutes and --runs-per-session reach the habits (they were parsed and then left out)."""
    base = ["recommend", "--profiles", str(SHIPPED), "--current", "post-cpu-only", "--estimates", "--json"]
    advice = {}
    for extra in ([], ["--session-minutes", "60"], ["--runs-per-session", "4"]):
        status, out, _ = run(capsys, *base, *extra)
        assert status == 0
        found = json.loads(out)
        advice[" ".join(extra)] = found["rent_advice"]
        if extra:
            assert found["inputs"][extra[0].removeprefix("--").replace("-", "_")] == float(extra[1])
    assert len(set(advice.values())) == 3, advice
    assert "60 minutes" in advice["--session-minutes 60"] and "4 run(s) a session" in advice["--runs-per-session 4"]


def test_the_readme_states_every_habit_options_default_as_the_code_has_it():
    from advisor.decision.costs import HABIT_OPTIONS, Habits

    readme = " ".join(docs_text().split())
    defaults = Habits()
    for name in HABIT_OPTIONS:
        option = f"`--{name.replace('_', '-')}` ({getattr(defaults, name):g}"
        assert option in readme, f"README.md: {option}...) expected"


def test_the_readme_lists_the_keys_of_a_result_record_as_the_code_has_them():
    from advisor.decision import analysis

    line = next(line for line in docs_text().splitlines() if line.startswith("| `compare "))
    listed = line.split("a list of objects with `", 1)[1].split("`", 1)[0]
    assert listed == ", ".join(analysis.ROW_KEYS)
    assert f"add `{', '.join(analysis.ESTIMATE_KEYS)}`" in line


# Every option of `recommend` does what it says: each changes the decision's output (its inputs echoed aside) against
# the same command without it, and a new option without a case here fails the last test. The language-model job's
# options are driven in test_llm.py. A case: (the options both runs share, the option's own words).
RECOMMEND_CASES = {
    "--budget": ([], ["--budget", "600"]),
    "--precision": ([], ["--precision", "float32"]),
    "--goal": ([], ["--goal", "speed"]),
    "--runs-per-week": ([], ["--runs-per-week", "1"]),
    "--hour-value": ([], ["--hour-value", "80"]),
    "--kwh-price": ([], ["--kwh-price", "1.5"]),
    "--lifetime-years": ([], ["--lifetime-years", "1"]),
    "--resale-usd": ([], ["--resale-usd", "300"]),
    "--session-minutes": (["--estimates"], ["--session-minutes", "60"]),  # rentals: the catalog's GPUs
    "--runs-per-session": (["--estimates"], ["--runs-per-session", "4"]),
    "--estimates": ([], ["--estimates"]),
    "--price": ([], ["--price", "post-gtx-1070-ti=100"]),
    "--current-precision": (["--current", "post-titan-rtx"], ["--current-precision", "mixed_float16"]),
}
# The output's format and where the inputs are (--catalog names another catalog file: not driven here).
NOT_DECISIONS = {"--help", "--json", "--profiles", "--collection", "--current", "--catalog"}  # inputs, not choices
JOB_OPTIONS = {
    "--model-config",
    "--method",
    "--seq-len",
    "--batch",
    "--grad-accum",
    "--tokens",
    "--checkpointing",
    "--lora-rank",
    "--lora-targets",
    "--fsdp",
    "--pure-bf16",
    "--optimizer",
    "--devices",
    "--gpu",
    "--stack",
    "--loss",
    "--activation-offloading",
    "--optimizer-states",
    "--optimizer-in-backward",
    "--fp8",
    "--compile",
    "--tensor-parallel",
}  # (each stack choice is driven in test_stack.py and test_fp8.py)


# The same for `compare` and `estimate`: each option changes the JSON output against the same command without it.
# `estimate --model/--loss/--optimizer` (a Keras file, TensorFlow) are driven in test_model_workload.py.
COMPARE_CASES = {
    "--estimates": ([], ["--estimates"]),
    "--price": ([], ["--price", "post-gtx-1070-ti=100"]),
    "--baseline": ([], ["--baseline", "post-titan-rtx"]),
    "--precision": ([], ["--precision", "float32"]),
    "--workload": ([], ["--workload", "ResNet-50"]),
}
ESTIMATE_CASES = {
    "--gpu": ([], ["--gpu", "rtx-4090"]),
    "--precision": (["--gpu", "rtx-4090"], ["--precision", "float32"]),
    "--workload": (["--gpu", "rtx-4090"], ["--workload", "BERT-large"]),
    "--devices": (["--gpu", "rtx-4090"], ["--devices", "2"]),
    "--machines": (["--gpu", "rtx-4090", "--devices", "2", "--link-gbps", "100"], ["--machines", "2"]),
    "--link-gbps": (
        ["--gpu", "rtx-4090", "--devices", "2", "--machines", "2", "--link-gbps", "10"],
        ["--link-gbps", "400"],
    ),
    "--units": (["--gpu", "rtx-4090"], ["--units", "500"]),
    "--timesteps": (["--gpu", "rtx-4090"], ["--timesteps", "50"]),
    "--features": (["--gpu", "rtx-4090"], ["--features", "8"]),
    "--samples": (["--gpu", "rtx-4090"], ["--samples", "2000"]),
    "--batch-size": (["--gpu", "rtx-4090"], ["--batch-size", "50"]),
    "--epochs": (["--gpu", "rtx-4090"], ["--epochs", "10"]),
}
MODEL_OPTIONS = {"--model", "--loss", "--optimizer"}
COMMAND_CASES = {"compare": COMPARE_CASES, "estimate": ESTIMATE_CASES}
# estimate --inference: each choice against the default job (Llama 3.1 8B, vLLM, bf16, 1 user, 1,024 + 256 tokens)
INFERENCE_JOB = ["--model-config", "llama-3.1-8b", "--inference", "--gpu", "rtx-4090"]
INFERENCE_CASES = {
    "--inference": ["--inference"],  # the job itself: its rows are not the training job's
    "--engine": ["--engine", "transformers"],
    "--weights": ["--weights", "fp8"],
    "--kv-cache": ["--kv-cache", "fp8"],
    "--prompt": ["--prompt", "4096"],
    "--output": ["--output", "1024"],
    "--context": ["--context", "65536"],
    "--users": ["--users", "16"],
    "--requests-per-second": ["--requests-per-second", "2"],
    "--replicas": ["--replicas", "2"],
    # a mixture of experts on 2 GPUs (a dense model is refused); tensor parallel against it: tests/test_inference.py
    "--attention-data-parallel": ["--model-config", "qwen3-30b-a3b", "--devices", "2", "--attention-data-parallel"],
    "--mixed": ["--engine", "llama.cpp", "--mixed", "rtx-4090,rtx-3090"],
    "--hours-per-week": ["--hours-per-week", "168"],
    "--lifetime-years": ["--lifetime-years", "5"],
    "--kwh-price": ["--kwh-price", "0.4"],
    "--api-usd-per-million": ["--api-usd-per-million", "2"],  # at $0.20 renting a 4090 never beats it: no change
}


@pytest.mark.parametrize("option", list(INFERENCE_CASES))
def test_every_inference_option_changes_the_output(capsys, option):
    if option == "--inference":
        base = [a for a in INFERENCE_JOB if a != "--inference"]
        assert _output(capsys, "estimate", *base) != _output(capsys, "estimate", *INFERENCE_JOB)
        return
    changed = _output(capsys, "estimate", *INFERENCE_JOB, *INFERENCE_CASES[option])
    assert changed != _output(capsys, "estimate", *INFERENCE_JOB), f"{option}: no change"


def _output(capsys, command: str, *extra: str) -> dict:
    return json.loads(_printed(capsys, command, "--profiles", str(SHIPPED), "--json", *extra))


@pytest.mark.parametrize(("command", "option"), [(c, o) for c, cases in COMMAND_CASES.items() for o in cases])
def test_every_compare_and_estimate_option_changes_the_output(capsys, command, option):
    shared, own = COMMAND_CASES[command][option]
    assert _output(capsys, command, *shared, *own) != _output(capsys, command, *shared), f"{' '.join(own)}: no change"


@pytest.mark.parametrize("command", list(COMMAND_CASES))
def test_every_compare_and_estimate_option_has_a_case(command):
    from advisor.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    options = {s for action in sub.choices[command]._actions for s in action.option_strings if s.startswith("--")}
    left = JOB_OPTIONS | set(INFERENCE_CASES) if command == "estimate" else set()
    assert options - set(COMMAND_CASES[command]) - NOT_DECISIONS - left - MODEL_OPTIONS == set()


def _decision(capsys, *extra: str) -> dict:
    current = [] if "--current" in extra else ["--current", "post-cpu-only"]
    found = json.loads(_printed(capsys, "recommend", "--profiles", str(SHIPPED), *current, "--json", *extra))
    found.pop("inputs")  # the inputs echoed back: always different, never the point
    return found


_PRINTED: dict[tuple[str, ...], str] = {}  # the option tests' outputs by their arguments: each baseline run once


def _printed(capsys, *argv: str) -> str:
    """What the command prints on the (read-only) shipped profiles; the same arguments are run once."""
    if argv not in _PRINTED:
        status, out, err = run(capsys, *argv)
        assert status == 0, err
        _PRINTED[argv] = out
    return _PRINTED[argv]


@pytest.mark.parametrize("option", list(RECOMMEND_CASES))
def test_every_recommend_option_changes_the_decision(capsys, option):
    shared, own = RECOMMEND_CASES[option]
    assert _decision(capsys, *shared, *own) != _decision(capsys, *shared), f"{' '.join(own)} changed nothing"


def test_every_recommend_option_has_a_case():
    from advisor.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    options = {s for action in sub.choices["recommend"]._actions for s in action.option_strings if s.startswith("--")}
    assert options - set(RECOMMEND_CASES) - NOT_DECISIONS - JOB_OPTIONS == set()


def test_the_command_table_is_made_from_the_parsers():
    from advisor.commands.reference import markdown_table

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    stale = "README.md: the command table is stale (python scripts/maintain.py command-table)"
    assert f"-->\n{markdown_table(build_parser())}\n<!-- commands:end -->" in text, stale
    for option in ("--session-minutes", "--runs-per-session", "--price", "--collection", "--database"):
        assert option in text, option  # options the hand-written table once missed
    assert "added_devices" in markdown_table(build_parser())  # recommend --json's keys, from RECORD_KEYS


def test_the_tables_json_keys_are_the_ones_printed(capsys):
    import json

    from advisor.cli import main
    from advisor.decision.analysis import ESTIMATE_KEYS, ROW_KEYS
    from advisor.render.estimate import ESTIMATE_RECORD_KEYS

    assert main(["estimate", "--gpu", "rtx-4090", "--json"]) == 0
    assert tuple(json.loads(capsys.readouterr().out)[0]) == ESTIMATE_RECORD_KEYS
    assert main(["compare", "--estimates", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {tuple(row) for row in rows} == {ROW_KEYS, ROW_KEYS + ESTIMATE_KEYS}
