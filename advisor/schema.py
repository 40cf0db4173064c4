"""The profile format: its fields, validation, migration and canonical key order.

Pure functions over plain dicts (as parsed from YAML); no I/O here.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Callable
from typing import Any

from advisor.errors import Problem

SCHEMA_VERSION = 1
PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16")
DEVICE_KINDS = ("cpu", "gpu")
PROVENANCE_METHODS = ("measured", "quoted")
MAX_EPOCHS = 100_000
MAX_NUMBER = 1e300  # beyond this an integer cannot become a float
SLUG_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,79}$")

# The post's training job: the default workload.
DEFAULT_WORKLOAD: dict[str, Any] = {
    "name": "lstm1000-post",
    "units": 1000,
    "timesteps": 100,
    "features": 1,
    "train_samples": 937,
    "batch_size": 100,
    "epochs": 100,
    "optimizer": "adam",
    "learning_rate": 0.001,
}
# The fields that define a workload: two results share a workload when these are equal.
WORKLOAD_KEY_FIELDS = (
    "units",
    "timesteps",
    "features",
    "train_samples",
    "batch_size",
    "epochs",
    "optimizer",
    "learning_rate",
)

# Canonical key order for writing; also the set of known keys (others warn).
TOP_LEVEL_ORDER = (
    "schema_version",
    "id",
    "name",
    "device",
    "host",
    "software",
    "price",
    "workload",
    "results",
    "provenance",
    "notes",
)
DEVICE_ORDER = ("kind", "name", "count", "memory_gb", "compute_capability", "driver")
HOST_ORDER = ("cpu", "cpu_features", "cores", "logical_cpus", "memory_gb", "os", "machine")
SOFTWARE_ORDER = (
    "framework",
    "framework_version",
    "keras_version",
    "keras_backend",
    "python",
    "cuda",
    "cudnn",
)
PRICE_ORDER = ("usd", "date", "includes", "source", "power_watts")
WORKLOAD_ORDER = ("name", *WORKLOAD_KEY_FIELDS, "note")
RESULT_ORDER = (
    "precision",
    "total_seconds",
    "estimated",
    "estimate",
    "approximate",
    "epochs_run",
    "first_epoch_seconds",
    "steady",
    "epoch_seconds",
    "final_loss",
    "final_accuracy",
    "throughput",
    "checks",
    "warnings",
    "note",
)
STEADY_ORDER = ("count", "median", "mean", "min", "max", "stdev")
ESTIMATE_ORDER = ("method", "error_seconds", "confidence", "steady_epochs_timed")
THROUGHPUT_ORDER = (
    "flops_per_epoch",
    "achieved_gflops",
    "matmul_peak_gflops",
    "matmul_dtype",
    "efficiency",
)
PROVENANCE_ORDER = ("method", "source", "advisor_version", "date", "command")

_NESTED_ORDER: dict[str, tuple[str, ...]] = {
    "device": DEVICE_ORDER,
    "host": HOST_ORDER,
    "software": SOFTWARE_ORDER,
    "price": PRICE_ORDER,
    "workload": WORKLOAD_ORDER,
    "provenance": PROVENANCE_ORDER,
}
_RESULT_NESTED_ORDER: dict[str, tuple[str, ...]] = {
    "steady": STEADY_ORDER,
    "estimate": ESTIMATE_ORDER,
    "throughput": THROUGHPUT_ORDER,
}


# --------------------------------------------------------------------------- migration


def _migrate_0_to_1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 0 (the draft format) kept ``price_usd`` at the top level and ``seconds`` per result."""
    migrated = dict(data)
    if "price_usd" in migrated and "price" not in migrated:
        migrated["price"] = {"usd": migrated.pop("price_usd")}
    results = migrated.get("results")
    if isinstance(results, list):
        new_results = []
        for result in results:
            if isinstance(result, dict) and "seconds" in result and "total_seconds" not in result:
                result = dict(result)
                result["total_seconds"] = result.pop("seconds")
            new_results.append(result)
        migrated["results"] = new_results
    migrated["schema_version"] = 1
    return migrated


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {0: _migrate_0_to_1}


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Bring an older (already version-checked) profile up to SCHEMA_VERSION."""
    version = data.get("schema_version")
    while isinstance(version, int) and version < SCHEMA_VERSION and version in MIGRATIONS:
        data = MIGRATIONS[version](data)
        version = data.get("schema_version")
    return data


# --------------------------------------------------------------------------- validation


class _Checker:
    """Collects problems and warnings for one profile."""

    def __init__(self, file: str):
        self.file = file
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []

    def problem(self, field: str, message: str) -> None:
        self.problems.append(Problem(self.file, field, message))

    def warn(self, field: str, message: str) -> None:
        self.warnings.append(Problem(self.file, field, message))

    # Typed field readers: each returns the value when valid, else None after a problem.

    def mapping(self, parent: dict, key: str, path: str, required: bool = True) -> dict | None:
        if key not in parent or parent[key] is None:
            if required:
                self.problem(path, "is missing")
            return None
        value = parent[key]
        if not isinstance(value, dict):
            self.problem(path, f"must be a mapping, got {_describe(value)}")
            return None
        return value

    def string(self, parent: dict, key: str, path: str, required: bool = False) -> str | None:
        if key not in parent or parent[key] is None:
            if required:
                self.problem(path, "is missing")
            return None
        value = parent[key]
        if isinstance(value, (_dt.date, _dt.datetime)):
            return value.isoformat()
        if not isinstance(value, str):
            hint = " (quote it)" if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
            self.problem(path, f"must be a string{hint}, got {_describe(value)}")
            return None
        if required and not value.strip():
            self.problem(path, "must not be empty")
            return None
        if any(ord(c) < 32 and c not in "\t\n" for c in value):
            self.problem(path, "must not contain control characters")
            return None
        return value

    def number(
        self,
        parent: dict,
        key: str,
        path: str,
        *,
        required: bool = False,
        minimum: float | None = None,
        positive: bool = False,
        maximum: float | None = None,
        integer: bool = False,
    ) -> float | None:
        if key not in parent or parent[key] is None:
            if required:
                self.problem(path, "is missing")
            return None
        value = parent[key]
        kind = "an integer" if integer else "a number"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.problem(path, f"must be {kind}, got {_describe(value)}")
            return None
        if integer and not isinstance(value, int):
            self.problem(path, f"must be {kind}, got {_describe(value)}")
            return None
        if isinstance(value, float) and not math.isfinite(value):
            self.problem(path, f"must be a finite number, got {value}")
            return None
        if abs(value) > MAX_NUMBER:
            self.problem(path, f"is implausibly large (over {MAX_NUMBER:g})")
            return None
        if positive and value <= 0:
            self.problem(path, f"must be greater than 0, got {value}")
            return None
        if minimum is not None and value < minimum:
            self.problem(path, f"must be at least {minimum:g}, got {value}")
            return None
        if maximum is not None and value > maximum:
            self.problem(path, f"must be at most {maximum:g}, got {value}")
            return None
        return value

    def choice(self, parent: dict, key: str, path: str, choices: tuple[str, ...], required: bool = True) -> str | None:
        value = self.string(parent, key, path, required=required)
        if value is None:
            return None
        if value not in choices:
            self.problem(path, f"must be one of {', '.join(choices)}; got {value!r}")
            return None
        return value

    def boolean(self, parent: dict, key: str, path: str) -> bool | None:
        if key not in parent or parent[key] is None:
            return None
        value = parent[key]
        if not isinstance(value, bool):
            self.problem(path, f"must be true or false, got {_describe(value)}")
            return None
        return value

    def unknown_keys(self, mapping: dict, known: tuple[str, ...], path: str) -> None:
        for key in mapping:
            if key not in known:
                where = f"{path}.{key}" if path else str(key)
                self.warn(where, "unknown field (ignored; written by a newer advisor?)")


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"a string ({shown!r})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def check_version(data: Any, file: str) -> list[Problem]:
    """Problems with the top-level shape and ``schema_version`` (checked before migration)."""
    if not isinstance(data, dict):
        return [Problem(file, "", f"a profile must be a YAML mapping, got {_describe(data)}")]
    if "schema_version" not in data:
        return [Problem(file, "schema_version", "is missing")]
    version = data["schema_version"]
    if isinstance(version, bool) or not isinstance(version, int):
        return [Problem(file, "schema_version", f"must be an integer, got {_describe(version)}")]
    if version > SCHEMA_VERSION:
        return [
            Problem(
                file,
                "schema_version",
                f"this profile needs a newer advisor (schema_version {version}; "
                f"this advisor reads up to {SCHEMA_VERSION}): upgrade advisor",
            )
        ]
    if version < 0 or (version < SCHEMA_VERSION and version not in MIGRATIONS):
        return [Problem(file, "schema_version", f"unknown schema_version {version}")]
    return []


def validate(data: Any, file: str = "", expected_id: str | None = None) -> tuple[list[Problem], list[Problem]]:
    """Validate a migrated profile. Returns (problems, warnings); valid when problems is empty."""
    version_problems = check_version(data, file)
    if version_problems:
        return version_problems, []
    c = _Checker(file)
    c.unknown_keys(data, TOP_LEVEL_ORDER, "")

    profile_id = c.string(data, "id", "id", required=True)
    if profile_id is not None and not SLUG_PATTERN.match(profile_id):
        c.problem("id", f"must be a slug (lower-case letters, digits and '-', at most 80), got {profile_id!r}")
    elif profile_id is not None and expected_id is not None and profile_id != expected_id:
        c.problem("id", f"{profile_id!r} does not match the file name ({expected_id!r} expected)")
    c.string(data, "name", "name")

    device = c.mapping(data, "device", "device")
    if device is not None:
        c.unknown_keys(device, DEVICE_ORDER, "device")
        c.choice(device, "kind", "device.kind", DEVICE_KINDS)
        c.string(device, "name", "device.name", required=True)
        c.number(device, "count", "device.count", integer=True, minimum=1, maximum=1024)
        c.number(device, "memory_gb", "device.memory_gb", positive=True)
        c.string(device, "compute_capability", "device.compute_capability")
        c.string(device, "driver", "device.driver")

    host = c.mapping(data, "host", "host", required=False)
    if host is not None:
        c.unknown_keys(host, HOST_ORDER, "host")
        c.string(host, "cpu", "host.cpu")
        features = host.get("cpu_features")
        if features is not None and not (isinstance(features, list) and all(isinstance(f, str) for f in features)):
            c.problem("host.cpu_features", "must be a list of strings")
        c.number(host, "cores", "host.cores", integer=True, minimum=1)
        c.number(host, "logical_cpus", "host.logical_cpus", integer=True, minimum=1)
        c.number(host, "memory_gb", "host.memory_gb", positive=True)
        c.string(host, "os", "host.os")
        c.string(host, "machine", "host.machine")

    software = c.mapping(data, "software", "software")
    if software is not None:
        c.unknown_keys(software, SOFTWARE_ORDER, "software")
        c.string(software, "framework", "software.framework", required=True)
        for key in SOFTWARE_ORDER[1:]:
            c.string(software, key, f"software.{key}")

    price = c.mapping(data, "price", "price")
    if price is not None:
        c.unknown_keys(price, PRICE_ORDER, "price")
        if "usd" not in price:
            c.problem("price.usd", "is missing (write null when the price is unknown)")
        else:
            c.number(price, "usd", "price.usd", minimum=0)
        date = c.string(price, "date", "price.date")
        if date is not None and not is_iso_date(date):
            c.problem("price.date", f"must be a date like 2020-12-31 (or 2020-12), got {date!r}")
        c.string(price, "includes", "price.includes")
        c.string(price, "source", "price.source")
        c.number(price, "power_watts", "price.power_watts", positive=True)

    workload = c.mapping(data, "workload", "workload")
    epochs = None
    if workload is not None:
        c.unknown_keys(workload, WORKLOAD_ORDER, "workload")
        c.string(workload, "name", "workload.name", required=True)
        for key in ("units", "timesteps", "features", "train_samples", "batch_size"):
            c.number(workload, key, f"workload.{key}", required=True, integer=True, minimum=1, maximum=10**9)
        epochs = c.number(
            workload, "epochs", "workload.epochs", required=True, integer=True, minimum=1, maximum=MAX_EPOCHS
        )
        c.string(workload, "optimizer", "workload.optimizer", required=True)
        c.number(workload, "learning_rate", "workload.learning_rate", required=True, positive=True)
        c.string(workload, "note", "workload.note")

    provenance = c.mapping(data, "provenance", "provenance")
    if provenance is not None:
        c.unknown_keys(provenance, PROVENANCE_ORDER, "provenance")
        method = c.choice(provenance, "method", "provenance.method", PROVENANCE_METHODS)
        c.string(provenance, "source", "provenance.source", required=method == "quoted")
        c.string(provenance, "advisor_version", "provenance.advisor_version", required=method == "measured")
        date = c.string(provenance, "date", "provenance.date")
        if date is not None and not is_iso_date(date):
            c.problem("provenance.date", f"must be a date like 2020-12-31, got {date!r}")
        c.string(provenance, "command", "provenance.command")

    _validate_results(c, data, int(epochs) if epochs is not None else None)
    _validate_notes(c, data)
    return c.problems, c.warnings


def _validate_notes(c: _Checker, data: dict) -> None:
    notes = data.get("notes")
    if notes is None or isinstance(notes, str):
        c.string(data, "notes", "notes")
        return
    if not isinstance(notes, list):
        c.problem("notes", f"must be a string or a list of strings, got {_describe(notes)}")
        return
    for index, _ in enumerate(notes):
        c.string({"n": notes[index]}, "n", f"notes[{index}]")


def _validate_results(c: _Checker, data: dict, epochs: int | None) -> None:
    if "results" not in data or data["results"] is None:
        c.problem("results", "is missing")
        return
    results = data["results"]
    if not isinstance(results, list) or not results:
        c.problem("results", f"must be a non-empty list, got {_describe(results)}")
        return
    seen: set[str] = set()
    for index, result in enumerate(results):
        path = f"results[{index}]"
        if not isinstance(result, dict):
            c.problem(path, f"must be a mapping, got {_describe(result)}")
            continue
        c.unknown_keys(result, RESULT_ORDER, path)
        precision = c.choice(result, "precision", f"{path}.precision", PRECISIONS)
        if precision is not None:
            if precision in seen:
                c.problem(f"{path}.precision", f"{precision} appears twice; one result per precision")
            seen.add(precision)
        total = c.number(result, "total_seconds", f"{path}.total_seconds", required=True, positive=True)
        estimated = c.boolean(result, "estimated", f"{path}.estimated")
        c.boolean(result, "approximate", f"{path}.approximate")
        _validate_estimate(c, result, path, bool(estimated))
        epochs_run = c.number(result, "epochs_run", f"{path}.epochs_run", integer=True, minimum=1)
        if epochs_run is not None and epochs is not None and epochs_run > epochs:
            c.problem(f"{path}.epochs_run", f"{epochs_run} epochs run but the workload has only {epochs}")
        c.number(result, "first_epoch_seconds", f"{path}.first_epoch_seconds", positive=True)
        _validate_steady(c, result, path)
        _validate_epoch_seconds(c, result, path, epochs, total, bool(estimated), epochs_run)
        c.number(result, "final_loss", f"{path}.final_loss", minimum=0)
        c.number(result, "final_accuracy", f"{path}.final_accuracy", minimum=0, maximum=1)
        throughput = c.mapping(result, "throughput", f"{path}.throughput", required=False)
        if throughput is not None:
            c.unknown_keys(throughput, THROUGHPUT_ORDER, f"{path}.throughput")
            for key in ("flops_per_epoch", "achieved_gflops", "matmul_peak_gflops"):
                c.number(throughput, key, f"{path}.throughput.{key}", positive=True)
            c.string(throughput, "matmul_dtype", f"{path}.throughput.matmul_dtype")
            c.number(throughput, "efficiency", f"{path}.throughput.efficiency", minimum=0)
        c.mapping(result, "checks", f"{path}.checks", required=False)
        warnings = result.get("warnings")
        if warnings is not None and not (isinstance(warnings, list) and all(isinstance(w, str) for w in warnings)):
            c.problem(f"{path}.warnings", "must be a list of strings")
        c.string(result, "note", f"{path}.note")


def _validate_estimate(c: _Checker, result: dict, path: str, estimated: bool) -> None:
    estimate = c.mapping(result, "estimate", f"{path}.estimate", required=estimated)
    if estimate is None:
        return
    if not estimated:
        c.problem(f"{path}.estimate", "is given but estimated is not true")
    c.unknown_keys(estimate, ESTIMATE_ORDER, f"{path}.estimate")
    c.string(estimate, "method", f"{path}.estimate.method", required=True)
    c.number(estimate, "error_seconds", f"{path}.estimate.error_seconds", minimum=0)
    c.number(estimate, "confidence", f"{path}.estimate.confidence", positive=True, maximum=1)
    c.number(estimate, "steady_epochs_timed", f"{path}.estimate.steady_epochs_timed", integer=True, minimum=1)


def _validate_steady(c: _Checker, result: dict, path: str) -> None:
    steady = c.mapping(result, "steady", f"{path}.steady", required=False)
    if steady is None:
        return
    c.unknown_keys(steady, STEADY_ORDER, f"{path}.steady")
    c.number(steady, "count", f"{path}.steady.count", integer=True, minimum=1)
    values = {}
    for key in ("median", "mean", "min", "max"):
        values[key] = c.number(steady, key, f"{path}.steady.{key}", positive=True)
    c.number(steady, "stdev", f"{path}.steady.stdev", minimum=0)
    low, high = values["min"], values["max"]
    if low is not None and high is not None:
        if low > high:
            c.problem(f"{path}.steady", f"min ({low}) is greater than max ({high})")
        elif values["median"] is not None and not low <= values["median"] <= high:
            c.problem(f"{path}.steady.median", f"{values['median']} lies outside min..max ({low}..{high})")


def _validate_epoch_seconds(
    c: _Checker,
    result: dict,
    path: str,
    epochs: int | None,
    total: float | None,
    estimated: bool,
    epochs_run: float | None,
) -> None:
    if result.get("epoch_seconds") is None:
        return
    series = result["epoch_seconds"]
    field = f"{path}.epoch_seconds"
    if not isinstance(series, list) or not series:
        c.problem(field, f"must be a non-empty list of seconds, got {_describe(series)}")
        return
    for i, value in enumerate(series):
        if c.number({"v": value}, "v", f"{field}[{i}]", positive=True) is None:
            return
    if epochs is not None and len(series) > epochs:
        c.problem(field, f"has {len(series)} epochs but the workload has only {epochs}")
        return
    if epochs_run is not None and len(series) != epochs_run:
        c.problem(field, f"has {len(series)} epochs but epochs_run says {epochs_run}")
        return
    if not estimated and epochs is not None and len(series) != epochs:
        c.problem(field, f"has {len(series)} epochs but the workload has {epochs} and the total is not estimated")
        return
    if not estimated and total is not None:
        summed = math.fsum(series)
        if abs(summed - total) > 0.05 * total + 0.01:
            c.problem(
                f"{path}.total_seconds",
                f"{total:g} does not match the sum of epoch_seconds ({summed:.6g}): "
                "the result does not belong to this workload",
            )


_ISO_DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")


def is_iso_date(text: str) -> bool:
    if not _ISO_DATE.match(text):
        return False
    parts = [int(p) for p in text.split("-")]
    try:
        _dt.date(parts[0], parts[1], parts[2] if len(parts) > 2 else 1)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- normalisation


def normalise(data: dict[str, Any]) -> dict[str, Any]:
    """A validated profile with defaults filled in and dates as strings (for analysis and writing)."""
    out = dict(data)
    device = dict(out["device"])
    if device.get("count") is None:
        device["count"] = 1
    out["device"] = device
    # An explicit null in an optional field means the same as leaving it out.
    out["results"] = [{k: v for k, v in result.items() if v is not None} for result in out["results"]]
    for section in ("price", "provenance"):
        mapping = dict(out[section])
        for key, value in mapping.items():
            if isinstance(value, (_dt.date, _dt.datetime)):
                mapping[key] = value.isoformat()
        out[section] = mapping
    if out.get("name") is None:
        out["name"] = device["name"]
    return out


def workload_key(workload: dict[str, Any]) -> tuple:
    """The identity of a workload: its parameters, whatever its name."""
    return tuple(
        float(workload[k])
        if k == "learning_rate"
        else str(workload[k]).lower()
        if k == "optimizer"
        else int(workload[k])
        for k in WORKLOAD_KEY_FIELDS
    )


def canonical(data: dict[str, Any]) -> dict[str, Any]:
    """The profile with keys in the canonical order (known keys first, others sorted after)."""
    ordered = _ordered(data, TOP_LEVEL_ORDER)
    for key, order in _NESTED_ORDER.items():
        if isinstance(ordered.get(key), dict):
            ordered[key] = _ordered(ordered[key], order)
    if isinstance(ordered.get("results"), list):
        results = []
        for result in ordered["results"]:
            if isinstance(result, dict):
                result = _ordered(result, RESULT_ORDER)
                for key, order in _RESULT_NESTED_ORDER.items():
                    if isinstance(result.get(key), dict):
                        result[key] = _ordered(result[key], order)
                if isinstance(result.get("checks"), dict):
                    result["checks"] = dict(sorted(result["checks"].items()))
            results.append(result)
        ordered["results"] = results
    return ordered


def _ordered(mapping: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    known = {k: mapping[k] for k in order if k in mapping}
    extra = {k: mapping[k] for k in sorted(mapping, key=str) if k not in known}
    return {**known, **extra}
