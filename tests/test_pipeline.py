"""One pipeline for the command line and the app: the same rows, the same decision; the catalog's dates in words."""

from __future__ import annotations

import datetime as dt

import pandas as pd

from advisor.decision import analysis, pipeline


def test_the_command_line_and_the_app_decide_on_the_same_rows(shipped_frame, shipped_catalog):
    workload = pipeline.workload_of(shipped_frame, "post-cpu-only")
    found = pipeline.catalog_estimates(shipped_frame, shipped_catalog, workload)
    commands = pipeline.with_estimates(shipped_frame, found)  # every result: recommend picks the workload
    rows = pipeline.workload_rows(shipped_frame, workload)
    app = pipeline.decision_rows(rows.frame, found, shipped_catalog)  # the app's: one workload, costs' columns once
    by_command = analysis.recommend(commands, "post-cpu-only", catalog=shipped_catalog)
    by_app = analysis.recommend(app, "post-cpu-only", catalog=shipped_catalog)
    assert by_command.best["profile"] == by_app.best["profile"]
    shown = ["profile", "precision", "seconds", "upgrade_cost_usd", "usd_per_run", "payback_weeks"]
    pd.testing.assert_frame_equal(by_command.options[shown], by_app.options[shown])
    assert by_command.findings.other_workloads > 0 and by_app.findings.other_workloads == 0  # the app has a picker


def test_the_workloads_profiles_are_offered_slowest_first(shipped_frame):
    rows = pipeline.workload_rows(shipped_frame, pipeline.workload_of(shipped_frame, "post-cpu-only"))
    slowest = rows.frame.groupby("profile")["seconds"].max()[rows.names.index]
    assert slowest.is_monotonic_decreasing and rows.slowest == "post-cpu-only" == rows.names.index[0]


def test_the_catalogs_dates_are_said_from_the_catalog(shipped_catalog):
    text = pipeline.catalog_dates(shipped_catalog, today=dt.date.fromisoformat(shipped_catalog.as_of))
    years = sorted({r.date[:4] for gpu in shipped_catalog.gpus for r in gpu.rentals})
    assert f"prices collected {shipped_catalog.as_of} (0 days ago)" in text
    assert f"rentals date from {years[0]}-{years[-1]}" in text
