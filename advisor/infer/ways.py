"""Ways to fit: where an inference job as asked does not fit a GPU, the changes that make it fit, each with its speed
and what a million tokens cost on it.

The changes are the ones a user makes in one argument of the engine: a smaller weight format the engine runs on that
GPU's architecture (vLLM's ``--quantization``, a GGUF file of fewer bits), a smaller cache format (``--kv-cache-dtype
fp8``, llama.cpp's ``--cache-type-k/v q8_0``), and more GPUs of the same kind (tensor parallel: 2, 4 or 8; never for a
whole machine, a Mac or a mini-PC, whose one GPU is the machine's). A shorter context or fewer users are the table's own
columns (the longest context at the asked users, the most sequences at the asked context) and not repeated here.

For each number of GPUs, the most precise formats that fit: the weights kept as precise as they can be before the
cache is made smaller (the weights' format decides more of a model's quality than an 8-bit cache does). A way with
more GPUs is listed only where it keeps more precision than every way with fewer, and none past the count at which
the job fits as asked. Each format class (16, 8, 6, 5, 4 bits) is tried once: the asked format where it is that class,
else the first the engine lists that the architecture runs. A GGUF file's own weights are what they are: only the
cache and the GPUs change. Every verdict is :func:`~advisor.infer.serving_memory.memory_verdict`'s (never optimistic);
at each count a pair that fits is taken before a more precise one that is only tight, which counts where nothing fits
and says so. Pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from advisor.errors import AdvisorError
from advisor.infer import speed as speed_model
from advisor.infer.engines import (
    ONE_GPU_PLATFORMS,
    Format,
    KvFormat,
    architecture_refusal,
    engine_data,
    kv_runs_on,
    platform_refusal,
    weights_run_on,
)
from advisor.infer.job import InferenceJob, tensor_parallel_refusal
from advisor.infer.platform_decode import one_stream
from advisor.infer.saturated import load_fit_speed
from advisor.infer.serving_memory import MemoryVerdict, memory_verdict, verdict_only
from advisor.infer.token_costs import DEFAULT_COSTS, CostInputs, million_token_costs
from advisor.store.catalog import FITTED_PLATFORMS, Catalog, Gpu

GPU_COUNTS = (1, 2, 4, 8)  # tensor-parallel sizes tried (the engines' usual powers of two, one node)


@dataclass(frozen=True)
class Way:
    """One way to fit: the job's GPUs and formats, its memory and its single-stream speed on the GPU (None where the
    engine's speed is not estimated there)."""

    devices: int
    weights: str
    kv: str
    changes: tuple[str, ...]  # what differs from the asked job, in words ("2 GPUs", "awq-int4 weights", "fp8 cache")
    memory: MemoryVerdict
    single_stream_tokens_per_s: float | None
    bound: bool  # the speed is the hardware's bound (an engine without measurements): a ceiling, its costs floors
    usd_per_million_owned: float | None = None  # at the asked load (None: no price, or no speed at that load)
    usd_per_million_rented: float | None = None
    rental: str | None = None  # the provider whose price is used

    @property
    def summary(self) -> str:
        """The changes in a few words, and tight where it only just fits."""
        return " + ".join(self.changes) + (" (tight)" if self.memory.verdict == "tight" else "")


def _class(bits: float) -> int:
    return 16 if bits >= 16 else math.floor(bits)


def weight_choices(job: InferenceJob, architecture: str) -> list[Format]:
    """The weight formats to try, most precise first: one per class of bits no larger than the asked format's (the
    asked format in its own class), that the engine runs and the architecture runs natively."""
    if job.weights.id.startswith("gguf:") or job.weights.bits == 0:
        return [job.weights]  # a GGUF file's own tensors
    formats = engine_data().weight_formats
    chosen: dict[int, Format] = {}
    if weights_run_on(job.engine, job.weights, architecture):
        chosen[_class(job.weights.bits)] = job.weights
    for name in job.engine.weights:
        candidate = formats[name]
        if candidate.bits == 0 or candidate.bits > job.weights.bits or _class(candidate.bits) in chosen:
            continue
        if not weights_run_on(job.engine, candidate, architecture):
            continue
        chosen[_class(candidate.bits)] = candidate
    return [chosen[c] for c in sorted(chosen, reverse=True)]


def cache_choices(job: InferenceJob, architecture: str) -> list[KvFormat]:
    """The cache formats to try, largest first: the asked one and the engine's smaller ones the architecture runs."""
    formats = engine_data().kv_formats
    found = [
        formats[name]
        for name in job.engine.kv_cache
        if formats[name].bytes <= job.kv.bytes and kv_runs_on(formats[name], architecture)
    ]
    return sorted(found or [job.kv], key=lambda kv: -kv.bytes)


def gpu_counts(job: InferenceJob, gpu: Gpu) -> tuple[int, ...]:
    """The GPU counts to try: the asked one and the larger of GPU_COUNTS that the engine can split the model over
    (its heads evenly, where it needs that), but one machine for a whole machine."""
    if gpu.whole_machine or gpu.platform in ONE_GPU_PLATFORMS:
        return (job.devices,)
    larger = [n for n in GPU_COUNTS if n > job.devices]
    if not job.attention_data_parallel:  # attention data parallel splits no heads
        larger = [n for n in larger if tensor_parallel_refusal(job.model, job.engine, n) is None]
    return (job.devices, *larger)


def _changes(asked: InferenceJob, job: InferenceJob) -> tuple[str, ...]:
    words = []
    if job.devices != asked.devices:
        words.append(f"{job.devices} GPUs")
    if job.weights.id != asked.weights.id:
        words.append(f"{job.weights.id} weights")
    if job.kv.id != asked.kv.id:
        words.append(f"{job.kv.id} cache")
    return tuple(words)


def _speed(
    job: InferenceJob, gpu: Gpu, fit: speed_model.EngineFit, catalog: Catalog
) -> tuple[float | None, float | None, bool]:
    """(one user's decode tokens a second, all output tokens a second at the asked load, whether they are ceilings:
    the engine's bound without measurements): the engine's load fit where the per-user fit has no runs of it there
    (:func:`saturated.load_fit_speed`, as the rows' own speeds), else the engine's per-user fit on the platforms it
    rests on, else one user's decode alone where a platform's own fit gives it (Metal's, a GPU without a published
    tensor peak), else None."""
    if architecture_refusal(job.engine, gpu.architecture, job.weights, job.kv):
        return None, None, False
    loaded = load_fit_speed(job, gpu, catalog, fit.fitted)
    if loaded is not None:  # the engine's load fit speaks where the per-user fit does not (vLLM on CUDA)
        return loaded[0].single_stream_tokens_per_s, loaded[0].output_tokens_per_s, False
    if gpu.platform in FITTED_PLATFORMS:
        try:
            found = speed_model.predict(job, gpu, fit)
            return found.single_stream_tokens_per_s, found.output_tokens_per_s, not fit.fitted
        except AdvisorError:  # a figure the catalog lacks for this GPU: one user's decode, if any
            pass
    decode = one_stream(job, gpu, catalog)
    return (None, None, False) if decode is None else (decode.tokens_per_s, None, False)


def _most_precise(pairs: list[tuple[Format, KvFormat]], job: InferenceJob, memory_gb: float) -> int | None:
    """The first of ``pairs`` (most precise first) with which ``job`` fits, else the first with which it is tight;
    None where none holds it."""
    tight = None
    for rank, (weights, kv) in enumerate(pairs):
        verdict = verdict_only(replace(job, weights=weights, kv=kv), memory_gb)
        if verdict == "fits":
            return rank
        if verdict == "tight" and tight is None:
            tight = rank
    return tight


def ways_to_fit(
    job: InferenceJob, gpu: Gpu, fit: speed_model.EngineFit, catalog: Catalog, inputs: CostInputs = DEFAULT_COSTS
) -> tuple[Way, ...]:
    """The ways ``job`` (one copy's) fits ``gpu``, fewest GPUs first (empty where it fits as asked, or where nothing
    within 8 GPUs and the engine's smallest formats does), each with its speed and what a million tokens cost on it
    (``inputs``: how the GPUs are paid for); none on a GPU the engine does not run on."""
    memory_gb = gpu.usable_memory_gb
    if platform_refusal(job.engine, gpu.platform, gpu.architecture):
        return ()
    if not memory_gb or verdict_only(job, memory_gb) != "does not fit":
        return ()
    pairs = [(w, kv) for w in weight_choices(job, gpu.architecture) for kv in cache_choices(job, gpu.architecture)]
    found: list[tuple[int, InferenceJob]] = []  # (precision rank among the pairs, 0 the most precise; the job)
    for devices in gpu_counts(job, gpu):
        worst = found[-1][0] if found else len(pairs)  # more GPUs only for more precision
        rank = _most_precise(pairs[:worst], replace(job, devices=devices), memory_gb)
        if rank is not None:
            weights, kv = pairs[rank]
            found.append((rank, replace(job, devices=devices, weights=weights, kv=kv)))
        if found and found[-1][0] == 0:  # the most precise formats fit: more GPUs add nothing
            break
    ways = []
    for _, way in found:
        single, loaded, bound = _speed(way, gpu, fit, catalog)
        costs = million_token_costs(way, gpu, loaded, inputs) if loaded else (None, None, None)
        verdict = memory_verdict(way, memory_gb)
        ways.append(Way(way.devices, way.weights.id, way.kv.id, _changes(job, way), verdict, single, bound, *costs))
    return tuple(ways)
