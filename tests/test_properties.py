"""Property-based tests: arbitrary input never escapes as anything but the advisor's error, and
the analysis keeps its invariants."""

from __future__ import annotations

import copy
import math

import pandas as pd
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor import store
from advisor.decision import analysis, costs
from advisor.errors import ProfileError
from advisor.store import results
from helpers import examples, valid_profile

# A parse an example (~1 ms; with Hypothesis's generation, ~10 ms).
FAST = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
# A comparison or two recommendations an example (5-50 ms): Hypothesis's default count of examples.
ANALYSIS = settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])

yaml_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20)
)
yaml_values = st.recursive(
    yaml_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)


@FAST
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_raise_only_profile_errors(raw: bytes):
    try:
        store.profile_from_bytes(raw, "fuzz.yaml")
    except ProfileError as error:
        assert error.problems and all(p.file == "fuzz.yaml" for p in error.problems)


@FAST
@given(yaml_values)
def test_arbitrary_yaml_raises_only_profile_errors(value):
    raw = yaml.safe_dump(value).encode()
    try:
        store.profile_from_bytes(raw, "fuzz.yaml")
    except ProfileError as error:
        assert error.problems


PROFILE_PATHS = [
    ("schema_version",),
    ("id",),
    ("device",),
    ("device", "kind"),
    ("device", "count"),
    ("price", "usd"),
    ("price", "date"),
    ("workload", "epochs"),
    ("workload", "units"),
    ("workload", "learning_rate"),
    ("results",),
    ("results", 0, "precision"),
    ("results", 0, "total_seconds"),
    ("results", 0, "epoch_seconds"),
    ("results", 0, "steady"),
    ("provenance", "method"),
    ("notes",),
]


@FAST
@given(st.sampled_from(PROFILE_PATHS), st.one_of(yaml_values, st.integers(min_value=10**300, max_value=10**400)))
def test_any_field_replaced_by_anything_raises_only_profile_errors(path, value):
    data = copy.deepcopy(valid_profile())
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    try:
        profile, _ = store.profile_from_bytes(yaml.safe_dump(data).encode(), "fuzz.yaml")
    except ProfileError as error:
        assert error.problems
        return
    # A profile that loads must also go through the analysis without error.
    frame = results.results_frame([profile])
    analysis.compare(frame)
    analysis.recommend(frame, profile.id, current_precision=frame["precision"].iloc[0])


def post_like_frame(seconds: list[float], prices: list[float], ids: list[str]) -> pd.DataFrame:
    profiles = []
    for pid, secs, price in zip(ids, seconds, prices, strict=True):
        profile = valid_profile(pid, seconds=secs, price=price)
        profile["results"] = [{"precision": "float32", "total_seconds": secs}]
        profiles.append(profile)
    return results.results_frame(profiles)


frames = st.integers(min_value=2, max_value=8).flatmap(
    lambda n: st.tuples(
        st.lists(st.floats(min_value=0.01, max_value=1e5), min_size=n, max_size=n),
        st.lists(st.floats(min_value=0, max_value=1e5), min_size=n, max_size=n),
    )
)


def ids_for(n: int, prefix: str = "p") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


@ANALYSIS
@given(frames)
def test_the_baseline_speedup_is_one(data):
    seconds, prices = data
    frame = post_like_frame(seconds, prices, ids_for(len(seconds)))
    comparison = analysis.compare(frame, baseline="p0")
    base = comparison.table[comparison.table["profile"] == "p0"].iloc[0]
    assert base["speedup"] == 1.0


@ANALYSIS
@given(frames, st.floats(min_value=0.01, max_value=100))
def test_scaling_prices_scales_dollars_per_speedup(data, factor):
    seconds, prices = data
    ids = ids_for(len(seconds))
    plain = analysis.compare(post_like_frame(seconds, prices, ids), baseline="p0").table.set_index("profile")
    scaled = analysis.compare(
        post_like_frame(seconds, [p * factor for p in prices], ids), baseline="p0"
    ).table.set_index("profile")
    for pid in ids:
        a, b = plain.loc[pid, "dollars_per_speedup"], scaled.loc[pid, "dollars_per_speedup"]
        assert math.isclose(a * factor, b, rel_tol=1e-9, abs_tol=1e-9)


@settings(ANALYSIS, max_examples=examples(50))  # two recommendations an example (0.05-0.1 s)
@given(frames, st.permutations(list(range(8))))
def test_renaming_ids_never_changes_the_ranking(data, permutation):
    seconds, prices = data
    n = len(seconds)
    original = ids_for(n)
    renamed = [f"x{permutation[i]}" for i in range(n)]
    first = analysis.recommend(post_like_frame(seconds, prices, original), "p0")
    second = analysis.recommend(post_like_frame(seconds, prices, renamed), renamed[0])
    mapping = dict(zip(original, renamed, strict=True))
    assert (first.best is None) == (second.best is None)
    if first.best is not None:
        # Ties in value may resolve by id; the chosen option's figures must be the same.
        assert first.best.dollars_per_speedup_vs_current == second.best.dollars_per_speedup_vs_current
        assert first.best.upgrade_cost_usd == second.best.upgrade_cost_usd
        if (first.options["dollars_per_speedup_vs_current"] == first.best.dollars_per_speedup_vs_current).sum() == 1:
            assert mapping[first.best.profile] == second.best.profile


sort_numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, 1.0, math.nan]))
sort_rows = st.lists(
    st.tuples(sort_numbers, st.booleans(), st.sampled_from(["a", "b", "B", "é", "", None]), sort_numbers), max_size=30
)


@FAST
@given(sort_rows, st.permutations(["x", "flag", "text", "y"]))
def test_sort_order_sorts_as_pandas_stable_sort_values(rows, keys):
    # Ties are frequent (few distinct values), missing values in the numbers and the texts: the same order as
    # pandas' stable sort, missing last, which costs.sort_order replaces on the re-run path.
    frame = pd.DataFrame(rows, columns=["x", "flag", "text", "y"])
    frame["text"] = frame["text"].astype("str")  # pandas' text dtype, as the results frame's (None stays missing)
    expected = frame.sort_values(list(keys), kind="stable").index.to_numpy()
    assert list(costs.sort_order(frame, list(keys))) == list(expected)


@ANALYSIS
@given(frames, st.sampled_from(["value", "speed", "cost"]), st.integers(min_value=0, max_value=9))
def test_option_rows_joined_on_demand_are_the_whole_table(data, goal, count):
    # The app asks for the first rows and a chart's few; the CSV for all: each the same rows of the whole table.
    seconds, prices = data
    rec = analysis.recommend(post_like_frame(seconds, prices, ids_for(len(seconds))), "p0", goal=goal)
    whole, rows = rec.options, rec.option_rows
    assert len(rows) == len(whole)
    pd.testing.assert_frame_equal(rows.head(count), whole.head(count))
    positions = list(range(len(whole)))[::-2]
    pd.testing.assert_frame_equal(rows.rows(positions), whole.iloc[positions])
    pd.testing.assert_series_equal(rows.column("seconds"), whole["seconds"], check_names=False)
