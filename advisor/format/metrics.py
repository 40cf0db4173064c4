"""Every figure the advisor reports, defined once: its key (as in ``--json``), its label, its column head, its
unit, how it is written and its definition. docs/reference.md, the app's "What the numbers mean" and the Markdown
download show the definitions; the CLI's tables, the Markdown tables and the app's columns take their heads and
formats from here (``column``), so a label is changed in one place."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from advisor.format.formatting import fmt_rate, fmt_seconds, fmt_times, fmt_usd, fmt_usd_small, fmt_watts, missing


def _hours(value: float) -> str:
    return "-" if missing(value) else f"{value:,.2f}"


def _gigabytes(value: float) -> str:
    return "-" if missing(value) else f"{value:.1f} GB"


# How a unit is written where a metric says no more.
FORMATS: dict[str, Callable[[Any], str]] = {
    "s": fmt_seconds,
    "1/h": fmt_rate,
    "x": fmt_times,
    "USD": fmt_usd,
    "USD/run": fmt_usd_small,
    "h": _hours,
    "W": fmt_watts,
    "GB": _gigabytes,
}


@dataclass(frozen=True)
class Metric:
    key: str
    label: str  # the full name (definitions, Markdown)
    unit: str
    definition: str
    short: str = ""  # a table's column head, where narrower than the label
    ceiling: float | None = None  # past it a figure is of no use to a buyer, and is said in words

    @property
    def head(self) -> str:
        return self.short or self.label

    def format(self, value: Any) -> str:
        written = FORMATS.get(self.unit, str)
        if self.ceiling is not None and not missing(value) and value > self.ceiling:
            return f"over {written(self.ceiling)}: next to no gain"
        return written(value)


METRICS = (
    Metric(
        "seconds",
        "seconds",
        "s",
        "total wall time of the workload's epochs (the first, warm-up epoch included)",
        short="time / run",
    ),
    Metric("runs_per_hour", "runs/h", "1/h", "3600 / seconds"),
    Metric("speedup", "speedup", "x", "in `compare`: baseline seconds / seconds"),
    Metric("dollars_per_speedup", "$/speedup", "USD", "in `compare`: price_usd / speedup"),
    Metric("speedup_vs_current", "speedup", "x", "current seconds / option seconds (2x: a run takes half as long)"),
    Metric(
        "upgrade_cost_usd",
        "upgrade cost",
        "USD",
        "the option's price; 0 for the hardware you already have (another precision or backend, or the same GPU "
        "model and count): a free upgrade",
    ),
    Metric(
        "dollars_per_speedup_vs_current",
        "$ per 1x speedup",
        "USD",
        "upgrade_cost_usd / speedup_vs_current",
        short="$ per 1x",
    ),
    Metric(
        "dollars_per_added_run_per_hour",
        "$ per added run/h",
        "USD",
        "upgrade_cost_usd / (option runs_per_hour - current runs_per_hour)",
    ),
    Metric(
        "hours_saved_per_week",
        "hours saved / week",
        "h",
        "runs_per_week x (current seconds - option seconds) / 3600",
        short="h saved/week",
    ),
    Metric(
        "power_watts",
        "power",
        "W",
        "the average power measured during the run where measure could read it, else the profile's power_watts, "
        "else the catalog's board power; unknown otherwise (then energy is unknown, never 0)",
    ),
    Metric("energy_usd_per_run", "energy per run", "USD/run", "power_watts x seconds / 3,600,000 x kwh_price"),
    Metric(
        "payback_weeks",
        "payback",
        "weeks",
        "(upgrade_cost_usd - resale_usd) / (hours_saved_per_week x hour_value + weekly energy saving); 0 for a "
        "free upgrade; null when it never pays back. With an unknown power the energy saving is left out and the "
        "payback counts the time saved alone",
    ),
    Metric(
        "usd_per_run_owned",
        "cost per run (owned)",
        "USD/run",
        "price / (runs_per_week x 52 x lifetime_years) + energy_usd_per_run",
        short="cost / run",
    ),
    Metric(
        "cloud_usd_per_run",
        "cost per run (rented)",
        "USD/run",
        "the cheapest on-demand rental of the same GPU as billed: a session (session_minutes of start-up, then "
        "runs_per_session runs) rounded up to the provider's billing increment and minimum, x usd per hour / 3600, "
        "shared by the session's runs",
        short="rent / run",
    ),
    Metric(
        "break_even_runs",
        "buying beats renting after",
        "runs",
        "price / (cloud_usd_per_run - energy_usd_per_run): the runs after which buying the same GPU costs less "
        "than renting it; null when renting always costs less",
    ),
    Metric(
        "memory_gb",
        "memory",
        "GB",
        "an estimate's predicted peak training memory per GPU at the workload's batch: weights, gradients and "
        "optimizer state, the activations kept for the backward pass, the framework's own",
    ),
    Metric(
        "fits",
        "fits",
        "yes/no",
        "whether memory_gb fits 95 % of the GPU's memory; an option that does not is never recommended",
    ),
    Metric(
        "marginal_usd_per_added_run_per_hour",
        "marginal $ per added run/h",
        "USD",
        "on the upgrade ladder (the purchases within the budget that nothing cheaper beats on time): the extra "
        "price of a step over the step before / the runs per hour it adds (over $1,000,000: said in words, the step "
        "adds next to nothing)",
        ceiling=1_000_000,
    ),
    Metric(
        "marginal_usd_per_hour_saved_per_week",
        "marginal $ per hour saved a week",
        "USD",
        "on the upgrade ladder: the extra price of a step / the extra hours it saves a week at your runs per week "
        "(where this jumps, returns fall off; over $1,000,000: said in words, the step saves next to nothing)",
        ceiling=1_000_000,
    ),
)
BY_KEY = {m.key: m for m in METRICS}


def definition(key: str) -> str:
    return BY_KEY[key].definition


def column(key: str, render: Callable[[Any], str] | None = None) -> tuple[str, Callable[[Any], str]]:
    """A table column of a metric: its head, and a row's value written in its format (or by ``render``, for a
    value that needs the row: 'free' for a free upgrade, an estimate's range)."""
    metric = BY_KEY[key]
    return metric.head, render or (lambda row: metric.format(row[key]))


def markdown_definitions() -> str:
    """The definitions as a Markdown list (the reference, the app, the download)."""
    return "\n".join(f"- **{m.label}** (`{m.key}`, {m.unit}): {m.definition}." for m in METRICS) + "\n"
