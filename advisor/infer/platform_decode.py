"""One stream's decode on a platform the engines' CUDA fit does not speak for (Apple's Metal, whose GPUs publish no
compute peak; AMD's ROCm, whose software reaches another share of its peaks), from that platform's own published
results: ``floor + bytes / bandwidth x k`` (one k for 16-bit weights, one for quantized ones), the bytes a step reads
as :mod:`advisor.infer.speed` counts them. Without a peak, or without the platform's own prefill results to fit its
share of one, there is no prefill, no first token's time and no load (a batch's step may be bound by compute): one
user's decode only, said so wherever it is shown.

Fitted per (engine, platform) on the rows of ``advisor/data/inference_results.yaml`` whose GPU is on that platform;
its range is the worst error leaving each GPU out in turn (few GPUs: the whole evidence, never the CUDA fit's range).
A CUDA GPU with no published tensor peak (the DGX Spark) gets the same one-user decode from the engine's CUDA fit,
with that fit's held-out range. Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from advisor.errors import AdvisorError
from advisor.infer import speed as speed_model
from advisor.infer.job import InferenceJob
from advisor.store.catalog import FITTED_PLATFORMS, Catalog, Gpu

DECODE = "decode"


@dataclass(frozen=True)
class PlatformFit:
    """An engine's decode constants on one platform, the GPUs they rest on and their leave-one-GPU-out error."""

    engine: str
    platform: str
    floor_s: float
    k: tuple[float, float]  # 16-bit, quantized
    gpus: tuple[str, ...]
    rows: int
    range_factor: float  # the worst held-out error (max(p/m, m/p)); the estimate's range
    bandwidth_trend: speed_model.BandwidthTrend = speed_model.NO_TREND  # the CUDA engine fit's; Metal's: none
    evidence_span: tuple[float, float] = (0.0, 0.0)  # the bandwidths of the GPUs it rests on (GB/s)


@dataclass(frozen=True)
class HeldOut:
    """One row predicted by the fit of the platform's other GPUs."""

    engine: str
    gpu: str
    model: str
    weights: str
    measured: float
    predicted: float
    source: str = ""  # the row's source (a key of inference_results.yaml's sources)

    @property
    def error(self) -> float:
        return max(self.predicted / self.measured, self.measured / self.predicted)


def _rows(catalog: Catalog) -> dict[tuple[str, str], list[speed_model.Measured]]:
    """The one-stream decode rows of GPUs off the fitted platforms, by (engine, platform)."""
    gpus = catalog.by_id()
    out: dict[tuple[str, str], list[speed_model.Measured]] = {}
    for row in speed_model.load_measured():
        platform = gpus[row.gpu].platform
        if platform not in FITTED_PLATFORMS and row.metric == DECODE and row.batch == 1:
            out.setdefault((row.engine, platform), []).append(row)
    return out


def _step_seconds(
    job: InferenceJob,
    gpu: Gpu,
    context: int,
    floor: float,
    ks: tuple[float, float],
    trend: speed_model.BandwidthTrend = speed_model.NO_TREND,
) -> float:
    """One user's decode step: the floor and the step's bytes at the bandwidth times its weights' class factor (and
    the bandwidth's own scale where the fit has a trend)."""
    memory = speed_model.decode_memory_seconds(job, gpu, 1, context) * speed_model.bandwidth_scale(gpu, trend)
    return floor + memory * ks[speed_model.weight_class(job)]


def _line(row: speed_model.Measured, gpu: Gpu) -> tuple[list[float], float]:
    job = speed_model.row_job(row)
    terms = [0.0, 0.0]
    terms[speed_model.weight_class(job)] = speed_model.decode_memory_seconds(job, gpu, 1, row.context)
    return [1.0, *terms], 1 / row.value


def _fit(rows: list[speed_model.Measured], catalog: Catalog) -> tuple[float, tuple[float, float]]:
    gpus = catalog.by_id()
    floor, ks = speed_model.solve([_line(r, gpus[r.gpu]) for r in rows])
    known = [k for k in ks if not math.isnan(k)]  # a class without rows borrows the other's
    return floor, tuple(known[0] if math.isnan(k) else k for k in ks)  # type: ignore[return-value]


def _predict(row: speed_model.Measured, constants: tuple, gpu: Gpu) -> float:
    """A row's tokens a second from (floor, k's[, beta, its bandwidth span])."""
    return 1 / _step_seconds(speed_model.row_job(row), gpu, row.context, *constants)


def held_out(catalog: Catalog) -> list[HeldOut]:
    """Each platform GPU's rows predicted by the fit of the same engine's other GPUs on that platform."""
    gpus = catalog.by_id()
    out = []
    for _, rows in sorted(_rows(catalog).items()):
        held = speed_model.leave_each_gpu_out(
            rows, lambda train: _fit(train, catalog), lambda row, constants: _predict(row, constants, gpus[row.gpu])
        )
        out.extend(HeldOut(r.engine, r.gpu, r.model, r.weights, r.value, predicted) for r, predicted in held)
    return out


def published_held_out(catalog: Catalog) -> list[HeldOut]:
    """The published rows kept out of every fit (``held_out`` in inference_results.yaml), predicted by one user's
    decode fit of their platform (Metal's own; CUDA's engine fit for a CUDA GPU): machines the fits never saw."""
    gpus = catalog.by_id()
    fits = {**fitted_platform_fits(catalog), **platform_fits(catalog)}
    out = []
    for row in speed_model.load_measured("held_out"):
        fit = fits.get((row.engine, gpus[row.gpu].platform))
        if fit is not None:
            constants = (fit.floor_s, fit.k, fit.bandwidth_trend)
            predicted = _predict(row, constants, gpus[row.gpu])
            out.append(HeldOut(row.engine, row.gpu, row.model, row.weights, row.value, predicted, row.source))
    return out


@lru_cache(maxsize=4)
def platform_fits(catalog: Catalog) -> dict[tuple[str, str], PlatformFit]:
    """Every (engine, platform) with results on two GPUs or more (one GPU: nothing to hold out, no range)."""
    errors = held_out(catalog)
    fits = {}
    for (engine, platform), rows in _rows(catalog).items():
        gpus = tuple(sorted({r.gpu for r in rows}))
        mine = [h.error for h in errors if h.engine == engine and h.gpu in gpus]
        if len(gpus) < 2 or not mine:
            continue
        floor, ks = _fit(rows, catalog)
        span = _bandwidths(gpus, catalog)
        fits[(engine, platform)] = PlatformFit(
            engine, platform, floor, ks, gpus, len(rows), max(mine), evidence_span=span
        )
    return fits


@lru_cache(maxsize=4)
def fitted_platform_fits(catalog: Catalog) -> dict[tuple[str, str], PlatformFit]:
    """The fitted platforms' (CUDA's) decode constants of each engine measured on two GPUs or more, for a GPU of that
    platform with no published tensor peak (the DGX Spark): a decode step at one user reads the weights once and is
    bound by the bandwidth, so the engine's own decode fit holds; its range is that fit's held-out 90th percentile."""
    rows = speed_model.on_fitted_platform(speed_model.load_measured(), catalog)
    ranges = speed_model.decode_range(catalog)
    fits = {}
    for engine, fit in speed_model.engine_fits(catalog).items():
        if engine not in ranges:
            continue
        decoded = [r for r in rows if r.engine == engine and r.metric == DECODE]
        gpus = tuple(sorted({r.gpu for r in decoded}))
        for platform in FITTED_PLATFORMS:
            fits[(engine, platform)] = PlatformFit(
                engine,
                platform,
                fit.decode_floor_s,
                fit.decode_k,
                gpus,
                len(decoded),
                ranges[engine],
                fit.bandwidth_trend,
                evidence_span=fit.bandwidth_trend.span_of(None),  # the decode rows' GPUs, all kinds
            )
    return fits


def _bandwidths(gpu_ids: tuple[str, ...], catalog: Catalog) -> tuple[float, float]:
    """The lowest and highest memory bandwidth of ``gpu_ids`` (GB/s)."""
    gpus = catalog.by_id()
    values = [float(gpus[g].value("memory_bandwidth_gbs") or 0) for g in gpu_ids]
    return min(values), max(values)


@dataclass(frozen=True)
class DecodeOnly:
    """One user's decode tokens a second on a GPU of a platform without peaks, and what it rests on."""

    tokens_per_s: float
    range_factor: float
    fit: PlatformFit
    extrapolated: bool = False  # the GPU's bandwidth is outside the fit's GPUs': its error there is not known


def one_stream(job: InferenceJob, gpu: Gpu, catalog: Catalog) -> DecodeOnly | None:
    """One user's decode on ``gpu`` (one GPU, no tensor parallelism) where its platform has a fit for the engine: a
    platform's own (Metal's), or the fitted platforms' engine fit for a GPU of theirs without a tensor peak."""
    key = (job.engine.id, gpu.platform)
    fit = (fitted_platform_fits if gpu.platform in FITTED_PLATFORMS else platform_fits)(catalog).get(key)
    if fit is None or job.devices != 1:
        return None
    context = job.prompt + job.output // 2  # the cache's mean length while the output is written
    try:
        seconds = _step_seconds(job, gpu, context, fit.floor_s, fit.k, fit.bandwidth_trend)
    except AdvisorError:
        return None
    low, high = fit.evidence_span
    bandwidth = float(gpu.value("memory_bandwidth_gbs") or 0)
    return DecodeOnly(1 / seconds, fit.range_factor, fit, not low <= bandwidth <= high)


def decode_ceiling(job: InferenceJob, gpu: Gpu, decode: DecodeOnly, users: int) -> float:
    """The most output tokens a second ``users`` at once could get where only one user's decode is estimated: each no
    faster than one stream at the top of its range (where the GPU is inside the fit's bandwidths; outside, that
    error is unknown and this limit is not used), and all of them no faster than the memory system reads a step's
    bytes at its full bandwidth (a physical limit). The prompts' time is left out, so a cost from it is a floor."""
    context = job.prompt + job.output // 2
    physical = users / speed_model.decode_memory_seconds(job, gpu, users, context)
    if decode.extrapolated:
        return physical
    return min(physical, users * decode.tokens_per_s * decode.range_factor)
