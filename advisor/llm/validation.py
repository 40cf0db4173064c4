"""The memory model against every published peak it can describe (``advisor/data/llm_memory_peaks.yaml``, imported
from the shared published measurements, and ``stack_memory_peaks.yaml``, recorded from the stacks' own documents).

Each peak names its training stack (``advisor/data/stacks.yaml``) and the choices its source states; the model's
parts follow those choices. The two fitted constants (the activations' factor and the framework's own memory) are
chosen to minimise the squared log error: per stack where the stack has at least ``MIN_STACK_CASES`` peaks left when
each of its groups is left out (so that its claimed accuracy is its own constants'), else on every stack's peaks
together (the pooled fit). The check is
leave-one-group-out: each source's model (Qwen 7B's rows, LitGPT's Llama 2 7B rows...) is predicted by constants
fitted without it, so a figure is never checked against itself; a stack's range is the 5th-95th percentile of its
own cross-validated errors where it has ``MIN_RANGE_CASES`` of them, else the pooled one's. A past version of a
stack (``past_versions`` in ``stacks.yaml``: its code kept other memory) is a stack of its own here. The peaks of
``HELD_OUT_FILE`` are kept out of all of it: the shipped constants predict them, as a buyer's job would be.

    python scripts/maintain.py memory-fit           # the errors per stack
    python scripts/maintain.py memory-fit --write   # and write advisor/data/llm_memory_fit.yaml, what memory.py reads

Pure NumPy, but for :func:`load_cases` and :func:`load_held_out` (one file each).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources

import numpy as np

from advisor.llm import job_memory as memory
from advisor.llm import stack
from advisor.llm.config import load_presets
from advisor.llm.job import TrainingJob, job_from_options
from advisor.store.parse import safe_load

PEAKS_FILES = ("llm_memory_peaks.yaml", "stack_memory_peaks.yaml")
HELD_OUT_FILE = "held_out_memory_peaks.yaml"  # kept out of every fit: the shipped constants are tested on them
FACTORS = np.exp(np.linspace(math.log(0.3), math.log(4.0), 60))
OVERHEADS = np.linspace(0.0, 3.0, 31)
# An under-prediction (a published peak above the prediction) weighs this many times an over-prediction of the same
# size: a buyer is hurt by optimism, not by caution, so the fit leans to the safe side.
OPTIMISM_WEIGHT = 4.0
MIN_STACK_CASES = 3  # a stack's own constants need this many peaks (and two source-model groups)
MIN_RANGE_CASES = 8  # a stack's own range needs this many cross-validated errors; fewer take the pooled range
# A source that does not say how many micro-batches it accumulates is taken to accumulate several: its gradients held
# through the forward pass, beside the activations (the larger prediction: never optimistic)
UNSTATED_ACCUMULATION = 2
# The stack's choices a peak's entry may state beside its own fields (its ``checkpointing`` and ``pure_16bit``)
CASE_CHOICES = tuple(c.name for c in stack.CHOICES if c.name not in ("checkpointing", "pure_bf16"))


@dataclass(frozen=True)
class Case:
    """A published peak and the job it was measured on."""

    job: TrainingJob
    pure_16bit: bool
    peak_gb: float
    gpu: str
    gpu_memory_gb: float
    group: str  # source and model: the unit left out together
    label: str
    workload: str = ""  # the entry's workload, as its file names it

    @property
    def stack(self) -> str:
        return self.job.stack


def case_of(entry: dict, presets: dict) -> Case:
    """One peak's job: the model and settings its source states, run with its stack's choices (and the ones the
    source states instead)."""
    job = job_from_options(
        presets[entry["model"]],
        entry["method"],
        entry["seq_len"],
        entry["batch"],
        entry.get("grad_accum", UNSTATED_ACCUMULATION),
        lora_rank=entry["lora_rank"],
        lora_targets=entry["lora_targets"],
    )
    overrides = {k: entry[k] for k in CASE_CHOICES if k in entry}
    overrides.update(checkpointing=entry["checkpointing"], pure_bf16=entry["pure_16bit"])
    choices = stack.resolve(stack.stack_named(entry["stack"], past=True), job.method, overrides)
    job = stack.apply(job, choices, entry["stack"])
    # what the stack does beside its choices, where the source's run did otherwise (another version of the stack)
    job = replace(job, **{flag: bool(entry[flag]) for flag in stack.FLAGS if flag in entry})
    source = entry["source"].split("@")[0].replace("github:", "").strip()
    return Case(
        job,
        choices.pure_bf16,
        float(entry["peak_gb"]),
        entry["gpu"],
        float(entry["gpu_memory_gb"]),
        f"{source}: {entry['model']}",
        f"{entry['stack']} | {entry['workload']} | {entry['published_method']} | seq {entry['seq_len']} | "
        f"batch {entry['batch']}",
        entry["workload"],
    )


def _read_cases(names: tuple[str, ...]) -> tuple[Case, ...]:
    presets = load_presets()
    cases = []
    for name in names:
        text = resources.files("advisor").joinpath("data", name).read_text(encoding="utf-8")
        cases.extend(case_of(entry, presets) for entry in safe_load(text)["cases"])
    return tuple(cases)


@lru_cache(maxsize=1)
def load_cases() -> tuple[Case, ...]:
    """The published peaks the constants are fitted and cross-validated on."""
    return _read_cases(PEAKS_FILES)


@lru_cache(maxsize=1)
def load_held_out() -> tuple[Case, ...]:
    """The published peaks kept out of every fit (``HELD_OUT_FILE``)."""
    return _read_cases((HELD_OUT_FILE,))


@dataclass(frozen=True)
class HeldOut:
    """A held-out peak against the shipped model's prediction of it."""

    case: Case
    footprint: memory.Footprint

    @property
    def ratio(self) -> float:
        """Published / predicted."""
        return self.case.peak_gb / self.footprint.total_gb

    @property
    def in_range(self) -> bool:
        return self.footprint.low_gb <= self.case.peak_gb <= self.footprint.high_gb


def held_out() -> list[HeldOut]:
    """Each held-out peak predicted with the shipped constants (``advisor/data/llm_memory_fit.yaml``)."""
    return [HeldOut(case, memory.predict(case.job, case.pure_16bit)) for case in load_held_out()]


def step_floor_gb(case: Case) -> float:
    """The GB a case's stated job holds at its optimizer step whatever its activations and its framework: the
    weights, the gradients and the optimizer states on the GPU (paged or offloaded states excepted)."""
    unit = memory.predict(case.job, case.pure_16bit, factor=1.0, overhead_gb=0.0)
    return unit.weights_gb + unit.gradients_gb + unit.optimizer_gb


def contradicting(cases: tuple[Case, ...]) -> tuple[Case, ...]:
    """The peaks below their own job's step floor (:func:`step_floor_gb`): no run of the job as its source states it
    holds less, so the row describes another run (more GPUs, another optimizer) and is left out of every fit."""
    return tuple(c for c in cases if c.peak_gb < step_floor_gb(c))


def _parts(cases: tuple[Case, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per case: the static GB beside the activations, the activations' GB before the factor, the static GB of the
    peaks without them (the loading, the backward pass's end: :attr:`memory.Footprint.floor_static_gb`), the
    published peak."""
    static, acts, floors = [], [], []
    for case in cases:
        unit = memory.predict(case.job, case.pure_16bit, factor=1.0, overhead_gb=0.0)
        static.append(unit.static_gb)
        acts.append(unit.activations_gb)
        floors.append(unit.floor_static_gb)
    return np.array(static), np.array(acts), np.array(floors), np.array([c.peak_gb for c in cases])


def _predicted(static: np.ndarray, acts: np.ndarray, floors: np.ndarray, factor, overhead) -> np.ndarray:
    """The model's total (broadcast over grids of constants): the activations' peak, or the one without them (the
    loading, the backward pass's end) where higher."""
    training = static + factor * acts + overhead
    return np.maximum(training, np.where(floors > 0, floors + overhead, 0.0))


def fit_constants(cases: tuple[Case, ...]) -> tuple[float, float]:
    """(activation factor, overhead GB) of least squared log error (an under-prediction weighing
    ``OPTIMISM_WEIGHT`` times more), on a grid."""
    static, acts, loading, peaks = _parts(cases)
    predicted = _predicted(
        static[None, None], acts[None, None], loading[None, None], FACTORS[:, None, None], OVERHEADS[None, :, None]
    )
    error = np.log(peaks[None, None] / predicted)
    loss = (np.where(error > 0, OPTIMISM_WEIGHT, 1.0) * error**2).sum(axis=2)
    i, j = np.unravel_index(int(np.argmin(loss)), loss.shape)
    return float(FACTORS[i]), float(OVERHEADS[j])


def own_fit(cases: tuple[Case, ...]) -> bool:
    """Whether these peaks (of one stack) are enough for its own constants: ``MIN_STACK_CASES`` of them, of two
    source-model groups at least (one model's peaks fix the two constants for that model alone)."""
    return len(cases) >= MIN_STACK_CASES and len({c.group for c in cases}) >= 2


def _fit_for(stack_name: str, cases: tuple[Case, ...]) -> tuple[float, float, bool]:
    """The constants a stack's job gets from these peaks (its own where it has enough, else the pooled ones), and
    whether they are its own."""
    own = tuple(c for c in cases if c.stack == stack_name)
    return (*fit_constants(own), True) if own_fit(own) else (*fit_constants(cases), False)


@dataclass(frozen=True)
class Report:
    """The cross-validated errors: observed / predicted per case (predicted without the case's group)."""

    cases: tuple[Case, ...]
    ratios: tuple[float, ...]  # published / predicted
    fitted_ratios: tuple[float, ...]  # (published - static part) / the fitted part predicted: what the range spans
    statics: tuple[float, ...]  # each case's static part (weights, gradients, optimizer state), GB
    fitted: dict[str, memory.Constants]  # by stack ("" the pooled fit)
    set_aside: tuple[Case, ...] = ()  # peaks below their own job's step floor (:func:`contradicting`)

    def of(self, stack_name: str | None = None) -> tuple[tuple[Case, ...], np.ndarray]:
        pairs = [
            (c, r) for c, r in zip(self.cases, self.ratios, strict=True) if stack_name is None or c.stack == stack_name
        ]
        return tuple(c for c, _ in pairs), np.array([r for _, r in pairs])

    def median_error(self, stack_name: str | None = None) -> float:
        """The median factor off, either way (1.10: 10 % off)."""
        return float(math.exp(np.median(np.abs(np.log(self.of(stack_name)[1])))))

    def median_ratio(self, stack_name: str | None = None) -> float:
        """The median published / predicted."""
        return float(np.median(self.of(stack_name)[1]))

    def point_below_share(self, stack_name: str | None = None) -> float:
        """The share of predictions (the range's centre) below 0.8x of the published peak."""
        return float(np.mean(self.of(stack_name)[1] > 1 / 0.8))

    def said_not_to_fit(self) -> list[Case]:
        """Published runs the model (cross-validated) would say do not fit the GPU they ran on."""
        found = []
        for case, ratio, static in zip(self.cases, self.ratios, self.statics, strict=True):
            constants = self.fitted.get(case.stack, self.fitted[""])
            predicted = case.peak_gb / ratio
            if static + (predicted - static) * constants.range_low > memory.card_gb(case.gpu_memory_gb):
                found.append(case)
        return found

    def optimistic_share(self, stack_name: str | None = None) -> float:
        """The share of published peaks above the range's upper end (the buyer would be told it fits too easily)."""
        above = []
        for case, fitted_ratio in zip(self.cases, self.fitted_ratios, strict=True):
            if stack_name is None or case.stack == stack_name:
                above.append(fitted_ratio > self.fitted.get(case.stack, self.fitted[""]).range_high)
        return float(np.mean(above)) if above else 0.0

    def stacks(self) -> list[str]:
        return sorted({c.stack for c in self.cases})


def _range(ratios: np.ndarray) -> tuple[float, float]:
    """The 5th-95th percentile of the cross-validated errors, each end taken at an observed error on its outer side
    and rounded outwards (never narrower than the errors it spans: the range's upper end decides "fits")."""
    low, high = np.percentile(ratios, 5, method="lower"), np.percentile(ratios, 95, method="higher")
    return math.floor(float(low) * 1000) / 1000, math.ceil(float(high) * 1000) / 1000


def cross_validate(cases: tuple[Case, ...] | None = None) -> Report:
    cases = load_cases() if cases is None else cases
    set_aside = contradicting(cases)
    cases = tuple(c for c in cases if c not in set_aside)
    static, acts, loading, peaks = _parts(cases)
    predicted = np.empty(len(cases))
    used_own = np.zeros(len(cases), dtype=bool)
    for index, case in enumerate(cases):
        factor, overhead, used_own[index] = _fit_for(case.stack, _left_out(case, cases))
        predicted[index] = _predicted(static[index], acts[index], loading[index], factor, overhead)
    ratios = peaks / predicted
    fitted_ratios = (peaks - static) / (predicted - static)
    pooled_factor, pooled_overhead = fit_constants(cases)
    fitted = {
        "": memory.Constants(round(pooled_factor, 3), round(pooled_overhead, 2), *_range(fitted_ratios), len(cases))
    }
    for stack_name in sorted({c.stack for c in cases}):
        own = tuple(c for c in cases if c.stack == stack_name)
        mine = np.array([c.stack == stack_name for c in cases])
        if not used_own[mine].all():  # its accuracy was checked with the pooled constants: it ships those
            continue
        low, high = _range(fitted_ratios[mine]) if len(own) >= MIN_RANGE_CASES else _range(fitted_ratios)
        factor, overhead = fit_constants(own)
        fitted[stack_name] = memory.Constants(round(factor, 3), round(overhead, 2), low, high, len(own), stack_name)
    return Report(
        cases,
        tuple(float(r) for r in ratios),
        tuple(float(r) for r in fitted_ratios),
        tuple(float(v) for v in static),
        fitted,
        set_aside,
    )


def _left_out(case: Case, cases: tuple[Case, ...]) -> tuple[Case, ...]:
    """The peaks a case is predicted from: without its source-model group; a stack whose peaks are all one group
    (torchtune's README: one model) predicts each of its peaks from its others (leave one out)."""
    own_groups = {c.group for c in cases if c.stack == case.stack}
    if len(own_groups) == 1:
        return tuple(c for c in cases if c is not case)
    return tuple(c for c in cases if c.group != case.group)


def fit_document(report: Report) -> dict:
    """What ``advisor/data/llm_memory_fit.yaml`` holds."""

    def entry(c: memory.Constants) -> dict:
        return {
            "factor": c.factor,
            "overhead_gb": c.overhead_gb,
            "range_low": c.range_low,
            "range_high": c.range_high,
            "cases": c.cases,
        }

    return {
        "fit_version": memory.FIT_VERSION,
        "pooled": entry(report.fitted[""]),
        "stacks": {name: entry(c) for name, c in report.fitted.items() if name},
    }


def fit_file_text(report: Report) -> str:
    """The text of ``advisor/data/llm_memory_fit.yaml`` for this report (``scripts/maintain.py`` writes it)."""
    import yaml  # only the writer needs the emitter

    head = (
        "# Written by `python scripts/maintain.py memory-fit --write` (do not edit): the memory model's fitted "
        "constants, per\n# training stack with enough published peaks, and each one's cross-validated range "
        "(published / predicted).\n"
    )
    return head + yaml.safe_dump(fit_document(report), sort_keys=False, width=120)
