"""What it really costs: every formula against hand-computed cases (the post's machines), and its properties."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from readme_examples import docs_text

from advisor.cli import main
from advisor.decision import analysis, costs
from advisor.decision.costs import Habits
from advisor.decision.rows import DecisionRow, OptionRow
from advisor.errors import AdvisorError
from advisor.format import metrics
from advisor.format.vocabulary import CostKind, PaybackCounts
from advisor.render import charts, prose
from advisor.store import results
from helpers import examples, post_workload_profile, typed_row

CPU, GTX, TITAN = 2449.41867685318, 150.32436347007751, 34.02235388755798


@pytest.fixture(scope="module")
def shipped(shipped_frame, shipped_catalog):
    return shipped_frame, shipped_catalog


def option(rec, profile, precision="float32"):
    rows = rec.options[(rec.options["profile"] == profile) & (rec.options["precision"] == precision)]
    return rows.iloc[0]


def test_the_posts_machines_at_10_runs_a_week_and_50_dollars_an_hour(shipped):
    frame, gpus = shipped
    habits = Habits(runs_per_week=10, hour_value=50)
    rec = analysis.recommend(frame, "post-cpu-only", precision="float32", habits=habits, catalog=gpus)
    gtx = option(rec, "post-gtx-1070-ti")
    assert gtx["hours_saved_per_week"] == pytest.approx(10 * (CPU - GTX) / 3600) == pytest.approx(6.39, abs=0.005)
    # The CPU's power is unknown: the payback counts the time saved alone, and says so.
    assert gtx["payback_counts"] == PaybackCounts.TIME_ALONE
    assert prose.payback_counts_words(gtx["payback_counts"]) == "time saved alone (power unknown)"
    assert gtx["payback_weeks"] == pytest.approx(550 / (6.386 * 50), rel=1e-3) == pytest.approx(1.7, abs=0.05)
    assert "pays for itself in 1.7 weeks at $50 an hour" in prose.reason(rec)

    rec = analysis.recommend(frame, "post-gtx-1070-ti", precision="float32", habits=habits, catalog=gpus)
    titan = option(rec, "post-titan-rtx")
    assert titan["hours_saved_per_week"] == pytest.approx(0.32, abs=0.005)
    # Both powers are known here (the catalog's board power: 180 W and 280 W), so energy counts too.
    assert titan["power_source"] == "catalog board power" and titan["payback_counts"] == PaybackCounts.TIME_AND_ENERGY
    energy_saving = 10 * (180 * GTX - 280 * TITAN) / 3_600_000 * 0.15
    expected = 2500 / (10 * (GTX - TITAN) / 3600 * 50 + energy_saving)
    assert titan["payback_weeks"] == pytest.approx(expected) == pytest.approx(155, abs=1)

    rec = analysis.recommend(frame, "post-titan-rtx", habits=habits, catalog=gpus)
    mixed = option(rec, "post-titan-rtx", "mixed_float16")
    assert mixed["free_upgrade"] and mixed["payback_weeks"] == 0
    assert rec.best.precision == "mixed_float16"


def test_energy_cost_per_run_owned_cloud_and_break_even(shipped):
    frame, gpus = shipped
    habits = Habits(runs_per_week=10, kwh_price=0.30, lifetime_years=2)
    rec = analysis.recommend(frame, "post-gtx-1070-ti", precision="float32", habits=habits, catalog=gpus)
    titan = option(rec, "post-titan-rtx")
    energy = 280 * TITAN / 3_600_000 * 0.30
    assert titan["energy_usd_per_run"] == pytest.approx(energy)
    assert titan["usd_per_run_owned"] == pytest.approx(2500 / (10 * 52 * 2) + energy)
    assert math.isnan(titan["cloud_usd_per_run"])  # nobody rents a Titan RTX in the catalog


def test_rental_break_even_by_hand():
    options = pd.DataFrame(
        {
            "profile": ["x"],
            "name": ["X"],
            "device": ["X"],
            "precision": ["float32"],
            "seconds": [360.0],
            "price_usd": [1000.0],
            "upgrade_cost_usd": [1000.0],
            "free_upgrade": [False],
            "power_watts": [500.0],
            "rental_usd_per_hour": [2.0],
        }
    )
    current = (3600.0, math.nan)  # the current run's seconds and power
    habits = Habits(runs_per_week=5, kwh_price=0.2, session_minutes=0)
    per_second = options.assign(rental_billing_seconds=1.0, rental_minimum_seconds=0.0)
    out = costs.add_cost_figures(per_second, *current, habits).iloc[0]
    assert out["energy_usd_per_run"] == pytest.approx(500 * 360 / 3_600_000 * 0.2)  # $0.01
    assert out["cloud_usd_per_run"] == pytest.approx(2.0 * 360 / 3600)  # $0.20
    assert out["break_even_runs"] == math.ceil(1000 / (0.20 - 0.01))  # 5,264 runs
    # a provider the catalog does not know bills by the hour: the 6-minute run costs a whole hour
    assert costs.add_cost_figures(options, *current, habits).iloc[0]["cloud_usd_per_run"] == pytest.approx(2.0)
    never = per_second.assign(rental_usd_per_hour=0.01)
    assert math.isnan(costs.add_cost_figures(never, *current, Habits(session_minutes=0)).iloc[0]["break_even_runs"])


def test_the_ladder_shows_where_returns_fall_off(shipped):
    frame, gpus = shipped
    rec = analysis.recommend(frame, "post-cpu-only", precision="float32", catalog=gpus)
    ladder = rec.ladder.set_index("profile")
    assert list(ladder.index) == ["post-gtx-1070-ti", "post-titan-rtx"]
    assert ladder.loc["post-gtx-1070-ti", "marginal_usd_per_added_run_per_hour"] == pytest.approx(
        550 / (3600 / GTX - 3600 / CPU)
    )
    assert ladder.loc["post-titan-rtx", "marginal_usd_per_added_run_per_hour"] == pytest.approx(
        1950 / (3600 / TITAN - 3600 / GTX)
    )
    # The Titan RTX step buys 0.32 hours a week for $1,950 more: 70 times the price per hour saved.
    falloff = ladder["marginal_usd_per_hour_saved_per_week"]
    assert falloff["post-titan-rtx"] / falloff["post-gtx-1070-ti"] > 50
    assert rec.ladder["upgrade_cost_usd"].is_monotonic_increasing and rec.ladder["seconds"].is_monotonic_decreasing


def test_the_ladder_climbs_only_purchases_a_buyer_can_make(shipped):
    """A step is bought: a faster option that does not fit its memory, or whose only price is a stale launch price,
    is never a step, however cheap (the post's Titan RTX made too small, then priced only at launch)."""
    frame, gpus = shipped
    titan = frame["profile"] == "post-titan-rtx"
    for edited in (
        frame.assign(fits=frame["fits"].mask(titan, False)),
        frame.assign(price_stale=frame["price_stale"].mask(titan, True)),
    ):
        rec = analysis.recommend(edited, "post-cpu-only", precision="float32", catalog=gpus)
        assert "post-titan-rtx" in set(rec.options["profile"])  # still an option, shown with its reason
        assert "post-titan-rtx" not in set(rec.ladder["profile"])
        assert "post-gtx-1070-ti" in set(rec.ladder["profile"])


def test_goals_pick_value_speed_or_cost(shipped):
    frame, gpus = shipped
    value = analysis.recommend(frame, "post-cpu-only", precision="float32", goal="value", catalog=gpus)
    speed = analysis.recommend(frame, "post-cpu-only", precision="float32", goal="speed", catalog=gpus)
    assert value.best.profile == "post-gtx-1070-ti" and speed.best.profile == "post-titan-rtx"
    cheap = analysis.recommend(
        frame, "post-cpu-only", precision="float32", goal="cost", catalog=gpus, habits=Habits(runs_per_week=1)
    )
    assert cheap.best.usd_per_run == cheap.options[cheap.options["faster"]]["usd_per_run"].min()
    with pytest.raises(AdvisorError, match="goal: must be one of value, speed, cost"):
        costs.rank(value.options, "fastest")


def test_a_rental_wins_the_cost_goal_and_the_headline_says_renting_is_cheaper(shipped):
    frame, gpus = shipped
    profile = post_workload_profile("rented-4090", seconds=8.0, price=None)
    profile["device"]["name"] = "NVIDIA GeForce RTX 4090"
    both = pd.concat([frame, results.results_frame([profile])], ignore_index=True)
    rec = analysis.recommend(both, "post-cpu-only", goal="cost", catalog=gpus)
    assert rec.best.profile == "rented-4090" and rec.best.cheapest_way == "rent"
    assert rec.best.cloud_usd_per_run == pytest.approx(0.60 * (5 * 60 + 8) / 3600)  # per second, 5 min start-up
    assert prose.reason(rec).startswith("Renting an RTX 4090 (RunPod, $0.60/h)")
    assert rec.best_rental.profile == "rented-4090"


@settings(max_examples=examples(100), deadline=None)  # four cost tables an example
@given(
    st.floats(0.5, 100),
    st.floats(0, 500),
    st.floats(1, 10),
    st.floats(0, 1000),
    st.floats(1, 1000),
    st.floats(0, 5000),
    st.one_of(st.just(math.nan), st.floats(10, 1000)),
)
def test_payback_and_cost_properties(runs, hour_value, factor, cost, seconds, resale, watts):
    options = pd.DataFrame(
        {
            "profile": ["x", "y"],
            "name": ["X", "Y"],
            "device": ["X", "Y"],
            "precision": ["float32", "float32"],
            "seconds": [seconds, seconds],
            "price_usd": [cost, cost],
            "upgrade_cost_usd": [cost, 0.0],
            "free_upgrade": [False, True],
            "power_watts": [watts, watts],
            "rental_usd_per_hour": [1.0, 1.0],
        }
    )
    current = (seconds * (1 + factor), 300.0)  # the current run's seconds and power
    base = costs.add_cost_figures(options, *current, Habits(runs, hour_value, resale_usd=resale))
    more_runs = costs.add_cost_figures(options, *current, Habits(runs * 2, hour_value, resale_usd=resale))
    more_value = costs.add_cost_figures(options, *current, Habits(runs, hour_value * 2 + 1, resale_usd=resale))
    dearer_power = costs.add_cost_figures(options, *current, Habits(runs, hour_value, kwh_price=0.5))
    assert base.iloc[1]["payback_weeks"] == 0  # a free upgrade pays back at once
    for longer in (more_runs, more_value):
        a, b = base.iloc[0]["payback_weeks"], longer.iloc[0]["payback_weeks"]
        assert math.isnan(a) or b <= a * (1 + 1e-9)  # more runs or a dearer hour never lengthens a payback
    for column in ("usd_per_run_owned", "energy_usd_per_run"):
        low, high = base.iloc[0][column], dearer_power.iloc[0][column]
        assert (math.isnan(low) and math.isnan(high)) or high >= low - 1e-12  # dearer power never lowers a cost


def test_cumulative_costs_and_break_even_point():
    current = typed_row(DecisionRow, seconds=3600.0, power_watts=100.0, name="Old")
    purchase = typed_row(OptionRow, seconds=360.0, upgrade_cost_usd=100.0, energy_usd_per_run=0.0, name="New")
    chart = costs.cumulative_costs(current, purchase, None, Habits(hour_value=10, kwh_price=0.0), runs=20)
    # keeping: $10 a run (an hour of waiting); buying: $100 + $1 a run. They cross after 100 / 9 = 11.1 runs.
    marks = costs.crossings(chart)
    assert list(marks["runs"]) == [12] and (marks["first"].iloc[0], marks["second"].iloc[0]) == ("keep", "buy")
    assert charts.break_even_label("keep", "buy", 12) == "buying pays off after 12 runs"
    assert charts.cost_line_label("buy", "New", True) == "buy New (estimated)"
    assert set(chart["runs"]) == {0, 12, 20}  # straight lines: their ends and the break-even point
    keep = chart[chart["kind"] == CostKind.KEEP].set_index("runs")["usd"]
    assert keep[20] == pytest.approx(200) and keep[12] == pytest.approx(120)
    keeping, buying = costs.CostLine(CostKind.KEEP, "a", 0, 2), costs.CostLine(CostKind.BUY, "b", 5, 3)
    assert costs.break_even(keeping, buying) is None  # dearer a run: never


def test_every_definition_is_written_once_and_shown_everywhere(shipped):
    assert metrics.markdown_definitions() in docs_text()
    frame, gpus = shipped
    from advisor.render.compare import recommendation_markdown

    markdown = recommendation_markdown(analysis.recommend(frame, "post-cpu-only", catalog=gpus))
    assert metrics.markdown_definitions() in markdown
    for key in ("energy_usd_per_run", "payback_weeks", "usd_per_run_owned", "cloud_usd_per_run", "break_even_runs"):
        assert key in metrics.BY_KEY


def test_recommend_json_has_every_figure(capsys):
    argv = ["recommend", "--current", "post-cpu-only", "--hour-value", "50", "--json", "--estimates"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["inputs"] == {
        "runs_per_week": 10,
        "hour_value": 50,
        "kwh_price": 0.15,
        "lifetime_years": 3,
        "resale_usd": 0,
        "session_minutes": 5,
        "runs_per_session": 1,
    }
    keys = {
        "energy_usd_per_run",
        "hours_saved_per_week",
        "payback_weeks",
        "usd_per_run_owned",
        "cloud_usd_per_run",
        "break_even_runs",
        "power_watts",
        "power_source",
    }
    assert all(keys <= set(o) for o in data["options"])
    assert data["ladder"] and data["rent_advice"].startswith("Renting")
    rented = [o for o in data["options"] if o["cloud_usd_per_run"] is not None]
    assert rented and all(o["cloud_usd_per_run"] > 0 for o in rented)


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--runs-per-week", "-1"),
        ("--hour-value", "lots"),
        ("--kwh-price", "-0.1"),
        ("--lifetime-years", "nan"),
        ("--resale-usd", "-5"),
        ("--goal", "cheapest"),
    ],
)
def test_bad_inputs_are_one_line_errors(capsys, flag, value):
    assert main(["recommend", "--current", "post-cpu-only", flag, value]) == 1
    err = capsys.readouterr().err
    assert err.startswith("advisor: error: recommend: argument") and err.count("\n") == 1


def test_zero_lifetime_is_refused():
    with pytest.raises(AdvisorError, match="lifetime_years: must be more than 0"):
        Habits(lifetime_years=0)


def test_rentals_are_billed_as_providers_bill_them(shipped_catalog):
    lambda_billing, runpod = shipped_catalog.billing_of("Lambda"), shipped_catalog.billing_of("RunPod")
    assert (lambda_billing.billing_seconds, lambda_billing.minimum_seconds) == (60, 60)
    assert runpod.billing_seconds == 1
    assert shipped_catalog.billing_of("Nobody").billing_seconds == 3600  # not in the catalog: by the hour
    habits = Habits()  # a session starts in 5 minutes and holds one run
    # a 4-second run on Lambda at $3.60/h: 304 s of session, billed as 6 whole minutes
    assert costs.billed_usd_per_run(3.6, 4.0, 60, 60, habits) == pytest.approx(3.6 * 360 / 3600)
    assert costs.billed_usd_per_run(3.6, 4.0, 1, 0, habits) == pytest.approx(3.6 * 304 / 3600)
    # ten runs a session share the start-up
    ten = Habits(runs_per_session=10)
    assert costs.billed_usd_per_run(3.6, 4.0, 1, 0, ten) == pytest.approx(3.6 * (300 + 40) / 3600 / 10)
    with pytest.raises(AdvisorError, match="runs_per_session: must be 1 or more"):
        Habits(runs_per_session=0.5)


def test_rent_advice_says_how_renting_is_billed(capsys):
    assert main(["recommend", "--current", "post-gtx-1070-ti", "--estimates", "--precision", "float32"]) == 0
    out = capsys.readouterr().out
    renting = next(line for line in out.splitlines() if line.startswith("Renting:"))
    assert "billed per second" in renting and "5 minutes' start-up" in renting
    assert "a rented session starts in 5 minutes and holds 1 run(s)" in out


def test_a_stale_launch_price_is_shown_but_not_recommended_unless_you_give_one(capsys):
    argv = [
        "recommend",
        "--current",
        "post-cpu-only",
        "--estimates",
        "--json",
        "--precision",
        "float32",
        "--goal",
        "speed",
        "--budget",
        "800",
    ]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    by_profile = {o["profile"]: o for o in data["options"]}
    assert by_profile["catalog:rtx-4070"]["price_kind"] == "launch price (2023), likely not sold new"
    assert by_profile["catalog:gtx-1080-ti"]["price_kind"] == "system price per GPU (Lambda) 2022-07"  # a later price
    assert data["best"]["profile"] not in ("catalog:rtx-4070", "catalog:rtx-4070:2x")
    assert any("not recommended to buy" in note for note in data["notes"])
    assert main([*argv, "--price", "rtx-4070=260"]) == 0
    data = json.loads(capsys.readouterr().out)
    offered = {o["profile"]: o for o in data["options"]}
    assert offered["catalog:rtx-4070"]["price_kind"] == "your price"
    assert offered["catalog:rtx-4070:2x"]["price_usd"] == 520  # two of them at your price
    assert data["best"]["profile"].startswith("catalog:rtx-4070")
    assert "your price" in data["reason"]
    assert main([*argv, "--price", "rtx-4095=100"]) == 1
    assert "no GPU named 'rtx-4095'" in capsys.readouterr().err


def test_a_slower_option_has_no_payback_and_a_long_one_says_so(capsys):
    assert main(["recommend", "--current", "post-titan-rtx", "--json", "--hour-value", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    slower = [o for o in data["options"] if o["speedup_vs_current"] < 1]
    assert slower and all(o["payback_weeks"] is None for o in slower)
    assert main(["recommend", "--current", "post-gtx-1070-ti", "--precision", "float32", "--hour-value", "0"]) == 0
    assert "does not pay for itself within the 3 years you keep hardware" in capsys.readouterr().out
