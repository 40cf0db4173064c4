"""A measured run as a profile (the schema version of advisor.format.schema.SCHEMA_VERSION)."""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any

from advisor import __version__, store
from advisor.format import schema
from advisor.format.formatting import device_label
from advisor.format.vocabulary import DeviceKind, Source
from advisor.measure import timing
from advisor.measure.backends import DeviceInfo
from advisor.measure.plan import MeasurePlan
from advisor.measure.train import TrainingRun


def result_record(
    run: TrainingRun,
    flops: float,
    peak_gflops: float | None,
    peak_dtype: str,
    single_device: TrainingRun | None = None,
    devices: int = 1,
    batch_size: int = 0,
    workers: int = 1,
) -> dict[str, Any]:
    """One result of a profile; ``flops`` is the training FLOPs of one epoch (``devices``: in all, across the
    ``workers``)."""
    stats = timing.steady_stats(run.epoch_seconds)
    record: dict[str, Any] = {
        "precision": run.precision,
        "total_seconds": round(run.total_seconds, 4),
        "estimated": run.estimate is not None,
    }
    if run.estimate is not None:
        record["estimate"] = {
            "method": run.estimate.method,
            "error_seconds": round(run.estimate.error_seconds, 3),
            "confidence": timing.QUICK_CONFIDENCE,
            "steady_epochs_timed": run.estimate.steady_epochs_timed,
        }
        record["epochs_run"] = len(run.epoch_seconds)
    record["first_epoch_seconds"] = round(run.epoch_seconds[0], 4)
    if stats is not None:
        record["steady"] = stats.as_dict()
    record["epoch_seconds"] = [round(t, 4) for t in run.epoch_seconds]
    if run.final_loss is not None and math.isfinite(run.final_loss):
        record["final_loss"] = round(run.final_loss, 4)
    if run.final_accuracy is not None and math.isfinite(run.final_accuracy):
        record["final_accuracy"] = round(run.final_accuracy, 4)
    if stats is not None:
        record["throughput"] = _throughput(flops, stats.median, peak_gflops, peak_dtype, devices)
    if run.power:
        record["power"] = run.power
    if run.memory:
        record["memory"] = run.memory
    if single_device is not None:
        speedup = single_device.total_seconds / run.total_seconds
        record["scaling"] = {
            **({"workers": workers} if workers > 1 else {}),
            "devices": devices,
            "single_device_seconds": round(single_device.total_seconds, 4),
            "speedup": _significant(speedup),
            "efficiency": _significant(speedup / devices),
            "global_batch": batch_size,
        }
    record["checks"] = run.checks
    if run.warnings:
        record["warnings"] = run.warnings
    return record


def _throughput(
    flops: float, epoch_seconds: float, peak_gflops: float | None, peak_dtype: str, devices: int
) -> dict[str, Any]:
    """An epoch's FLOPs, the rate achieved at the steady epoch's median and its share of the devices' matmul peak."""
    achieved = flops / epoch_seconds / 1e9
    throughput: dict[str, Any] = {"flops_per_epoch": flops, "achieved_gflops": _significant(achieved)}
    if peak_gflops:
        peak = peak_gflops * devices  # the matmul test runs on one device
        throughput.update(
            matmul_peak_gflops=_significant(peak), matmul_dtype=peak_dtype, efficiency=_significant(achieved / peak)
        )
    return throughput


def _significant(value: float, digits: int = 5) -> float:
    """Round to significant digits (a tiny workload's GFLOP/s must not round to 0)."""
    return float(f"{value:.{digits}g}")


def _default_name(device: DeviceInfo, backend: str, workers: int = 1) -> str:
    """The device's name ('2x NVIDIA A100'), with the backend when it is not TensorFlow ('AMD EPYC (jax)'); on
    several machines, each machine's devices ('2 machines x Intel Xeon', '2 machines x 4x NVIDIA H100')."""
    name = device_label(device.name, device.count, workers)
    return name if backend == "tensorflow" else f"{name} ({backend})"


GIVEN_BY_MEASURER = "given by the person who measured"  # a price's source when the person gave none


def profile_id_for(name: str, out: Any, force: bool) -> str:
    """The slug of the profile's name; --force (or --dry-run: ``out`` None) keeps it, otherwise a clash takes the
    next free one in ``out``."""
    return store.slugify(name) if out is None or force else store.unique_slug(out, name)


def _profile_id(plan: MeasurePlan, name: str) -> str:
    return profile_id_for(name, plan.out, plan.force)


def price_section(
    usd: float | None,
    date: str,
    includes: str | None,
    source: str | None,
    power_watts: float | None,
    usd_per_hour: float | None,
    given: str,
) -> dict[str, Any]:
    """A profile's ``price``: what the person said, ``given`` as its source when they priced it without one."""
    price: dict[str, Any] = {"usd": usd, "date": date}
    if includes:
        price["includes"] = includes
    if source:
        price["source"] = source
    elif usd is not None or usd_per_hour is not None:
        price["source"] = given
    if power_watts:
        price["power_watts"] = power_watts
    if usd_per_hour:
        price["usd_per_hour"] = usd_per_hour
    return price


def measured_profile(
    plan: MeasurePlan,
    device: DeviceInfo,
    host: dict[str, Any],
    software: dict[str, Any],
    results: list[dict[str, Any]],
    workload: dict[str, Any] | None = None,
    cluster: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The profile of a measured run (``workload``: a model's description; default: the plan's LSTM job;
    ``cluster``: the workers of a multi-worker run). Its id is the slug of its name."""
    workload = workload or plan.workload.as_dict()
    price = price_section(
        plan.price_usd,
        plan.price_date,
        plan.price_note,
        plan.price_source,
        plan.power_watts,
        plan.price_usd_per_hour,
        GIVEN_BY_MEASURER,
    )
    notes = []
    if plan.price_usd is None:
        notes.append("The price is unknown: compared by speed only, never recommended. Add price.usd to fix.")
    if device.kind == DeviceKind.CPU and plan.device == DeviceKind.CPU:
        notes.append("Measured with --device cpu (GPUs hidden).")
    if cluster:
        notes.append(
            f"Trained on {cluster['workers']} machines with tf.distribute.MultiWorkerMirroredStrategy and a custom "
            f"training step (global batch {workload['batch_size']}); the chief timed one device with the same step "
            "in the same run (each result's scaling section)."
        )
    elif device.count > 1:
        notes.append(
            f"Trained on {device.count} devices with tf.distribute.MirroredStrategy (global batch "
            f"{workload['batch_size']}); each result's scaling section compares one device in the same run."
        )
    workers = cluster["workers"] if cluster else 1
    name = plan.name or _default_name(device, plan.backend, workers)
    profile_id = _profile_id(plan, name)
    device_facts = {"kind": device.kind, "name": device.name, "count": device.count, **device.facts}
    return profile_document(
        profile_id, name, device_facts, host, software, price, workload, results, plan.command, notes, cluster=cluster
    )


def profile_document(
    profile_id: str,
    name: str,
    device: dict[str, Any],
    host: dict[str, Any],
    software: dict[str, Any],
    price: dict[str, Any],
    workload: dict[str, Any],
    results: list[dict[str, Any]],
    command: str,
    notes: list[str],
    cluster: dict[str, Any] | None = None,
    interrupted: bool = False,
) -> dict[str, Any]:
    """A measured profile from its sections, in the schema's order, with its provenance (measured by this advisor
    today, by ``command``): the one builder behind ``measure`` and ``advisor.track``."""
    profile: dict[str, Any] = {
        "schema_version": schema.SCHEMA_VERSION,
        "id": profile_id,
        "name": name,
        "device": device,
        "host": host,
        "software": software,
        "price": price,
        "workload": workload,
        "results": results,
        **({"cluster": cluster} if cluster else {}),
        "provenance": {
            "method": Source.MEASURED.value,
            "advisor_version": __version__,
            "date": _dt.date.today().isoformat(),
            "command": command,
            **({"interrupted": True} if interrupted else {}),
        },
    }
    if notes:
        profile["notes"] = notes
    return profile
