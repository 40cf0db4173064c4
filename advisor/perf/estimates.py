"""Catalog estimates as analysis rows: calibrate the performance model on a workload's results, then
estimate every catalog GPU the results do not already cover.

A measured or quoted result of a GPU always wins over an estimate of the same GPU and precision.
Pure pandas over the results frame (``results.results_frame``); no I/O.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import pandas as pd

from advisor.format.formatting import device_label, short_device
from advisor.format.schema import WORKLOAD_KEY_FIELDS
from advisor.format.vocabulary import (
    Bound,
    DeviceKind,
    ModelFamily,
    Precision,
    PrecisionGroup,
    PriceBasis,
    Source,
    WorkloadKind,
    words,
)
from advisor.llm import throughput_crossval as llm_crossval
from advisor.perf import basis, calibration, crossval, launch, memory, perfmodel, scaling
from advisor.store.catalog import FITTED_PLATFORMS, Catalog
from advisor.store.crossval_widths import Widths
from advisor.store.results import FRAME_COLUMNS

# The catalog field behind each precision's peak (float32: the CUDA cores' peak; TF32 is used when given).
PEAK_FIELDS = {
    Precision.FLOAT32: "fp32_tflops",
    Precision.MIXED_FLOAT16: "fp16_tensor_tflops",
    Precision.MIXED_BFLOAT16: "bf16_tflops",
}


def work_of(spec: dict[str, Any]) -> perfmodel.Work:
    """The performance model's view of a workload: the LSTM job, a Keras model's layers, a published benchmark's
    phases (at the batch its profile states)."""
    if spec.get("kind") == WorkloadKind.MODEL:
        return perfmodel.model_work(spec)
    if spec.get("kind") == WorkloadKind.PUBLISHED:
        return perfmodel.published_work(spec)
    if spec.get("kind") == WorkloadKind.TRACKED:
        return perfmodel.tracked_work(spec)
    return perfmodel.lstm_work(
        spec["units"], spec["timesteps"], spec["features"], spec["train_samples"], spec["batch_size"], spec["epochs"]
    )


def spec_for(frame: pd.DataFrame, key: tuple) -> dict[str, Any]:
    """The description of a workload of the frame (by its key)."""
    rows = frame.loc[frame["workload"] == key, "workload_spec"]
    if len(rows):
        return rows.iloc[0]
    if key[0] == WorkloadKind.LSTM:  # a workload nobody measured yet: its sizes are in its key
        return {"kind": WorkloadKind.LSTM, **dict(zip(WORKLOAD_KEY_FIELDS, key[1:], strict=True))}
    raise ValueError(f"no profile describes the workload {key!r}")


def scaling_fit(frame: pd.DataFrame, catalog: Catalog) -> scaling.ScalingFit:
    """The data-parallel scaling fitted on the frame's published multi-GPU results (cached on them)."""
    return _scaling_cached(tuple(scaling.observations(frame, catalog)))


@lru_cache(maxsize=16)
def _scaling_cached(found: tuple[scaling.Observation, ...]) -> scaling.ScalingFit:
    return scaling.fit_scaling(found)


def match_catalog(frame: pd.DataFrame, catalog: Catalog) -> pd.Series:
    """The catalog id of each row's GPU (single-GPU rows only; None where nothing matches)."""
    single = (frame["device_kind"] == DeviceKind.GPU) & (frame["device_count"] == 1)
    names = frame.loc[single, "device_name"].dropna().unique()
    matched = {name: gpu.id for name in names if (gpu := catalog.match(str(name))) is not None}
    ids = frame["device_name"].map(matched).where(single)
    return pd.Series(ids.to_numpy(dtype=object, na_value=None), index=frame.index, dtype=object)


def calibration_points(
    frame: pd.DataFrame, catalog: Catalog | None, key: tuple, kind: str = DeviceKind.GPU.value, scope: str = "workload"
) -> tuple[perfmodel.Point, ...]:
    """Measured and quoted results to fit the model on (the --quick and catalog estimates left out): those of one
    device kind, of the workload (``scope`` "workload") or of every workload the model can describe ("all").

    A GPU result is used when its GPU is in the catalog (its specifications); a CPU result when ``measure``
    recorded the machine's matmul peak for its precision.
    """
    rows = frame[(frame["source"] != Source.ESTIMATED) & (frame["device_kind"] == kind)]
    if scope == "workload":
        rows = rows[rows["workload"] == key]
    devices = _devices(rows, catalog, kind)
    known = [device is not None for device in devices]
    rows, devices = rows[known], [device for device in devices if device is not None]
    works: dict[tuple, perfmodel.Work] = {}
    points = []
    for (_, row), device in zip(rows.iterrows(), devices, strict=True):
        if device is None or row["precision"] not in perfmodel.BYTES or device.peak(row["precision"]) is None:
            continue
        if row["workload"] not in works:
            works[row["workload"]] = work_of(row["workload_spec"])
        points.append(
            perfmodel.Point(
                str(row["name"]),
                device,
                row["precision"],
                float(row["seconds"]),
                works[row["workload"]],
                bool(row["approximate"]),
            )
        )
    return tuple(sorted(points, key=lambda p: (p.label, p.precision, p.seconds)))


def _devices(rows: pd.DataFrame, catalog: Catalog | None, kind: str) -> list[perfmodel.Device | None]:
    if kind == DeviceKind.GPU:
        if catalog is None:
            return [None] * len(rows)
        gpus = catalog.by_id()
        return [perfmodel.device_from_gpu(gpus[i]) if i else None for i in match_catalog(rows, catalog)]
    machines = measured_machines(rows)
    return [machines.get(signature) for signature in rows["hardware"]]


def measured_machines(frame: pd.DataFrame) -> dict[str, perfmodel.Device]:
    """The CPU machines measure timed, by hardware signature: their matmul peaks per precision."""
    machines = {}
    rows = frame[(frame["device_kind"] == DeviceKind.CPU) & frame["matmul_peak_gflops"].notna()]
    for signature, group in rows.groupby("hardware"):
        peaks = group.groupby("precision")["matmul_peak_gflops"].max().to_dict()
        name = str(group["device"].iloc[0])
        machines[signature] = perfmodel.device_from_measured(name, DeviceKind.CPU.value, signature, peaks)
    return machines


@dataclass
class CatalogEstimates:
    """The estimate rows of one workload, the calibration behind them, and what could not be estimated."""

    rows: pd.DataFrame
    fit: calibration.Fit
    widths: Widths
    not_estimated: list[perfmodel.Estimate]

    def calibration(self) -> basis.CatalogCalibration:
        """What every estimate of the table rests on (each row's basis adds its own situation)."""
        return calibration_facts(self.fit, self.widths)


def calibration_facts(fit: calibration.Fit, widths: Widths) -> basis.CatalogCalibration:
    """The calibration behind a catalog's estimates: its results, and whether (and on what) it was cross-validated."""
    stale = widths.half_widths and widths.signature != calibration.signature(fit.samples)
    return basis.CatalogCalibration(
        results=len(fit.samples),
        workloads=len({s.workload for s in fit.samples}),
        gpus=len({s.gpu for s in fit.samples}),
        cross_validated=bool(widths.half_widths),
        stale_results=widths.samples if stale else None,
        stale_date=widths.date if stale else None,
    )


def situation_facts(
    fit: calibration.Fit,
    device: perfmodel.Device,
    situation: calibration.Situation,
    workload: str,
    precision: str,
    kind: str | None = None,
) -> basis.CatalogSituation:
    """The situation of an estimate (``kind``: the workload's; a tracked job says where it was tracked)."""
    count = len(fit.workload_gpus.get((workload, calibration.GROUPS[precision]), set()))
    return basis.CatalogSituation(
        situation.gpu, device.architecture, situation.workload, count, kind == WorkloadKind.TRACKED
    )


@dataclass(frozen=True)
class EstimateRequest:
    """What to estimate of a workload on the catalog: its key (and its description, where the frame has none: a
    model file's, the post's LSTM sized), the precisions, the GPUs (None: every one), whether GPUs with a measured
    or quoted result are estimated too (``keep_covered``: to check the model against them), the device counts in
    data parallel (1: one GPU), and machines of them joined at ``link_gbps``."""

    workload: tuple
    spec: dict[str, Any] | None = None
    precisions: tuple[str, ...] = perfmodel.GPU_PRECISIONS
    gpu_ids: tuple[str, ...] | None = None
    keep_covered: bool = False
    devices: tuple[int, ...] = (1,)
    machines: int = 1
    link_gbps: float | None = None


@dataclass(frozen=True)
class _Setting:
    """What every GPU's estimate of one request shares: the calibration, the ranges, the work and its facts."""

    fit: calibration.Fit
    widths: Widths
    spec: dict[str, Any]
    work: perfmodel.Work
    calibrated_as: str  # the calibration's name for the workload's terms
    common: basis.CatalogCalibration  # the calibration every estimate rests on
    scale: Any  # the data-parallel scaling fit
    wait: Any  # the tracked wait for data, kept by every GPU
    observed: dict[str, float]  # measured peak memory per precision
    workload_name: str
    as_of: str
    floor: launch.LaunchFloor | None = None  # the host's launches of a tracked job's counted operations


def launch_floor(spec: dict[str, Any], fit: calibration.Fit) -> launch.LaunchFloor | None:
    """A tracked job's launch floor at the calibration's fitted cost per kernel, its range the cross-validated error
    of the launch-bound results (the quoted cost and spread where either is missing)."""
    width = llm_crossval.load_widths().get(llm_crossval.LAUNCH_BOUND)
    return launch.floor_of(spec, fit.operation_seconds(), math.exp(width) if width is not None else None)


def estimate_catalog(
    frame: pd.DataFrame,
    catalog: Catalog,
    request: EstimateRequest | tuple,
    widths: Widths | None = None,
    samples: tuple[calibration.Sample, ...] | None = None,
) -> CatalogEstimates:
    """Estimate the workload on every catalog GPU of the request and its precisions, as results-frame rows (a bare
    workload key: a request with the defaults).

    The calibration rests on every single-GPU result on a catalog GPU, of every workload; each estimate's range is
    the cross-validated error of its situation (``widths``: by default the catalog's, kept by ``crossval --write``
    beside it). Rows are left out where a measured or quoted result of the same GPU and precision exists (unless
    ``keep_covered``). Device counts above 1 add data-parallel options ("2x RTX 4090"): one GPU's estimate divided
    by N times the efficiency :mod:`advisor.perf.scaling` predicts (the batch per GPU kept); ``machines`` above 1
    (with the network's ``link_gbps``) add that many machines of each. ``samples``: the frame's
    :func:`calibration_samples`, when the caller estimates several workloads on the same frame.
    """
    request = request if isinstance(request, EstimateRequest) else EstimateRequest(request)
    key = request.workload
    spec = request.spec if request.spec is not None else spec_for(frame, key)
    widths = widths if widths is not None else catalog.widths
    fit = calibration.fit(calibration_samples(frame, catalog) if samples is None else samples)
    several = any(n > 1 for n in request.devices) or request.machines > 1
    setting = _Setting(
        fit,
        widths,
        spec,
        work_of(spec),
        calibration_workload(spec, key),
        calibration_facts(fit, widths),
        scaling_fit(frame, catalog) if several else scaling.DEFAULT,
        data_wait(frame, key),
        observed_peaks(frame, key),
        _workload_name(frame, key),
        catalog.as_of,
        launch_floor(spec, fit),
    )
    covered: set[tuple[str, str]] = set()
    if not request.keep_covered:
        measured = frame[(frame["workload"] == key) & (frame["source"] != Source.ESTIMATED)]
        covered = set(zip(match_catalog(measured, catalog), measured["precision"], strict=True))
    chosen = [catalog.by_id()[i] for i in request.gpu_ids] if request.gpu_ids is not None else list(catalog.gpus)
    records, missing = [], []
    for gpu in chosen:
        for precision in request.precisions:
            if (gpu.id, precision) not in covered:
                _gpu_rows(gpu, precision, request, setting, records, missing)
    rows = pd.DataFrame.from_records(records) if records else pd.DataFrame(columns=list(FRAME_COLUMNS))
    return CatalogEstimates(rows, fit, widths, missing)


def _gpu_rows(
    gpu: Any, precision: str, request: EstimateRequest, setting: _Setting, records: list, missing: list
) -> None:
    """One GPU's rows in one precision (one GPU, several in data parallel, several machines), or why none."""
    s, key = setting, request.workload
    device = perfmodel.device_from_gpu(gpu)
    computing = _estimate(
        s.fit, s.widths, s.work, device, precision, s.calibrated_as, s.common, s.spec.get("kind"), s.floor
    )
    if gpu.platform not in FITTED_PLATFORMS:
        why = basis.NoPlatformFit(gpu.platform, gpu.name, FITTED_PLATFORMS)
        missing.append(dataclasses.replace(computing, seconds=None, low=None, high=None, no_peak=why))
        return
    estimate = _with_wait(computing, s.wait)
    if estimate.seconds is None:
        peak = gpu.specs[PEAK_FIELDS[precision]]
        no_peak = dataclasses.replace(estimate.no_peak, note=peak.note or "")
        missing.append(dataclasses.replace(estimate, no_peak=no_peak))
        return
    room = _memory(s.spec, precision, gpu, s.observed.get(precision))
    if 1 in request.devices:
        records.append(_row(gpu, estimate, key, s.workload_name, s.as_of) | room)
    # Several GPUs share the computing; the wait for data stays whole (the same host's loader feeds them: never
    # more optimistic than the one-GPU figure's Amdahl bound)
    for count in (n for n in request.devices if n > 1):
        mirrored = (
            _mirrored(gpu, computing, count, s.spec, s.scale, s.widths, s.fit, device, s.calibrated_as)
            if s.spec.get("kind") in MIRRORED_KINDS
            else None
        )
        several = _with_wait(mirrored or _several(gpu, computing, count, s.spec, s.scale, s.widths), s.wait)
        if several is not None:
            records.append(_row(gpu, several, key, s.workload_name, s.as_of, count, estimate.seconds) | room)
    for count in request.devices if request.machines > 1 and request.link_gbps else ():
        cluster = _with_wait(
            _several(gpu, computing, count, s.spec, s.scale, s.widths, request.machines, request.link_gbps), s.wait
        )
        if cluster is not None:
            records.append(
                _row(gpu, cluster, key, s.workload_name, s.as_of, count, estimate.seconds, request.machines) | room
            )


def observed_peaks(frame: pd.DataFrame, key: tuple) -> dict[str, float]:
    """Per precision: the largest peak memory measured for the workload on one GPU of a single-GPU result (a
    framework's counter, without the CUDA context)."""
    rows = frame[
        (frame["workload"] == key)
        & (frame["source"] != Source.ESTIMATED)
        & (frame["device_kind"] == DeviceKind.GPU)
        & (frame["device_count"] == 1)
        & frame["memory_gb"].notna()
    ]
    return {str(p): float(v) for p, v in rows.groupby("precision")["memory_gb"].max().items()}


def _memory(spec: dict[str, Any], precision: str, gpu, observed_gb: float | None = None) -> dict[str, Any]:
    """The predicted memory per GPU at the workload's batch, whether it fits the GPU, and the largest batch that
    would (unknown: NaN, and taken as fitting). A peak measured on a GPU at the same batch and precision (plus the
    CUDA context its counter leaves out) is a floor: the prediction is never below what a run used."""
    footprint = memory.predict(spec, precision, DeviceKind.GPU)
    capacity = gpu.usable_memory_gb
    if (footprint is None and observed_gb is None) or capacity is None:
        return {"memory_gb": math.nan, "fits": True, "largest_batch": math.nan}
    total = max(
        footprint.total_gb if footprint else 0.0,
        observed_gb + memory.OVERHEAD_GB[DeviceKind.GPU] if observed_gb is not None else 0.0,
    )
    largest = float(memory.largest_batch(spec, precision, capacity)) if footprint else math.nan
    return {"memory_gb": total, "fits": total <= memory.card_gb(capacity) * memory.USABLE, "largest_batch": largest}


# Workloads that train with Keras: tf.distribute.MirroredStrategy splits the global batch over the GPUs and
# all-reduces the gradients after the backward pass (no overlap, unlike PyTorch DDP's buckets, which the published
# multi-GPU rows the scaling is fitted on use).
MIRRORED_KINDS = (WorkloadKind.LSTM, WorkloadKind.MODEL)


def _mirrored(
    gpu,
    one: perfmodel.Estimate,
    count: int,
    spec: dict[str, Any],
    scale: scaling.ScalingFit,
    widths: Widths,
    fit: calibration.Fit,
    device: perfmodel.Device,
    workload: str,
) -> perfmodel.Estimate | None:
    """``count`` GPUs under MirroredStrategy, the global batch kept (the post's batch of 100 split): each GPU runs
    every iteration on its share of the batch, which the calibrated model times (a per-step-bound run's steps do
    not shrink), then the whole all-reduce waits; the scaling's sync per doubling is the fitted one."""
    link = scaling.link_of(gpu)
    parameters = memory.parameters(spec)
    if link is None or not parameters or one.seconds is None or spec["batch_size"] < count:
        return None
    split = {**spec, "train_samples": spec["train_samples"] / count, "batch_size": spec["batch_size"] / count}
    whole = fit.estimate(work_of(spec), device, one.precision, workload)
    share = fit.estimate(work_of(split), device, one.precision, workload)
    if whole is None or share is None:
        return None
    per_gpu = one.seconds * share[0] / whole[0]
    iterations = spec["epochs"] * math.ceil(spec["train_samples"] / spec["batch_size"])
    allreduce = scaling.comm_seconds(count, scaling.GRADIENT_BYTES * parameters, link[1])
    seconds = per_gpu * (1 + scale.sync * math.log2(count)) + iterations * allreduce
    efficiency = one.seconds / (count * seconds)
    one_width = math.log(one.high / one.seconds)  # type: ignore[operator]
    scale_width = widths.half_widths.get(crossval.SCALING_SITUATION, math.log(scaling.FALLBACK_FACTOR))
    width = math.hypot(one_width, scale_width)
    clause = basis.Mirrored(
        count, link[0], float(spec["batch_size"]), per_gpu / one.seconds, share[1], efficiency, one.seconds / seconds
    )
    return one.with_clause(clause, seconds=seconds, low=seconds / math.exp(width), high=seconds * math.exp(width))


def _several(
    gpu,
    one: perfmodel.Estimate,
    count: int,
    spec: dict[str, Any],
    scale: scaling.ScalingFit,
    widths: Widths,
    machines: int = 1,
    link_gbps: float | None = None,
) -> perfmodel.Estimate | None:
    """``count`` GPUs (on each of ``machines``) in data parallel: one GPU's estimate over the GPUs x the predicted
    efficiency, its range widened by the scaling's cross-validated error (in quadrature). The network between
    machines is a physical estimate (:func:`advisor.perf.scaling.network_efficiency`), not cross-validated: said so."""
    link = scaling.link_of(gpu)
    parameters = memory.parameters(spec)
    if link is None or not parameters or one.seconds is None:
        return None
    iterations = spec["train_samples"] * spec["epochs"] / spec["batch_size"]
    # a language-model job says what it all-reduces a micro-batch (its trained weights' gradients, once a step)
    gradient_bytes = spec.get("gradient_bytes_per_batch") or scaling.GRADIENT_BYTES * parameters
    iteration = one.seconds / iterations
    efficiency = scale.efficiency(count, gradient_bytes, link[1], iteration, machines)
    network = scaling.network_efficiency(machines, gradient_bytes, link_gbps or 0.0, iteration) if machines > 1 else 1
    efficiency *= network
    seconds = one.seconds / (count * machines * efficiency)
    one_width = math.log(one.high / one.seconds)  # type: ignore[operator]
    scale_width = widths.half_widths.get(crossval.SCALING_SITUATION, math.log(scaling.FALLBACK_FACTOR))
    width = math.hypot(one_width, scale_width)
    clause = basis.Several(count, link[0], efficiency, math.exp(scale_width), machines, link_gbps, 1 - network)
    return one.with_clause(clause, seconds=seconds, low=seconds / math.exp(width), high=seconds * math.exp(width))


def _with_wait(estimate: perfmodel.Estimate | None, wait: basis.Wait | None) -> perfmodel.Estimate | None:
    """The estimate with the run's measured wait for data added to its time and its range (Amdahl: the GPU's part
    shrinks, the wait stays)."""
    if wait is None or estimate is None or estimate.seconds is None:
        return estimate
    return estimate.with_clause(
        wait,
        seconds=estimate.seconds + wait.seconds,
        low=estimate.low + wait.seconds,
        high=estimate.high + wait.seconds,
    )


def _estimate(
    fit: calibration.Fit,
    widths: Widths,
    work: perfmodel.Work,
    device: perfmodel.Device,
    precision: str,
    workload: str,
    common: basis.CatalogCalibration,
    kind: str | None = None,
    floor: launch.LaunchFloor | None = None,
) -> perfmodel.Estimate:
    """One GPU's estimate with its range: the cross-validated error of its situation; with a launch floor (a
    tracked job's counted operations), never below the host's launches, and their range where they decide."""
    predicted = fit.estimate(work, device, precision, workload)
    if predicted is None:
        return perfmodel.Estimate(
            device,
            precision,
            None,
            None,
            None,
            None,
            basis.Basis(common),
            basis.NoPeak(device.peak_label(precision), device.name),
        )
    seconds, bound = predicted
    situation = fit.situation(device, workload, precision)
    width, how = crossval.width_for(widths.half_widths, situation, widths.fallback)
    parts = basis.Basis(
        common,
        situation_facts(fit, device, situation, workload, precision, kind),
        basis.SituationRange(math.exp(width), how),
    )
    floored = launch.apply(seconds, seconds / math.exp(width), seconds * math.exp(width), floor)
    if floored.launch_bound:
        launched = basis.Launch(floor.operations, floor.operation_seconds, floor.width, floor.fitted)  # type: ignore
        bound, parts = Bound.STEP.value, parts.with_clause(launched)  # type: ignore[union-attr]
    return perfmodel.Estimate(device, precision, floored.seconds, floored.low, floored.high, bound, parts)


def estimate_machines(frame: pd.DataFrame, key: tuple, spec: dict[str, Any], leave_out: tuple = ()) -> list:
    """Estimates of the workload on the CPU machines measure timed (their measured matmul peaks), calibrated on
    every CPU result but those of the workloads in ``leave_out`` (so a check never sees the run it predicts)."""
    rows = frame[~frame["workload"].isin(leave_out)] if leave_out else frame
    model_for = models_by_precision(calibration_points(rows, None, key, DeviceKind.CPU, "all"), "all")
    work = work_of(spec)
    found = []
    for device in measured_machines(frame).values():
        for precision, _, _ in device.peaks:
            found.append(model_for(precision).estimate(work, device, precision))
    return found


def models_by_precision(points: tuple[perfmodel.Point, ...], scope: str) -> Callable[[str], perfmodel.Model]:
    """The model for each precision. Across workloads (``scope`` "all"), float32 and mixed precision are fitted
    apart where each has two results or more: a CPU's bfloat16 convolutions may be far slower than its bfloat16
    matmuls, which one set of constants for both would blame on the per-step cost of every workload."""
    pooled = perfmodel.calibrate(points)
    if scope != "all":
        return lambda precision: pooled
    fitted = {}
    for group in words(PrecisionGroup):
        members = tuple(p for p in points if _precision_group(p.precision) == group)
        if len(members) >= 2:
            fitted[group] = perfmodel.calibrate(members)
    return lambda precision: fitted.get(_precision_group(precision), pooled)


def _precision_group(precision: str) -> str:
    return Precision(precision).group.value


def _workload_name(frame: pd.DataFrame, key: tuple) -> str:
    names = frame.loc[frame["workload"] == key, "workload_name"]
    return str(names.iloc[0]) if len(names) else "workload"


def _row(
    gpu,
    estimate: perfmodel.Estimate,
    key: tuple,
    workload_name: str,
    as_of: str,
    count: int = 1,
    single: float | None = None,
    machines: int = 1,
) -> dict[str, Any]:
    price = gpu.current_price(as_of)
    total = count * machines
    return {
        "profile": f"catalog:{gpu.id}"  # not a slug: never a profile's id
        + (f":{count}x" if count > 1 else "")
        + (f":{machines}m" if machines > 1 else ""),
        "name": device_label(short_device(gpu.name), total, machines),  # render.prose.option_name marks it
        "device": device_label(gpu.name, total, machines),
        "device_name": gpu.name,
        "device_kind": DeviceKind.GPU.value,
        "device_count": total,
        "precision": estimate.precision,
        "seconds": float(estimate.seconds),
        "price_usd": total * float(price.usd) if price else math.nan,
        "price_date": price.date if price else None,
        "price_stale": bool(price and price.stale(as_of)),
        "price_basis": PriceBasis.CATALOG.value if price else None,
        "price_catalog_kind": price.kind if price else None,
        "catalog_estimate": True,
        "source": Source.ESTIMATED.value,
        "approximate": False,
        "estimate_error_seconds": math.nan,
        "source_detail": None,  # an estimate's basis says it (render.basis)
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
        "scaling_devices": float(total) if total > 1 else math.nan,
        "scaling_workers": float(machines) if machines > 1 else math.nan,
        "scaling_speedup": single / estimate.seconds if total > 1 and single else math.nan,
        "single_device_seconds": single if total > 1 and single else math.nan,
    }


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _or_zero(value: Any) -> float:
    return 0.0 if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def data_wait(frame: pd.DataFrame, key: tuple) -> basis.Wait | None:
    """The measured wait for data of a workload's tracked runs (the median of its results), None where nothing
    was tracked or nothing waited: the clause every estimate of the workload adds (no GPU shortens it)."""
    if "data_wait_seconds" not in frame.columns:
        return None
    rows = frame[(frame["workload"] == key) & (frame["source"] != Source.ESTIMATED) & frame["data_wait_share"].notna()]
    if rows.empty:
        return None
    share = float(rows["data_wait_share"].median())
    if share <= 0:
        return None
    return basis.Wait(float(rows["data_wait_seconds"].median()), share)


def append_rows(frame: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """The frame with estimate rows added under its own columns."""
    if rows.empty:
        return frame
    return pd.concat([frame, rows[[c for c in frame.columns if c in rows.columns]]], ignore_index=True)


OFFERED_DEVICES = (1, 2)  # what compare, recommend and the app offer of each catalog GPU: one, and two in parallel


def work_of_row(row: Any, devices: int = 1) -> perfmodel.Work:
    """The work of one result: a published result's own batch, on one of ``devices`` GPUs."""
    spec = row["workload_spec"]
    if spec.get("kind") == WorkloadKind.PUBLISHED:
        batch = row.get("batch_size")
        return perfmodel.published_work(spec, None if batch is None or math.isnan(batch) else int(batch), devices)
    return work_of(spec)


def workload_id(key: tuple) -> str:
    """A workload's identity as text (the calibration's name for it)."""
    return "|".join(str(part) for part in key)


def calibration_workload(spec: dict[str, Any], key: tuple) -> str:
    """The calibration's name for a workload's fitted terms: its family's where it has one (every language-model
    job shares the transformer family's), else its own."""
    family = spec.get("family") if isinstance(spec, dict) else None
    return f"{crossval.FAMILY_PREFIX}{family}" if family else workload_id(key)


SAMPLE_COLUMNS = (
    "catalog_id",
    "precision",
    "seconds",
    "data_wait_seconds",
    "name",
    "workload_spec",
    "workload",
    "approximate",
    "batch_size",
)  # what calibration_samples reads of a row


def model_family_of(spec: Any) -> str | None:
    """The kind of model a workload trains: its stated ``model_family``, else what its kind says (the post's LSTM is
    recurrent, a language-model job of the transformer family is a language model), else None (not guessed)."""
    if not isinstance(spec, dict):
        return None
    if spec.get("model_family"):
        return str(spec["model_family"])
    if spec.get("kind") == WorkloadKind.LSTM:
        return ModelFamily.RECURRENT.value
    if spec.get("family") == "transformer":
        return ModelFamily.LANGUAGE.value
    return None


def calibration_samples(frame: pd.DataFrame, catalog: Catalog) -> tuple[calibration.Sample, ...]:
    """Every single-GPU measured or quoted result on a catalog GPU with the precision's peak, as calibration
    samples (the --quick and catalog estimates left out)."""
    rows = frame[
        (frame["source"] != Source.ESTIMATED) & (frame["device_kind"] == DeviceKind.GPU) & (frame["device_count"] == 1)
    ]
    rows = rows.assign(catalog_id=match_catalog(rows, catalog))
    rows = rows[rows["catalog_id"].notna() & rows["precision"].isin(list(calibration.GROUPS))]
    gpus = catalog.by_id()
    devices = {gpu_id: perfmodel.device_from_gpu(gpus[gpu_id]) for gpu_id in rows["catalog_id"].unique()}
    samples = []
    read = [c for c in SAMPLE_COLUMNS if c in rows.columns]  # the columns read (and work_of_row's): half the time
    for row in rows[read].to_dict("records"):
        device = devices[row["catalog_id"]]
        if device.peak(row["precision"]) is None:
            continue
        computing = float(row["seconds"]) - _or_zero(row.get("data_wait_seconds"))  # the GPU's part of the time
        samples.append(
            calibration.Sample(
                label=str(row["name"]),
                gpu=row["catalog_id"],
                workload=calibration_workload(row["workload_spec"], row["workload"]),
                precision=row["precision"],
                seconds=computing,
                work=work_of_row(row),
                device=device,
                approximate=bool(row["approximate"]),
                model=row["workload_spec"].get("model"),
                model_family=model_family_of(row["workload_spec"]),
            )
        )
    return tuple(sorted(samples, key=lambda s: (s.workload, s.gpu, s.precision, s.label, s.seconds)))


def unmatched_gpus(frame: pd.DataFrame, catalog: Catalog) -> list[str]:
    """The GPU names of measured or quoted results that no catalog GPU matches (compared, but not calibrated on)."""
    gpus = frame[(frame["device_kind"] == DeviceKind.GPU) & (frame["source"] != Source.ESTIMATED)]
    return sorted(name for name in gpus["device_name"].dropna().unique() if catalog.match(str(name)) is None)
