"""The results frame: one row per result of every profile (its columns are :data:`FRAME_COLUMNS`), built from the
profiles (:func:`results_frame`) or read through a folder's index (:func:`load_frame`: a restart with no file changed
decodes no profile). Below the performance model and the decision: both read it. Pure, but for the folder's index.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from advisor import store
from advisor.format import formatting
from advisor.format.schema import workload_key
from advisor.format.vocabulary import DeviceKind, Job, PriceBasis, Source
from advisor.store.catalog import normalise_name
from advisor.store.parse import tree_of
from advisor.store.result_row import ResultRow

FRAME_COLUMNS = ResultRow.columns()  # one column per field of a ResultRow, in its order: declared there


def results_frame(profiles: Iterable[Any]) -> pd.DataFrame:
    """One row per (profile, precision) result. Accepts Profile objects or profile dicts."""
    return frame_from_rows([row for profile in profiles for row in profile_rows(profile)])


# The version of profile_rows' output: the folder index keeps each file's rows under it, and derives them again from
# the stored profiles when it changes. Bump ROWS_VERSION when profile_rows computes a column differently.
ROWS_VERSION = 5
ROWS_TAG = f"advisor frame rows {ROWS_VERSION}: {','.join(FRAME_COLUMNS)}"


def frame_from_rows(rows: list[Any]) -> pd.DataFrame:
    """The results frame of rows from :func:`profile_rows` (dicts), or of their values in FRAME_COLUMNS' order (as the
    index keeps them, in JSON: a workload key read back as a list is a tuple again)."""
    frame = pd.DataFrame(rows, columns=list(FRAME_COLUMNS))
    if len(frame) and not isinstance(frame["workload"].iloc[0], tuple):
        frame["workload"] = _each_once(frame["workload"], repr, _as_key)
    return frame


def _as_key(value: Any) -> Any:
    return tuple(_as_key(item) for item in value) if isinstance(value, list) else value


def _each_once(values: Iterable[Any], key: Any, convert: Any) -> list[Any]:
    """``convert`` of every value, worked out once per distinct ``key(value)``: a few distinct workloads among many
    rows (equal values share one converted object, which no reader changes)."""
    done: dict[Any, Any] = {}
    out = []
    for value in values:
        found = key(value)
        if found not in done:
            done[found] = convert(value)
        out.append(done[found])
    return out


def _each_text_once(texts: pd.Series, convert: Any) -> np.ndarray:
    """``convert`` of every text, worked out once per distinct text and spread by Arrow's factorize: no Python work
    per row (20,000 rows: 25 ms to 2 ms). Equal texts share one converted object, which no reader changes."""
    codes, distinct = pd.factorize(texts)
    if (codes < 0).any():  # a missing text: never written by _frame_bytes, so the snapshot is not to be trusted
        raise ValueError("a snapshot's JSON column has a missing value")
    converted = np.empty(len(distinct), dtype=object)
    for position, text in enumerate(distinct):  # one by one: a tuple assigned in a list would become a row of cells
        converted[position] = convert(text)
    return converted[codes]


def _row_values(profile: Any) -> list[list[Any]]:
    """A profile's rows as values in FRAME_COLUMNS' order: what the folder index keeps (half the size of dicts)."""
    return [[row[column] for column in FRAME_COLUMNS] for row in profile_rows(profile)]


@dataclass
class LoadedFrame:
    """A folder loaded for comparing: its results frame, what was wrong, and its profiles on demand."""

    frame: pd.DataFrame
    rows: store.RowSet

    @property
    def problems(self) -> list:
        return self.rows.problems

    @property
    def warnings(self) -> list:
        return self.rows.warnings

    def profile(self, profile_id: str) -> Any:
        """One profile's typed tree (None when it is gone), read only when asked for."""
        found = self.rows.profile(profile_id)
        return found.typed if found is not None else None

    def generations(self) -> list[Any]:
        """The inference profiles' typed trees (``measure --inference``: no rows in the frame), in file order."""
        return [tree for tree in map(self.profile, self.rows.generations) if tree is not None]


def load_frame(folder: Any, cache: store.ProfileCache | None = None, signature: str | None = None) -> LoadedFrame:
    """A profiles folder's results frame through its index.

    The index keeps the whole frame of the folder as it was last loaded (Arrow IPC, under the folder's signature
    and ROWS_TAG): a restart with no file changed reads it back and decodes no profile. Otherwise each unchanged
    file's rows come from the index and only changed files are parsed (:func:`store.load_rows`); the new frame is
    kept for the next restart. ``signature``: the folder's :func:`store.folder_signature`, when already taken.
    """
    cache = cache or store.ProfileCache()
    folder = Path(folder)
    key = f"{signature or store.folder_signature(folder)} {ROWS_TAG}"
    if folder.is_dir():
        found = store.read_snapshot(folder, key, cache)
        if found is not None:
            frame = _frame_from_bytes(found[0])
            if frame is not None:
                return LoadedFrame(frame, found[1])
    rows = store.load_rows(folder, _row_values, ROWS_TAG, cache)
    frame = frame_from_rows(rows.rows)
    blob = _frame_bytes(frame) if folder.is_dir() else None
    if blob is not None:
        store.keep_snapshot(folder, key, blob, rows, cache)
    rows.rows = []  # the frame holds them now
    return LoadedFrame(frame, rows)


# Columns of Python objects, kept in a snapshot as JSON text (read back by _frame_from_bytes)
_JSON_COLUMNS = ("workload", "workload_spec")


def _frame_bytes(frame: pd.DataFrame) -> bytes | None:
    """The frame as Arrow IPC (None where pyarrow is missing or a value does not fit: then no snapshot is kept)."""
    try:  # to_feather needs pyarrow (the app's Streamlit brings it; without it, ImportError: no snapshot)
        out = frame.copy()
        for column in _JSON_COLUMNS:
            out[column] = [json.dumps(value) for value in out[column]]
        sink = io.BytesIO()
        out.to_feather(sink)
        return sink.getvalue()
    except Exception:  # no pyarrow, a value Arrow cannot hold, pyarrow's own errors: a snapshot is only a cache
        return None


def _frame_from_bytes(blob: bytes) -> pd.DataFrame | None:
    """A frame kept by :func:`_frame_bytes` (None when it cannot be read: the rows are loaded instead)."""
    try:
        frame = pd.read_feather(io.BytesIO(blob))
        if list(frame.columns) != list(FRAME_COLUMNS):
            return None
        frame["workload"] = _each_text_once(frame["workload"], lambda text: _as_key(json.loads(text)))
        frame["workload_spec"] = _each_text_once(frame["workload_spec"], json.loads)
        return frame
    except Exception:  # a damaged snapshot is only a cache: the rows are loaded instead
        return None


def profile_rows(profile: Any) -> list[dict[str, Any]]:
    """One profile's rows of the results frame, one per (precision) result. Accepts a Profile or a profile dict. An
    inference profile has none: its generation is not a training time (:mod:`advisor.infer.measured` reads it)."""
    rows = []
    tree = tree_of(profile)
    if tree.job == Job.INFERENCE:
        return rows
    provenance, device, price = tree.provenance, tree.device, tree.price
    count = int(device.count or 1)
    workers = int(tree.cluster.workers) if tree.cluster is not None else 1
    device_label = formatting.device_label(device.name, count, workers)
    for result in tree.results:
        estimated = bool(result.estimated)
        source, detail = _source(result, provenance)
        seconds = float(result.total_seconds)
        error = _float_or_nan(result.estimate.error_seconds if result.estimate is not None else None)
        peak = result.throughput.matmul_peak_gflops if result.throughput is not None else None
        rows.append(
            {
                "profile": tree.id,
                "name": tree.name or device.name,
                "device": device_label,
                "device_name": device.name,
                "device_kind": device.kind,
                "device_count": count,
                "precision": result.precision,
                "seconds": seconds,
                "price_usd": _float_or_nan(price.usd),
                "price_date": price.date,
                "price_stale": False,
                "price_basis": PriceBasis.PROFILE.value if price.usd is not None else None,
                "price_catalog_kind": None,
                "catalog_estimate": False,
                "source": source,
                "approximate": bool(result.approximate),
                "estimate_error_seconds": error,
                "source_detail": detail,
                "power_watts": _float_or_nan(price.power_watts),
                "workload": workload_key(tree.workload.raw),
                "workload_name": tree.workload.name,
                "backend": tree.software.keras_backend or tree.software.framework,
                "hardware": hardware_signature(tree),
                "low": max(seconds - error, 0.0) if estimated else math.nan,
                "high": seconds + error if estimated else math.nan,
                "bound": None,
                "basis": None,
                "catalog_id": None,
                "measured_power_watts": _float_or_nan(result.power.average_watts if result.power else None),
                **_scaling_columns(result.scaling),
                "workload_spec": dict(tree.workload.raw),
                "matmul_peak_gflops": _float_or_nan(peak) / count,
                "batch_size": _float_or_nan(result.batch_size),
                "memory_gb": _float_or_nan(result.memory.peak_gb if result.memory else None),
                "fits": True,
                "largest_batch": math.nan,
                **_data_wait(result, tree.workload),
            }
        )
    return rows


def _source(result: Any, provenance: Any) -> tuple[str, str]:
    """A result's source (estimated, or the profile's method) and where it comes from, in words."""
    if result.estimated:
        return Source.ESTIMATED.value, result.estimate.method if result.estimate is not None else Source.ESTIMATED.value
    if provenance.method == Source.QUOTED:
        return provenance.method, provenance.source or ""
    return provenance.method, f"measured by advisor {provenance.advisor_version or '?'} on {provenance.date or '?'}"


def _scaling_columns(scaling: Any) -> dict[str, float]:
    """A several-device result's scaling facts as frame columns (NaN for one device)."""
    return {
        "scaling_devices": _float_or_nan(scaling.devices if scaling else None),
        "scaling_workers": _float_or_nan(scaling.workers if scaling else None),
        "scaling_speedup": _float_or_nan(scaling.speedup if scaling else None),
        "single_device_seconds": _float_or_nan(scaling.single_device_seconds if scaling else None),
    }


def _data_wait(result: Any, workload: Any) -> dict[str, float]:
    """A tracked result's wait for data: the whole run's (its steps x a step's wait) and its share of a step."""
    wait = result.data_wait
    if wait is None or workload.steps is None:
        return {"data_wait_seconds": math.nan, "data_wait_share": math.nan}
    return {
        "data_wait_seconds": float(wait.seconds_per_step) * float(workload.steps),
        "data_wait_share": float(wait.share),
    }


def _float_or_nan(value: Any) -> float:
    return float("nan") if value is None else float(value)


def hardware_signature(profile: Any) -> str:
    """What identifies the machine a profile ran on: a GPU by model and count; a CPU machine by its CPU model,
    logical CPUs and memory as measure recorded them (the profile's own id when those are unknown)."""
    tree = tree_of(profile)
    device, host = tree.device, tree.host
    count = int(device.count or 1)
    if device.kind == DeviceKind.GPU:
        return f"gpu:{normalise_name(device.name)}:x{count}"
    if host is not None and host.cpu and host.logical_cpus and host.memory_gb:
        return f"cpu:{normalise_name(host.cpu)}:{host.logical_cpus}:{host.memory_gb}:x{count}"
    return f"profile:{tree.id}"
