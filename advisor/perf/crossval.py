"""Cross-validation of the calibrated performance model: how far its predictions are off on results it did not see.

Six experiments (``EXPERIMENTS``), each a situation an estimate can be in:

- ``new-gpu``: leave one GPU out (all its results), predict them from the rest (its architecture's, or none);
- ``new-architecture``: leave one architecture out (every GPU of it), predict them from the others';
- ``new-workload``: leave one workload out except its results on one reference GPU (what ``measure`` here and
  ``estimate`` there rest on), predict it on every other GPU;
- ``few-gpus``: the same with three reference GPUs;
- ``no-gpu-result``: leave one workload out entirely, predict it from its description alone;
- ``other-results``: ten folds of single results, each predicted from the other nine (a GPU and a workload with
  results, the result itself unseen).

Beside them, ``new-family`` (:func:`leave_family_out`, asked for by ``crossval --families``) holds out each model
family in turn (recurrent, vision, language, speech, recommendation) and scores each result, each GPU pair's ratio and
the GPUs' order (:func:`family_errors`); no estimate's range comes from it.

Each prediction is filed under the situation the fit that made it was in (:class:`calibration.Situation`); the
90th percentile of the absolute log errors of a situation is the half-width of every estimate's range in that
situation. Coverage is checked honestly: each held-out group's range comes from the errors of the other groups.
Pure NumPy over calibration samples; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from advisor.format.vocabulary import PrecisionGroup, words
from advisor.perf import calibration, held_out, scaling
from advisor.perf.basis import RangeMethod
from advisor.perf.calibration import Sample, Situation

QUANTILE = 0.9  # an estimate's range holds this share of the cross-validated errors of its situation
MIN_ERRORS = 20  # fewer errors than this in a situation: its width is combined from the neighbouring ones
FOLDS = 10
FEW_REFERENCES = 3
FAMILY_PREFIX = "family:"  # advisor.perf.estimates.calibration_workload: the fitted terms a family shares
EXPERIMENTS = ("new-gpu", "new-architecture", "new-workload", "few-gpus", "no-gpu-result", "other-results")
FAMILY_EXPERIMENT = "new-family"  # reported on its own (crossval --families): no estimate's range is drawn from it


@dataclass(frozen=True)
class Held:
    """One held-out result and its prediction."""

    experiment: str
    group: str  # what was held out with it (a GPU, a workload and its references, a fold)
    sample: Sample
    predicted: float
    situation: Situation

    @property
    def error(self) -> float:
        """log(predicted / observed)."""
        return math.log(self.predicted / self.sample.seconds)


def _predict_held(experiment: str, group: str, fit: calibration.Fit, held: Iterable[Sample]) -> list[Held]:
    found = []
    for s in held:
        predicted = fit.estimate(s.work, s.device, s.precision, s.workload)
        if predicted is not None:
            found.append(Held(experiment, group, s, predicted[0], fit.situation(s.device, s.workload, s.precision)))
    return found


def leave_gpu_out(samples: tuple[Sample, ...]) -> list[Held]:
    """A new GPU: every result of one GPU predicted from the others'."""
    found = []
    for gpu in sorted({s.gpu for s in samples}):
        fit = calibration.fit(tuple(s for s in samples if s.gpu != gpu))
        found += _predict_held("new-gpu", gpu, fit, (s for s in samples if s.gpu == gpu))
    return found


def leave_architecture_out(samples: tuple[Sample, ...]) -> list[Held]:
    """A new architecture: every result of its GPUs predicted from the other architectures'."""
    found = []
    for architecture in sorted({s.architecture for s in samples}):
        fit = calibration.fit(tuple(s for s in samples if s.architecture != architecture))
        found += _predict_held(
            "new-architecture", architecture, fit, (s for s in samples if s.architecture == architecture)
        )
    return found


def _references(gpus: list[str], count: int, rounds: int) -> list[tuple[str, ...]]:
    """``rounds`` sets of ``count`` reference GPUs, rotating through the sorted GPUs (every GPU serves)."""
    if len(gpus) <= count:
        return []
    step = max(1, len(gpus) // rounds)
    return [tuple(gpus[(start + k * step) % len(gpus)] for k in range(count)) for start in range(0, len(gpus), step)]


def leave_workload_out(samples: tuple[Sample, ...], references: int, rounds: int = 8) -> list[Held]:
    """A new workload measured on ``references`` GPUs (0: none), predicted on every other GPU."""
    experiment = {0: "no-gpu-result", 1: "new-workload"}.get(references, "few-gpus")
    found = []
    # A family's shared terms (every language-model job) are not one workload: never held out here (run says why)
    for workload in sorted({s.workload for s in samples if not s.workload.startswith(FAMILY_PREFIX)}):
        own = [s for s in samples if s.workload == workload]
        rest = tuple(s for s in samples if s.workload != workload)
        gpus = sorted({s.gpu for s in own})
        reference_sets = [()] if references == 0 else _references(gpus, references, rounds)
        for chosen in reference_sets:
            fit = calibration.fit(rest + tuple(s for s in own if s.gpu in chosen))
            group = f"{workload} from {', '.join(chosen) or 'its description'}"
            found += _predict_held(experiment, group, fit, (s for s in own if s.gpu not in chosen))
    return found


def k_fold(samples: tuple[Sample, ...], folds: int = FOLDS, seed: int = 0) -> list[Held]:
    """Single results held out in ``folds`` random folds, each predicted from the others."""
    order = np.random.default_rng(seed).permutation(len(samples))
    found = []
    for fold in range(folds):
        chosen = set(order[fold::folds].tolist())
        fit = calibration.fit(tuple(s for i, s in enumerate(samples) if i not in chosen))
        found += _predict_held("other-results", f"fold {fold + 1}", fit, (samples[i] for i in sorted(chosen)))
    return found


def run(samples: tuple[Sample, ...], experiments: tuple[str, ...] = EXPERIMENTS) -> list[Held]:
    """The chosen experiments' held-out predictions. A family's results (every language-model job) train every fit
    but are not scored here: their own situations, whose errors are their estimates' ranges, are
    :mod:`advisor.llm.throughput_crossval`'s (scored here, a language-model row held out with its GPU would widen
    the post's LSTM's range, a workload it says nothing of)."""
    runners: dict[str, Callable[[], list[Held]]] = {
        "new-gpu": lambda: leave_gpu_out(samples),
        "new-architecture": lambda: leave_architecture_out(samples),
        "new-workload": lambda: leave_workload_out(samples, 1),
        "few-gpus": lambda: leave_workload_out(samples, FEW_REFERENCES),
        "no-gpu-result": lambda: leave_workload_out(samples, 0),
        "other-results": lambda: k_fold(samples),
    }
    return [
        held for name in experiments for held in runners[name]() if not held.sample.workload.startswith(FAMILY_PREFIX)
    ]


def leave_family_out(samples: tuple[Sample, ...]) -> list[Held]:
    """A new kind of model: every result of one model family (vocabulary.ModelFamily: recurrent, vision, language,
    speech, recommendation) predicted by a fit that saw no workload of that family. Results of no known family
    train every fit and are never scored."""
    found = []
    for family in sorted({s.model_family for s in samples if s.model_family}):
        fit = calibration.fit(tuple(s for s in samples if s.model_family != family))
        found += _predict_held(FAMILY_EXPERIMENT, family, fit, (s for s in samples if s.model_family == family))
    return found


@dataclass(frozen=True)
class FamilyErrors:
    """How far one held-out family's estimates are off: each result's time, each pair of GPUs' speed ratio (what a
    buyer compares), and the GPUs' order (Spearman's rank correlation) per job: one workload in one precision on
    several GPUs (a language-model row: its model and work too)."""

    family: str
    results: int
    median: float  # factor: exp(median |log(predicted / observed)|) over the results
    p90: float
    pairs: int
    pair_median: float  # factor: exp(median |log(predicted ratio / observed ratio)|) over the GPU pairs of a job
    pair_p90: float
    jobs_ranked: int  # jobs on three GPUs or more
    rank_median: float | None  # Spearman's rho of the GPUs' predicted and observed times, median over the jobs
    rank_p10: float | None  # its 10th percentile: the worst-ranked tenth of the jobs


def _per_gpu(helds: list[Held]) -> dict[str, tuple[float, float]]:
    """Each GPU's observed and predicted log time (the mean where a job has several results on one GPU)."""
    by_gpu: dict[str, list[Held]] = {}
    for held in helds:
        by_gpu.setdefault(held.sample.gpu, []).append(held)
    return {
        gpu: (
            float(np.mean([math.log(h.sample.seconds) for h in hs])),
            float(np.mean([math.log(h.predicted) for h in hs])),
        )
        for gpu, hs in by_gpu.items()
    }


def _spearman(first: np.ndarray, second: np.ndarray) -> float:
    ranks = [np.argsort(np.argsort(values)).astype(float) for values in (first, second)]
    return float(np.corrcoef(ranks[0], ranks[1])[0, 1])


def family_errors(helds: list[Held]) -> list[FamilyErrors]:
    """The held-out family experiment's table: a row per family (``helds``: :func:`leave_family_out`'s)."""
    rows = []
    for family in sorted({h.group for h in helds}):
        own = [h for h in helds if h.group == family]
        jobs: dict[tuple, list[Held]] = {}
        for held in own:
            s = held.sample
            # a published workload is one job on every GPU (each at the batch its memory allowed); a language-model
            # row is one of many jobs its family shares: its work names it
            work = s.work if s.workload.startswith(FAMILY_PREFIX) else None
            jobs.setdefault((s.workload, s.model, s.precision, work), []).append(held)
        pair_errors, ranks = [], []
        for members in jobs.values():
            gpus = _per_gpu(members)
            names = sorted(gpus)
            for i, a in enumerate(names):
                for b in names[i + 1 :]:
                    observed = gpus[a][0] - gpus[b][0]
                    predicted = gpus[a][1] - gpus[b][1]
                    pair_errors.append(abs(predicted - observed))
            if len(names) >= 3:
                ranks.append(_spearman(np.array([gpus[g][0] for g in names]), np.array([gpus[g][1] for g in names])))
        errors = [abs(h.error) for h in own]
        rows.append(
            FamilyErrors(
                family=family,
                results=len(own),
                median=quantile_factor(errors, 0.5),
                p90=quantile_factor(errors, QUANTILE),
                pairs=len(pair_errors),
                pair_median=quantile_factor(pair_errors, 0.5) if pair_errors else math.nan,
                pair_p90=quantile_factor(pair_errors, QUANTILE) if pair_errors else math.nan,
                jobs_ranked=len(ranks),
                rank_median=float(np.median(ranks)) if ranks else None,
                rank_p10=float(np.quantile(ranks, 0.1)) if ranks else None,
            )
        )
    return rows


def quantile_factor(errors: Iterable[float], q: float) -> float:
    values = np.abs(np.fromiter(errors, dtype=float))
    return math.exp(float(np.quantile(values, q))) if len(values) else math.nan


def summary(helds: list[Held]) -> list[dict]:
    """Per experiment and precision group: results predicted, median and 90th-percentile error (as factors)."""
    rows = []
    for experiment in EXPERIMENTS:
        for group in (*words(PrecisionGroup), "all"):
            errors = [h.error for h in helds if h.experiment == experiment and group in ("all", h.sample.group)]
            if errors:
                rows.append(
                    {
                        "experiment": experiment,
                        "precision": group,
                        "results": len(errors),
                        "median": quantile_factor(errors, 0.5),
                        "p90": quantile_factor(errors, 0.9),
                    }
                )
    return rows


def half_widths(helds: list[Held]) -> dict[str, float]:
    """Per situation key: the QUANTILE of the absolute log errors (situations with MIN_ERRORS or more)."""
    by_situation: dict[str, list[float]] = {}
    for held in helds:
        by_situation.setdefault(held.situation.key, []).append(abs(held.error))
    return {
        key: float(np.quantile(errors, QUANTILE))
        for key, errors in sorted(by_situation.items())
        if len(errors) >= MIN_ERRORS
    }


def width_for(widths: dict[str, float], situation: Situation, fallback: float) -> tuple[float, RangeMethod]:
    """The log half-width of a situation, and how it was found: measured, or combined from the GPU's and the
    workload's situations (their excess over the best-known one added in quadrature), or the fallback."""
    if situation.key in widths:
        return widths[situation.key], RangeMethod.CROSS_VALIDATED
    base = widths.get("gpu/results")
    gpu_part = widths.get(f"{situation.gpu}/results")
    workload_part = widths.get(f"gpu/{situation.workload}")
    if base is not None and gpu_part is not None and workload_part is not None:
        combined = math.sqrt(max(gpu_part**2 + workload_part**2 - base**2, base**2))
        return combined, RangeMethod.COMBINED
    return fallback, RangeMethod.FALLBACK


def coverage(helds: list[Held]) -> float:
    """The share of held-out results inside their range, each group's range taken from the other groups' errors
    (the range a result gets never rests on its own error)."""
    inside = total = 0
    groups = sorted({(h.experiment, h.group) for h in helds})
    for experiment, group in groups:
        others = [h for h in helds if (h.experiment, h.group) != (experiment, group)]
        widths = half_widths(others)
        for held in (h for h in helds if (h.experiment, h.group) == (experiment, group)):
            width, _ = width_for(widths, held.situation, math.log(2.0))
            inside += abs(held.error) <= width
            total += 1
    return inside / total if total else math.nan


@dataclass(frozen=True)
class Report:
    """What ``advisor crossval`` prints and writes."""

    summary: list[dict]
    half_widths: dict[str, float]
    coverage: float
    samples: int
    signature: str
    targets: tuple[tuple[str, str, float, float], ...]  # (experiment, precision, median, p90) the issue set
    scaling: dict | None = None  # data-parallel efficiency, leave one system out: results, median, p90, fit
    families: tuple[FamilyErrors, ...] = ()  # each model family held out in turn (asked for: report(families=True))
    held_out: tuple[held_out.HeldOutPair, ...] = ()  # the held-out file's new GPUs (asked for: report(held=...))

    def held_out_errors(self) -> list[held_out.HeldOutErrors]:
        """The held-out results' pairs summarised per experiment (empty where they were not asked for)."""
        return held_out.errors_by_experiment(list(self.held_out)) if self.held_out else []

    def checks(self) -> list[dict]:
        """Each target against its measured value."""
        found = {(row["experiment"], row["precision"]): row for row in self.summary}
        checks = []
        for experiment, precision, median, p90 in self.targets:
            row = found.get((experiment, precision))
            if row is not None:
                checks.append(
                    {
                        "experiment": experiment,
                        "precision": precision,
                        "median": row["median"],
                        "median_target": median,
                        "p90": row["p90"],
                        "p90_target": p90,
                        "met": row["median"] <= median and row["p90"] <= p90,
                    }
                )
        return checks


# The targets the estimates are held to (median, 90th percentile, as factors).
TARGETS = (
    ("new-gpu", PrecisionGroup.FLOAT32.value, 1.15, 1.4),
    ("new-gpu", PrecisionGroup.MIXED.value, 1.15, 1.4),
    ("new-workload", "all", 1.25, 1.6),
)
COVERAGE_TARGET = (0.85, 0.97)


SCALING_SITUATION = "data-parallel"  # the widths' key of the scaling's error

# A tracked job (advisor.track) is a workload measured on one device, described by the FLOPs counted on one of its
# steps. Tracked on a catalog GPU, its estimates on the other GPUs are in the new-workload situation (scaled from
# one reference GPU); tracked on a CPU (or a GPU the catalog lacks), nothing of its time carries over to a GPU, so
# they stand on its counted description alone: the no-gpu-result situation. Their errors are those experiments'.
TRACKED_SITUATIONS = (("a catalog GPU", "new-workload"), ("a CPU", "no-gpu-result"))


def tracked_errors(summary: list[dict]) -> list[dict]:
    """How far a tracked job's estimates on other GPUs are off, by where it was tracked (from ``summary``)."""
    found = {row["experiment"]: row for row in summary if row["precision"] == "all"}
    return [
        {
            "tracked_on": device,
            "experiment": experiment,
            "median": found[experiment]["median"],
            "p90": found[experiment]["p90"],
            "results": found[experiment]["results"],
        }
        for device, experiment in TRACKED_SITUATIONS
        if experiment in found
    ]


def report(
    samples: tuple[Sample, ...],
    experiments: tuple[str, ...] = EXPERIMENTS,
    scaling_observations: list[scaling.Observation] | None = None,
    families: bool = False,
    held: tuple[Sample, ...] = (),
) -> Report:
    """Run the experiments and summarise them: errors, the widths per situation, coverage; with multi-GPU
    observations, the data-parallel scaling left one system out at a time; with ``families``, each model family
    held out in turn (:func:`family_errors`); with ``held`` (results no fit sees), their new GPUs predicted
    (:func:`held_out.new_gpu_pairs`). No width comes from either."""
    helds = run(samples, experiments)
    widths = half_widths(helds)
    scaled = None
    if scaling_observations:
        predicted = scaling.leave_one_system_out(scaling_observations)
        errors = [math.log(p / o.efficiency) for o, p in predicted]
        fitted = scaling.fit_scaling(scaling_observations)
        scaled = {
            "results": len(errors),
            "systems": len({o.system for o in scaling_observations}),
            "median": quantile_factor(errors, 0.5),
            "p90": quantile_factor(errors, 0.9),
            "perfect_scaling_p90": quantile_factor((math.log(1 / o.efficiency) for o in scaling_observations), 0.9),
            "phi": fitted.phi,
            "sync": fitted.sync,
        }
        widths[SCALING_SITUATION] = math.log(scaled["p90"])
    held_families = tuple(family_errors(leave_family_out(samples))) if families else ()
    return Report(
        summary(helds),
        widths,
        coverage(helds),
        len(samples),
        calibration.signature(samples),
        TARGETS,
        scaled,
        held_families,
        tuple(held_out.new_gpu_pairs(samples, held)) if held else (),
    )
