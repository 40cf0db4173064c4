"""Catalog estimates as analysis rows: calibrate the performance model on a workload's results, then
estimate every catalog GPU the results do not already cover.

A measured or quoted result of a GPU always wins over an estimate of the same GPU and precision.
Pure pandas over the results frame (``analysis.results_frame``); no I/O.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from advisor import perfmodel
from advisor.analysis import select_workload, short_device
from advisor.catalog import Catalog
from advisor.schema import WORKLOAD_KEY_FIELDS

# The catalog field behind each precision's peak (float32: the CUDA cores' peak; TF32 is used when given).
PEAK_FIELDS = {"float32": "fp32_tflops", "mixed_float16": "fp16_tensor_tflops", "mixed_bfloat16": "bf16_tflops"}


def workload_from_key(key: tuple) -> dict[str, Any]:
    return dict(zip(WORKLOAD_KEY_FIELDS, key, strict=True))


def work_for(key: tuple) -> perfmodel.Work:
    """The performance model's view of a workload (the LSTM job's parameters)."""
    w = workload_from_key(key)
    return perfmodel.lstm_work(
        w["units"], w["timesteps"], w["features"], w["train_samples"], w["batch_size"], w["epochs"]
    )


def match_catalog(frame: pd.DataFrame, catalog: Catalog) -> pd.Series:
    """The catalog id of each row's GPU (single-GPU rows only; None where nothing matches)."""
    cache: dict[str, str | None] = {}

    def lookup(name: str) -> str | None:
        if name not in cache:
            gpu = catalog.match(name)
            cache[name] = gpu.id if gpu else None
        return cache[name]

    ids = [
        lookup(str(name)) if kind == "gpu" and count == 1 else None
        for name, kind, count in zip(frame["device_name"], frame["device_kind"], frame["device_count"], strict=True)
    ]
    return pd.Series(ids, index=frame.index, dtype=object)


def calibration_points(frame: pd.DataFrame, catalog: Catalog, key: tuple) -> tuple[perfmodel.Point, ...]:
    """The workload's measured and quoted results on catalog GPUs (the --quick and catalog estimates left out)."""
    rows = frame[(frame["workload"] == key) & (frame["source"] != "estimated")]
    ids = match_catalog(rows, catalog)
    gpus = catalog.by_id()
    points = []
    for (_, row), gpu_id in zip(rows.iterrows(), ids, strict=True):
        if gpu_id is None or row["precision"] not in perfmodel.BYTES:
            continue
        device = perfmodel.device_from_gpu(gpus[gpu_id])
        if device.peak(row["precision"]) is None:
            continue
        points.append(
            perfmodel.Point(str(row["name"]), device, row["precision"], float(row["seconds"]), bool(row["approximate"]))
        )
    return tuple(sorted(points, key=lambda p: (p.label, p.precision)))


@dataclass
class CatalogEstimates:
    """The estimate rows of one workload, the model behind them, and what could not be estimated."""

    rows: pd.DataFrame
    model: perfmodel.Model
    not_estimated: list[perfmodel.Estimate]


def estimate_catalog(
    frame: pd.DataFrame,
    catalog: Catalog,
    key: tuple,
    precisions: tuple[str, ...] = perfmodel.GPU_PRECISIONS,
    gpu_ids: list[str] | None = None,
    keep_covered: bool = False,
) -> CatalogEstimates:
    """Estimate the workload on every catalog GPU (or ``gpu_ids``) and precision, as results-frame rows.

    Rows are left out where a measured or quoted result of the same GPU and precision exists (unless
    ``keep_covered``, for checking the model against them).
    """
    model = perfmodel.calibrate(work_for(key), calibration_points(frame, catalog, key))
    covered: set[tuple[str, str]] = set()
    if not keep_covered:
        measured = frame[(frame["workload"] == key) & (frame["source"] != "estimated")]
        covered = set(zip(match_catalog(measured, catalog), measured["precision"], strict=True))
    chosen = [catalog.by_id()[i] for i in gpu_ids] if gpu_ids is not None else list(catalog.gpus)
    records, missing = [], []
    workload_name = _workload_name(frame, key)
    for gpu in chosen:
        device = perfmodel.device_from_gpu(gpu)
        for precision in precisions:
            if (gpu.id, precision) in covered:
                continue
            estimate = model.estimate(device, precision)
            if estimate.seconds is None:
                spec = gpu.specs[PEAK_FIELDS[precision]]
                why = f" ({spec.note})" if spec.note else ""
                missing.append(dataclasses.replace(estimate, reason=estimate.reason + why))
                continue
            records.append(_row(gpu, estimate, key, workload_name))
    rows = pd.DataFrame.from_records(records) if records else pd.DataFrame(columns=list(ESTIMATE_COLUMNS))
    return CatalogEstimates(rows, model, missing)


def _workload_name(frame: pd.DataFrame, key: tuple) -> str:
    names = frame.loc[frame["workload"] == key, "workload_name"]
    return str(names.iloc[0]) if len(names) else "workload"


ESTIMATE_COLUMNS = (
    "profile", "name", "device", "device_name", "device_kind", "device_count", "precision", "seconds", "price_usd",
    "price_date", "source", "approximate", "estimate_error_seconds", "source_detail", "power_watts", "workload",
    "workload_name", "low", "high", "bound", "basis", "catalog_id", "backend", "hardware",
)  # fmt: skip


def _row(gpu, estimate: perfmodel.Estimate, key: tuple, workload_name: str) -> dict[str, Any]:
    price = gpu.price
    return {
        "profile": f"catalog-{gpu.id}",
        "name": f"{short_device(gpu.name)} (estimated)",
        "device": gpu.name,
        "device_name": gpu.name,
        "device_kind": "gpu",
        "device_count": 1,
        "precision": estimate.precision,
        "seconds": float(estimate.seconds),
        "price_usd": float(price.usd) if price else math.nan,
        "price_date": price.date if price else None,
        "source": "estimated",
        "approximate": False,
        "estimate_error_seconds": math.nan,
        "source_detail": f"estimated by the performance model ({estimate.bound}-bound): {estimate.basis}",
        "power_watts": _or_nan(gpu.value("board_power_w")),
        "workload": key,
        "workload_name": workload_name,
        "low": float(estimate.low),
        "high": float(estimate.high),
        "bound": estimate.bound,
        "basis": estimate.basis,
        "catalog_id": gpu.id,
        "backend": "tensorflow",  # the calibration's results: the post's and measure's default backend
        "hardware": f"catalog:{gpu.id}",
    }


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


def with_estimates(frame: pd.DataFrame, catalog: Catalog, key: tuple) -> pd.DataFrame:
    """The frame plus the catalog estimates of one workload (the other workloads' rows untouched)."""
    return append_rows(frame, estimate_catalog(frame, catalog, key).rows)


def append_rows(frame: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """The frame with estimate rows added under its own columns."""
    if rows.empty:
        return frame
    return pd.concat([frame, rows[[c for c in frame.columns if c in rows.columns]]], ignore_index=True)


def add_to(frame: pd.DataFrame, catalog: Catalog, profile_id: str | None = None) -> pd.DataFrame:
    """The frame plus the catalog estimates of the workload the analysis will use: that of ``profile_id`` (the
    current hardware or the baseline), else the one with the most results."""
    if frame.empty:
        return frame
    rows = frame[frame["profile"] == profile_id]
    key = rows["workload"].iloc[0] if len(rows) else select_workload(frame).frame["workload"].iloc[0]
    return with_estimates(frame, catalog, key)


def estimate_records(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """``estimate --json``: one object per GPU and precision."""
    return [
        {
            "gpu": row["device"],
            "catalog_id": row["catalog_id"],
            "precision": row["precision"],
            "seconds_estimate": row["seconds"],
            "low": row["low"],
            "high": row["high"],
            "price_usd": None if math.isnan(row["price_usd"]) else row["price_usd"],
            "bound": row["bound"],
            "basis": row["basis"],
            "source": "estimated",
        }
        for _, row in rows.sort_values(["seconds", "device", "precision"]).iterrows()
    ]
