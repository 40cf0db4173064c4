"""Cross-validation of the time estimates on the published language-model throughputs, as their own situations:

- ``llm-new-gpu``: every language-model result of one GPU predicted by a fit that saw no result of that GPU at all;
- ``llm-new-model``: every result of one model (all its methods, lengths and batches) predicted by a fit that saw
  none of them: a new size of a known family (MPT 7B from MPT 1B...30B, Qwen 14B from Qwen 1.8B, 7B, 72B);
- ``llm-new-model-new-gpu``: both at once, what a user's own model on a GPU without language-model results is;
- ``launch-bound``: the ``llm-new-model`` results whose time the host's launches decide (their counted kernels at
  the fitted cost per kernel: a third of the predicted time or more, ``LAUNCH_SHARE``), and those of the published
  workloads whose kernels were counted (Tacotron 2's decoder), each predicted by a fit without its workload: the
  range of a launch floor (:mod:`advisor.perf.launch`).

The 90th percentile of each situation's absolute log errors is the range of a language-model job's estimate in
it (:mod:`advisor.llm.advice`); the figures live in ``advisor/data/llm_crossval.yaml`` (``FILE_VERSION``), written
by the maintainers' ``python scripts/maintain.py llm-crossval --write``.

Pure NumPy over calibration samples, but for that file.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from advisor.errors import AdvisorError
from advisor.format.vocabulary import Bound
from advisor.perf import calibration
from advisor.perf.calibration import Sample
from advisor.store.parse import safe_load

FILE = "llm_crossval.yaml"
FILE_VERSION = 1  # the file's layout: {version, situations: {name: {results, median, p90}}}
QUANTILE = 0.9
SITUATIONS = ("llm-new-gpu", "llm-new-model", "llm-new-model-new-gpu", "launch-bound")
LAUNCH_BOUND = SITUATIONS[-1]
LAUNCH_SHARE = 1 / 3  # launch-bound: the launches decide this share of the predicted time or more (one bound of three)


@dataclass(frozen=True)
class Errors:
    by_situation: dict[str, tuple[float, ...]]  # log(predicted / observed)

    def summary(self) -> dict[str, dict[str, float]]:
        found = {}
        for situation in (s for s in SITUATIONS if s in self.by_situation):
            absolute = np.abs(self.by_situation[situation])
            found[situation] = {
                "results": len(absolute),
                "median": float(math.exp(np.median(absolute))),
                "p90": float(math.exp(np.quantile(absolute, QUANTILE))),
            }
        return found


def model_of(sample: Sample) -> str | None:
    """The model of a language-model sample (its workload's ``model`` field), None for any other workload."""
    return sample.model


def launch_bound(fit: calibration.Fit, sample: Sample) -> bool:
    """Whether the host's kernel launches decide at least ``LAUNCH_SHARE`` of a result's predicted time."""
    shares = fit.shares(sample.work, sample.device, sample.precision, sample.workload)
    return shares.get(Bound.STEP.value, 0.0) >= LAUNCH_SHARE


def run(samples: tuple[Sample, ...]) -> Errors:
    llm = [s for s in samples if model_of(s)]
    found: dict[str, list[float]] = defaultdict(list)

    def held(fit: calibration.Fit, chosen: list[Sample], situation: str) -> None:
        for s in chosen:
            predicted = fit.estimate(s.work, s.device, s.precision, s.workload)
            if predicted is not None:
                found[situation].append(math.log(predicted[0] / s.seconds))
                if situation == "llm-new-model" and launch_bound(fit, s):
                    found[LAUNCH_BOUND].append(math.log(predicted[0] / s.seconds))

    counted = {s.workload for s in samples if not model_of(s) and any(p.operations for p in s.work.phases)}
    for workload in sorted(counted):  # a published workload whose kernels were counted, held out entirely
        fit = calibration.fit(tuple(s for s in samples if s.workload != workload))
        for s in (s for s in samples if s.workload == workload and launch_bound(fit, s)):
            predicted = fit.estimate(s.work, s.device, s.precision, s.workload)
            if predicted is not None:
                found[LAUNCH_BOUND].append(math.log(predicted[0] / s.seconds))
    for gpu in sorted({s.gpu for s in llm}):
        fit = calibration.fit(tuple(s for s in samples if s.gpu != gpu))
        held(fit, [s for s in llm if s.gpu == gpu], "llm-new-gpu")
    for model in sorted({model_of(s) for s in llm}):
        rest = tuple(s for s in samples if model_of(s) != model)
        held(calibration.fit(rest), [s for s in llm if model_of(s) == model], "llm-new-model")
        for gpu in sorted({s.gpu for s in llm if model_of(s) == model}):
            fit = calibration.fit(tuple(s for s in rest if s.gpu != gpu))
            held(fit, [s for s in llm if model_of(s) == model and s.gpu == gpu], "llm-new-model-new-gpu")
    return Errors({k: tuple(v) for k, v in found.items()})


@lru_cache(maxsize=1)
def load_widths() -> dict[str, float]:
    """Each situation's log half-width (the 90th percentile), from the shipped file; empty when absent."""
    path = resources.files("advisor").joinpath("data", FILE)
    if not path.is_file():
        return {}
    data = safe_load(path.read_text(encoding="utf-8")) or {}
    if data.get("version") != FILE_VERSION:
        raise AdvisorError(f"advisor/data/{FILE}: version must be {FILE_VERSION}, got {data.get('version')!r}")
    return {k: math.log(v["p90"]) for k, v in (data.get("situations") or {}).items()}


def widths_document(summary: dict[str, dict[str, float]]) -> dict:
    """What ``advisor/data/llm_crossval.yaml`` holds: the version and each situation's errors."""
    return {"version": FILE_VERSION, "situations": summary}
