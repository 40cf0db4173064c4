"""The rows a decision hands on, typed by stage: each adds its columns to the results frame's (:class:`ResultRow`).

- :class:`DecisionRow`: a result with what costs need of its hardware (:func:`advisor.decision.costs.hardware_columns`):
  the current result of a recommendation.
- :class:`ComparedRow`: and its figures against a baseline (:func:`advisor.decision.analysis.with_baseline_figures`):
  the current result as its record shows it (speedup 1x).
- :class:`OptionRow`: and its figures as an upgrade from the current result
  (:func:`~advisor.decision.analysis.upgrade_options`), its costs (:func:`~advisor.decision.costs.add_cost_figures`)
  and its place in the goal's order: the best option, the cheapest rental, the purchase the cost chart shows.

The options themselves stay a frame (thousands of rows, decided on whole columns); :meth:`TypedRow.of` checks that a
frame's row has exactly its stage's columns, so a column added at one stage and not declared here fails a test.
Render and the app read these rows' fields.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.store.result_row import ResultRow


@dataclass(frozen=True)
class DecisionRow(ResultRow):
    """A result with what costs need of its hardware. ``power_watts`` is the power energy is counted at: measured,
    else the profile's, else the catalog's board power."""

    power_source: str  # where power_watts comes from: measured, profile, catalog board power or unknown
    rental_usd_per_hour: float  # the cheapest on-demand rental of the same GPUs (times the count); NaN: none known
    rental_provider: str | None
    rental_date: str | None
    rental_billing_seconds: float  # the provider's billing increment (NaN: unknown, billed by the hour)
    rental_minimum_seconds: float  # its least billed time


@dataclass(frozen=True)
class ComparedRow(DecisionRow):
    """A result against a baseline result."""

    speedup: float  # the baseline's seconds over this row's
    dollars_per_speedup: float  # price_usd / speedup
    runs_per_hour: float


@dataclass(frozen=True)
class OptionRow(ComparedRow):
    """An option of a recommendation: its figures against the current result, its costs and its rank."""

    free_upgrade: bool  # the same hardware (another precision or backend): costs nothing
    speedup_vs_current: float
    upgrade_cost_usd: float  # 0 for a free upgrade; NaN without a price
    faster: bool  # faster than the current result
    dollars_per_speedup_vs_current: float
    added_runs_per_hour: float
    dollars_per_added_run_per_hour: float
    energy_usd_per_run: float
    hours_saved_per_week: float
    payback_weeks: float  # NaN: never (or unknown, as payback_counts says)
    payback_beyond_lifetime: bool
    payback_counts: str | None  # PaybackCounts: what the payback counts (the time saved alone, or energy too)
    usd_per_run_owned: float
    cloud_usd_per_run: float
    break_even_runs: float
    usd_per_run: float  # the cheaper of owning and renting
    cheapest_way: str | None  # buy or rent (None: neither cost is known)
    rank: float  # the place in the goal's order among the eligible options (NaN: not eligible)
