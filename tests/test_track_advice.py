"""Advice from a tracked profile without a framework: a real profile recorded by advisor.track on a CPU (an
input-bound PyTorch loop, tests/fixtures/input-bound-mlp.yaml, made by tests/fixtures/make_input_bound.py) among
the shipped ones, through the library, the CLI, crossval's words and the app."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from advisor import store
from advisor.cli import main
from advisor.decision import analysis
from advisor.llm import throughput_crossval as llm_crossval
from advisor.perf import calibration, crossval, estimates, launch, memory
from advisor.perf.basis import Clause
from advisor.render import basis as render_basis
from advisor.store import results
from helpers import ROOT, app_test, copy_small_shipped

FIXTURE = ROOT / "tests" / "fixtures" / "input-bound-mlp.yaml"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = copy_small_shipped(tmp_path / "profiles")  # the large published collection plays no part here
    shutil.copy(FIXTURE, target / FIXTURE.name)
    return target


def tracked() -> dict:
    profile, problems = store.load_profile(FIXTURE)
    assert not problems, problems
    return profile.data


def test_the_fixture_is_a_valid_tracked_profile():
    data = tracked()
    assert data["workload"]["kind"] == "tracked" and data["provenance"]["method"] == "measured"
    assert data["results"][0]["data_wait"]["share"] > analysis.INPUT_BOUND_SHARE


def test_every_estimate_keeps_the_wait_and_says_where_it_was_tracked(folder: Path, shipped_catalog):
    frame = results.results_frame(store.load_profiles(folder).profiles)
    data = tracked()
    key = analysis.find_workload(frame, data["workload"]["name"])
    request = estimates.EstimateRequest(key, devices=estimates.OFFERED_DEVICES)
    found = estimates.estimate_catalog(frame, shipped_catalog, request)
    rows = found.rows
    assert (rows["device_count"] == 2).any()
    wait = data["results"][0]["data_wait"]["seconds_per_step"] * data["workload"]["steps"]
    assert len(rows) > 40
    assert (rows["low"] > wait).all()  # the wait is no GPU's to shorten, nor two GPUs'
    share = data["results"][0]["data_wait"]["share"]
    assert (data["results"][0]["total_seconds"] / rows["seconds"] <= 1 / share).all()  # Amdahl
    said = rows["basis"].map(render_basis.sentence)
    assert rows["basis"].map(lambda b: b.situation.tracked and bool(b.of_kind(Clause.WAIT))).all()
    assert said.str.contains("tracked on a CPU").all() and said.str.contains("waiting for data").all()
    # the memory of each GPU: the counted parts, with the GPU's own overhead
    footprint = memory.predict(data["workload"], "float32")
    assert footprint is not None and rows["memory_gb"].min() == pytest.approx(footprint.total_gb, rel=0.5)


def test_a_small_step_is_never_faster_than_its_host_launches_its_kernels(shipped_frame, shipped_catalog):
    """The fixture's step is a small MLP: on any GPU its FLOPs take microseconds, the launches of its 78 counted
    operations do not. The GPU's part is at least their time, at the calibration's fitted cost per kernel, and its
    range is that cost's cross-validated range, not the calibration's (which the FLOPs' part of a microsecond would
    make a few milliseconds wide). Calibrated on every shipped result, as the app does (on the post's LSTM alone, its
    per-timestep cost stands for every step's)."""
    profile, _ = store.load_profile(FIXTURE)
    frame = pd.concat([shipped_frame, results.results_frame([profile])], ignore_index=True)
    data = tracked()
    key = analysis.find_workload(frame, data["workload"]["name"])
    rows = estimates.estimate_catalog(frame, shipped_catalog, estimates.EstimateRequest(key)).rows
    fit = calibration.fit(estimates.calibration_samples(frame, shipped_catalog))
    floor = estimates.launch_floor(data["workload"], fit)
    assert floor is not None and floor.fitted and floor.operations == data["workload"]["operations_per_step"]
    assert launch.OPERATION_SECONDS_LOW < floor.operation_seconds < launch.OPERATION_SECONDS_HIGH
    assert math.log(floor.width) == pytest.approx(llm_crossval.load_widths()[llm_crossval.LAUNCH_BOUND])
    wait = data["results"][0]["data_wait"]["seconds_per_step"] * data["workload"]["steps"]
    assert (rows["bound"] == "per-step").all()
    assert rows["seconds"].to_numpy() == pytest.approx(wait + floor.seconds, rel=0.02)
    assert (rows["low"] >= wait + floor.low - 1e-6).all() and (rows["high"] >= wait + floor.high - 1e-6).all()
    assert (
        rows["basis"]
        .map(render_basis.sentence)
        .str.contains("at least the host's launches: 78 operations a step")
        .all()
    )


def test_the_launch_floor_decides_only_where_it_is_longer():
    floor = launch.LaunchFloor(operations=100, steps=1000)
    assert floor.low < floor.seconds < floor.high
    assert launch.apply(10.0, 5.0, 20.0, floor) == launch.Floored(10.0, 5.0, 20.0, False)  # the FLOPs decide
    small = launch.apply(0.01, 0.005, 0.02, floor)
    assert small == launch.Floored(floor.seconds, floor.low, floor.high, True)
    assert launch.apply(0.01, 0.005, 0.02, None) == launch.Floored(0.01, 0.005, 0.02, False)
    assert launch.floor_of({"kind": "tracked", "steps": 10}) is None  # not counted (Keras, older profiles)


def test_the_recommendation_puts_the_free_fixes_first(folder: Path, capsys):
    data = tracked()
    share = data["results"][0]["data_wait"]["share"]
    assert main(["recommend", "--profiles", str(folder), "--current", data["id"], "--estimates", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    reason = found["reason"]
    assert reason.startswith(f"Your run waits for data {share:.0%} of each step")
    assert reason.index("num_workers") < reason.index("Then:")
    best = found["best"]  # a GPU still pays (the rest of each step is faster), but never past Amdahl's bound
    assert best is not None and 1 < best["speedup_vs_current"] <= 1 / share + 1e-9
    assert f"no GPU can make it more than {1 / share:.2f}x faster" in reason


def test_crossval_says_how_wide_a_tracked_jobs_ranges_are():
    summary = [
        {"experiment": "new-workload", "precision": "all", "results": 10, "median": 1.2, "p90": 1.7},
        {"experiment": "no-gpu-result", "precision": "all", "results": 5, "median": 2.1, "p90": 5.0},
    ]
    rows = crossval.tracked_errors(summary)
    assert [(r["tracked_on"], r["experiment"], r["p90"]) for r in rows] == [
        ("a catalog GPU", "new-workload", 1.7),
        ("a CPU", "no-gpu-result", 5.0),
    ]


def test_the_app_answers_for_a_tracked_job(monkeypatch, folder: Path):
    pytest.importorskip("streamlit")
    at = app_test(monkeypatch, folder)
    assert not at.exception, at.exception
    picker = at.sidebar.selectbox(key="workload")
    choice = next(option for option in picker.options if "input-bound MLP" in option)
    picker.select_index(picker.options.index(choice)).run()
    assert not at.exception, at.exception
    assert at.sidebar.selectbox(key="current").value == tracked()["id"]
    said = " ".join(block.value for block in [*at.info, *at.success]).replace("\\", "")  # Markdown escapes
    assert "waits for data" in said and "num_workers" in said
