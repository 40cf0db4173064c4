"""The analysis reproduces the post's figures and follows the documented definitions."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from advisor.decision import analysis
from advisor.errors import AdvisorError
from advisor.render import prose, records
from advisor.store import load_profiles, results
from helpers import SHIPPED, post_workload_profile, valid_profile


@pytest.fixture(scope="module")
def post_frame():
    loaded = load_profiles(SHIPPED)
    frame = results.results_frame([p for p in loaded.profiles if p.id.startswith("post-")])
    assert len(frame) == 4
    return frame


def row(table, profile, precision="float32"):
    match = table[(table["profile"] == profile) & (table["precision"] == precision)]
    assert len(match) == 1, (profile, precision)
    return match.iloc[0]


def test_compare_defaults_to_the_slowest_float32_baseline(post_frame):
    comparison = analysis.compare(post_frame)
    assert comparison.baseline.profile == "post-cpu-only"
    gtx = row(comparison.table, "post-gtx-1070-ti")
    assert gtx["speedup"] == pytest.approx(16.29, abs=0.01)  # "16x faster"
    assert gtx["dollars_per_speedup"] == pytest.approx(33.75, abs=0.01)  # about $34 per 1x
    assert gtx["runs_per_hour"] == pytest.approx(3600 / 150.32436347007751)
    assert row(comparison.table, "post-cpu-only")["speedup"] == 1.0


def test_titan_rtx_is_4_42x_the_1070_ti(post_frame):
    comparison = analysis.compare(post_frame, baseline="post-gtx-1070-ti")
    assert row(comparison.table, "post-titan-rtx")["speedup"] == pytest.approx(4.42, abs=0.005)


def test_mixed_precision_is_a_free_2_1x_on_the_titan_rtx(post_frame):
    rec = analysis.recommend(post_frame, "post-titan-rtx")
    assert rec.best.profile == "post-titan-rtx"
    assert rec.best.precision == "mixed_float16"
    assert rec.best.upgrade_cost_usd == 0
    assert rec.best.speedup_vs_current == pytest.approx(2.13, abs=0.005)
    assert "$0" in prose.reason(rec) and "already have" in prose.reason(rec)


def test_float32_recommendation_from_the_cpu_is_the_1070_ti(post_frame):
    rec = analysis.recommend(post_frame, "post-cpu-only", precision="float32")
    assert rec.best.profile == "post-gtx-1070-ti"
    assert rec.best.dollars_per_speedup_vs_current == pytest.approx(33.75, abs=0.01)
    assert "16.3x faster for $550 (the profile's price, undated) ($33.75 per 1x)" in prose.reason(rec)
    assert "6.4 hours a week" in prose.reason(rec)


def test_upgrade_figures_follow_the_definitions(post_frame):
    rec = analysis.recommend(post_frame, "post-gtx-1070-ti", precision="float32")
    titan = row(rec.options, "post-titan-rtx")
    current = 150.32436347007751
    assert titan["speedup_vs_current"] == pytest.approx(current / 34.02235388755798)
    assert titan["upgrade_cost_usd"] == 2500
    assert titan["dollars_per_speedup_vs_current"] == pytest.approx(2500 / (current / 34.02235388755798))
    added = 3600 / 34.02235388755798 - 3600 / current
    assert titan["dollars_per_added_run_per_hour"] == pytest.approx(2500 / added)
    cpu = row(rec.options, "post-cpu-only")
    assert not cpu["faster"]
    assert math.isnan(cpu["dollars_per_added_run_per_hour"])
    assert math.isnan(cpu["dollars_per_speedup_vs_current"])


def test_budget_excludes_expensive_options(post_frame):
    rec = analysis.recommend(post_frame, "post-cpu-only", budget=1000)
    assert rec.best.profile == "post-gtx-1070-ti"
    assert any("budget" in note for note in prose.notes(rec))
    nothing = analysis.recommend(post_frame, "post-cpu-only", budget=100)
    assert nothing.best is None
    assert "$550" in prose.reason(nothing)


def test_no_recommendation_says_why_for_every_goal_with_or_without_a_budget(post_frame):
    # Without a catalog nothing here has a power draw or a rental: no cost per run is known. This once raised a
    # TypeError (a budget of None formatted as dollars) where the goal was cost and no budget was given.
    rec = analysis.recommend(post_frame, "post-cpu-only", goal="cost")
    assert rec.best is None
    assert "No faster option has a known cost per run" in prose.reason(rec)
    assert "budget" in prose.reason(analysis.recommend(post_frame, "post-cpu-only", goal="cost", budget=100))
    assert analysis.recommend(post_frame, "post-cpu-only", goal="value").best is not None  # a price alone will do


def test_the_fastest_hardware_gets_no_paid_recommendation(post_frame):
    rec = analysis.recommend(post_frame, "post-titan-rtx", precision="float32")
    assert rec.best is None
    assert "keep it" in prose.reason(rec)


def test_unknown_price_is_compared_but_never_recommended(post_frame):
    frame = results.results_frame([post_workload_profile("fast-unpriced", seconds=1.0, price=None)])
    both = pd.concat([post_frame, frame], ignore_index=True)
    rec = analysis.recommend(both, "post-cpu-only", precision="float32")
    assert rec.best.profile == "post-gtx-1070-ti"
    assert "fast-unpriced" in set(rec.options["profile"])
    assert any("no known purchase price" in note for note in prose.notes(rec))


def test_other_workloads_are_left_out_and_said_so(post_frame):
    other = results.results_frame([valid_profile("tiny-one")])
    comparison = analysis.compare(pd.concat([post_frame, other], ignore_index=True))
    assert "tiny-one" not in set(comparison.table["profile"])
    notes = prose.workload_notes(comparison.left_out_results, comparison.other_workloads)
    assert notes and "left out 1 result" in notes[0]


def test_precision_filter(post_frame):
    mixed = analysis.compare(post_frame, precision="mixed")
    assert set(mixed.table["precision"]) == {"mixed_float16"}
    with pytest.raises(AdvisorError):
        analysis.filter_precision(post_frame, "float64")


def test_unknown_current_profile_is_a_clear_error(post_frame):
    with pytest.raises(AdvisorError, match="no profile named like 'nope'"):
        analysis.recommend(post_frame, "nope")


def test_best_value_frontier(post_frame):
    frontier = analysis.best_value_frontier(post_frame)
    on = set(post_frame[frontier]["profile"] + ":" + post_frame[frontier]["precision"])
    # CPU ($0), 1070 Ti ($550), Titan RTX mixed ($2,500, fastest); Titan RTX float32 is beaten by its mixed result.
    assert on == {"post-cpu-only:float32", "post-gtx-1070-ti:float32", "post-titan-rtx:mixed_float16"}


def test_json_records_have_the_documented_keys(post_frame):
    rows = records.comparison_records(analysis.compare(post_frame))
    assert set(rows[0]) == set(analysis.ROW_KEYS)
    rec = records.recommendation_record(analysis.recommend(post_frame, "post-cpu-only"))
    assert set(rec) >= {"current", "options", "best"}
    assert set(rec["options"][0]) >= set(analysis.ROW_KEYS) | set(analysis.OPTION_KEYS)
    assert "reason" in rec["best"]


def backend_profile(profile_id: str, backend: str, seconds: float) -> dict:
    """A CPU machine measured with one Keras backend (the same host facts each time)."""
    profile = post_workload_profile(profile_id, seconds=seconds, price=None)
    profile["device"] = {"kind": "cpu", "name": "AMD EPYC", "count": 1}
    profile["host"] = {"cpu": "AMD EPYC", "logical_cpus": 2, "memory_gb": 23.5}
    profile["software"] = {"framework": backend, "keras_backend": backend}
    return profile


def test_a_faster_backend_on_the_same_machine_is_a_free_upgrade():
    frame = results.results_frame(
        [backend_profile("vm-tensorflow", "tensorflow", 1600.0), backend_profile("vm-jax", "jax", 1200.0)]
    )
    rec = analysis.recommend(frame, "vm-tensorflow")
    assert rec.best.profile == "vm-jax" and bool(rec.best.free_upgrade)
    assert rec.best.upgrade_cost_usd == 0 and rec.best.speedup_vs_current == pytest.approx(1600 / 1200)
    assert prose.reason(rec).startswith("Switch to the jax backend on the hardware you already have")
    other = backend_profile("other-vm", "jax", 1000.0)
    other["host"]["memory_gb"] = 64.0  # another machine: not free
    frame = results.results_frame([backend_profile("vm-tensorflow", "tensorflow", 1600.0), other])
    assert not analysis.recommend(frame, "vm-tensorflow").options["free_upgrade"].any()


def test_what_each_added_device_buys():
    profile = post_workload_profile("two-gpus", seconds=60.0, price=3000)
    profile["device"] = {"kind": "gpu", "name": "NVIDIA GeForce RTX 4090", "count": 2}
    profile["results"][0]["scaling"] = {
        "devices": 2,
        "single_device_seconds": 100.0,
        "speedup": 1.6667,
        "efficiency": 0.8333,
    }
    rows = analysis.added_devices(results.results_frame([profile])).iloc[0]
    assert rows["efficiency"] == pytest.approx(0.8333, rel=1e-3)
    assert rows["added_speedup_per_device"] == pytest.approx(0.6667, rel=1e-3)
    assert rows["price_per_device"] == 1500 and rows["usd_per_added_1x"] == pytest.approx(1500 / 0.6667)


def test_the_recommendation_shows_what_added_devices_buy():
    from advisor.render.compare import recommendation_text

    one = post_workload_profile("one-gpu", seconds=100.0, price=1500)
    two = post_workload_profile("two-gpus", seconds=60.0, price=3000)
    for profile, count in ((one, 1), (two, 2)):
        profile["device"] = {"kind": "gpu", "name": "NVIDIA GeForce RTX 4090", "count": count}
    two["results"][0]["scaling"] = {
        "devices": 2,
        "single_device_seconds": 100.0,
        "speedup": 1.6667,
        "efficiency": 0.8333,
    }
    rec = analysis.recommend(results.results_frame([one, two]), "one-gpu")
    record = records.recommendation_record(rec)
    assert record["added_devices"][0]["profile"] == "two-gpus"
    assert record["added_devices"][0]["usd_per_added_1x"] == pytest.approx(1500 / 0.6667, rel=1e-3)
    text = recommendation_text(rec)
    assert "What each added device or machine buys" in text and "83%" in text


def test_a_picker_lists_every_profile_until_a_search_must_narrow_them():
    few = pd.Series({"a": "GTX 1070 Ti", "b": "TITAN RTX"})
    picks = analysis.pick_list(few, "nothing matches this")
    assert picks.ids == ["a", "b"] and not picks.searchable  # a short list: all of it, the search unused
    many = pd.Series({f"p{i}": f"Generated GPU {i}" for i in range(1000)})
    picks = analysis.pick_list(many, "", limit=50)
    assert picks.searchable and len(picks.ids) == 50 and picks.matched == 1000 and picks.ids[0] == "p0"
    picks = analysis.pick_list(many, "generated GPU 99", limit=50)  # every word, any case, anywhere in the name
    assert picks.ids == ["p99", *[f"p{i}99" for i in range(1, 9)], *[f"p{i}" for i in range(990, 1000)]]
    assert picks.matched == 19
    picks = analysis.pick_list(many, "gpu 999", keep="p5", limit=50)  # the chosen one stays listed
    assert picks.ids == ["p5", "p999"]
    assert analysis.pick_list(many, "no such", limit=50).ids == []
