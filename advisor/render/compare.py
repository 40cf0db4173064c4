"""compare's and recommend's words: the comparison, the recommendation (text and Markdown) and the app's options
table. No I/O."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from advisor.decision.analysis import Comparison, Recommendation
from advisor.format.formatting import fmt_seconds, fmt_times, fmt_usd, missing
from advisor.format.metrics import column, markdown_definitions
from advisor.format.vocabulary import PaybackCounts, Precision, PriceBasis, Source
from advisor.render import basis, prose
from advisor.render.tables import Column, fmt_seconds_with_source, markdown_safe, table_frame, text_table, text_table_of

COMPARE_COLUMNS: list[Column] = [
    ("profile", lambda r: r["profile"]),
    ("device", lambda r: r["device"]),
    ("precision", lambda r: r["precision"]),
    column("seconds", fmt_seconds_with_source),
    ("price", lambda r: fmt_usd(r["price_usd"])),
    column("speedup"),
    column("dollars_per_speedup"),
    column("runs_per_hour"),
    ("source", lambda r: r["source"]),
]


def fmt_payback(row: Any) -> str:
    """:func:`payback_text` of an options table's row (a dict or a Series), as its narrow column says it."""
    return payback_text(
        row["payback_weeks"],
        row["payback_counts"],
        bool(row.get("payback_beyond_lifetime")),
        bool(row["faster"]) and not missing(row["upgrade_cost_usd"]),
    )


def payback_text(
    weeks: float, counts: str | None, beyond_lifetime: bool, faster_and_priced: bool, weeks_word: str = "wk"
) -> str:
    """Weeks to pay back ('now' for free, 'never'), '*' when it counts the time saved alone (power unknown).
    ``weeks_word``: the unit after the number ('wk' in a table's narrow column, 'weeks' in a headline)."""
    if missing(weeks):
        if not faster_and_priced:
            return "-"
        return "unknown" if counts == PaybackCounts.NOTHING else "never"
    if beyond_lifetime:
        return "> lifetime"
    text = "now" if weeks == 0 else f"{weeks:,.1f} {weeks_word}"
    return text + ("*" if payback_counts_time_alone(weeks, counts) else "")


def payback_counts_time_alone(weeks: float, counts: str | None) -> bool:
    """True when a payback in weeks counts the time saved alone (the power is unknown): marked '*'."""
    return bool(not missing(weeks) and weeks and counts != PaybackCounts.TIME_AND_ENERGY)


def _upgrade_cost(row: Any) -> str:
    return "free" if row["free_upgrade"] else fmt_usd(row["upgrade_cost_usd"])


OPTION_COLUMNS: list[Column] = [
    ("profile", lambda r: r["profile"]),
    ("precision", lambda r: r["precision"]),
    column("seconds", fmt_seconds_with_source),
    column("speedup_vs_current"),
    column("upgrade_cost_usd", _upgrade_cost),
    column("dollars_per_speedup_vs_current"),
    column("hours_saved_per_week"),
    column("payback_weeks", fmt_payback),
    column("usd_per_run_owned"),
    column("cloud_usd_per_run"),
    ("source", lambda r: r["source"]),
]


def comparison_text(comparison: Comparison) -> str:
    base = comparison.baseline
    lines = [
        f"Baseline: {base.profile} ({base.precision}), {fmt_seconds(base.seconds)}",
        "",
        text_table(comparison.table, COMPARE_COLUMNS),
    ]
    lines += [f"Note: {note}" for note in prose.workload_notes(comparison.left_out_results, comparison.other_workloads)]
    return "\n".join(lines)


LADDER_COLUMNS: list[Column] = [
    ("step", lambda r: f"{r['profile']} ({r['precision']})"),
    column("upgrade_cost_usd"),
    column("seconds", fmt_seconds_with_source),
    column("runs_per_hour"),
    column("marginal_usd_per_added_run_per_hour"),
    column("marginal_usd_per_hour_saved_per_week"),
]


DEVICE_COLUMNS: list[Column] = [
    ("option", lambda r: prose.option_name(r["name"], r.get("source"))),  # not the id ("catalog:gtx-1080-ti:2x")
    ("precision", lambda r: r["precision"]),
    ("machines", lambda r: f"{r['scaling_workers']:.0f}" if r["scaling_workers"] == r["scaling_workers"] else "1"),
    ("devices", lambda r: f"{r['scaling_devices']:.0f}"),
    ("speedup over one", lambda r: fmt_times(r["scaling_speedup"])),
    ("efficiency", lambda r: f"{100 * r['efficiency']:.0f}%"),
    ("added 1x per device", lambda r: f"{r['added_speedup_per_device']:.2f}x"),
    ("added 1x per machine", lambda r: fmt_times(r["added_speedup_per_machine"])),
    ("price per device", lambda r: fmt_usd(r["price_per_device"])),
    ("$ per added 1x", lambda r: fmt_usd(r["usd_per_added_1x"])),
]


def habits_line(rec: Recommendation) -> str:
    h = rec.habits
    return (
        f"Goal: {rec.goal}; {h.runs_per_week:g} runs a week, an hour worth ${h.hour_value:,.2f}, "
        f"${h.kwh_price:g} per kWh, bought hardware kept {h.lifetime_years:g} years, current hardware resold for "
        f"{fmt_usd(h.resale_usd)}; a rented session starts in {h.session_minutes:g} minutes and holds "
        f"{h.runs_per_session:g} run(s)."
    )


def recommendation_text(rec: Recommendation) -> str:
    current = rec.current
    lines = [
        f"Current: {current.profile} ({current.precision}), {fmt_seconds(current.seconds)}",
        habits_line(rec),
        "",
        f"Recommendation: {prose.reason(rec)}",
        f"Renting: {prose.rent_advice(rec)}",
        "",
        "Options (payback * counts the time saved alone: the power is unknown):",
        text_table(rec.options, OPTION_COLUMNS) if len(rec.options) else "(none: no other results of this workload)",
    ]
    if rec.devices is not None and len(rec.devices):
        lines += [
            "",
            "What each added device or machine buys (measured with one device in the same run):",
            text_table_of(rec.devices.to_dict("records"), DEVICE_COLUMNS, left={"option", "precision"}),
        ]
    if rec.ladder is not None and len(rec.ladder):
        lines += [
            "",
            "Upgrade ladder (where returns fall off):",
            text_table_of(rec.ladder.to_dict("records"), LADDER_COLUMNS, left={"step"}),
        ]
    lines += [f"Note: {note}" for note in prose.notes(rec)]
    return "\n".join(lines)


def recommendation_markdown(rec: Recommendation) -> str:
    """The recommendation, its options and the definitions of every figure as a Markdown document (for download)."""
    current = rec.current
    lines = [
        "# Upgrade recommendation",
        "",
        f"Current hardware: **{markdown_safe(prose.option_name(current.name, current.source))}** "
        f"({markdown_safe(current.precision)}), {markdown_safe(fmt_seconds(current.seconds))} for the workload.",
        "",
        f"**Recommendation:** {markdown_safe(prose.reason(rec))}",
        "",
        "| " + " | ".join(name for name, _ in OPTION_COLUMNS) + " |",
        "|" + "---|" * len(OPTION_COLUMNS),
    ]
    for row in rec.options.to_dict("records"):
        lines.append("| " + " | ".join(markdown_safe(render(row)) for _, render in OPTION_COLUMNS) + " |")
    if prose.notes(rec):
        lines.append("")
        lines += [f"- {markdown_safe(note)}" for note in prose.notes(rec)]
    lines += [
        "",
        markdown_safe(habits_line(rec)),
        "",
        f"**Renting:** {markdown_safe(prose.rent_advice(rec))}",
        "",
        "## What the numbers mean",
        "",
        markdown_definitions(),
        "Source says whether each time was measured by advisor, quoted from a source, or estimated (with its "
        "likely range in brackets).",
    ]
    return "\n".join(lines) + "\n"


# The app's options table: the deciding columns first, every cell text with its unit, "unknown" for a value
# nobody knows (never None or NaN). The CSV download keeps the numbers.
PRECISION_SHORT = {precision.value: precision.short for precision in Precision}


def fmt_range_seconds(row: Any) -> str:
    """Seconds, with an estimate's likely range in two significant digits: '2.7 s (0.72-10)'."""
    estimated_range = not missing(row.get("low")) and missing(row.get("estimate_error_seconds"))
    if row.get("source") != Source.ESTIMATED or not estimated_range:
        return fmt_seconds_with_source(row)

    def short(value: float) -> str:
        return f"{value:.2g}" if value < 10 else f"{value:,.0f}"

    return f"{short(row['seconds'])} s ({short(row['low'])}-{short(row['high'])})"


def _display(key: str, render: Callable[[Any], str] | None = None) -> tuple[str, str, Callable[[Any], str]]:
    """A metric's column in the app: its head, its key (for the help text) and its cell."""
    head, cell = column(key, render)
    return head, key, cell


# (header, metric key for the help text, render): the deciding columns first.
DISPLAY_COLUMNS: list[tuple[str, str, Callable[[Any], str]]] = [
    ("option", "", lambda r: str(r["name"])),  # the source column says whether it is estimated
    ("precision", "", lambda r: PRECISION_SHORT.get(r["precision"], r["precision"])),
    _display("speedup_vs_current"),
    _display("upgrade_cost_usd", _upgrade_cost),
    (
        "price is",
        "",
        lambda r: "-" if r["free_upgrade"] or not isinstance(r.get("price_basis"), str) else short_price_kind(r),
    ),
    _display(
        "dollars_per_speedup_vs_current", lambda r: fmt_usd(r["dollars_per_speedup_vs_current"]) if r["faster"] else "-"
    ),
    _display("payback_weeks", fmt_payback),
    _display("usd_per_run_owned"),
    _display("cloud_usd_per_run"),
    _display("seconds", fmt_range_seconds),
    ("source", "", lambda r: "does not fit" if r.get("fits") is False or r.get("fits") is np.False_ else r["source"]),
]


# A catalog price's kind in a word or two, for the app's narrow column (the catalog's own words elsewhere).
CATALOG_KIND_SHORT = {"launch MSRP": "MSRP", "system price per GPU (Lambda)": "Lambda"}


def short_price_kind(row: Any) -> str:
    """A price's kind and date in a few words, for a narrow column: 'MSRP 2022-10', 'Lambda 2024-07', '2017 launch
    (old)', 'profile 2024-05', 'yours' (the full words, :func:`prose.price_words`, are in the CSV, the JSON and the
    Markdown);
    written from the row's facts (whose price, its kind, date and age), never read back out of those words."""
    basis, date = row.get("price_basis"), row.get("price_date")
    date = "" if missing(date) else str(date)
    if basis == PriceBasis.YOURS:
        return "yours"
    if basis == PriceBasis.PROFILE:
        return f"profile {date[:7]}" if date else "profile, undated"
    if row.get("price_stale"):
        return f"{date[:4]} launch (old)"
    kind = str(row.get("price_catalog_kind") or "")
    return f"{CATALOG_KIND_SHORT.get(kind, kind)} {date[:7]}".strip()


# The options' columns the app shows behind its "More columns" toggle: the rest are what a buyer decides on.
MORE_COLUMNS = ("price is", "rent / run")


def options_display(options: pd.DataFrame) -> pd.DataFrame:
    """The options as the app shows them (text cells, units, 'unknown')."""
    records = options.to_dict("records")
    return table_frame(records, [(name, render) for name, _, render in DISPLAY_COLUMNS])


def options_csv(rec: Recommendation) -> str:
    """Every option with its numbers, as CSV (the app's download): an estimate's basis as its sentence."""
    options = rec.options.drop(columns=["workload"])
    words = [prose.price_words_of(row) for row in options.to_dict("records")]
    options.insert(list(options.columns).index("price_date") + 1, "price_kind", words)
    options["payback_counts"] = [prose.payback_counts_words(counts) for counts in options["payback_counts"]]
    return options.assign(basis=options["basis"].map(basis.sentence)).to_csv(index=False)
