"""The table machinery every text rendering shares: a column is (head, render one row as text). No I/O."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from advisor.format.formatting import fmt_seconds, fmt_seconds_number, missing
from advisor.format.vocabulary import Source


def fmt_seconds_with_source(row: pd.Series) -> str:
    """Seconds as the source allows: ``~16.0 s`` (rounded quote), ``1,573 s ± 34`` (--quick), ``7.5 s (2.0-28)``
    (a catalog estimate and its range)."""
    text = fmt_seconds(row["seconds"])
    if row.get("approximate"):
        text = "~" + text
    error = row.get("estimate_error_seconds")
    if not missing(error):
        text += f" ± {error:.2g}"
    elif row.get("source") == Source.ESTIMATED and not missing(row.get("low")) and not missing(row.get("high")):
        text += f" ({fmt_seconds_number(row['low'])}-{fmt_seconds_number(row['high'])})"
    return text


Column = tuple[str, Callable[[Any], str]]  # renders one row (a dict or a Series) as text


def table_frame(records: Sequence[Any], columns: Sequence[Column]) -> pd.DataFrame:
    """Rows rendered as the app shows a table: one text column per (head, render)."""
    return pd.DataFrame({name: [render(r) for r in records] for name, render in columns})


def text_table(frame: pd.DataFrame, columns: Sequence[Column]) -> str:
    """A fixed-width table of a frame's rows; numbers right-aligned."""
    return text_table_of(frame.to_dict("records"), columns, left={"profile", "device", "precision", "source"})


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


def text_table_of(items: Sequence[Any], columns: Sequence[Column], left: set[str]) -> str:
    """A fixed-width table of any items (numbers right-aligned, the ``left`` columns left-aligned)."""
    header = [name for name, _ in columns]
    body = [[render(item) for _, render in columns] for item in items]
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if h in left else c.rjust(w) for c, w, h in zip(cells, widths, header, strict=True)
        ).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in body)])
