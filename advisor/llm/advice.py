"""A language-model training job on every catalog GPU: does it fit, how fast, what the run costs owned and rented,
and the cheapest way that fits. The time is the calibrated performance model's (:mod:`advisor.perf.estimates`, on every
published result, the language-model throughputs among them); the memory is :mod:`advisor.llm.job_memory`'s. Pure;
no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

import pandas as pd

from advisor.format.formatting import device_label
from advisor.format.schema import workload_key
from advisor.format.units import SECONDS_PER_HOUR
from advisor.format.vocabulary import Bound, Goal, Precision
from advisor.llm import fp8, stack
from advisor.llm import job_memory as memory
from advisor.llm import throughput_crossval as crossval
from advisor.llm.job import FAMILY, Checkpointing, TrainingJob
from advisor.llm.ladder import Ladder, least_memory
from advisor.perf import basis, estimates
from advisor.perf.crossval import SCALING_SITUATION
from advisor.store.catalog import Catalog, Gpu

# What a job computes in on a GPU: bfloat16 where the GPU has it (Ampere and newer), else float16 (Volta, Turing).
JOB_PRECISIONS = (Precision.MIXED_BFLOAT16.value, Precision.MIXED_FLOAT16.value)
FP8_PRECISION = "fp8"  # an option's precision where the tuned FP8 stack's time applies
FIT_ORDER = {memory.Fit.FITS: 0, memory.Fit.TIGHT: 1, memory.Fit.NO: 2}  # how options are listed: fits first


@dataclass(frozen=True)
class JobOption:
    """One way to run the job: a catalog GPU (or several in data parallel), its verdict, time and cost."""

    gpu: Gpu
    devices: int
    precision: str
    checkpointing: bool
    footprint: memory.Footprint
    verdict: memory.Fit
    seconds: float
    low: float
    high: float
    bound: str
    basis: basis.Basis  # what the time rests on, by part (render.basis writes its sentence)
    largest_micro_batch: int
    largest_seq_len: int
    price_usd: float | None  # to buy the GPUs
    rental_usd_per_hour: float | None  # all of them, the cheapest on-demand rental
    rental_provider: str | None
    tokens: float
    ladder: Ladder | None = None  # where the job as asked does not fit: the least memory it needs
    split: memory.Split = memory.WHOLE  # how Megatron splits the model over the GPUs (WHOLE: it does not)
    sized: bool = True  # the run's tokens were given; False: the job is one optimizer step (priced a step, an hour)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds

    @property
    def rental_cost_usd(self) -> float | None:
        """The run's cost rented (a step's where the job has no size): its hours at the rental's rate (the upper end
        of the range: what a budget needs). None where there is no rental, or the job does not fit the GPUs: nobody
        rents them for it."""
        if not self.rental_usd_per_hour or self.verdict == memory.Fit.NO:
            return None
        return self.rental_usd_per_hour * self.high / SECONDS_PER_HOUR

    @property
    def name(self) -> str:
        return device_label(self.gpu.name, self.devices)


@dataclass(frozen=True)
class MemoryOnly:
    """A GPU whose software platform has no fitted time (ROCm, Metal): whether the job fits its memory, answered as on
    any GPU, with no time and no cost (the other platform's fit is never borrowed)."""

    gpu: Gpu
    devices: int
    footprint: memory.Footprint
    verdict: memory.Fit
    why: basis.NoPlatformFit | basis.NoPeak  # no fitted results on its platform, or a peak nobody published
    price_usd: float | None  # to buy the GPUs (None: no price, or only a launch price too old to buy at)

    @property
    def name(self) -> str:
        return device_label(self.gpu.name, self.devices)


@dataclass(frozen=True)
class JobAdvice:
    job: TrainingJob
    options: tuple[JobOption, ...]
    missing: tuple[Any, ...]  # the GPUs with no estimate (perfmodel.Estimate, each saying why)
    memory_only: tuple[MemoryOnly, ...] = ()  # of those, the ones of another platform: their memory answered
    asked: tuple[str, ...] = ()  # the GPUs' names where the catalog was narrowed to them (empty: every GPU)

    def fitting(self) -> list[JobOption]:
        return [o for o in self.options if o.verdict == memory.Fit.FITS]

    def cheapest_rental(self) -> JobOption | None:
        """The option that fits whose run costs least rented."""
        priced = [o for o in self.fitting() if o.rental_cost_usd is not None]
        return min(priced, key=lambda o: (o.rental_cost_usd, o.seconds)) if priced else None

    def cheapest_purchase(self) -> JobOption | None:
        """The option that fits that costs least to buy."""
        priced = [o for o in self.fitting() if o.price_usd]
        return min(priced, key=lambda o: (o.price_usd, o.seconds)) if priced else None

    def fastest(self) -> JobOption | None:
        found = self.fitting()
        return min(found, key=lambda o: o.seconds) if found else None

    def fitting_without_time(self) -> list[MemoryOnly]:
        """The GPUs the job fits whose platform has no fitted time (their memory answered, no time or cost)."""
        return [m for m in self.memory_only if m.verdict == memory.Fit.FITS]

    def cheaper_without_time(self) -> MemoryOnly | None:
        """The cheapest GPU to buy that the job fits but whose platform has no fitted time, where it is cheaper than
        the cheapest that fits with a time: a buyer weighs it, knowing its speed is not estimated."""
        found = [m for m in self.fitting_without_time() if m.price_usd]
        best = min(found, key=lambda m: (m.price_usd, m.gpu.name)) if found else None
        buy = self.cheapest_purchase()
        return best if best is not None and (buy is None or best.price_usd < buy.price_usd) else None

    def cheapest_with_choices(self) -> JobOption | None:
        """Among the GPUs the job does not fit as asked, the cheapest to buy that the stack's choices make it fit
        (the least memory it needs there), where it is cheaper than the cheapest that fits as asked."""
        found = [o for o in self.options if o.ladder is not None and o.ladder.fits is not None and o.price_usd]
        best = min(found, key=lambda o: (o.price_usd, o.seconds)) if found else None
        buy = self.cheapest_purchase()
        return best if best is not None and (buy is None or best.price_usd < buy.price_usd) else None


def _choose_checkpointing(job: TrainingJob, capacity: float, mode: Checkpointing, pure_16bit: bool) -> bool:
    """auto: checkpointing only where the job does not fit without it."""
    if mode != Checkpointing.AUTO:
        return mode == Checkpointing.ON
    return memory.predict(job.with_checkpointing(False), pure_16bit).verdict(capacity) != memory.Fit.FITS


def advise(
    frame: pd.DataFrame,
    catalog: Catalog,
    job: TrainingJob,
    checkpointing: Checkpointing = Checkpointing.AUTO,
    gpu_ids: list[str] | None = None,
    devices: int = 1,
    pure_16bit: bool = False,
    sharded: bool = False,
) -> JobAdvice:
    """The job on every catalog GPU (or ``gpu_ids``), one GPU and, with ``devices`` above 1, that many in data
    parallel: each holding the whole model (DDP), or with ``sharded`` its share of the weights, gradients and
    optimizer state (FSDP / ZeRO-3; the time is still DDP's scaling, the all-gathers overlapped as DDP's all-reduce
    is, which the basis says)."""
    chosen = [catalog.by_id()[i] for i in gpu_ids] if gpu_ids is not None else list(catalog.gpus)
    plans: dict[bool, list[Gpu]] = {False: [], True: []}
    for gpu in chosen:
        capacity = gpu.usable_memory_gb
        if capacity is not None:
            plans[_choose_checkpointing(job, capacity, checkpointing, pure_16bit)].append(gpu)
    options, missing = [], []
    counts = tuple(sorted({1, devices}))
    measured = llm_gpus(frame, catalog)
    widths = crossval.load_widths()
    samples = estimates.calibration_samples(frame, catalog)  # once for both checkpointing plans
    fits = fp8.platform_fits(catalog) if job.fp8 else ()
    for on, gpus in plans.items():
        if not gpus:
            continue
        planned = job.with_checkpointing(on)
        spec = planned.workload_spec()
        request = estimates.EstimateRequest(
            workload_key(spec), spec, JOB_PRECISIONS, tuple(g.id for g in gpus), keep_covered=True, devices=counts
        )
        found = estimates.estimate_catalog(frame, catalog, request, samples=samples)
        by_gpu: dict[tuple[str, int], dict[str, Any]] = {}
        for row in found.rows.to_dict("records"):
            key = (row["catalog_id"], int(row["device_count"]))
            # bfloat16 where the GPU has it; float16 only where it has not
            if key not in by_gpu or row["precision"] == Precision.MIXED_BFLOAT16:
                by_gpu[key] = row
        if fits:  # a platform the 16-bit model is not fitted on, whose own tuned FP8 stack is
            by_gpu.update(_fp8_platform_rows(by_gpu, gpus, counts, fits))
        estimated = {gpu_id for gpu_id, _ in by_gpu}
        missing.extend(
            e for e in found.not_estimated if e.device.catalog_id not in estimated and e.precision == JOB_PRECISIONS[-1]
        )
        if fits and devices > 1:
            _fp8_several(by_gpu, catalog, devices, fits)
        scaling_width = found.widths.half_widths.get(SCALING_SITUATION)
        for (gpu_id, count), row in by_gpu.items():
            ranged = _llm_range(row, gpu_id in measured, widths, scaling_width) if row.get("basis") else row
            if fits:
                ranged = _fp8_row(ranged, planned, catalog.by_id()[gpu_id], count, fits)
            options.append(_option(catalog, planned, ranged, count, pure_16bit, sharded, job.run_tokens))
    options.sort(key=lambda o: (FIT_ORDER[o.verdict], o.seconds, o.gpu.name, o.devices))
    answered = _memory_answers(catalog, job, missing, checkpointing, devices, pure_16bit, sharded, fits)
    asked = tuple(gpu.name for gpu in chosen) if gpu_ids is not None else ()
    return JobAdvice(job, tuple(options), tuple(missing), answered, asked)


def _memory_answers(
    catalog: Catalog,
    job: TrainingJob,
    missing: list[Any],
    checkpointing: Checkpointing,
    devices: int,
    pure_16bit: bool,
    sharded: bool,
    fits: tuple[fp8.Fp8Fit, ...],
) -> tuple[MemoryOnly, ...]:
    """The catalog GPUs left without an estimate (their platform has no fitted time, or the catalog lacks the peak the
    time needs): their memory, fits first."""
    gpus = catalog.by_id()
    unfitted = {
        e.device.catalog_id: _with_stack_fit(e.no_peak, fits)
        for e in missing
        if isinstance(e.no_peak, basis.NoPlatformFit | basis.NoPeak) and e.device.catalog_id in gpus
    }
    answered = [
        _memory_only(catalog, gpus[gpu_id], job, checkpointing, devices, pure_16bit, sharded, why)
        for gpu_id, why in unfitted.items()
    ]
    return tuple(sorted(answered, key=lambda m: (FIT_ORDER[m.verdict], m.gpu.name)))


def _with_stack_fit(
    why: basis.NoPlatformFit | basis.NoPeak, fits: tuple[fp8.Fp8Fit, ...]
) -> basis.NoPlatformFit | basis.NoPeak:
    """An FP8 job's reason (``fits``: the platforms' tuned-stack fits, none for another job), saying which
    architectures of the GPU's platform its tuned stack is fitted on (AMD's CDNA 3), where some but not this GPU's."""
    if not isinstance(why, basis.NoPlatformFit):
        return why
    covered = sorted(a for fit in fits if fit.platform == why.platform for a in fit.architectures)
    return replace(why, stack_architectures=tuple(covered)) if covered else why


def _memory_only(
    catalog: Catalog,
    gpu: Gpu,
    job: TrainingJob,
    checkpointing: Checkpointing,
    devices: int,
    pure_16bit: bool,
    sharded: bool,
    why: basis.NoPlatformFit | basis.NoPeak,
) -> MemoryOnly:
    """The job's memory on a GPU whose platform has no fitted time, planned and split as :func:`_option` plans it."""
    capacity = float(gpu.usable_memory_gb or 0.0)
    planned = job.with_checkpointing(_choose_checkpointing(job, capacity, checkpointing, pure_16bit))
    shards = devices if sharded and devices > 1 else 1
    split = memory.split_for(planned, capacity, devices, pure_16bit)
    footprint = memory.predict(planned, pure_16bit, shards=shards, split=split)
    price = gpu.current_price(catalog.as_of)
    price_usd = price.usd * devices if price is not None and not price.stale(catalog.as_of) else None
    return MemoryOnly(gpu, devices, footprint, footprint.verdict(capacity), why, price_usd)


def _fp8_platform_rows(
    by_gpu: dict[tuple[str, int], dict[str, Any]],
    gpus: list[Gpu],
    counts: tuple[int, ...],
    fits: tuple[fp8.Fp8Fit, ...],
) -> dict[tuple[str, int], dict[str, Any]]:
    """Rows to time on the tuned FP8 stack for the GPUs the 16-bit model left out (a platform it is not fitted on)
    whose architecture a platform's own FP8 fit covers: AMD's CDNA 3 from AMD's MLPerf runs."""
    estimated = {gpu_id for gpu_id, _ in by_gpu}
    return {
        (gpu.id, count): {"catalog_id": gpu.id, "device_count": count, "basis": None}
        for gpu in gpus
        for count in counts
        if gpu.id not in estimated and fp8.fit_for(fits, gpu)
    }


def _fp8_several(
    by_gpu: dict[tuple[str, int], dict[str, Any]], catalog: Catalog, devices: int, fits: tuple[fp8.Fp8Fit, ...]
) -> None:
    """Several GPUs of a kind an FP8 fit covers where the 16-bit model has no data-parallel estimate (no interconnect
    in the catalog): the FP8 time needs none (the published runs' parallel overhead is in its fit)."""
    for (gpu_id, count), row in list(by_gpu.items()):
        if count == 1 and (gpu_id, devices) not in by_gpu and fp8.fit_for(fits, catalog.by_id()[gpu_id]):
            by_gpu[(gpu_id, devices)] = {**row, "device_count": devices}


def _fp8_row(
    row: dict[str, Any], job: TrainingJob, gpu: Gpu, count: int, fits: tuple[fp8.Fp8Fit, ...]
) -> dict[str, Any]:
    """The row's time on the tuned FP8 stack where a platform's fit covers the GPU's architecture (the published runs'
    parallel overhead is in the fit: no scaling is added); elsewhere the 16-bit estimate, its basis saying so."""
    fitted = fp8.fit_for(fits, gpu)
    per_gpu = None if fitted is None else fp8.tokens_per_second(job, gpu, fitted)
    if fitted is None or per_gpu is None:
        covered = tuple(sorted(a for fit in fits for a in fit.architectures))
        return {**row, "basis": row["basis"].with_clause(basis.NoFp8(gpu.architecture, covered))}
    seconds, width = job.run_tokens / (count * per_gpu), math.exp(fitted.half_width)
    parts = basis.Basis(
        basis.Fp8Calibration(fitted.utilization, fitted.runs, fitted.platform, fitted.rate.sustained),
        basis.Fp8Situation(),
        basis.Fp8Range(width),
    )
    return {
        **row,
        "seconds": seconds,
        "low": seconds / width,
        "high": seconds * width,
        "precision": FP8_PRECISION,
        "bound": Bound.ARITHMETIC.value,
        "basis": parts,
    }


def _split_basis(row: dict[str, Any], count: int, shards: int, split: memory.Split) -> dict[str, Any]:
    """The row with its basis saying how the model is split over the GPUs (FSDP shards or Megatron's split)."""
    parts = row["basis"]
    if shards > 1:
        parts = parts.with_clause(basis.Sharded(count))
    if split != memory.WHOLE:
        parts = parts.with_clause(basis.Split(split.tensor, split.pipeline, count))
    return {**row, "basis": parts}


def _option(
    catalog: Catalog,
    planned: TrainingJob,
    row: dict[str, Any],
    count: int,
    pure_16bit: bool,
    sharded: bool,
    tokens: float,
) -> JobOption:
    """One GPU (or ``count`` of them) for the planned job: its estimate's row, the memory the job needs there, the
    least memory it could need where it does not fit, and what the GPUs cost."""
    gpu = catalog.by_id()[row["catalog_id"]]
    capacity = float(gpu.usable_memory_gb or 0.0)
    shards = count if sharded and count > 1 else 1
    split = memory.split_for(planned, capacity, count, pure_16bit)
    footprint = memory.predict(planned, pure_16bit, shards=shards, split=split)
    if shards > 1 or split != memory.WHOLE:
        row = _split_basis(row, count, shards, split)
    rental, price = gpu.best_rental, gpu.current_price(catalog.as_of)
    micro_batches = max(1.0, planned.run_tokens / planned.tokens_per_micro_batch)
    verdict = footprint.verdict(capacity)
    ladder = (
        None
        if verdict == memory.Fit.FITS
        else least_memory(
            planned,
            capacity,
            pure_16bit,
            shards,
            float(row["seconds"]) / micro_batches,
            split,
            stack.load_stacks()[2],
        )
    )
    return JobOption(
        gpu=gpu,
        devices=count,
        precision=row["precision"],
        checkpointing=planned.checkpointing,
        footprint=footprint,
        verdict=verdict,
        seconds=float(row["seconds"]),
        low=float(row["low"]),
        high=float(row["high"]),
        bound=str(row["bound"]),
        basis=row["basis"],
        largest_micro_batch=memory.largest_micro_batch(planned, capacity, pure_16bit, shards, split),
        largest_seq_len=memory.largest_seq_len(planned, capacity, pure_16bit, shards, split),
        price_usd=count * float(price.usd) if price else None,
        rental_usd_per_hour=count * rental.usd_per_hour if rental else None,
        rental_provider=rental.provider if rental else None,
        tokens=tokens,
        ladder=ladder,
        split=split,
        sized=planned.tokens > 0,
    )


def llm_gpus(frame: pd.DataFrame, catalog: Catalog) -> set[str]:
    """The catalog GPUs with a published language-model result among the profiles."""
    if frame.empty:
        return set()
    rows = frame[frame["workload_spec"].map(lambda s: isinstance(s, dict) and s.get("family") == FAMILY)]
    return {g for g in estimates.match_catalog(rows, catalog) if g} if len(rows) else set()


def _llm_range(
    row: dict[str, Any], measured_gpu: bool, widths: dict[str, float], scaling_width: float | None
) -> dict[str, Any]:
    """The row's range from the language-model cross-validation: a new model on a GPU with language-model results,
    or on one without (the wider), with several GPUs the scaling's error in quadrature; the calibration's own
    situation where that file is absent."""
    situation = "llm-new-model" if measured_gpu else "llm-new-model-new-gpu"
    width = widths.get(situation)
    if width is None:
        return row
    found: basis.Basis = row["basis"]
    several = found.of_kind(basis.Clause.SEVERAL) if int(row["device_count"]) > 1 else ()
    if several and scaling_width:
        width = math.hypot(width, scaling_width)
    parts = basis.Basis(
        found.calibration,
        basis.LanguageModelSituation(situation, measured_gpu),
        basis.LanguageModelRange(math.exp(width), bool(several)),
        several,
    )
    one = row["seconds"]
    return {**row, "low": one / math.exp(width), "high": one * math.exp(width), "basis": parts}


class ChoiceWhy(StrEnum):
    """Why :func:`choose` chose its option (or none): the goal's rule, or what left nothing."""

    RENTED = "rented"  # cost: the cheapest rented run
    FASTEST = "fastest"  # speed: the fastest that fits (within the budget)
    CHEAPEST = "cheapest"  # value: the cheapest to buy that fits (within the budget)
    NONE_FOR_SALE = "none-for-sale"  # something fits, nothing of it is for sale within the budget
    NONE_FITS = "none-fits"  # no catalog GPU fits with room to spare
    NO_TIME = "no-time"  # what fits is of a platform without a fitted time: memory only, nothing to weigh


@dataclass(frozen=True)
class JobChoice:
    """``recommend --model-config``: the option for the goal, why, and what renting the run would cost instead."""

    goal: str
    best: JobOption | None
    why: ChoiceWhy
    rent: JobOption | None  # the cheapest rented run that fits
    break_even_runs: float | None  # runs after which buying ``best`` costs less than renting ``rent`` each time
    budget: float | None = None  # the budget the choice kept within
    asked: tuple[str, ...] = ()  # the GPUs it chose among where the catalog was narrowed (empty: every GPU)


def _why_none(advice: JobAdvice) -> ChoiceWhy:
    """Why nothing was chosen: what fits is not for sale (within the budget), or only GPUs without a fitted time
    fit, or nothing fits."""
    if advice.fitting():
        return ChoiceWhy.NONE_FOR_SALE
    return ChoiceWhy.NO_TIME if advice.fitting_without_time() else ChoiceWhy.NONE_FITS


def choose(advice: JobAdvice, goal: str = Goal.VALUE.value, budget: float | None = None) -> JobChoice:
    """The option for the goal among those that fit (the range's upper end within the card): ``speed`` the fastest
    to buy within the budget, ``cost`` the cheapest rented run, ``value`` the cheapest to buy within the budget;
    with the rental it competes with and the runs after which buying pays."""
    fitting = advice.fitting()
    affordable = [o for o in fitting if o.price_usd and (budget is None or o.price_usd <= budget)]
    rent = advice.cheapest_rental()
    if goal == Goal.COST:
        best, why = rent, ChoiceWhy.RENTED
    elif goal == Goal.SPEED:
        best = min(affordable, key=lambda o: (o.seconds, o.price_usd)) if affordable else None
        why = ChoiceWhy.FASTEST
    else:
        best = min(affordable, key=lambda o: (o.price_usd, o.seconds)) if affordable else None
        why = ChoiceWhy.CHEAPEST
    if best is None:
        return JobChoice(goal, None, _why_none(advice), rent, None, budget, advice.asked)
    runs = None
    if goal != Goal.COST and rent is not None and rent.rental_cost_usd and best.price_usd:
        runs = best.price_usd / rent.rental_cost_usd
    return JobChoice(goal, best, why, rent, runs, budget, advice.asked)
