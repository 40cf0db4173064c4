"""measure's summary table of the profile it wrote. No I/O."""

from __future__ import annotations

from typing import Any

from advisor.format import typed
from advisor.format.formatting import fmt_seconds, fmt_watts
from advisor.render.tables import Column, text_table_of


def _scaling(scaling: Any) -> str:
    text = f"{scaling.speedup:.2f}x on {scaling.devices}"
    return text + (f" of {scaling.workers} machines" if scaling.workers else "") + f" ({100 * scaling.efficiency:.0f}%)"


def _steady(r: Any, key: str) -> str:
    value = getattr(r.steady, key, None) if r.steady is not None else None
    return "-" if value is None else fmt_seconds(value)


# A measured profile's results (typed: advisor.format.typed), one line each.
MEASURE_COLUMNS: list[Column] = [
    ("precision", lambda r: r.precision),
    (
        "total",
        lambda r: (
            fmt_seconds(r.total_seconds)
            if not r.estimated
            else f"~{fmt_seconds(r.total_seconds)} ± {r.estimate.error_seconds:.2g}"
        ),
    ),
    ("first", lambda r: fmt_seconds(r.first_epoch_seconds)),
    ("median", lambda r: _steady(r, "median")),
    ("min", lambda r: _steady(r, "min")),
    ("max", lambda r: _steady(r, "max")),
    ("stdev", lambda r: f"{r.steady.stdev:.3g} s" if r.steady is not None and r.steady.stdev is not None else "-"),
    ("GFLOP/s", lambda r: f"{r.throughput.achieved_gflops:,.4g}" if r.throughput is not None else "-"),
    (
        "of peak",
        lambda r: (
            f"{100 * r.throughput.efficiency:.0f}%"
            if r.throughput is not None and r.throughput.efficiency is not None
            else "-"
        ),
    ),
    ("power", lambda r: fmt_watts(r.power.average_watts) if r.power is not None else "-"),
    ("scaling", lambda r: _scaling(r.scaling) if r.scaling is not None else "-"),
    ("loss", lambda r: f"{r.final_loss:.4f}" if r.final_loss is not None else "-"),
    ("acc", lambda r: f"{r.final_accuracy:.3f}" if r.final_accuracy is not None else "-"),
]


def measure_table(profile: dict[str, Any]) -> str:
    """The summary of a measured profile: one line per precision."""
    return text_table_of(list(typed.build(profile).results), MEASURE_COLUMNS, left={"precision"})


def _spread(times: Any) -> str:
    """A timing's spread as the relative standard deviation of its runs."""
    return f"{100 * times.stdev / times.median:.1f}%" if times.stdev is not None else "-"


# An inference profile's results (typed), one line per batch.
GENERATION_COLUMNS: list[Column] = [
    ("users", lambda r: str(r.batch)),
    ("first token", lambda r: fmt_seconds(r.time_to_first_token_s)),
    ("per output token", lambda r: fmt_seconds(r.time_per_output_token_s)),
    ("prefill tok/s", lambda r: f"{r.prefill_tokens_per_s:,.0f}"),
    ("decode tok/s", lambda r: f"{r.decode_tokens_per_s:,.1f}"),
    ("spread", lambda r: _spread(r.generate)),
    ("peak memory", lambda r: f"{r.peak_memory_gb:.2f} GB" if r.peak_memory_gb is not None else "-"),
]


def generation_table(profile: dict[str, Any]) -> str:
    """The summary of an inference profile: its generation in a line, then one line per batch (users)."""
    tree = typed.build(profile)
    g = tree.generation
    head = (
        f"{g.model} ({g.parameters:,} weights, {g.dtype}) on {tree.device.name}, {g.engine} {g.engine_version or ''}"
        f": prompt {g.prompt_tokens}, output {g.output_tokens}, median of {g.repeats} runs after a warm-up"
    )
    return head + "\n" + text_table_of(list(tree.generation_results), GENERATION_COLUMNS, left=set())
