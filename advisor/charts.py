"""Altair charts of the analysis (no Streamlit, no I/O): built from analysis frames, shown by the app."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from advisor import typed
from advisor.analysis import best_value_frontier
from advisor.vocabulary import Source, words

SOURCE_COLORS = alt.Scale(domain=list(words(Source)), range=["#1f77b4", "#ff7f0e", "#7f7f7f"])


def _labelled(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out["option"] = out["name"].astype(str) + " · " + out["precision"].astype(str)
    return out


def speedup_chart(options: pd.DataFrame, column: str = "speedup_vs_current") -> alt.Chart:
    """Horizontal bars: speedup of each option over the current hardware (1x marked); an estimate's likely range
    as an error bar."""
    data = _labelled(options)
    current_seconds = data["seconds"] * data[column]
    data = data.assign(
        speedup=data[column], fastest=current_seconds / data["low"], slowest=current_seconds / data["high"]
    )
    data = data[["option", "speedup", "source", "seconds", "fastest", "slowest"]]
    bars = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("speedup:Q", title="speedup over current (x, log scale)", scale=alt.Scale(type="log")),
            x2=alt.X2(datum=1.0),  # bars grow from 1x: right when faster, left when slower
            y=alt.Y("option:N", sort="-x", title=None, axis=alt.Axis(labelLimit=320)),
            color=alt.Color("source:N", scale=SOURCE_COLORS, title="source"),
            tooltip=[
                "option",
                alt.Tooltip("speedup:Q", format=".2f"),
                alt.Tooltip("seconds:Q", format=",.1f"),
                "source",
            ],
        )
    )
    ranges = (
        alt.Chart(data[data["fastest"].notna()])
        .mark_errorbar(ticks=True, color="#333333")
        .encode(x=alt.X("slowest:Q"), x2="fastest:Q", y=alt.Y("option:N", sort="-x"))
    )
    rule = alt.Chart(pd.DataFrame({"x": [1.0]})).mark_rule(strokeDash=[4, 4]).encode(x="x:Q")
    return (bars + ranges + rule).properties(
        title="Speedup over your current hardware (dashed: 1x, today; whiskers: an estimate's likely range)"
    )


def price_time_points(frame: pd.DataFrame, most: int) -> pd.DataFrame:
    """The results a price-time chart draws: every one on the best-value frontier and the ``most`` fastest priced."""
    priced = frame[frame["price_usd"].notna()]
    if len(priced) <= most:
        return frame
    keep = best_value_frontier(priced) | priced.index.isin(priced.nsmallest(most, "seconds").index)
    return priced[keep]


def price_time_chart(frame: pd.DataFrame) -> alt.Chart:
    """Price against training time, with the best-value frontier drawn through the unbeaten results."""
    data = _labelled(frame)
    data = data[data["price_usd"].notna()].copy()
    data["frontier"] = best_value_frontier(data)
    data = data[["option", "price_usd", "seconds", "source", "frontier", "low", "high"]]
    points = (
        alt.Chart(data)
        .mark_circle(size=90, opacity=0.85)
        .encode(
            x=alt.X("price_usd:Q", title="price (USD)"),
            y=alt.Y("seconds:Q", title="training time (s, log scale)", scale=alt.Scale(type="log")),
            color=alt.Color("source:N", scale=SOURCE_COLORS, title="source"),
            tooltip=[
                "option",
                alt.Tooltip("price_usd:Q", format="$,.0f"),
                alt.Tooltip("seconds:Q", format=",.1f"),
                "source",
                "frontier",
            ],
        )
    )
    line = (
        alt.Chart(data[data["frontier"]])
        .mark_line(interpolate="step-after", color="#2ca02c", strokeWidth=2)
        .encode(x="price_usd:Q", y="seconds:Q", order="price_usd:Q")
    )
    ranges = (
        alt.Chart(data[data["low"].notna()])
        .mark_rule(color="#7f7f7f", opacity=0.6)
        .encode(x="price_usd:Q", y="low:Q", y2="high:Q")
    )
    return (ranges + line + points).properties(
        title="Price against training time; green: the best-value frontier; grey bars: estimates' likely ranges"
    )


def dollars_per_speedup_chart(options: pd.DataFrame) -> alt.Chart:
    """Bars: dollars per 1x of speedup over the current hardware (lower is better)."""
    data = _labelled(options)
    data = data[data["dollars_per_speedup_vs_current"].notna()][["option", "dollars_per_speedup_vs_current", "source"]]
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("dollars_per_speedup_vs_current:Q", title="USD per 1x of speedup (lower is better)"),
            y=alt.Y("option:N", sort="x", title=None, axis=alt.Axis(labelLimit=320)),
            color=alt.Color("source:N", scale=SOURCE_COLORS, title="source"),
            tooltip=["option", alt.Tooltip("dollars_per_speedup_vs_current:Q", format="$,.2f"), "source"],
        )
        .properties(title="Dollars per 1x of speedup over your current hardware")
    )


def epoch_times_chart(profile: Any) -> alt.Chart | None:
    """Per-epoch wall times of a measured profile, one line per precision (None when not recorded)."""
    rows = [
        {"epoch": index + 1, "seconds": value, "precision": result.precision}
        for result in typed.of(profile).results
        for index, value in enumerate(result.epoch_seconds or ())
    ]
    if not rows:
        return None
    return (
        alt.Chart(pd.DataFrame(rows))
        .mark_line(point=True)
        .encode(
            x=alt.X("epoch:Q", title="epoch"),
            y=alt.Y("seconds:Q", title="wall time (s)"),
            color=alt.Color("precision:N"),
            tooltip=["precision", "epoch", alt.Tooltip("seconds:Q", format=".3f")],
        )
        .properties(title="Every epoch's wall time (the first includes tracing and warm-up)")
    )


def cumulative_cost_chart(lines: pd.DataFrame, crossings: pd.DataFrame) -> alt.LayerChart:
    """Cumulative cost against the number of runs (costs.cumulative_costs), with the break-even points marked."""
    chart = (
        alt.Chart(lines)
        .mark_line(strokeWidth=2.5)
        .encode(
            x=alt.X("runs:Q", title="training runs"),
            y=alt.Y("usd:Q", title="cumulative cost (USD)", axis=alt.Axis(format="$,.0f")),
            color=alt.Color("option:N", title=None, legend=alt.Legend(orient="top", labelLimit=360)),
            tooltip=["option", alt.Tooltip("runs:Q", format=",.0f"), alt.Tooltip("usd:Q", format="$,.2f")],
        )
    )
    if crossings.empty:
        return chart.properties(title="What each choice costs as you train (purchase price, energy, waiting time)")
    marks = (
        alt.Chart(crossings)
        .mark_point(size=140, filled=True, color="black", shape="diamond")
        .encode(x="runs:Q", y="usd:Q", tooltip=["label", alt.Tooltip("runs:Q", format=",.0f")])
    )
    labels = (
        alt.Chart(crossings)
        .mark_text(align="left", dx=8, dy=-10, fontSize=12)
        .encode(x="runs:Q", y="usd:Q", text="label:N")
    )
    return (chart + marks + labels).properties(
        title="What each choice costs as you train (purchase price, energy, waiting time); diamonds: break-even"
    )
