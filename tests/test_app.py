"""The Streamlit app under AppTest: it runs, and the widgets drive the recommendation."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from helpers import ROOT, SHIPPED, make_special_files, post_workload_profile, valid_profile, write_yaml

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

APP = str(ROOT / "streamlit_app.py")


def start(monkeypatch, folder: Path = SHIPPED) -> AppTest:
    monkeypatch.setenv("ADVISOR_PROFILES", str(folder))
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def best(at: AppTest):
    metric = next(m for m in at.metric if m.label == "Best upgrade")
    return metric.value, metric.delta


def options_table(at: AppTest):
    return at.dataframe[0].value


def test_defaults_start_from_the_slowest_hardware(monkeypatch):
    at = start(monkeypatch)
    assert at.sidebar.selectbox(key="current").value == "post-cpu-only"
    value, delta = best(at)
    # Best of both precisions, no budget limit: the Titan RTX in mixed precision at $16.33 per 1x.
    assert "Titan RTX" in value and "mixed" in value
    assert "153.09x faster" in delta
    table = options_table(at)
    assert {"post-gtx-1070-ti", "post-titan-rtx"} <= set(table["profile"])
    assert "post-cpu-only" not in set(table["profile"])
    assert {"speedup", "seconds", "$ per 1x speedup", "$ per added run/h", "source"} <= set(table.columns)


def test_changing_current_hardware_budget_and_precision(monkeypatch):
    at = start(monkeypatch)
    at.sidebar.radio(key="precision").set_value("float32").run()
    value, delta = best(at)
    assert "GTX 1070 Ti" in value and "16.29x faster" in delta and "$33.75" in delta
    assert set(options_table(at)["precision"]) == {"float32"}

    at.sidebar.selectbox(key="current").set_value("post-gtx-1070-ti").run()
    value, delta = best(at)
    assert "Titan RTX" in value and "4.42x faster" in delta
    assert "post-gtx-1070-ti" not in set(options_table(at)["profile"])

    at.sidebar.number_input(key="budget").set_value(1000).run()
    value, _ = best(at)
    assert value == "None within your choices"

    at.sidebar.selectbox(key="current").set_value("post-titan-rtx").run()
    at.sidebar.radio(key="precision").set_value("Best of both").run()
    value, delta = best(at)
    assert "mixed" in value and "free" in delta and "2.13x" in delta
    assert not at.exception


def test_bad_profiles_are_listed_and_the_rest_works(monkeypatch, shipped_copy: Path):
    (shipped_copy / "broken.yaml").write_text("schema_version: [\n")
    bad = valid_profile("bad-one")
    bad["results"][0]["total_seconds"] = float("nan")
    write_yaml(shipped_copy / "bad-one.yaml", bad)
    at = start(monkeypatch, shipped_copy)
    assert any("2 invalid profile file(s) are left out" in w.value for w in at.warning)
    assert any("2 problem(s)" in e.label for e in at.expander)
    texts = " ".join(t.value for t in at.text)
    assert "broken.yaml" in texts and "must be a finite number" in texts
    assert "Titan RTX" in best(at)[0]


def test_no_profiles_gives_a_helpful_empty_state(monkeypatch, tmp_path: Path):
    at = start(monkeypatch, tmp_path)
    assert any("No profiles yet" in info.value for info in at.info)
    assert not at.metric


def test_crafted_names_are_shown_as_text(monkeypatch, shipped_copy: Path):
    evil = post_workload_profile("evil", seconds=1.0, price=10)
    evil["name"] = "<img src=x onerror=alert(1)> **bold** :red[red] $x^2$"
    write_yaml(shipped_copy / "evil.yaml", evil)
    at = start(monkeypatch, shipped_copy)
    value, _ = best(at)
    assert "\\<img" in value and "\\*\\*bold\\*\\*" in value and "\\:red\\[red\\]" in value and "\\$x" in value


def test_special_files_are_listed_without_their_content(monkeypatch, shipped_copy: Path):
    cases = [c for c in yaml.safe_load((ROOT / "tests" / "bad_profiles_expected.yaml").read_text()) if "make" in c]
    made = make_special_files(shipped_copy, cases)
    at = start(monkeypatch, shipped_copy)
    texts = " ".join(t.value for t in at.text)
    for case in made:
        assert f"{case['file']}: {case['message']}" in texts
    everything = texts + " ".join(str(getattr(e, "value", "")) for e in [*at.warning, *at.info, *at.markdown])
    assert "root:" not in everything
    assert "Titan RTX" in best(at)[0]
