"""Plain-text and Markdown renderings of comparisons and recommendations (no I/O)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from advisor.decision.analysis import Comparison, Recommendation
from advisor.format import typed
from advisor.format.formatting import fmt_rate, fmt_seconds, fmt_times, fmt_usd, fmt_usd_small, fmt_watts, missing
from advisor.format.metrics import column, markdown_definitions
from advisor.format.vocabulary import PaybackCounts, Precision, PriceBasis, Source
from advisor.perf import crossval
from advisor.perf.estimates import CatalogEstimates
from advisor.perf.perfmodel import Basis, Clause
from advisor.render import prose, text_width
from advisor.store.catalog import Catalog, Gpu

__all__ = ["fmt_rate", "fmt_seconds", "fmt_times", "fmt_usd", "fmt_usd_small", "fmt_watts"]


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
        text += f" ({fmt_seconds(row['low']).removesuffix(' s')}-{fmt_seconds(row['high']).removesuffix(' s')})"
    return text


Column = tuple[str, Callable[[Any], str]]  # renders one row (a dict or a Series) as text

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
    """Weeks to pay back ('now' for free, 'never'), '*' when it counts the time saved alone (power unknown)."""
    weeks = row["payback_weeks"]
    if missing(weeks):
        if not row["faster"] or missing(row["upgrade_cost_usd"]):
            return "-"
        return "unknown" if row["payback_counts"] == PaybackCounts.NOTHING else "never"
    if row.get("payback_beyond_lifetime"):
        return "> lifetime"
    text = "now" if weeks == 0 else f"{weeks:,.1f} wk"
    return text + ("*" if payback_counts_time_alone(row) else "")


def payback_counts_time_alone(row: Any) -> bool:
    """True when a payback in weeks counts the time saved alone (the power is unknown): marked '*'."""
    weeks = row["payback_weeks"]
    return bool(not missing(weeks) and weeks and row["payback_counts"] != PaybackCounts.TIME_AND_ENERGY)


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


def table_frame(records: Sequence[Any], columns: Sequence[Column]) -> pd.DataFrame:
    """Rows rendered as the app shows a table: one text column per (head, render)."""
    return pd.DataFrame({name: [render(r) for r in records] for name, render in columns})


def text_table(frame: pd.DataFrame, columns: Sequence[Column]) -> str:
    """A fixed-width table of a frame's rows; numbers right-aligned."""
    return text_table_of(frame.to_dict("records"), columns, left={"profile", "device", "precision", "source"})


def comparison_text(comparison: Comparison) -> str:
    base = comparison.baseline
    lines = [
        f"Baseline: {base['profile']} ({base['precision']}), {fmt_seconds(base['seconds'])}",
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
    ("option", lambda r: str(r["name"])),  # the name a buyer reads, not the id ("catalog:gtx-1080-ti:2x")
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
        f"Current: {current['profile']} ({current['precision']}), {fmt_seconds(current['seconds'])}",
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
        lines += ["", "Upgrade ladder (where returns fall off):", text_table_of(
            rec.ladder.to_dict("records"), LADDER_COLUMNS, left={"step"})]  # fmt: skip
    lines += [f"Note: {note}" for note in prose.notes(rec)]
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
    """The recommendation, its options and the definitions of every figure as a Markdown document (for download)."""
    current = rec.current
    lines = [
        "# Upgrade recommendation",
        "",
        f"Current hardware: **{markdown_safe(current['name'])}** ({markdown_safe(current['precision'])}), "
        f"{markdown_safe(fmt_seconds(current['seconds']))} for the workload.",
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


def catalog_text(catalog: Catalog) -> str:
    """The catalog as a table: specifications, the purchase price the advisor uses and the cheapest rental."""

    def spec(name: str, digits: str = ",.0f") -> Callable[[Any], str]:
        return lambda g: "-" if g.value(name) is None else format(g.value(name), digits)

    def price(gpu: Gpu) -> str:
        return f"{fmt_usd(gpu.price.usd)} ({gpu.price.date[:7]})" if gpu.price else "unknown"

    def rental(gpu: Gpu) -> str:
        best = gpu.best_rental
        return f"${best.usd_per_hour:.2f}/h {best.provider}" if best else "-"

    columns: list[Column] = [
        ("id", lambda g: g.id),
        ("architecture", lambda g: g.architecture),
        ("launched", lambda g: g.launch_date[:7]),
        ("FP32", spec("fp32_tflops", ".1f")),
        ("TF32", spec("tf32_tflops", ".1f")),
        ("FP16 tensor", spec("fp16_tensor_tflops", ".1f")),
        ("GB/s", spec("memory_bandwidth_gbs")),
        ("L2 MB", spec("l2_cache_mb", "g")),
        ("W", spec("board_power_w")),
        ("price", price),
        ("rent", rental),
    ]
    table = text_table_of(list(catalog.gpus), columns, left={"id", "architecture", "launched", "rent"})
    return "\n".join(
        [
            f"GPU catalog: {len(catalog.gpus)} GPUs, prices as of {catalog.as_of} ({_shown_path(catalog.origin)})",
            "TFLOPS are dense peaks; FP16 tensor is with float32 accumulation (mixed_float16); '-' means no "
            "source gives it.",
            "",
            table,
        ]
    )


def _shown_path(path: str) -> str:
    """The package's own files as ``advisor/...`` (installed or not, wherever the command runs); another path
    relative to the working folder when it lies inside it (shorter, and the same on every machine)."""
    resolved = Path(path).resolve()
    for base in (Path(__file__).resolve().parents[2], Path.cwd().resolve()):  # the folder that holds advisor/
        with contextlib.suppress(ValueError):
            return str(resolved.relative_to(base))
    return path


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


ESTIMATE_TABLE: list[Column] = [
    ("gpu", lambda r: r["device"]),
    ("precision", lambda r: r["precision"]),
    ("estimate", lambda r: fmt_seconds(r["seconds"])),
    ("likely range", lambda r: f"{fmt_seconds(r['low'])} - {fmt_seconds(r['high'])}"),
    ("bound", lambda r: r["bound"]),
    ("price", lambda r: fmt_usd(r["price_usd"])),
    ("memory", lambda r: "-" if missing(r.get("memory_gb")) else f"{r['memory_gb']:.1f} GB"
     + ("" if r.get("fits") else f" (too big: batch {r['largest_batch']:.0f} fits)")),
    ("why this range", lambda r: _situation(r.get("basis_parts"))),
]


def _situation(parts: Any) -> str:
    """An estimate's situation, the words its range is cross-validated for (empty where the row has no parts)."""
    return parts.situation if isinstance(parts, Basis) else ""


def constants_text(constants: dict[str, float]) -> str:
    """The calibration's global constants in one line (docs/reference.md explains each)."""
    c = constants
    return (f"Constants: eta {c['eta_float32']:.3f} (float32) / {c['eta_mixed']:.3f} (mixed) of the peak, mu "
            f"{c['mu']:.2f} of the bandwidth, time ~ peak^-{c['gamma_float32']:.2f} / ^-{c['gamma_mixed']:.2f}, "
            f"bandwidth^-{c['delta']:.2f}, power^-{c['rho']:.2f}; per step {c['step_seconds'] * 1e6:.1f} us, start-up "
            f"{c['startup_seconds']:.2f} s.")  # fmt: skip


def estimates_text(rows: pd.DataFrame, found: CatalogEstimates, machines: list | None = None) -> str:
    """Catalog estimates as a table, with the model's constants and what could not be estimated; then the measured
    machines' estimates (``estimate --model``)."""
    lines = [f"Estimated training time (not measured): {found.basis()}.", constants_text(found.fit.constants()), ""]
    if rows.empty:
        lines.append("(no GPU of the selection can be estimated)")
    else:
        table = rows.sort_values(["seconds", "device", "precision"])
        lines.append(text_table_of(table.to_dict("records"), ESTIMATE_TABLE, left={"gpu", "precision", "bound",
                                                                                   "why this range"}))  # fmt: skip
    clauses = [] if rows.empty else [words for parts in rows["basis_parts"] if isinstance(parts, Basis)
                                     for words in parts.of_kind(Clause.SEVERAL)]  # fmt: skip
    for words in dict.fromkeys(clauses):
        lines.append(f"Several GPUs: {words}.")
    for missing_estimate in found.not_estimated:
        lines.append(f"Not estimated: {missing_estimate.device.name} {missing_estimate.precision}: "
                     f"{missing_estimate.reason}")  # fmt: skip
    for estimate in machines or []:
        if estimate.seconds is not None:
            lines.append(
                f"On {estimate.device.name} ({estimate.precision}, measured machine): {fmt_seconds(estimate.seconds)}, "
                f"likely {fmt_seconds(estimate.low)} - {fmt_seconds(estimate.high)}; {estimate.basis}"
            )
    return "\n".join(lines)


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
    ("option", "", lambda r: str(r["name"]).removesuffix(" (estimated)")),  # the source column says it
    ("precision", "", lambda r: PRECISION_SHORT.get(r["precision"], r["precision"])),
    _display("speedup_vs_current"),
    _display("upgrade_cost_usd", _upgrade_cost),
    ("price is", "", lambda r: "-" if r["free_upgrade"] or not isinstance(r.get("price_basis"), str)
     else short_price_kind(r)),
    _display("dollars_per_speedup_vs_current",
             lambda r: fmt_usd(r["dollars_per_speedup_vs_current"]) if r["faster"] else "-"),
    _display("payback_weeks", fmt_payback),
    _display("usd_per_run_owned"),
    _display("cloud_usd_per_run"),
    _display("seconds", fmt_range_seconds),
    ("source", "", lambda r: "does not fit" if r.get("fits") is False or r.get("fits") is np.False_ else r["source"]),
]  # fmt: skip


# A catalog price's kind in a word or two, for the app's narrow column (the catalog's own words elsewhere).
CATALOG_KIND_SHORT = {"launch MSRP": "MSRP", "system price per GPU (Lambda)": "Lambda"}


def short_price_kind(row: Any) -> str:
    """A price's kind and date in a few words, for a narrow column: 'MSRP 2022-10', 'Lambda 2024-07', '2017 launch
    (old)', 'profile 2024-05', 'yours' (the full words, ``price_kind``, are in the CSV, the JSON and the Markdown);
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


def option_width(names: Sequence[str]) -> int:
    """Pixels for the app's option column: its widest name whole in the table's font (:mod:`text_width`), with the
    cell's padding, between 120 and 360."""
    return min(360, max(120, text_width.column_px(["option", *names])))


def options_display(options: pd.DataFrame) -> pd.DataFrame:
    """The options as the app shows them (text cells, units, 'unknown')."""
    records = options.to_dict("records")
    return table_frame(records, [(name, render) for name, _, render in DISPLAY_COLUMNS])


def _scaling(scaling: Any) -> str:
    text = f"{scaling.speedup:.2f}x on {scaling.devices}"
    return text + (f" of {scaling.workers} machines" if scaling.workers else "") + f" ({100 * scaling.efficiency:.0f}%)"


def _steady(r: Any, key: str) -> str:
    value = getattr(r.steady, key, None) if r.steady is not None else None
    return "-" if value is None else fmt_seconds(value)


# A measured profile's results (typed: advisor.format.typed), one line each.
MEASURE_COLUMNS: list[Column] = [
    ("precision", lambda r: r.precision),
    ("total", lambda r: fmt_seconds(r.total_seconds) if not r.estimated
     else f"~{fmt_seconds(r.total_seconds)} ± {r.estimate.error_seconds:.2g}"),
    ("first", lambda r: fmt_seconds(r.first_epoch_seconds)),
    ("median", lambda r: _steady(r, "median")),
    ("min", lambda r: _steady(r, "min")),
    ("max", lambda r: _steady(r, "max")),
    ("stdev", lambda r: f"{r.steady.stdev:.3g} s" if r.steady is not None and r.steady.stdev is not None else "-"),
    ("GFLOP/s", lambda r: f"{r.throughput.achieved_gflops:,.4g}" if r.throughput is not None else "-"),
    ("of peak", lambda r: f"{100 * r.throughput.efficiency:.0f}%"
     if r.throughput is not None and r.throughput.efficiency is not None else "-"),
    ("power", lambda r: fmt_watts(r.power.average_watts) if r.power is not None else "-"),
    ("scaling", lambda r: _scaling(r.scaling) if r.scaling is not None else "-"),
    ("loss", lambda r: f"{r.final_loss:.4f}" if r.final_loss is not None else "-"),
    ("acc", lambda r: f"{r.final_accuracy:.3f}" if r.final_accuracy is not None else "-"),
]  # fmt: skip


def measure_table(profile: dict[str, Any]) -> str:
    """The summary of a measured profile: one line per precision."""
    return text_table_of(list(typed.build(profile).results), MEASURE_COLUMNS, left={"precision"})


CROSSVAL_TABLE: list[Column] = [
    ("experiment", lambda r: r["experiment"]),
    ("precision", lambda r: r["precision"]),
    ("results", lambda r: f"{r['results']:,}"),
    ("median error", lambda r: f"{r['median']:.3f}x"),
    ("90th percentile", lambda r: f"{r['p90']:.3f}x"),
]


def crossval_text(found: Any) -> str:
    """``advisor crossval``: the experiments' errors, the targets, the width of each situation, the coverage."""
    table = text_table_of(found.summary, CROSSVAL_TABLE, left={"experiment", "precision"})
    lines = [f"Cross-validation on {found.samples:,} single-GPU results (each predicted by a fit that did not see it).",
             "", table, "", "Targets:"]  # fmt: skip
    for check in found.checks():
        verdict = "met" if check["met"] else "missed"
        lines.append(
            f"  {check['experiment']} ({check['precision']}): median {check['median']:.3f}x (target "
            f"{check['median_target']}x), 90th percentile {check['p90']:.3f}x (target {check['p90_target']}x): "
            + verdict
        )
    lines += ["", "Range of an estimate, per situation (GPU/workload: the 90th-percentile error):"]
    lines += [f"  {key}: x/{math.exp(width):.2f} .. x{math.exp(width):.2f}" for key, width in found.half_widths.items()]
    lines.append(f"Coverage (each held-out group's range from the other groups' errors): {found.coverage:.1%}")
    tracked = crossval.tracked_errors(found.summary)
    if tracked:
        lines += ["", "A job tracked on one device (advisor.track), estimated on the other GPUs:"]
        lines += [f"  tracked on {row['tracked_on']}: median error {row['median']:.2f}x, 90th percentile "
                  f"{row['p90']:.2f}x ({row['experiment']}, {row['results']:,} held-out results)"
                  for row in tracked]  # fmt: skip
    scaled = found.scaling
    if scaled:
        lines += ["", "Data-parallel efficiency, one system left out at a time "
                      f"({scaled['results']:,} multi-GPU results of {scaled['systems']} systems): median error "
                      f"{scaled['median']:.3f}x, 90th percentile {scaled['p90']:.3f}x (assuming perfect scaling: "
                      f"{scaled['perfect_scaling_p90']:.3f}x); fitted: {scaled['sync']:.1%} of an iteration lost per "
                      f"doubling of the GPUs, {scaled['phi']:.0%} of the all-reduce left exposed (the rest hides "
                      "behind the backward pass)"]  # fmt: skip
    return "\n".join(lines)


def calibration_text(fit: Any, names: dict[str, str]) -> str:
    """``advisor calibration``: the fitted terms as factors on the time (below 1: faster than the specifications
    alone say; above 1: slower). ``names``: each workload's name by its calibration id."""
    lines = [constants_text(fit.constants()), ""]
    titles = {"eta_peak": "peak kind", "eta_segment": "segment", "eta_arch": "architecture (arithmetic)",
              "mu_arch": "architecture (memory)"}  # fmt: skip
    for kind, title in titles.items():
        cells = [f"{' '.join(map(str, key))} {1 / value:.2f}" for key, value in sorted(fit.terms(kind).items())]
        lines.append(f"{title}: " + ", ".join(cells))
    rows = []
    for workload in sorted({s.workload for s in fit.samples}, key=lambda w: names.get(w, w)):
        factor = {kind: {key[1]: v for key, v in fit.terms(kind).items() if key[0] == workload} for kind in "cm"}
        rows.append({"workload": names.get(workload, workload).replace(" (published, PyTorch)", " (published)"),
                     "arithmetic float32": factor["c"].get("float32"), "arithmetic mixed": factor["c"].get("mixed"),
                     "memory float32": factor["m"].get("float32"), "memory mixed": factor["m"].get("mixed"),
                     "per step": fit.terms("tau_w").get((workload,))})  # fmt: skip
    columns: list[Column] = [("workload", lambda r: r["workload"])] + [
        (name, lambda r, name=name: "-" if r[name] is None else f"{r[name]:.2f}")
        for name in ("arithmetic float32", "arithmetic mixed", "memory float32", "memory mixed", "per step")
    ]
    return "\n".join([*lines, "", text_table_of(rows, columns, left={"workload"})])


def _job_memory(option: Any) -> str:
    f = option.footprint
    return f"{f.total_gb:.1f} GB ({f.low_gb:.0f}-{f.high_gb:.0f}) of {option.gpu.value('memory_gb'):g}"


MOVE_WORDS = {"chunked loss": "chunked loss", "fused loss": "fused loss", "activation checkpointing": "checkpointing",
              "activation offloading": "offloading", "paged optimizer states": "paged states",
              "optimizer step in the backward pass": "step in backward"}  # fmt: skip


def ladder_text(option: Any) -> str:
    """The least memory the job needs on this GPU where it does not fit as asked: the cheapest set of the stack's
    choices that fits, its memory and time; else the nearest ways out. Empty where the job fits."""
    from advisor.llm.ladder import Nearest  # the LLM layer, no framework

    ladder = option.ladder
    if ladder is None:
        return ""
    rung = ladder.fits
    if rung is not None:
        moves = " + ".join(MOVE_WORDS[str(m)] for m in rung.moves)
        cost = "no slower" if rung.slowdown <= 1.005 else f"{(rung.slowdown - 1) * 100:.0f} % slower"
        return f"{moves}: {rung.footprint.total_gb:.1f} GB (up to {rung.footprint.high_gb:.0f}), {cost}"
    words = {Nearest.QLORA: lambda w: f"QLoRA {w.footprint.total_gb:.1f} GB",
             Nearest.SHORTER: lambda w: f"seq <= {w.value:,}",
             Nearest.SHARDED: lambda w: f"{w.value} GPUs sharded"}  # fmt: skip
    ways = [words[w.kind](w) for w in ladder.nearest]
    return "nothing fits; nearest: " + ", ".join(ways) if ways else "nothing fits"


JOB_TABLE: list[Column] = [
    ("gpu", lambda o: o.name),
    ("fits?", lambda o: str(o.verdict)),
    ("memory (range) of the card", _job_memory),
    ("ckpt", lambda o: "on" if o.checkpointing else "off"),
    ("precision", lambda o: o.precision),
    ("tokens/s", lambda o: f"{o.tokens_per_second:,.0f}"),
    ("the run", lambda o: f"{fmt_seconds(o.seconds)} ({fmt_seconds(o.low)} - {fmt_seconds(o.high)})"),
    ("to buy", lambda o: fmt_usd(o.price_usd if o.price_usd else math.nan)),
    ("rented, the run", lambda o: "-" if o.rental_cost_usd is None else
     f"${o.rental_cost_usd:,.2f} at ${o.rental_usd_per_hour:,.2f}/h"),
    ("largest batch / seq that fits", lambda o: f"{o.largest_micro_batch} / {o.largest_seq_len:,}"),
    ("least memory that fits (the stack's choices)", ladder_text),
]


def job_advice_text(advice: Any) -> str:
    """``estimate --model-config``: the job, a row per GPU (fits first, fastest first), the decision."""
    from advisor.llm.advice import memory_basis, summary_lines  # the LLM layer, no framework

    job = advice.job
    head = [
        f"Training job: {job.describe()}; {job.run_tokens:,.0f} tokens "
        f"({job.model.parameters / 1e9:.2f} B parameters, {job.trainable_parameters / 1e6:,.1f} M trained, "
        f"{job.flops_per_token() / 1e9:.1f} GFLOPs per token).",
        "Estimated, not measured: time from the performance model calibrated on every published result (the "
        "language-model throughputs of llm-foundry, NeMo AutoModel and Qwen among them), its range the "
        "cross-validated error of its situation; " + (memory_basis(advice.options[0].footprint) if advice.options
                                                      else "no GPU estimated") + ".",
        "",
        text_table_of(advice.options, JOB_TABLE, left={"gpu", "fits?", "memory (range) of the card", "precision"}),
        "",
        *summary_lines(advice),
    ]
    if advice.missing:
        head.append(f"Not estimated: {'; '.join(advice.missing[:5])}" + (" ..." if len(advice.missing) > 5 else ""))
    return "\n".join(head)


def models_text(rows: Sequence[dict[str, Any]]) -> str:
    """``advisor models``: the presets, a line each, with where their numbers come from."""
    columns: list[Column] = [
        ("id", lambda r: r["id"]),
        ("model", lambda r: r["name"]),
        ("parameters", lambda r: f"{r['counted_parameters'] / 1e9:.2f} B"),
        ("layers", lambda r: str(r["layers"])),
        ("hidden", lambda r: f"{r['hidden']:,}"),
        ("heads / kv", lambda r: f"{r['heads']} / {r['kv_heads']}"),
        ("mlp", lambda r: f"{r['intermediate']:,}" + (" gated" if r["gated_mlp"] else "")),
        ("vocabulary", lambda r: f"{r['vocab']:,}" + (" tied" if r["tied_embeddings"] else "")),
        ("config.json", lambda r: r["source"]),
    ]
    return text_table_of(rows, columns, left={"id", "model", "config.json"}) + (
        "\n\nNumbers from each model's config.json on the Hugging Face Hub (or the file named); "
        "`estimate --model-config FILE` reads your own.")
