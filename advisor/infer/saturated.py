"""Throughput under maximum load: as many sequences as the scheduler runs and the cache holds, each read once a decode
step, and every request's prompt computed between the steps.

For requests of ``isl`` prompt and ``osl`` output tokens, with ``B`` sequences at once (the engine's ``max_batch`` or
the most the cache holds at ``isl + osl`` tokens, the fewer):

    output tokens/s = B x osl / (osl x step(B) + B x prefill(isl))

``step(B)`` is a decode step (``floor + max(bytes / bandwidth x k_bytes, work / peak x k_compute)``) at the mean
context ``isl + osl / 2``; ``prefill`` is the prompt's work over the peak x ``k_prefill``. The three constants and the
floor are fitted per engine on published saturated throughputs (``saturated`` in inference_results.yaml) by a grid
search of the squared log error, and cross-validated leaving one GPU out. Pure.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from advisor.infer.architecture import resolve_inference_model
from advisor.infer.job import InferenceJob, make_job
from advisor.infer.serving_memory import memory_verdict
from advisor.infer.speed import _allreduce_s, _decode_terms, _prefill_work, results_file
from advisor.store.catalog import Catalog, Gpu

GRID_BYTES = np.linspace(1.0, 3.0, 21)
GRID_COMPUTE = np.linspace(1.0, 6.0, 26)
GRID_FLOOR_S = np.array([0.0, 0.002, 0.005, 0.01, 0.02, 0.04])


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


@dataclass(frozen=True)
class SaturatedFit:
    """An engine's constants under load (rows: how many published throughputs fitted them; 0: the hardware's
    bound)."""

    k_bytes: float = 1.0
    k_compute: float = 1.0
    floor_s: float = 0.0
    rows: int = 0


@dataclass(frozen=True)
class Terms:
    """A saturated job's terms at full bandwidth and peak (seconds), and its batch."""

    batch: int
    memory_s: float
    compute_s: float
    allreduce_s: float
    prefill_s: float


@lru_cache(maxsize=1)
def load_saturated() -> tuple[SaturatedRow, ...]:
    """The published saturated throughputs (``saturated`` in inference_results.yaml)."""
    rows = []
    for row in results_file().get("saturated") or []:
        engine, gpu, devices, model, weights, kv, isl, osl, value, source = row
        rows.append(
            SaturatedRow(engine, gpu, int(devices), model, weights, kv, int(isl), int(osl), float(value), source)
        )
    return tuple(rows)


def terms(job: InferenceJob, gpu: Gpu) -> Terms:
    """The batch the engine runs and the terms of one cycle, for ``job`` (prompt = isl, output = osl)."""
    memory_gb = float(gpu.usable_memory_gb or 0)
    verdict = memory_verdict(replace(job, users=1), memory_gb)
    batch = min(job.engine.max_batch, verdict.most_sequences)
    if batch < 1:
        return Terms(0, math.inf, math.inf, 0.0, math.inf)
    context = job.prompt + job.output // 2
    memory, compute = _decode_terms(job, gpu, batch, context)
    return Terms(batch, memory, compute, _allreduce_s(job, gpu, batch), _prefill_work(job, gpu, job.prompt, 1))


def throughput(t: Terms, osl: int, fit: SaturatedFit) -> float:
    """Output tokens a second of the whole system (one tensor-parallel group)."""
    if t.batch < 1:
        return 0.0
    step = fit.floor_s + max(t.memory_s * fit.k_bytes, t.compute_s * fit.k_compute) + t.allreduce_s
    return t.batch * osl / (osl * step + t.batch * t.prefill_s * fit.k_compute)


def row_job(row: SaturatedRow) -> InferenceJob:
    model = resolve_inference_model(row.model)
    return make_job(model, row.engine, row.weights, row.kv, prompt=row.isl, output=row.osl, devices=row.devices)


def fit_saturated(rows: list[SaturatedRow], catalog: Catalog) -> SaturatedFit:
    """The constants minimising the squared log error over ``rows`` (a grid search)."""
    gpus = catalog.by_id()
    prepared = [(terms(row_job(r), gpus[r.gpu]), r) for r in rows]
    best, best_error = SaturatedFit(), math.inf
    for k_bytes, k_compute, floor in itertools.product(GRID_BYTES, GRID_COMPUTE, GRID_FLOOR_S):
        fit = SaturatedFit(float(k_bytes), float(k_compute), float(floor), len(rows))
        error = sum(math.log(max(throughput(t, r.osl, fit), 1e-9) / r.value) ** 2 for t, r in prepared)
        if error < best_error:
            best, best_error = fit, error
    return best


@lru_cache(maxsize=4)
def saturated_fits(catalog: Catalog) -> dict[str, SaturatedFit]:
    rows = load_saturated()
    return {e: fit_saturated([r for r in rows if r.engine == e], catalog) for e in sorted({r.engine for r in rows})}


def crossval_saturated(catalog: Catalog) -> list[tuple[SaturatedRow, float]]:
    """Each GPU's published throughputs predicted by the fit of its engine's other GPUs: (row, predicted)."""
    rows = load_saturated()
    gpus = catalog.by_id()
    out = []
    for engine in sorted({r.engine for r in rows}):
        mine = [r for r in rows if r.engine == engine]
        for held in sorted({r.gpu for r in mine}):
            fit = fit_saturated([r for r in mine if r.gpu != held], catalog)
            for row in (r for r in mine if r.gpu == held):
                out.append((row, throughput(terms(row_job(row), gpus[held]), row.osl, fit)))
    return out
