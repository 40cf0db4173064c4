"""A row of the results frame as a typed value: :class:`ResultRow`, whose fields are the frame's columns.

The frame holds every result as columns (the analysis works on whole columns at once); a single row that one layer
hands to another (the baseline of a comparison, the current result, the best option) is a frozen dataclass that
says its fields, so a reader writes ``row.seconds`` and a missing or misspelt column fails where the row is made,
not where a sentence is written. Each stage of the decision adds its columns in a subclass
(:mod:`advisor.decision.rows`); :meth:`TypedRow.of` checks that a frame's row has exactly the stage's columns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Self

import numpy as np


@dataclasses.dataclass(frozen=True)
class TypedRow:
    """The base of the typed rows: their columns (the fields, in order), a check and the way back to a mapping."""

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        """The row's columns, in the order the frame holds them (this stage's after its parent's)."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def added_columns(cls) -> tuple[str, ...]:
        """The columns this stage adds to its parent's (all of them for the first stage)."""
        parent = cls.__mro__[1]
        known = set(parent.columns()) if dataclasses.is_dataclass(parent) else set()
        return tuple(name for name in cls.columns() if name not in known)

    @classmethod
    def of(cls, row: Mapping[str, Any] | Any) -> Self:
        """The typed row of one frame row (a Series or a mapping), which must have exactly this stage's columns;
        NumPy scalars become Python's own (``numpy.bool_`` a ``bool``)."""
        names = cls.columns()
        declared = set(names)
        missing = [name for name in names if name not in row]
        have = list(row.keys())  # a Series iterates over its values: its keys are its index
        extra = [name for name in have if name not in declared]
        if missing or extra:
            said = "; ".join(
                part
                for part in (
                    f"missing {', '.join(missing)}" if missing else "",
                    f"not declared {', '.join(map(str, extra))}" if extra else "",
                )
                if part
            )
            raise ValueError(f"a {cls.__name__} has the columns its class declares: {said}")
        return cls(**{name: _plain(row[name]) for name in names})

    def as_dict(self) -> dict[str, Any]:
        """The row's columns and values (not copied deeper: a nested value is the row's own, to be read only)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


@dataclasses.dataclass(frozen=True)
class ResultRow(TypedRow):
    """One result of one profile (or one estimate of a catalog GPU): a row of the results frame. A value nobody knows
    is ``None`` (a text) or NaN (a number), as in the frame."""

    profile: str  # the profile's id ("catalog:rtx-4090" for an estimate of a catalog GPU)
    name: str  # the profile's name as a buyer reads it
    device: str  # the device in words, with its count ("2x RTX 4090")
    device_name: str | None  # the device's own name, as its driver reports it
    device_kind: str  # DeviceKind: gpu or cpu
    device_count: int
    precision: str
    seconds: float
    price_usd: float
    price_date: str | None
    price_stale: bool | None  # a launch price over two years old: shown, never recommended to buy at
    price_basis: str | None  # whose price it is (PriceBasis): the catalog's, the profile's or yours; None without one
    price_catalog_kind: str | None  # a catalog price's kind as the catalog says it (launch MSRP, system price ...)
    source: str  # Source: measured, quoted or estimated
    approximate: bool | None
    estimate_error_seconds: float
    source_detail: str | None
    power_watts: float
    workload: tuple
    workload_name: str
    low: float  # an estimated time's range (catalog estimates, --quick totals); NaN for measured and quoted times
    high: float
    bound: str | None  # catalog estimates: arithmetic, memory or per-step
    basis: Any  # catalog estimates: what it rests on, by part (perf.basis.Basis; render.basis writes its sentence)
    catalog_id: str | None  # catalog estimates: the GPU's catalog id
    measured_power_watts: float  # the average power measure read during the run (results[].power.average_watts)
    backend: str | None  # the Keras backend (or framework) that trained
    hardware: str | None  # the machine's signature (results.hardware_signature): the same machine, another backend
    scaling_devices: float  # several devices: how many, and the speedup over one device measured in the same run
    scaling_workers: float  # several machines (measure --workers): how many
    scaling_speedup: float
    single_device_seconds: float
    workload_spec: Any  # the workload as the profile describes it (the performance model reads a model's layers)
    matmul_peak_gflops: float  # the matmul peak measure recorded for one device in the result's dtype
    batch_size: float  # a result's own batch per device, when it ran another than its workload's (published results)
    memory_gb: float  # catalog estimates: the predicted peak training memory per GPU (advisor.perf.memory)
    fits: bool | None  # catalog estimates: whether that fits the GPU's memory (a profile's result ran, so it fit)
    largest_batch: float  # catalog estimates: the largest batch per GPU that would fit
    data_wait_seconds: float  # tracked runs: the run's time waiting for data (steps x the wait of a step); a faster
    # GPU does not shorten it, so every estimate of the workload keeps it
    data_wait_share: float  # tracked runs: the share of a step spent waiting for data
    catalog_estimate: bool | None  # True for the performance model's rows of a catalog GPU (no profile measured them)
