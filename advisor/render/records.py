"""The JSON records of ``compare --json`` and ``recommend --json``: the analysis's rows as plain values, with the
sentences :mod:`advisor.render.prose` writes beside them (the reason, the rental advice, the notes)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from advisor.decision.analysis import (
    DEVICE_KEYS,
    ESTIMATE_KEYS,
    OPTION_KEYS,
    ROW_KEYS,
    Comparison,
    Recommendation,
)
from advisor.format.formatting import missing
from advisor.format.vocabulary import Source
from advisor.render import basis, prose


def _machines(row: Mapping[str, Any]) -> int:
    workers = row.get("scaling_workers")
    return int(workers) if workers is not None and not pd.isna(workers) else 1


# Record keys worked out from a row's columns (the rest are the columns themselves).
_RECORD_FIGURES: dict[str, Any] = {
    "devices": lambda row: int(row.get("device_count") or 1),
    "machines": _machines,
    "basis": lambda row: basis.sentence(row.get("basis")),
    "basis_parts": lambda row: basis.record(row.get("basis")),
    "price_kind": prose.price_words_of,  # words made from the row's facts: the frame holds no sentence
    "payback_counts": lambda row: prose.payback_counts_words(row.get("payback_counts")),
}


def row_record(row: Mapping[str, Any], keys: tuple[str, ...] = ROW_KEYS) -> dict[str, Any]:
    """A result row (a frame's row, or a typed row's :meth:`~advisor.store.result_row.TypedRow.as_dict`) as a JSON-ready
    dict of ``keys`` (NaN becomes None)."""
    record = {}
    for key in keys:
        value = _RECORD_FIGURES[key](row) if key in _RECORD_FIGURES else row.get(key)
        if isinstance(value, float) and math.isnan(value):
            value = None
        elif hasattr(value, "item"):
            value = value.item()
        record[key] = value
    return record


def with_estimate_keys(row: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str, ...]:
    """An estimated row's JSON carries its range (and, for catalog estimates, its bound and basis)."""
    return keys + ESTIMATE_KEYS if row.get("source") == Source.ESTIMATED else keys


def comparison_records(comparison: Comparison) -> list[dict[str, Any]]:
    return [row_record(row, with_estimate_keys(row, ROW_KEYS)) for _, row in comparison.table.iterrows()]


# ``recommend --json``'s keys, in order (the README's command table says them from here).
RECORD_KEYS = (
    "goal",
    "inputs",
    "current",
    "options",
    "best",
    "reason",
    "rent_advice",
    "ladder",
    "added_devices",
    "notes",
)


def recommendation_record(rec: Recommendation) -> dict[str, Any]:
    """The recommendation as a JSON-ready dict: current, options, best (with reason), notes."""
    current = rec.current_figures.as_dict()
    option_keys = ROW_KEYS + OPTION_KEYS
    best_record = None
    if rec.best is not None:
        chosen = rec.best.as_dict()
        best_record = {**row_record(chosen, with_estimate_keys(chosen, option_keys)), "reason": prose.reason(rec)}
    costs = dataclasses.asdict(rec.current_costs) if rec.current_costs is not None else {}
    ladder = rec.ladder if rec.ladder is not None else pd.DataFrame()
    devices = rec.devices if rec.devices is not None else pd.DataFrame()
    ladder_keys = (
        "profile",
        "name",
        "precision",
        "seconds",
        "upgrade_cost_usd",
        "runs_per_hour",
        "marginal_usd_per_added_run_per_hour",
        "marginal_usd_per_hour_saved_per_week",
        "source",
    )
    record = {
        "goal": rec.goal,
        "inputs": dataclasses.asdict(rec.habits),
        "current": {
            **row_record(current, with_estimate_keys(current, (*ROW_KEYS, "power_watts", "power_source"))),
            **{k: None if missing(v) else float(v) for k, v in costs.items()},
        },
        "options": [row_record(row, with_estimate_keys(row, option_keys)) for _, row in rec.options.iterrows()],
        "best": best_record,
        "reason": prose.reason(rec),
        "rent_advice": prose.rent_advice(rec),
        "ladder": [row_record(row, ladder_keys) for _, row in ladder.iterrows()],
        "added_devices": [row_record(row, DEVICE_KEYS) for _, row in devices.iterrows()],
        "notes": prose.notes(rec),
    }
    assert tuple(record) == RECORD_KEYS, "RECORD_KEYS says what recommend --json prints"
    return record
