"""Throughput under maximum load: as many sequences as the scheduler runs and the cache holds, each read once a decode
step, and every request's prompt computed between the steps.

For requests of ``isl`` prompt and ``osl`` output tokens, with ``B`` sequences at once (the engine's ``max_batch`` or
the most the cache holds at ``isl + osl`` tokens, the fewer):

    output tokens/s = B x osl / (osl x step(B) + B x prefill(isl))

``step(B)`` is a decode step (``floor + max(bytes / bandwidth x k_bytes, work / peak x k_compute) + all-reduces x
k_comm``) at the mean context ``isl + osl / 2``; ``prefill`` is the prompt's work over the peak x ``k_compute`` plus its
all-reduces x ``k_comm``. The peak is at most ``w`` TFLOPS a watt of the card's board power (the per-user fit's
ceiling, :func:`advisor.infer.speed.power_ceiling`: the engine's figure where its runs show it, as vLLM's H100 runs
reach a smaller share of its 989 TFLOPS than its A100 runs of 312). The three factors, the floor and ``w`` are fitted
per engine and platform (another platform's software reaches another share of its peaks: ROCm's never borrows
CUDA's) on published saturated throughputs (``saturated`` in inference_results.yaml) by a grid search of the squared
log error, and cross-validated leaving one GPU (or one architecture) out; where a platform's runs are all on one GPU,
leaving one model out. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from advisor.errors import AdvisorError
from advisor.infer.architecture import resolve_inference_model
from advisor.infer.engines import GIB
from advisor.infer.job import InferenceJob, make_job
from advisor.infer.serving_memory import memory_verdict
from advisor.infer.speed import (
    TFLOPS_PER_WATT,
    Speed,
    _allreduce_s,
    _decode_terms,
    _prefill_work,
    compute_scale,
    output_per_second,
    peak_per_watt,
    power_ceiling,
    results_file,
    speeds_of,
)
from advisor.store.catalog import FITTED_PLATFORMS, Catalog, Gpu

GRID_BYTES = np.linspace(1.0, 3.0, 21)
GRID_COMPUTE = np.linspace(1.0, 6.0, 26)
GRID_FLOOR_S = np.array([0.0, 0.002, 0.005, 0.01, 0.02, 0.04])
GRID_COMM = np.array([1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0])
SMALL_BATCH = 4  # at most this many sequences a step: its bytes are the weights', so its fixed cost shows


@dataclass(frozen=True)
class SaturatedRow:
    engine: str
    gpu: str
    devices: int
    model: str
    weights: str
    kv: str
    isl: int
    osl: int
    value: float  # output tokens a second of the whole system
    source: str
    attention_data_parallel: bool = False  # its source ran each GPU's own attention, the experts split
    max_num_seqs: int = 0  # the batch limit its run set (0: the engine's default)


@dataclass(frozen=True)
class SaturatedFit:
    """An engine's constants under load (rows: how many published throughputs fitted them; 0: the hardware's
    bound)."""

    k_bytes: float = 1.0
    k_compute: float = 1.0
    floor_s: float = 0.0
    k_comm: float = 1.0  # the all-reduces' time over the link's bound
    tflops_per_watt: float = 0.0  # w: the tensor peak is at most w x board power (0: the peak)
    rows: int = 0
    architectures: tuple[str, ...] = ()  # those of the GPUs its rows ran on
    devices: tuple[int, ...] = ()  # the numbers of GPUs its rows ran on
    small_batch: bool = False  # a row ran a few sequences at once: a step's fixed cost is told from its work


@dataclass(frozen=True)
class Terms:
    """A saturated job's terms at full bandwidth and peak (seconds), and its batch."""

    batch: int
    memory_s: float
    compute_s: float
    allreduce_s: float
    prefill_s: float
    prefill_allreduce_s: float  # the prompt's all-reduces between tensor-parallel GPUs (at the link's speed)
    peak_per_watt: float = 0.0  # the card's 16-bit tensor peak over its board power (TFLOPS a watt; 0: unknown)


@lru_cache(maxsize=2)
def load_saturated(key: str = "saturated") -> tuple[SaturatedRow, ...]:
    """The published saturated throughputs (``saturated`` in inference_results.yaml; ``key`` "saturated_held_out":
    those no fit ever sees)."""
    data = results_file()
    rows = []
    for row in data.get(key) or []:
        engine, gpu, devices, model, weights, kv, isl, osl, value, source, *limit = row
        dp = bool(data["sources"][source].get("attention_data_parallel", False))
        rows.append(
            SaturatedRow(
                engine,
                gpu,
                int(devices),
                model,
                weights,
                kv,
                int(isl),
                int(osl),
                float(value),
                source,
                dp,
                int(limit[0]) if limit else 0,
            )
        )
    return tuple(rows)


def sequences_at_once(job: InferenceJob, gpu: Gpu) -> int:
    """The most sequences of ``job`` the engine runs at once on ``gpu``: its batch limit on this card, or what the
    cache holds where that is fewer."""
    verdict = memory_verdict(replace(job, users=1), float(gpu.usable_memory_gb or 0))
    limit = job.engine.batch_limit(verdict.card_bytes / GIB, gpu.name) * job.attention_groups  # a scheduler each
    return min(limit, verdict.most_sequences)


def terms(job: InferenceJob, gpu: Gpu) -> Terms:
    """The batch the engine runs and the terms of one cycle, for ``job`` (prompt = isl, output = osl)."""
    batch = sequences_at_once(job, gpu)
    if batch < 1:
        return Terms(0, math.inf, math.inf, 0.0, math.inf, 0.0)
    context = job.prompt + job.output // 2
    memory, compute = _decode_terms(job, gpu, batch, context)
    groups = job.attention_groups  # prompts side by side, one a GPU with attention data parallelism
    prefill = _prefill_work(job, gpu, job.prompt, groups) / groups
    prefill_exchange = _allreduce_s(job, gpu, job.prompt * groups) / groups
    ratio = peak_per_watt(gpu, job)
    return Terms(batch, memory, compute, _allreduce_s(job, gpu, batch), prefill, prefill_exchange, ratio)


def throughput(t: Terms, osl: int, fit: SaturatedFit) -> float:
    """Output tokens a second of the whole system (one tensor-parallel group)."""
    if t.batch < 1:
        return 0.0
    ceiling = power_ceiling(t.peak_per_watt, fit.tflops_per_watt)
    step, _ = step_seconds(fit, t.memory_s, t.compute_s * ceiling, t.allreduce_s)
    prefill = t.prefill_s * ceiling * fit.k_compute + t.prefill_allreduce_s * fit.k_comm
    return output_per_second(t.batch, osl, step, prefill)


def step_seconds(fit: SaturatedFit, memory_s: float, compute_s: float, allreduce_s: float) -> tuple[float, str]:
    """A decode step under the fit (``floor + max(bytes x k_bytes, work x k_compute) + all-reduces x k_comm``) from its
    terms at full bandwidth and peak, and what bounds it (floor, memory or compute)."""
    memory, compute = memory_s * fit.k_bytes, compute_s * fit.k_compute
    body = max(memory, compute)
    bound = "floor" if fit.floor_s > body else ("memory" if memory >= compute else "compute")
    return fit.floor_s + body + allreduce_s * fit.k_comm, bound


def row_job(row: SaturatedRow) -> InferenceJob:
    """The job a published row ran, with the batch limit its run set where it set one."""
    model = resolve_inference_model(row.model)
    job = make_job(
        model,
        row.engine,
        row.weights,
        row.kv,
        prompt=row.isl,
        output=row.osl,
        devices=row.devices,
        attention_data_parallel=row.attention_data_parallel,
    )
    if not row.max_num_seqs:
        return job
    return replace(job, engine=replace(job.engine, max_batch=row.max_num_seqs, large_card_batch=None))


def fit_saturated(rows: list[SaturatedRow], catalog: Catalog) -> SaturatedFit:
    """The constants minimising the squared log error over ``rows``: the grid of the four constants at no power
    ceiling, then each ``w`` of :data:`~advisor.infer.speed.TFLOPS_PER_WATT` with ``k_compute`` refitted, then the grid
    again at the best ``w``, kept where it lowers the Bayesian information criterion (an extra constant must earn its
    place: ``n ln(error)`` falls by more than ``ln n``) and the rows' cards differ in peak per watt (one card cannot
    tell ``w`` from ``k_compute``)."""
    gpus = catalog.by_id()
    prepared = [(terms(row_job(r), gpus[r.gpu]), r) for r in rows]
    usable = [(t, r) for t, r in prepared if t.batch >= 1]
    architectures = tuple(sorted({gpus[r.gpu].architecture for r in rows}))
    devices = tuple(sorted({r.devices for r in rows}))
    few = any(0 < r.max_num_seqs <= SMALL_BATCH for r in rows)
    described = {"rows": len(rows), "architectures": architectures, "devices": devices, "small_batch": few}
    if not usable:
        return SaturatedFit(**described)
    column = {name: np.array([getattr(t, name) for t, _ in usable]) for name in Terms.__dataclass_fields__}
    osl = np.array([r.osl for _, r in usable], dtype=float)
    measured = np.log([r.value for _, r in usable])
    grid = tuple(a.reshape(-1, 1) for a in np.meshgrid(GRID_BYTES, GRID_COMPUTE, GRID_FLOOR_S, GRID_COMM))
    per_watt, best = _with_ceiling(column, osl, measured, grid)
    return SaturatedFit(*best, tflops_per_watt=per_watt, **described)


def _with_ceiling(
    column: dict[str, np.ndarray], osl: np.ndarray, measured: np.ndarray, grid: tuple[np.ndarray, ...]
) -> tuple[float, tuple[float, float, float, float]]:
    """``w`` and the grid's constants: none and those at no ceiling, unless the rows' cards differ in peak per watt
    and the best ``w`` (``k_compute`` refitted for each) lowers the Bayesian information criterion."""
    error, best = _grid_search(column, osl, measured, grid, 0.0)
    if len(set(column["peak_per_watt"])) < 2:
        return 0.0, best
    k_bytes, _, floor, k_comm = (np.full((len(GRID_COMPUTE), 1), v) for v in best)
    only_compute = (k_bytes, GRID_COMPUTE.reshape(-1, 1), floor, k_comm)
    errors = {w: _grid_search(column, osl, measured, only_compute, w)[0] for w in TFLOPS_PER_WATT}
    candidate = min(errors, key=lambda w: (errors[w], w))
    if not candidate:
        return 0.0, best
    ceiled, at_candidate = _grid_search(column, osl, measured, grid, candidate)
    n = len(measured)  # the ceiling is one more constant: kept where n ln(error) falls by more than ln n
    if n * math.log(max(ceiled, 1e-12) / max(error, 1e-12)) < -math.log(n):
        return candidate, at_candidate
    return 0.0, best


def _grid_search(
    column: dict[str, np.ndarray], osl: np.ndarray, measured: np.ndarray, grid: tuple[np.ndarray, ...], per_watt: float
) -> tuple[float, tuple[float, float, float, float]]:
    """The least squared log error over the candidates of ``grid`` (k_bytes, k_compute, floor, k_comm: a column each,
    a candidate a row) at the power ceiling ``per_watt``, and its constants: :func:`throughput` for every candidate and
    every published row (columns) at once."""
    k_bytes, k_compute, floor, k_comm = grid
    ceiling = np.array([power_ceiling(ratio, per_watt) for ratio in column["peak_per_watt"]])
    body = np.maximum(column["memory_s"] * k_bytes, column["compute_s"] * ceiling * k_compute)
    step = floor + body + column["allreduce_s"] * k_comm
    prefill = column["prefill_s"] * ceiling * k_compute + column["prefill_allreduce_s"] * k_comm
    predicted = output_per_second(column["batch"], osl, step, prefill)
    error = ((np.log(predicted) - measured) ** 2).sum(axis=1)
    best = int(np.argmin(error))
    return float(error[best]), tuple(float(a[best, 0]) for a in grid)  # type: ignore[return-value]


def _by_engine_platform(rows: tuple[SaturatedRow, ...], catalog: Catalog) -> dict[tuple[str, str], list[SaturatedRow]]:
    gpus = catalog.by_id()
    found: dict[tuple[str, str], list[SaturatedRow]] = {}
    for row in rows:
        found.setdefault((row.engine, gpus[row.gpu].platform), []).append(row)
    return dict(sorted(found.items()))


def rows_by_engine_platform(catalog: Catalog) -> dict[tuple[str, str], list[SaturatedRow]]:
    """The published saturated throughputs each (engine, platform) fit rests on."""
    return _by_engine_platform(load_saturated(), catalog)


@lru_cache(maxsize=4)
def saturated_fits(catalog: Catalog) -> dict[tuple[str, str], SaturatedFit]:
    """Each (engine, platform)'s constants, fitted on its published saturated throughputs."""
    return {key: fit_saturated(mine, catalog) for key, mine in rows_by_engine_platform(catalog).items()}


def saturated_fit(catalog: Catalog, engine: str, platform: str) -> SaturatedFit:
    """The engine's constants on the platform (rows 0: none published there, the hardware's bound)."""
    return saturated_fits(catalog).get((engine, platform), SaturatedFit())


def speaks_for(fit: SaturatedFit, gpu: Gpu) -> bool:
    """Whether a fit's runs speak for ``gpu`` (none where it has no runs): on the architectures of
    :func:`only_architectures`, or on every one of its platform where that is empty."""
    only = only_architectures(fit, gpu.platform)
    return bool(fit.rows) and (not only or gpu.architecture in only)


def only_architectures(fit: SaturatedFit, platform: str) -> tuple[str, ...]:
    """The architectures a fit's runs answer alone (empty: every one of the platform): off CUDA their own (another
    platform's software reaches another share of each generation's peaks); on CUDA every architecture where they span
    two or more, their own where they span one (one generation's runs cannot tell how another differs)."""
    return () if platform in FITTED_PLATFORMS and len(fit.architectures) > 1 else fit.architectures


def crossval_saturated(catalog: Catalog, by: str = "gpu") -> list[tuple[SaturatedRow, float]]:
    """Each GPU's published throughputs predicted by the fit of its engine's other GPUs on its platform
    (``by="architecture"``: each architecture's, by the fit of the others, as a GPU of a new generation would be; a
    platform whose runs are all on one GPU or one architecture: each model's, by the fit of the others):
    (row, predicted)."""
    return [found for mine in rows_by_engine_platform(catalog).values() for found in _folds(mine, by, catalog)]


def _folds(mine: list[SaturatedRow], by: str, catalog: Catalog) -> list[tuple[SaturatedRow, float]]:
    """One (engine, platform)'s rows, each fold's predicted by the fit of the others: (row, predicted)."""
    gpus = catalog.by_id()
    group = _held_out_group(mine, by, gpus)
    out = []
    for held in sorted({group(r) for r in mine}):
        fit = fit_saturated([r for r in mine if group(r) != held], catalog)
        for row in (r for r in mine if group(r) == held):
            out.append((row, throughput(terms(row_job(row), gpus[row.gpu]), row.osl, fit)))
    return out


def _held_out_group(rows: list[SaturatedRow], by: str, gpus: dict[str, Gpu]) -> Callable[[SaturatedRow], str]:
    """What a fold holds out: a GPU (or an architecture), or a model where the rows share one."""
    candidates: dict[str, Callable[[SaturatedRow], str]] = {
        "gpu": lambda row: row.gpu,
        "architecture": lambda row: gpus[row.gpu].architecture,
    }
    group = candidates[by]
    return group if len({group(r) for r in rows}) > 1 else (lambda row: row.model)


def held_out_saturated(catalog: Catalog) -> list[tuple[SaturatedRow, float, bool]]:
    """The saturated throughputs no fit sees (``saturated_held_out``), each predicted by its engine's fit on all its
    published rows on the GPU's platform, or by the hardware's bound where it has none there: (row, predicted,
    whether it is the bound, a ceiling the published value must lie under)."""
    gpus = catalog.by_id()
    found = []
    for row in load_saturated("saturated_held_out"):
        fit = saturated_fit(catalog, row.engine, gpus[row.gpu].platform)
        found.append((row, throughput(terms(row_job(row), gpus[row.gpu]), row.osl, fit), fit.rows == 0))
    return found


def speed(job: InferenceJob, gpu: Gpu, fit: SaturatedFit) -> Speed:
    """The job's speeds from an engine's saturated fit, where its published runs span a few sequences to hundreds at
    once (vLLM on CUDA and ROCm): a decode step at the asked users and at one, each the fit's step (``throughput``'s),
    and one prompt's prefill, as :func:`advisor.infer.speed.predict` writes them."""
    context = job.prompt + job.output // 2

    ceiling = compute_scale(gpu, job, fit.tflops_per_watt)

    def step(batch: int) -> tuple[float, str]:
        memory, compute = _decode_terms(job, gpu, batch, context)
        return step_seconds(fit, memory, compute * ceiling, _allreduce_s(job, gpu, batch))

    prompt = max(job.prompt, 1)
    prefill_work = _prefill_work(job, gpu, prompt, 1) * ceiling
    prefill_one = prefill_work * fit.k_compute + _allreduce_s(job, gpu, prompt) * fit.k_comm
    return speeds_of(job, prefill_one, step(1)[0], step(job.users), fitted=True)


@lru_cache(maxsize=8)
def held_out_error(catalog: Catalog, engine: str, platform: str) -> float | None:
    """The worst error of an (engine, platform) fit's rows, each fold's held out (its GPUs, or its models where they
    share one GPU): the range its figures carry (None: one fold, nothing held out)."""
    mine = rows_by_engine_platform(catalog).get((engine, platform), [])
    group = _held_out_group(mine, "gpu", catalog.by_id())
    if len({group(r) for r in mine}) < 2:
        return None
    return max(max(p / row.value, row.value / p) for row, p in _folds(mine, "gpu", catalog))


def load_fit_speed(
    job: InferenceJob, gpu: Gpu, catalog: Catalog, per_user_fitted: bool
) -> tuple[Speed, float | None] | None:
    """Where the engines' per-user fit does not speak for the engine on this GPU (another platform, or an engine it
    has no runs of: vLLM), the speeds of the engine's saturated fit on the GPU's platform, where its published runs
    span a few sequences to hundreds at once, on the numbers of GPUs they ran on (a step's fixed cost on eight is not
    one GPU's) and, off CUDA, the architectures they ran on, with its held-out error (None: no such fit, or a rate of
    requests, which that fit does not answer)."""
    fit = saturated_fit(catalog, job.engine.id, gpu.platform)
    on_cuda = gpu.platform in FITTED_PLATFORMS
    if (on_cuda and per_user_fitted) or job.rate is not None or not fit.small_batch:
        return None  # CUDA's per-user fit speaks; a rate is not this fit's; without a few at once, no fixed cost known
    if not speaks_for(fit, gpu) or job.devices not in fit.devices:
        return None
    try:
        return speed(job, gpu, fit), held_out_error(catalog, job.engine.id, gpu.platform)
    except AdvisorError:  # a figure the catalog lacks for this GPU (its link): no speed
        return None
