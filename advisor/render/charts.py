"""Charts of the analysis as Vega-Lite specifications (plain dicts; no Streamlit, no I/O), shown by the app.

Written as Vega-Lite rather than through Altair: Altair validated every chart against the whole Vega-Lite JSON
Schema at each re-run (about 0.1 s a chart on a 2-vCPU host, more than the analysis behind it) and took 0.5 s
to import at every restart. A spec's data are named datasets (``spec["datasets"]``: DataFrames), which
Streamlit's ``st.vega_lite_chart`` sends as Arrow tables, as it does Altair's.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from advisor.format.vocabulary import CostKind, Source, words
from advisor.render.prose import ESTIMATED_MARK, option_names
from advisor.store.parse import tree_of

Spec = dict[str, Any]
SOURCE_COLORS = {"domain": list(words(Source)), "range": ["#1f77b4", "#ff7f0e", "#7f7f7f"]}
_TYPES = {"Q": "quantitative", "N": "nominal"}


def channel(shorthand: str, **options: Any) -> dict[str, Any]:
    """One encoding channel from Altair-style shorthand: ``"seconds:Q"`` (a field and its type) or ``"option"``
    (a field, nominal), with any other property (title, scale, axis, format, sort)."""
    field, _, kind = shorthand.partition(":")
    return {"field": field, "type": _TYPES[kind or "N"], **options}


def source_color() -> dict[str, Any]:
    """Colour by where a figure came from (measured, quoted, estimated), the same three colours in every chart."""
    return channel("source:N", scale=SOURCE_COLORS, title="source")


def layer(dataset: str, mark: dict[str, Any], **encoding: Any) -> Spec:
    """One layer of a chart: a named dataset drawn with a mark and its encoding channels."""
    return {"data": {"name": dataset}, "mark": mark, "encoding": encoding}


def chart(title: str, datasets: dict[str, pd.DataFrame], *layers: Spec) -> Spec:
    """A whole chart: its layers over named datasets (one layer stands alone, several are layered)."""
    body: Spec = layers[0] if len(layers) == 1 else {"layer": list(layers)}
    return {**body, "title": title, "datasets": datasets}


def _labelled(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out["option"] = option_names(out) + " · " + out["precision"].astype(str)
    return out


def speedup_chart(options: pd.DataFrame, column: str = "speedup_vs_current") -> Spec:
    """Horizontal bars: speedup of each option over the current hardware (1x marked); an estimate's likely range
    as an error bar."""
    data = _labelled(options)
    current_seconds = data["seconds"] * data[column]
    data = data.assign(
        speedup=data[column], fastest=current_seconds / data["low"], slowest=current_seconds / data["high"]
    )
    data = data[["option", "speedup", "source", "seconds", "fastest", "slowest"]]
    # Fastest first, named in full: "-x" sorts a layer alone, and the layers' sorts disagreed (alphabetical then)
    order = list(dict.fromkeys(data.sort_values("speedup", ascending=False, kind="stable")["option"]))
    by_speedup = channel("option:N", sort=order, title=None, axis={"labelLimit": 320})
    title = "speedup over current (x, log scale)"  # both layers' x: one title, not two joined
    return chart(
        "Speedup over your current hardware (dashed: 1x, today; whiskers: an estimate's likely range)",
        {"options": data, "ranges": data[data["fastest"].notna()], "one": pd.DataFrame({"x": [1.0]})},
        layer(
            "options",
            {"type": "bar"},
            x=channel("speedup:Q", title=title, scale={"type": "log"}),
            x2={"datum": 1.0},  # bars grow from 1x: right when faster, left when slower
            y=by_speedup,
            color=source_color(),
            tooltip=[
                channel("option"),
                channel("speedup:Q", format=".2f"),
                channel("seconds:Q", format=",.1f"),
                channel("source"),
            ],
        ),
        layer(
            "ranges",
            {"type": "errorbar", "ticks": True, "color": "#333333"},
            x=channel("slowest:Q", title=title),
            x2={"field": "fastest"},
            y=by_speedup,
        ),
        layer("one", {"type": "rule", "strokeDash": [4, 4]}, x=channel("x:Q")),
    )


def price_time_chart(frame: pd.DataFrame) -> Spec:
    """Price against training time, with the best-value frontier drawn through the unbeaten results (``frame``:
    :func:`advisor.decision.analysis.price_time_points`'s, its ``frontier`` column decided there)."""
    data = _labelled(frame)
    data = data[data["price_usd"].notna()].copy()
    data = data[["option", "price_usd", "seconds", "source", "frontier", "low", "high"]]
    return chart(
        "Price against training time; green: the best-value frontier; grey bars: estimates' likely ranges",
        {"results": data, "frontier": data[data["frontier"]], "ranges": data[data["low"].notna()]},
        layer(
            "ranges",
            {"type": "rule", "color": "#7f7f7f", "opacity": 0.6},
            x=channel("price_usd:Q"),
            y=channel("low:Q"),
            y2={"field": "high"},
        ),
        layer(
            "frontier",
            {"type": "line", "interpolate": "step-after", "color": "#2ca02c", "strokeWidth": 2},
            x=channel("price_usd:Q"),
            y=channel("seconds:Q"),
            order=channel("price_usd:Q"),
        ),
        layer(
            "results",
            {"type": "circle", "size": 90, "opacity": 0.85},
            x=channel("price_usd:Q", title="price (USD)"),
            y=channel("seconds:Q", title="training time (s, log scale)", scale={"type": "log"}),
            color=source_color(),
            tooltip=[
                channel("option"),
                channel("price_usd:Q", format="$,.0f"),
                channel("seconds:Q", format=",.1f"),
                channel("source"),
                channel("frontier"),
            ],
        ),
    )


def dollars_per_speedup_chart(options: pd.DataFrame) -> Spec:
    """Bars: dollars per 1x of speedup over the current hardware (lower is better)."""
    data = _labelled(options)
    data = data[data["dollars_per_speedup_vs_current"].notna()][["option", "dollars_per_speedup_vs_current", "source"]]
    return chart(
        "Dollars per 1x of speedup over your current hardware",
        {"options": data},
        layer(
            "options",
            {"type": "bar"},
            x=channel("dollars_per_speedup_vs_current:Q", title="USD per 1x of speedup (lower is better)"),
            y=channel("option:N", sort="x", title=None, axis={"labelLimit": 320}),
            color=source_color(),
            tooltip=[channel("option"), channel("dollars_per_speedup_vs_current:Q", format="$,.2f"), channel("source")],
        ),
    )


def epoch_times_chart(profile: Any) -> Spec | None:
    """Per-epoch wall times of a measured profile, one line per precision (None when not recorded)."""
    rows = [
        {"epoch": index + 1, "seconds": value, "precision": result.precision}
        for result in tree_of(profile).results
        for index, value in enumerate(result.epoch_seconds or ())
    ]
    if not rows:
        return None
    return chart(
        "Every epoch's wall time (the first includes tracing and warm-up)",
        {"epochs": pd.DataFrame(rows)},
        layer(
            "epochs",
            {"type": "line", "point": True},
            x=channel("epoch:Q", title="epoch"),
            y=channel("seconds:Q", title="wall time (s)"),
            color=channel("precision:N"),
            tooltip=[channel("precision"), channel("epoch:Q"), channel("seconds:Q", format=".3f")],
        ),
    )


LABEL_LIST_X, LABEL_LIST_Y, LABEL_LINE = 8, 6, 16  # pixels: where the break-even points' words are listed


COST_LINE_VERBS = {CostKind.BUY: "buy", CostKind.RENT: "rent"}  # keeping has no option: its words are its own
KEEP_WORDS = "keep the current hardware"
BREAK_EVEN_WORDS = {
    (CostKind.KEEP, CostKind.BUY): "buying pays off",
    (CostKind.KEEP, CostKind.RENT): "renting pays off",
    (CostKind.RENT, CostKind.BUY): "buying beats renting",
}


def cost_line_label(kind: str, option: str, estimated: bool) -> str:
    """'buy GeForce RTX 4090 (estimated)', 'keep the current hardware': a cost line in the chart's legend."""
    if kind == CostKind.KEEP:
        return KEEP_WORDS
    return f"{COST_LINE_VERBS[CostKind(kind)]} {option}" + (ESTIMATED_MARK if estimated else "")


def break_even_label(first: str, second: str, runs: float) -> str:
    """'buying pays off after 12 runs': a break-even point in words."""
    return f"{BREAK_EVEN_WORDS[(CostKind(first), CostKind(second))]} after {runs:,.0f} run" + ("" if runs == 1 else "s")


def cumulative_cost_chart(costs: pd.DataFrame, points: pd.DataFrame) -> Spec:
    """Cumulative cost against the number of runs (costs.cumulative_costs), with the break-even points marked
    (costs.crossings); each line and point worded here."""
    lines = costs.assign(
        option=[
            cost_line_label(k, o, e) for k, o, e in zip(costs["kind"], costs["option"], costs["estimated"], strict=True)
        ]
    )
    crossings = points.assign(
        label=[
            break_even_label(f, s, r) for f, s, r in zip(points["first"], points["second"], points["runs"], strict=True)
        ]
    )
    cost_lines = layer(
        "lines",
        {"type": "line", "strokeWidth": 2.5},
        x=channel("runs:Q", title="training runs"),
        y=channel("usd:Q", title="cumulative cost (USD)", axis={"format": "$,.0f"}),
        color=channel("option:N", title=None, legend={"orient": "top", "labelLimit": 360}),
        tooltip=[channel("option"), channel("runs:Q", format=",.0f"), channel("usd:Q", format="$,.2f")],
    )
    title = "What each choice costs as you train (purchase price, energy, waiting time)"
    if crossings.empty:
        return chart(title, {"lines": lines}, cost_lines)
    # Each break-even point is numbered beside its diamond, and its words listed at the chart's top left (pixel
    # positions: "scale": None), one line each: two points close together never print their words over each other.
    numbered = crossings.reset_index(drop=True).assign(
        tag=lambda f: [str(n + 1) for n in range(len(f))],
        text=lambda f: [f"{n + 1}: {label}" for n, label in enumerate(f["label"])],
        text_x=LABEL_LIST_X,
        text_y=lambda f: [LABEL_LIST_Y + LABEL_LINE * n for n in range(len(f))],
    )
    return chart(
        title + "; diamonds: break-even",
        {"lines": lines, "crossings": numbered},
        cost_lines,
        layer(
            "crossings",
            {"type": "point", "size": 140, "filled": True, "color": "black", "shape": "diamond"},
            x=channel("runs:Q"),
            y=channel("usd:Q"),
            tooltip=[channel("label"), channel("runs:Q", format=",.0f")],
        ),
        layer(
            "crossings",
            {"type": "text", "align": "left", "dx": 8, "dy": -10, "fontSize": 12, "fontWeight": "bold"},
            x=channel("runs:Q"),
            y=channel("usd:Q"),
            text=channel("tag:N"),
        ),
        layer(
            "crossings",
            {"type": "text", "align": "left", "baseline": "top", "fontSize": 12},
            x=channel("text_x:Q", scale=None),
            y=channel("text_y:Q", scale=None),
            text=channel("text:N"),
        ),
    )
