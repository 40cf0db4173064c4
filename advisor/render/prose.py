"""The recommendation in words: sentences rendered from what :func:`advisor.decision.analysis.recommend` decided.

The analysis chooses (which option, what it costs, when it pays back); this module only says it, the same for
the CLI, the Markdown download and the app. Pure functions of a Recommendation's data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from advisor.decision.costs import Habits
from advisor.format.formatting import fmt_duration, fmt_seconds, fmt_usd, fmt_usd_small, missing, short_device
from advisor.format.units import SECONDS_PER_HOUR, SECONDS_PER_MINUTE
from advisor.format.vocabulary import Goal, PaybackCounts, PriceBasis, Source
from advisor.store.catalog import STALE_YEARS

if TYPE_CHECKING:
    from advisor.decision.analysis import Recommendation
    from advisor.decision.rows import OptionRow
    from advisor.store.result_row import ResultRow


def reason(rec: Recommendation) -> str:
    """The recommendation in one or two sentences (an input-bound run: the free fixes first)."""
    first = input_bound_words(rec.findings.data_wait_share)
    if rec.best is not None:
        return first + _best_reason(rec.best, rec.current, rec.habits, rec.goal)
    return first + _no_option_reason(rec.option_rows.decided, rec.current, rec.budget, rec.goal)


FREE_INPUT_FIXES = (
    "more loader workers (DataLoader num_workers)",
    "pinned memory (pin_memory=True, non_blocking copies)",
    "prefetching (prefetch_factor, tf.data prefetch)",
    "preparing the data once, before training",
)


def input_bound_words(share: float | None) -> str:
    """What an input-bound run should do first, for free (empty when it is not input-bound)."""
    if share is None:
        return ""
    return (
        f"Your run waits for data {share:.0%} of each step (measured by advisor.track): a faster GPU shortens "
        f"only the rest, so no GPU can make it more than {1 / share:.3g}x faster. Fix the input pipeline first, "
        f"for free: {', '.join(FREE_INPUT_FIXES)}. Then: "
    )


def workload_notes(left_out: int, other_workloads: int) -> list[str]:
    if not left_out:
        return []
    return [
        f"left out {left_out} result(s) of {other_workloads} other workload(s): results are compared only within "
        "one workload"
    ]


def notes(rec: Recommendation, other_workloads: bool = True) -> list[str]:
    """What the recommendation left out, and why (its findings in words); the other workloads' results only with
    ``other_workloads`` (the app picks the workload in its sidebar, which lists them)."""
    found = rec.findings
    said = workload_notes(found.left_out_results, found.other_workloads) if other_workloads else []
    if found.unpriced:
        rentable = found.unpriced_rentable
        rent = f" ({rentable} of them can be rented: goal 'cost' weighs renting)" if rentable else ""
        said.append(
            f"{found.unpriced} faster option(s) have no known purchase price and are compared by speed only{rent}"
        )
    if found.stale:
        said.append(
            f"{found.stale} faster option(s) have only a launch price over {STALE_YEARS} years old (likely "
            "not sold new) and are not recommended to buy: give the price you were offered (--price "
            "GPU=USD, or the app's 'your price' column)"
        )
    if found.too_small and found.too_small_example is not None:
        example = found.too_small_example
        device = short_device(example.device)
        said.append(
            f"{found.too_small} faster option(s) cannot hold this workload at its batch "
            f"({batch_of(rec.current)}) in memory and are not recommended (e.g. {device}: "
            f"{example.memory_gb:.1f} GB needed, largest batch that fits {example.largest_batch:.0f}; "
            "another batch is another workload)"
        )
    if found.over_budget and rec.budget is not None:
        said.append(f"{found.over_budget} faster option(s) cost more than the budget of ${rec.budget:,.0f}")
    return said


def billing_words(billing_seconds: float | None, minimum_seconds: float | None) -> str:
    """'per second', 'per minute, at least 60 s', 'per hour' (the default where the catalog does not say)."""
    if billing_seconds is None or billing_seconds != billing_seconds:
        return "per hour (assumed)"
    units = {1: "per second", int(SECONDS_PER_MINUTE): "per minute", int(SECONDS_PER_HOUR): "per hour"}
    unit = units.get(int(billing_seconds), f"per {billing_seconds:g} s")
    minimum = minimum_seconds if minimum_seconds and minimum_seconds == minimum_seconds else 0
    return unit + (f", at least {minimum:g} s" if minimum else "")


def rent_advice(rec: Recommendation) -> str:
    """Whether renting would be cheaper than buying at the user's runs per week."""
    return _rent_words(rec.best, rec.best_rental, rec.habits)


PAYBACK_COUNTS_WORDS = {
    PaybackCounts.TIME_AND_ENERGY: "time and energy",
    PaybackCounts.TIME_ALONE: "time saved alone (power unknown)",
    PaybackCounts.NOTHING: "nothing (an hour is worth $0, power unknown)",
}


def payback_counts_words(counts: str | None) -> str | None:
    """What a payback counts, in words (the JSON's and the CSV's ``payback_counts``); None where it counts nothing
    known (no option was faster)."""
    return None if counts is None or missing(counts) else PAYBACK_COUNTS_WORDS[PaybackCounts(counts)]


ESTIMATED_MARK = " (estimated)"  # after the name of an option whose time is the catalog's estimate


def option_name(name: str, source: str | None) -> str:
    """An option's name as a buyer reads it: the profile's name, a catalog GPU's marked '(estimated)'."""
    return str(name) + (ESTIMATED_MARK if source == Source.ESTIMATED else "")


def option_names(frame: pd.DataFrame) -> pd.Series:
    """:func:`option_name` of every row of a frame."""
    names = frame["name"].astype(str)
    if "source" not in frame:
        return names
    return names.where(frame["source"] != Source.ESTIMATED, names + ESTIMATED_MARK)


def price_words_of(row: Any) -> str | None:
    """:func:`price_words` of a frame's row (a Series or a dict): the JSON's ``price_kind`` and the CSV's."""
    return price_words(
        row.get("price_basis"), row.get("price_date"), row.get("price_stale"), row.get("price_catalog_kind")
    )


def price_words(basis: str | None, date: str | None, stale: bool | None, catalog_kind: str | None) -> str | None:
    """What a price is, in words, from its facts (whose price, its date, whether it is a stale launch price, the
    catalog's kind): 'launch MSRP 2025-01', 'launch price (2017), likely not sold new', "the profile's price,
    2024-05", 'your price'; None without one."""
    date = "" if missing(date) else str(date)
    if basis == PriceBasis.YOURS:
        return "your price"
    if basis == PriceBasis.PROFILE:
        return f"the profile's price, {date[:7]}" if date else "the profile's price, undated"
    if basis == PriceBasis.CATALOG:
        return f"launch price ({date[:4]}), likely not sold new" if stale else f"{catalog_kind} {date[:7]}"
    return None


def describe_result(row: ResultRow) -> str:
    """``Titan RTX (the post), mixed_float16``: a result in words."""
    return describe(row.name, row.source, row.precision)


def describe(name: str, source: str | None, precision: str) -> str:
    """:func:`describe_result` of a result's name, source and precision (a table's row)."""
    return f"{option_name(name, source)}, {precision}"


def estimate_range(row: ResultRow) -> str:
    """'estimated, likely between 2.0 and 28 s' for a row whose time is estimated; '' for a measured or quoted one."""
    if row.source != Source.ESTIMATED or missing(row.low) or missing(row.high):
        return ""
    return f"estimated, likely between {fmt_seconds(row.low)} and {fmt_seconds(row.high)}"


def fmt_speedup(value: float) -> str:
    return f"{value:.2f}x" if value < 10 else f"{value:,.1f}x"


def fmt_weeks(value: float) -> str:
    if value == 0:
        return "at once"
    return f"in {value:,.1f} weeks" if value < 100 else f"in {value:,.0f} weeks"


def _best_reason(best: OptionRow, current: ResultRow, habits: Habits, goal: str) -> str:
    """The recommended option as a person would say it."""
    speed = fmt_speedup(best.speedup_vs_current)
    estimated = estimate_range(best)
    caveat = f" (estimated at {fmt_seconds(best.seconds)} a run, likely between " if estimated else ""
    if estimated:
        caveat += f"{fmt_seconds(best.low)} and {fmt_seconds(best.high)})"
    saving = (
        f"saving {fmt_duration(best.hours_saved_per_week * SECONDS_PER_HOUR)} a week at "
        f"{habits.runs_per_week:g} runs a week"
    )
    if best.free_upgrade:
        return (
            f"Switch to {_switch_words(best, current)} on the hardware you already have ({current.device}): "
            f"your runs get {speed} faster for $0{caveat}, {saving}."
        )
    device = short_device(best.device)
    if goal == Goal.COST and best.cheapest_way == "rent":
        return (
            f"Renting {article(device).lower()} {device} ({best.rental_provider}, "
            f"${best.rental_usd_per_hour:,.2f}/h) would make your runs {speed} faster{caveat} for "
            f"{fmt_usd_small(best.cloud_usd_per_run)} a run, {saving}: the lowest cost per run of the faster options."
        )
    cost = fmt_usd(best.upgrade_cost_usd)
    if (said := price_words(best.price_basis, best.price_date, best.price_stale, best.price_catalog_kind)) is not None:
        cost += f" ({said})"
    sentence = (
        f"{article(device)} {device} ({best.precision}) would make your runs {speed} faster"
        f"{caveat} for {cost} ({fmt_usd(best.dollars_per_speedup_vs_current)} per 1x), {saving}"
    )
    return sentence + "; " + _payback_words(best, habits) + "."


def _switch_words(best: ResultRow, current: ResultRow) -> str:
    """'mixed_float16', 'the jax backend' or 'mixed_bfloat16 with the jax backend': what changes for a free upgrade."""
    backend = best.backend
    other_backend = isinstance(backend, str) and backend != current.backend
    if not other_backend:
        return str(best.precision)
    if best.precision == current.precision:
        return f"the {backend} backend"
    return f"{best.precision} with the {backend} backend"


def article(name: str) -> str:
    """'a' or 'an' as the name is said: an RTX 4090, an H100, an A100, a GTX 1070 Ti, a Titan RTX."""
    first = str(name).split()[0] if str(name).split() else ""
    initialism = first.isupper() or any(ch.isdigit() for ch in first)
    vowel_sound = first[:1].upper() in "AEIOU" or (initialism and first[:1].upper() in "AEFHILMNORSX")
    return "An" if vowel_sound else "A"


def batch_of(row: ResultRow) -> str:
    """'batch 100': the batch a result's workload trains at ('its batch' where its description does not say)."""
    spec = row.workload_spec
    return f"batch {spec['batch_size']}" if isinstance(spec, dict) and "batch_size" in spec else "its batch"


def _payback_words(option: OptionRow, habits: Habits) -> str:
    weeks = option.payback_weeks
    alone = option.payback_counts != PaybackCounts.TIME_AND_ENERGY
    if missing(weeks):
        if habits.hour_value == 0:
            return "say what an hour of waiting is worth to see when it pays for itself"
        return f"at ${habits.hour_value:,.0f} an hour it never pays for itself"
    counted = " (counting the time saved alone: the power is unknown)" if alone and habits.hour_value else ""
    value = f" at ${habits.hour_value:,.0f} an hour" if habits.hour_value else " in energy saved"
    if option.payback_beyond_lifetime:
        years = f"{habits.lifetime_years:g} years"
        return f"it does not pay for itself within the {years} you keep hardware{value}{counted}"
    return f"it pays for itself {fmt_weeks(weeks)}{value}{counted}"


def _rent_words(best: OptionRow | None, rental: OptionRow | None, habits: Habits) -> str:
    """Whether renting would be cheaper than buying at the user's runs per week."""
    if rental is None:
        return "No faster option has a known rental price."
    runs = habits.runs_per_week
    device = short_device(rental.device)
    hourly = f"${rental.rental_usd_per_hour:,.2f}/h"
    billing = billing_words(rental.rental_billing_seconds, rental.rental_minimum_seconds)
    rented = f"Renting {article(device).lower()} {device} ({rental.rental_provider}, {hourly}, billed {billing})"
    session = (
        f"{habits.runs_per_session:g} run(s) a session after {habits.session_minutes:g} minutes' start-up"
        if habits.session_minutes or habits.runs_per_session != 1
        else ""
    )
    per_run = f"costs {fmt_usd_small(rental.cloud_usd_per_run)} a run" + (f" ({session})" if session else "")
    if best is None or best.free_upgrade or missing(best.usd_per_run_owned):
        return f"{rented} {per_run} ({fmt_speedup(rental.speedup_vs_current)} faster)."
    owned = best.usd_per_run_owned
    verdict = "cheaper" if rental.cloud_usd_per_run < owned else "dearer"
    owning = short_device(best.device)
    return (
        f"{rented} {per_run}: {verdict} than owning {article(owning).lower()} {owning} at {runs:g} runs a week "
        f"({fmt_usd_small(owned)} a run over {habits.lifetime_years:g} years, energy included)."
    )


def _no_option_reason(options: pd.DataFrame, current: ResultRow, budget: float | None, goal: str) -> str:
    """Why nothing was recommended, in the order the analysis rules options out (its options' decided columns)."""
    faster = options[options["faster"].to_numpy(dtype=bool)]
    if faster.empty:
        return f"Nothing in the profiles is faster than your {describe_result(current)}: keep it."
    fitting = faster[~faster["fits"].eq(False).to_numpy()]
    if fitting.empty:
        return "The faster options do not have the memory this job needs, so none can be recommended."
    priced = fitting[fitting["upgrade_cost_usd"].notna().to_numpy()]
    if priced.empty:
        return "The faster options have no known price, so none can be recommended; add their prices."
    current_prices = priced[~priced["price_stale"].fillna(False).to_numpy(dtype=bool)]
    if current_prices.empty:
        return (
            f"The faster options' only prices are launch prices over {STALE_YEARS} years old, so none can be "
            "recommended; add what they sell for today."
        )
    cheapest = current_prices["upgrade_cost_usd"].min()
    if budget is not None and cheapest > budget:
        return f"No faster option fits the budget of ${budget:,.0f}; the cheapest faster one costs ${cheapest:,.0f}."
    if goal == Goal.COST:  # the cost goal ranks only options whose cost per run is known
        return (
            "No faster option has a known cost per run (its power draw or a rental price is needed), so none "
            "can be recommended for cost; the goals 'value' and 'speed' need a price alone."
        )
    return "No faster option can be recommended: the notes say what was left out."
