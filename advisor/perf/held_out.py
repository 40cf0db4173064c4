"""Published training results that no fit ever sees (``advisor/data/held_out_training.yaml``, read by
:mod:`advisor.store.held_out_results`): each of their results on a GPU that no calibration result covers (a new GPU:
today the RTX 5090, a single consumer Blackwell card) is predicted as a buyer would get it, beside the same job on
the GPUs the fit does cover, and each pair's speed ratio (the new GPU over a covered one) is scored against the
published one.

Three situations, as a user's job is in one of them (``calibration.Situation``):

- ``described only``: the held-out workloads' descriptions at face value (``estimate --model FILE``, nothing
  measured);
- ``measured on GPU``: the workload's results on that one covered GPU join the fit (``measure`` there, ``estimate``
  here), once per covered GPU;
- ``measured on every covered GPU``: its results on all of them join the fit.

No estimate's range is drawn from here: the point is a check the calibration cannot have been tuned on, run as it
changes (``advisor crossval --held-out``). Pure NumPy over calibration samples; no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from advisor.perf import calibration
from advisor.perf.calibration import Sample

DESCRIBED = "described only"
EVERY_COVERED = "measured on every covered GPU"


def measured_on(gpu: str) -> str:
    """The experiment where the held-out workload's results on ``gpu`` alone join the fit."""
    return f"measured on {gpu}"


@dataclass(frozen=True)
class HeldOutPair:
    """A new GPU's speed over a covered GPU's on one held-out job, published and predicted."""

    experiment: str
    workload: str  # the held-out workload's calibration id (its source and name)
    precision: str
    new_gpu: str  # catalog id: a GPU no calibration result covers
    covered_gpu: str  # catalog id: a GPU the calibration has results of
    published: float  # the new GPU's speed over the covered GPU's, as published
    predicted: float  # the same ratio as the fit predicts both

    @property
    def error(self) -> float:
        """The factor between the predicted and the published ratio (1 is exact)."""
        return math.exp(abs(math.log(self.predicted / self.published)))


@dataclass(frozen=True)
class HeldOutErrors:
    """One experiment's pairs: how many, their median and worst error (factors)."""

    experiment: str
    pairs: int
    median: float
    worst: float


def _predicted_seconds(fit: calibration.Fit, sample: Sample) -> float | None:
    found = fit.estimate(sample.work, sample.device, sample.precision, sample.workload)
    return found[0] if found else None


def _pairs(experiment: str, fit: calibration.Fit, held: tuple[Sample, ...], new: set[str]) -> list[HeldOutPair]:
    """Every (new GPU, covered GPU) pair of one job in ``held``, predicted by ``fit``."""
    found = []
    for fresh in (s for s in held if s.gpu in new):
        fresh_seconds = _predicted_seconds(fit, fresh)
        for other in held:
            if other.gpu in new or (other.workload, other.precision) != (fresh.workload, fresh.precision):
                continue
            other_seconds = _predicted_seconds(fit, other)
            if fresh_seconds and other_seconds:
                found.append(
                    HeldOutPair(
                        experiment,
                        fresh.workload,
                        fresh.precision,
                        fresh.gpu,
                        other.gpu,
                        published=other.seconds / fresh.seconds,
                        predicted=other_seconds / fresh_seconds,
                    )
                )
    return found


def new_gpu_pairs(fit_samples: tuple[Sample, ...], held: tuple[Sample, ...]) -> list[HeldOutPair]:
    """Each held-out result on a GPU that ``fit_samples`` never cover, paired with the same job on each covered GPU,
    in every experiment (``DESCRIBED``, :func:`measured_on` each covered GPU, ``EVERY_COVERED``)."""
    covered_by_fit = {s.gpu for s in fit_samples}
    new = {s.gpu for s in held} - covered_by_fit
    covered = sorted({s.gpu for s in held} & covered_by_fit)
    experiments = [(DESCRIBED, ())] + [(measured_on(gpu), (gpu,)) for gpu in covered]
    if len(covered) > 1:
        experiments.append((EVERY_COVERED, tuple(covered)))
    found = []
    for experiment, joined in experiments:
        fit = calibration.fit(fit_samples + tuple(s for s in held if s.gpu in joined))
        found += _pairs(experiment, fit, held, new)
    return found


def errors_by_experiment(pairs: list[HeldOutPair]) -> list[HeldOutErrors]:
    """A row per experiment, in the order :func:`new_gpu_pairs` ran them."""
    experiments = list(dict.fromkeys(pair.experiment for pair in pairs))
    rows = []
    for experiment in experiments:
        errors = [pair.error for pair in pairs if pair.experiment == experiment]
        rows.append(HeldOutErrors(experiment, len(errors), float(np.median(errors)), max(errors)))
    return rows
