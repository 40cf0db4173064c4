"""Inference profiles (``job: inference``, written by ``measure --inference``) beside what the speed model estimates
for the same generation on the same GPU: the measured figures, the estimate, their ratio, and whether the fit saw the
measurement. Pure (the profiles are read by the store, the catalog by the caller)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from advisor.errors import AdvisorError
from advisor.format.vocabulary import DeviceKind, DType
from advisor.infer import speed as speed_model
from advisor.infer.architecture import model_from_mapping, resolve_inference_model
from advisor.infer.engines import engine_data
from advisor.infer.job import make_job
from advisor.store.catalog import Catalog

WEIGHTS_OF_DTYPE = {DType.BFLOAT16: "bf16", DType.FLOAT16: "fp16", DType.FLOAT32: "fp32"}  # a dtype as a format


@dataclass(frozen=True)
class MeasuredGeneration:
    """One batch of a timed generation, and the estimate of the same job on the catalog's GPU (None: not made,
    ``why`` says)."""

    profile: str  # the profile's id
    device: str
    gpu_id: str | None  # the catalog's GPU the device is (None: none is)
    model: str
    engine: str
    dtype: str
    batch: int
    prompt: int
    output: int
    decode_tokens_per_s: float
    time_to_first_token_s: float
    peak_memory_gb: float | None
    estimated_decode_tokens_per_s: float | None = None
    estimated_time_to_first_token_s: float | None = None  # one sequence's (batch 1 only)
    seen_by_fit: bool = False  # the speed model was fitted on this GPU's measurements of this engine and model
    why: str | None = None

    @property
    def decode_ratio(self) -> float | None:
        """Estimated over measured decode tokens a second (above 1: the estimate is faster)."""
        if self.estimated_decode_tokens_per_s is None:
            return None
        return self.estimated_decode_tokens_per_s / self.decode_tokens_per_s


def _model_of(generation: Any) -> Any:
    """The inference model a profile's generation ran: its config's keys, else the preset of its name."""
    if generation.config:
        return model_from_mapping(dict(generation.config), "generation.config", generation.model)
    return resolve_inference_model(generation.model)


@lru_cache(maxsize=1)
def _fitted_pairs() -> frozenset[tuple[str, str, str]]:
    """(engine, GPU, model name) of the measurements the speed model is fitted on."""
    return frozenset(
        (row.engine, row.gpu, resolve_inference_model(row.model).name.lower()) for row in speed_model.load_measured()
    )


def compare(profile: Any, catalog: Catalog) -> list[MeasuredGeneration]:
    """Each batch of an inference profile (typed) beside the estimate of the same job on its GPU."""
    generation, device = profile.generation, profile.device
    gpu = catalog.match(device.name) if device.kind == DeviceKind.GPU else None
    engine = generation.engine if generation.engine in speed_model.engine_fits(catalog) else None
    why = None
    if device.kind != DeviceKind.GPU:
        why = "a CPU: the estimates are of GPUs"
    elif gpu is None:
        why = f"{device.name} is not in the catalog"
    elif engine is None:
        why = f"no speed fitted for {generation.engine}"
    try:
        model = _model_of(generation) if why is None else None
    except AdvisorError as error:
        model, why = None, str(error)
    seen = gpu is not None and model is not None and (engine, gpu.id, model.name.lower()) in _fitted_pairs()
    rows = []
    for result in profile.generation_results:
        estimate: tuple[float | None, float | None] = (None, None)
        reason = why
        if reason is None:
            try:
                estimate = _estimate(model, generation, result.batch, gpu, catalog)
            except AdvisorError as error:
                reason = str(error)
        rows.append(
            MeasuredGeneration(
                profile.id,
                device.name,
                gpu.id if gpu is not None else None,
                generation.model,
                generation.engine,
                generation.dtype,
                int(result.batch),
                int(generation.prompt_tokens),
                int(generation.output_tokens),
                float(result.decode_tokens_per_s),
                float(result.time_to_first_token_s),
                result.peak_memory_gb,
                *estimate,
                seen_by_fit=seen,
                why=reason,
            )
        )
    return rows


def _job_of(model: Any, generation: Any, batch: int, engine: str) -> Any:
    """The inference job a generation's batch ran: its model, dtype as the weights' format, lengths and users."""
    return make_job(
        model,
        engine,
        WEIGHTS_OF_DTYPE[generation.dtype],
        None,
        prompt=int(generation.prompt_tokens),
        output=int(generation.output_tokens),
        users=batch,
    )


def _estimate(model: Any, generation: Any, batch: int, gpu: Any, catalog: Catalog) -> tuple[float, float | None]:
    """(decode tokens a second of the batch, time to the first token of one sequence: batch 1 only)."""
    job = _job_of(model, generation, batch, generation.engine)
    speed = speed_model.predict(job, gpu, speed_model.engine_fits(catalog)[generation.engine])
    return batch / speed.decode_step_s, speed.time_to_first_token_s if batch == 1 else None


@dataclass(frozen=True)
class Bound:
    """The least time a batch of a generation could take on its GPU: every decode step reading the weights it needs
    and each sequence's cache at the full memory bandwidth (or its work at the full tensor peak, whichever is longer),
    the prompts' pass at the full tensor peak; no launch, no sampling, no host."""

    index: int  # of generation_results
    batch: int
    time_per_output_token_s: float
    time_to_first_token_s: float  # 0 where the GPU has no published compute peak (a Mac): no bound on the prompt


def physical_bounds(profile: Any, gpu: Any) -> list[Bound]:
    """Each batch's bound on ``gpu`` (the catalog's GPU the profile's device is); empty where the model or the GPU
    lacks what it needs (an unknown is never guessed). A GPU without a published compute peak (a Mac) is bound by its
    bandwidth alone: the decode step's bytes; the prompt has no bound there."""
    generation = profile.generation
    try:
        model = _model_of(generation)
    except AdvisorError:
        return []
    out = []
    for index, result in enumerate(profile.generation_results):
        batch = int(result.batch)
        engine = generation.engine if generation.engine in engine_data().engines else "transformers"
        try:
            job = _job_of(model, generation, batch, engine)
        except AdvisorError:
            return []
        try:
            speed = speed_model.predict(job, gpu, speed_model.EngineFit())  # k = 1, no floor: the hardware's bound
        except AdvisorError:  # no compute peak: the bandwidth alone
            try:
                step = speed_model.decode_memory_seconds(job, gpu, batch, job.prompt + job.output // 2)
            except AdvisorError:
                return []
            out.append(Bound(index, batch, step, 0.0))
            continue
        single_step = 1 / speed.single_stream_tokens_per_s
        prefill = batch * (speed.time_to_first_token_s - single_step)  # the prompts' work, at the peak
        out.append(Bound(index, batch, speed.decode_step_s, prefill))
    return out


def comparisons(profiles: list[Any], catalog: Catalog) -> list[MeasuredGeneration]:
    """Every inference profile's batches beside their estimates, in the profiles' order."""
    return [row for profile in profiles for row in compare(profile, catalog)]
