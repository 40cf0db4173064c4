"""The cross-validated range widths on file (``advisor/data/crossval.yaml``, beside the catalog): read and written.

``python -m advisor crossval --write`` runs :mod:`advisor.perf.crossval` on the calibration and writes, per
situation, the 90th-percentile error that every estimate in that situation takes as its range, with the
experiments' summary and the signature of the results it ran on. Estimates read it (cheaply) instead of
cross-validating at every start; the file says when the collection has changed since.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from advisor import store
from advisor.errors import ProfileError

FILE_NAME = "crossval.yaml"  # beside the catalog it was cross-validated with
# The file's format version (``crossval_version``; a file without one is version 1, written before it was marked).
# An older file is migrated by the ``update_to_N`` steps below; a newer one is refused (no widths: every estimate
# then says it is not cross-validated), never misread.
CROSSVAL_VERSION = 2


def update_to_2(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 -> 2: the version is written in the file; nothing else changed."""
    return {"crossval_version": 2, **data}


MIGRATIONS = {2: update_to_2}  # the step to each version from the one before
FALLBACK_FACTOR = 3.0  # a situation nothing was cross-validated for, without a file: a factor of 3 either way


@dataclass(frozen=True)
class Widths:
    """Log half-widths per situation key, and what they rest on."""

    half_widths: dict[str, float] = field(default_factory=dict)
    signature: str = ""
    samples: int = 0
    date: str = ""
    summary: tuple[dict, ...] = ()
    coverage: float | None = None
    scaling: dict | None = None  # the data-parallel scaling's cross-validation

    @property
    def fallback(self) -> float:
        """The width of a situation with no measured or combined width: the widest measured one, or a factor 3."""
        return max(self.half_widths.values(), default=math.log(FALLBACK_FACTOR))


def from_report(found: Any) -> Widths:
    """The widths of a :class:`advisor.perf.crossval.Report`."""
    return Widths(
        dict(found.half_widths),
        found.signature,
        found.samples,
        _dt.date.today().isoformat(),
        tuple(found.summary),
        found.coverage,
        found.scaling,
    )


def load(path: str | Path) -> Widths:
    """The widths on file; none (every estimate then says it is not cross-validated) when the file is missing or
    unreadable, never an error: the estimates still work."""
    try:
        data = store.parse_yaml(store.read_file_bytes(path), str(path))
    except ProfileError:
        return Widths()
    if not isinstance(data, dict):
        return Widths()
    version = data.get("crossval_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= CROSSVAL_VERSION:
        return Widths()  # a newer (or unreadable) format: refused, not misread
    for step in range(version + 1, CROSSVAL_VERSION + 1):
        data = MIGRATIONS[step](data)
    if not isinstance(data.get("half_widths"), dict):
        return Widths()
    factors = {str(k): float(v) for k, v in data["half_widths"].items() if isinstance(v, (int, float)) and v >= 1}
    return Widths(
        half_widths={k: math.log(v) for k, v in factors.items()},
        signature=str(data.get("signature", "")),
        samples=int(data.get("samples") or 0),
        date=str(data.get("date", "")),
        summary=tuple(data.get("summary") or ()),
        coverage=data.get("coverage"),
        scaling=data.get("data_parallel") if isinstance(data.get("data_parallel"), dict) else None,
    )


def document(widths: Widths, command: str) -> dict[str, Any]:
    """What the file holds (factors, not logs, so that a reader sees 1.26x)."""
    return {
        "crossval_version": CROSSVAL_VERSION,
        "description": "Cross-validated errors of the performance model; each estimate's range is the 90th "
        "percentile of its situation (see 'How good the estimates are' in docs/reference.md).",
        "command": command,
        "date": widths.date or _dt.date.today().isoformat(),
        "signature": widths.signature,
        "samples": widths.samples,
        "coverage": None if widths.coverage is None else round(widths.coverage, 4),
        "half_widths": {k: round(math.exp(v), 4) for k, v in sorted(widths.half_widths.items())},
        "summary": [{k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()} for row in widths.summary],
        "data_parallel": {k: round(v, 6) if isinstance(v, float) else v for k, v in (widths.scaling or {}).items()},
    }


def write(widths: Widths, path: str | Path, command: str = "python -m advisor crossval --write") -> Path:
    text = "# Written by `python -m advisor crossval --write`; do not edit by hand.\n" + yaml.safe_dump(
        document(widths, command), sort_keys=False, width=120
    )
    return store.write_atomic(path, text, overwrite=True)
