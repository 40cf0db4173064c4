"""Plain-text and Markdown renderings of comparisons and recommendations (no I/O)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from advisor.analysis import Comparison, Recommendation


def fmt_seconds(value: float) -> str:
    if _missing(value):
        return "-"
    if value >= 100:
        return f"{value:,.0f} s"
    return f"{value:.3g} s" if value < 10 else f"{value:.1f} s"


def fmt_usd(value: float) -> str:
    if _missing(value):
        return "unknown"
    return f"${value:,.2f}" if value < 100 and value != int(value) else f"${value:,.0f}"


def fmt_times(value: float) -> str:
    return "-" if _missing(value) else f"{value:.2f}x"


def fmt_rate(value: float) -> str:
    return "-" if _missing(value) else f"{value:,.1f}"


def fmt_seconds_with_source(row: pd.Series) -> str:
    text = fmt_seconds(row["seconds"])
    if row.get("approximate"):
        text = "~" + text
    error = row.get("estimate_error_seconds")
    if not _missing(error):
        text += f" ± {error:.2g}"
    return text


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


Column = tuple[str, Callable[[Any], str]]  # renders one row (a dict or a Series) as text

COMPARE_COLUMNS: list[Column] = [
    ("profile", lambda r: r["profile"]),
    ("device", lambda r: r["device"]),
    ("precision", lambda r: r["precision"]),
    ("seconds", fmt_seconds_with_source),
    ("price", lambda r: fmt_usd(r["price_usd"])),
    ("speedup", lambda r: fmt_times(r["speedup"])),
    ("$/speedup", lambda r: fmt_usd(r["dollars_per_speedup"])),
    ("runs/h", lambda r: fmt_rate(r["runs_per_hour"])),
    ("source", lambda r: r["source"]),
]

OPTION_COLUMNS: list[Column] = [
    ("profile", lambda r: r["profile"]),
    ("device", lambda r: r["device"]),
    ("precision", lambda r: r["precision"]),
    ("seconds", fmt_seconds_with_source),
    ("speedup", lambda r: fmt_times(r["speedup_vs_current"])),
    ("cost", lambda r: "free" if r["free_upgrade"] else fmt_usd(r["upgrade_cost_usd"])),
    ("$/speedup", lambda r: fmt_usd(r["dollars_per_speedup_vs_current"])),
    ("$/added run/h", lambda r: fmt_usd(r["dollars_per_added_run_per_hour"])),
    ("source", lambda r: r["source"]),
]


def text_table(frame: pd.DataFrame, columns: Sequence[Column]) -> str:
    """A fixed-width table; numbers right-aligned."""
    header = [name for name, _ in columns]
    body = [[render(row) for _, render in columns] for row in frame.to_dict("records")]
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(header)]
    left = {"profile", "device", "precision", "source"}

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if h in left else c.rjust(w) for c, w, h in zip(cells, widths, header, strict=True)
        ).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in body)])


def comparison_text(comparison: Comparison) -> str:
    base = comparison.baseline
    lines = [
        f"Baseline: {base['profile']} ({base['precision']}), {fmt_seconds(base['seconds'])}",
        "",
        text_table(comparison.table, COMPARE_COLUMNS),
    ]
    lines += [f"Note: {note}" for note in comparison.notes]
    return "\n".join(lines)


HOURS_COLUMN: Column = ("h saved/week", lambda r: f"{r['hours_saved_per_week']:,.2f}")


def recommendation_text(rec: Recommendation) -> str:
    current = rec.current
    columns = OPTION_COLUMNS + ([HOURS_COLUMN] if "hours_saved_per_week" in rec.options.columns else [])
    lines = [
        f"Current: {current['profile']} ({current['precision']}), {fmt_seconds(current['seconds'])}",
        "",
        f"Recommendation: {rec.reason}",
        "",
        "Options:",
        text_table(rec.options, columns) if len(rec.options) else "(none: no other results of this workload)",
    ]
    lines += [f"Note: {note}" for note in rec.notes]
    return "\n".join(lines)


def markdown_safe(text: object) -> str:
    """Escape Markdown (and Streamlit's :directives:, $LaTeX$) so profile text shows as plain text."""
    out = []
    for ch in str(text):
        if ch in "\\`*_{}[]()#+-.!|<>~:$&=\"'":
            out.append("\\" + ch)
        elif ch in "\r\n":
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


def recommendation_markdown(rec: Recommendation) -> str:
    """The recommendation and its options as a Markdown document (for download)."""
    current = rec.current
    lines = [
        "# Upgrade recommendation",
        "",
        f"Current hardware: **{markdown_safe(current['name'])}** ({markdown_safe(current['precision'])}), "
        f"{markdown_safe(fmt_seconds(current['seconds']))} for the workload.",
        "",
        f"**Recommendation:** {markdown_safe(rec.reason)}",
        "",
        "| " + " | ".join(name for name, _ in OPTION_COLUMNS) + " |",
        "|" + "---|" * len(OPTION_COLUMNS),
    ]
    for row in rec.options.to_dict("records"):
        lines.append("| " + " | ".join(markdown_safe(render(row)) for _, render in OPTION_COLUMNS) + " |")
    if rec.notes:
        lines.append("")
        lines += [f"- {markdown_safe(note)}" for note in rec.notes]
    lines += [
        "",
        "Figures: speedup = current seconds / option seconds; $/speedup = upgrade cost / speedup; "
        "$/added run/h = upgrade cost / (option runs per hour - current runs per hour). "
        "Source says whether each time was measured by advisor, quoted from a source, or estimated.",
    ]
    return "\n".join(lines) + "\n"
