"""estimate's, crossval's and calibration's words: the catalog estimates, the cross-validation and the fitted
terms. No I/O."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from advisor.format.formatting import fmt_seconds, fmt_usd, missing
from advisor.format.vocabulary import Source
from advisor.perf import crossval
from advisor.perf.basis import Basis, Clause
from advisor.perf.calibration import REFERENCE_INTENSITY
from advisor.perf.estimates import CatalogEstimates
from advisor.render import basis
from advisor.render.tables import Column, text_table_of

ESTIMATE_TABLE: list[Column] = [
    ("gpu", lambda r: r["device"]),
    ("precision", lambda r: r["precision"]),
    ("estimate", lambda r: fmt_seconds(r["seconds"])),
    ("likely range", lambda r: f"{fmt_seconds(r['low'])} - {fmt_seconds(r['high'])}"),
    ("bound", lambda r: r["bound"]),
    ("price", lambda r: fmt_usd(r["price_usd"])),
    (
        "memory",
        lambda r: (
            "-"
            if missing(r.get("memory_gb"))
            else f"{r['memory_gb']:.1f} GB"
            + ("" if r.get("fits") else f" (too big: batch {r['largest_batch']:.0f} fits)")
        ),
    ),
    ("why this range", lambda r: basis.situation(r.get("basis"))),
]


def constants_text(constants: dict[str, float]) -> str:
    """The calibration's global constants in one line (docs/reference.md explains each)."""
    c = constants
    return (
        f"Constants: eta {c['eta_float32']:.3f} (float32) / {c['eta_mixed']:.3f} (mixed) of the peak, mu "
        f"{c['mu']:.2f} of the bandwidth, time ~ peak^-{c['gamma_float32']:.2f} / ^-{c['gamma_mixed']:.2f} "
        f"(mixed: {c['kappa_mixed']:+.2f} a unit of log FLOPs per byte above {REFERENCE_INTENSITY:.0f}), "
        f"bandwidth^-{c['delta']:.2f}, power^-{c['rho']:.2f}; per step {c['step_seconds'] * 1e6:.1f} us, per "
        f"iteration {c['iteration_seconds'] * 1e3:.1f} ms, start-up "
        f"{c['startup_seconds']:.2f} s."
    )


def estimates_text(rows: pd.DataFrame, found: CatalogEstimates, machines: list | None = None) -> str:
    """Catalog estimates as a table, with the model's constants and what could not be estimated; then the measured
    machines' estimates (``estimate --model``)."""
    lines = [
        f"Estimated training time (not measured): {basis.words(found.calibration())}.",
        constants_text(found.fit.constants()),
        "",
    ]
    if rows.empty:
        lines.append("(no GPU of the selection can be estimated)")
    else:
        table = rows.sort_values(["seconds", "device", "precision"])
        lines.append(
            text_table_of(
                table.to_dict("records"), ESTIMATE_TABLE, left={"gpu", "precision", "bound", "why this range"}
            )
        )
    clauses = (
        []
        if rows.empty
        else [
            basis.words(clause)
            for parts in rows["basis"]
            if isinstance(parts, Basis)
            for clause in parts.of_kind(Clause.SEVERAL)
        ]
    )
    for words in dict.fromkeys(clauses):
        lines.append(f"Several GPUs: {words}.")
    lines += basis.not_estimated_lines(found.not_estimated)
    for estimate in machines or []:
        if estimate.seconds is not None:
            lines.append(
                f"On {estimate.device.name} ({estimate.precision}, measured machine): {fmt_seconds(estimate.seconds)}, "
                f"likely {fmt_seconds(estimate.low)} - {fmt_seconds(estimate.high)}; {basis.sentence(estimate.basis)}"
            )
    return "\n".join(lines)


# ``estimate --json``'s keys for a catalog GPU, in order (the README's command table says them from here); a measured
# machine's rows (:func:`machine_records`) name it under ``machine``.
ESTIMATE_RECORD_KEYS = (
    "gpu",
    "catalog_id",
    "devices",
    "machines",
    "precision",
    "seconds_estimate",
    "low",
    "high",
    "price_usd",
    "bound",
    "basis",
    "basis_parts",
    "memory_gb",
    "fits",
    "largest_batch",
    "source",
)


def estimate_records(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """``estimate --json``: one object per GPU and precision."""
    return [
        {
            "gpu": row["device"],
            "catalog_id": row["catalog_id"],
            "devices": int(row["device_count"]),
            "machines": 1 if pd.isna(row.get("scaling_workers")) else int(row["scaling_workers"]),
            "precision": row["precision"],
            "seconds_estimate": row["seconds"],
            "low": row["low"],
            "high": row["high"],
            "price_usd": None if math.isnan(row["price_usd"]) else row["price_usd"],
            "bound": row["bound"],
            "basis": basis.sentence(row["basis"]),
            "basis_parts": basis.record(row["basis"]),
            "memory_gb": None if math.isnan(row["memory_gb"]) else round(float(row["memory_gb"]), 3),
            "fits": bool(row["fits"]),
            "largest_batch": None if math.isnan(row["largest_batch"]) else int(row["largest_batch"]),
            "source": Source.ESTIMATED.value,
        }
        for _, row in rows.sort_values(["seconds", "device", "precision"]).iterrows()
    ]


def machine_records(found: list) -> list[dict[str, Any]]:
    """``estimate --json`` rows for the measured machines (CPUs): the same keys as the catalog's rows."""
    return [
        {
            "gpu": None,
            "machine": e.device.name,
            "catalog_id": None,
            "precision": e.precision,
            "seconds_estimate": e.seconds,
            "low": e.low,
            "high": e.high,
            "price_usd": None,
            "bound": e.bound,
            "basis": basis.sentence(e.basis),
            "source": Source.ESTIMATED.value,
        }
        for e in found
        if e.seconds is not None
    ]


CROSSVAL_TABLE: list[Column] = [
    ("experiment", lambda r: r["experiment"]),
    ("precision", lambda r: r["precision"]),
    ("results", lambda r: f"{r['results']:,}"),
    ("median error", lambda r: f"{r['median']:.3f}x"),
    ("90th percentile", lambda r: f"{r['p90']:.3f}x"),
]


FAMILY_TABLE = [
    ("held-out family", lambda r: r.family),
    ("results", lambda r: f"{r.results:,}"),
    ("time: median", lambda r: f"{r.median:.2f}x"),
    ("time: p90", lambda r: f"{r.p90:.2f}x"),
    ("GPU pairs", lambda r: f"{r.pairs:,}"),
    ("pair: median", lambda r: fmt_factor(r.pair_median)),
    ("pair: p90", lambda r: fmt_factor(r.pair_p90)),
    ("jobs ranked", lambda r: f"{r.jobs_ranked:,}"),
    ("rank: median", lambda r: "-" if r.rank_median is None else f"{r.rank_median:.2f}"),
    ("rank: 10th pct", lambda r: "-" if r.rank_p10 is None else f"{r.rank_p10:.2f}"),
]


HELD_OUT_TABLE = [
    ("experiment", lambda r: r.experiment),
    ("pairs", lambda r: f"{r.pairs:,}"),
    ("pair: median", lambda r: fmt_factor(r.median)),
    ("pair: worst", lambda r: fmt_factor(r.worst)),
]
HELD_OUT_PAIR_TABLE = [
    ("workload", lambda r: r.workload),
    ("precision", lambda r: r.precision),
    ("GPUs", lambda r: f"{r.new_gpu} / {r.covered_gpu}"),
    ("as published", lambda r: f"{r.published:.2f}x"),
    ("predicted", lambda r: f"{r.predicted:.2f}x"),
    ("error", lambda r: fmt_factor(r.error)),
]


def fmt_factor(value: float) -> str:
    """An error factor ``1.146x``, or '-' where there was nothing to measure."""
    return "-" if missing(value) else f"{value:.3f}x"


def family_text(families: Sequence[Any]) -> str:
    """The held-out family experiment: a row per family (``crossval --families``)."""
    return "\n".join(
        [
            "Each model family held out in turn (a fit that saw no workload of it): the time of each result, the "
            "speed ratio of each pair of GPUs on one job (what a buyer compares), and the GPUs' order per job "
            "(Spearman's rank correlation, jobs on 3 GPUs or more):",
            "",
            text_table_of(list(families), FAMILY_TABLE, left={"held-out family"}),
        ]
    )


def held_out_text(found: Any) -> str:
    """The published results no fit sees (``crossval --held-out``): each experiment's pair errors, then the pairs
    of the last (the most the fit is told)."""
    rows = found.held_out_errors()
    if not rows:
        return "Held-out results: none on a GPU that no calibration result covers."
    last = [pair for pair in found.held_out if pair.experiment == rows[-1].experiment]
    return "\n".join(
        [
            "Published results no fit sees, on GPUs no calibration result covers: each new GPU's speed over a "
            "covered GPU's on the same job, predicted against published:",
            "",
            text_table_of(rows, HELD_OUT_TABLE, left={"experiment"}),
            "",
            f"Each pair, {rows[-1].experiment}:",
            "",
            text_table_of(last, HELD_OUT_PAIR_TABLE, left={"workload", "precision", "GPUs"}),
        ]
    )


def crossval_text(found: Any) -> str:
    """``advisor crossval``: the experiments' errors, the targets, the width of each situation, the coverage."""
    table = text_table_of(found.summary, CROSSVAL_TABLE, left={"experiment", "precision"})
    lines = [
        f"Cross-validation on {found.samples:,} single-GPU results (each predicted by a fit that did not see it).",
        "",
        table,
        "",
        "Targets:",
    ]
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
        lines += [
            f"  tracked on {row['tracked_on']}: median error {row['median']:.2f}x, 90th percentile "
            f"{row['p90']:.2f}x ({row['experiment']}, {row['results']:,} held-out results)"
            for row in tracked
        ]
    scaled = found.scaling
    if scaled:
        lines += [
            "",
            "Data-parallel efficiency, one system left out at a time "
            f"({scaled['results']:,} multi-GPU results of {scaled['systems']} systems): median error "
            f"{scaled['median']:.3f}x, 90th percentile {scaled['p90']:.3f}x (assuming perfect scaling: "
            f"{scaled['perfect_scaling_p90']:.3f}x); fitted: {scaled['sync']:.1%} of an iteration lost per "
            f"doubling of the GPUs, {scaled['phi']:.0%} of the all-reduce left exposed (the rest hides "
            "behind the backward pass)",
        ]
    if found.families:
        lines += ["", family_text(found.families)]
    if found.held_out:
        lines += ["", held_out_text(found)]
    return "\n".join(lines)


def calibration_text(fit: Any, names: dict[str, str]) -> str:
    """``advisor calibration``: the fitted terms as factors on the time (below 1: faster than the specifications
    alone say; above 1: slower). ``names``: each workload's name by its calibration id."""
    lines = [constants_text(fit.constants()), ""]
    titles = {
        "eta_peak": "peak kind",
        "eta_segment": "segment",
        "eta_arch": "architecture (arithmetic)",
        "mu_arch": "architecture (memory)",
    }
    for kind, title in titles.items():
        cells = [f"{' '.join(map(str, key))} {1 / value:.2f}" for key, value in sorted(fit.terms(kind).items())]
        lines.append(f"{title}: " + ", ".join(cells))
    rows = []
    for workload in sorted({s.workload for s in fit.samples}, key=lambda w: names.get(w, w)):
        factor = {kind: {key[1]: v for key, v in fit.terms(kind).items() if key[0] == workload} for kind in "cm"}
        rows.append(
            {
                "workload": names.get(workload, workload),
                "arithmetic float32": factor["c"].get("float32"),
                "arithmetic mixed": factor["c"].get("mixed"),
                "memory float32": factor["m"].get("float32"),
                "memory mixed": factor["m"].get("mixed"),
                "per step": fit.terms("tau_w").get((workload,)),
            }
        )
    columns: list[Column] = [("workload", lambda r: r["workload"])] + [
        (name, lambda r, name=name: "-" if r[name] is None else f"{r[name]:.2f}")
        for name in ("arithmetic float32", "arithmetic mixed", "memory float32", "memory mixed", "per step")
    ]
    return "\n".join([*lines, "", text_table_of(rows, columns, left={"workload"})])
