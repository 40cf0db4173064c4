"""Altair charts of the analysis (no Streamlit, no I/O): built from analysis frames, shown by the app."""

from __future__ import annotations

import altair as alt
import pandas as pd

from advisor.analysis import best_value_frontier

SOURCE_COLORS = alt.Scale(domain=["measured", "quoted", "estimated"], range=["#1f77b4", "#ff7f0e", "#7f7f7f"])


def _labelled(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out["option"] = out["name"].astype(str) + " · " + out["precision"].astype(str)
    return out


def speedup_chart(options: pd.DataFrame, column: str = "speedup_vs_current") -> alt.Chart:
    """Horizontal bars: speedup of each option over the current hardware (1x marked)."""
    data = _labelled(options)[["option", column, "source", "seconds"]].rename(columns={column: "speedup"})
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
    rule = alt.Chart(pd.DataFrame({"x": [1.0]})).mark_rule(strokeDash=[4, 4]).encode(x="x:Q")
    return (bars + rule).properties(title="Speedup over your current hardware (dashed: 1x, your hardware today)")


def price_time_chart(frame: pd.DataFrame) -> alt.Chart:
    """Price against training time, with the best-value frontier drawn through the unbeaten results."""
    data = _labelled(frame)
    data = data[data["price_usd"].notna()].copy()
    data["frontier"] = best_value_frontier(data)
    data = data[["option", "price_usd", "seconds", "source", "frontier"]]
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
    return (line + points).properties(title="Price against training time; green: the best-value frontier")


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


def epoch_times_chart(profile_data: dict) -> alt.Chart | None:
    """Per-epoch wall times of a measured profile, one line per precision (None when not recorded)."""
    rows = [
        {"epoch": index + 1, "seconds": value, "precision": result["precision"]}
        for result in profile_data.get("results", [])
        for index, value in enumerate(result.get("epoch_seconds") or [])
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
