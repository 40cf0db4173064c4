"""The memory model against every published peak it can describe (``advisor/data/llm_memory_peaks.yaml``).

The two fitted constants (the activations' factor and the framework's own memory) are chosen to minimise the
squared log error over the peaks; the check is leave-one-group-out: each source's model (Qwen 7B's rows, LitGPT's
Llama 2 7B rows...) is predicted by constants fitted without it, so a figure is never checked against itself.

    python -m advisor.llm.validation     # the errors, and the constants and range memory.py should hold

Pure NumPy, but for :func:`load_cases` (one file).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from advisor.llm import memory
from advisor.llm.config import load_presets
from advisor.llm.job import TrainingJob, job_from_options
from advisor.store.parse import safe_load

PEAKS_FILE = "llm_memory_peaks.yaml"
FACTORS = np.exp(np.linspace(math.log(0.3), math.log(4.0), 60))
OVERHEADS = np.linspace(0.0, 3.0, 31)
# An under-prediction (a published peak above the prediction) weighs this many times an over-prediction of the same
# size: a buyer is hurt by optimism, not by caution, so the fit leans to the safe side.
OPTIMISM_WEIGHT = 4.0


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


@lru_cache(maxsize=1)
def load_cases() -> tuple[Case, ...]:
    text = resources.files("advisor").joinpath("data", PEAKS_FILE).read_text(encoding="utf-8")
    presets = load_presets()
    cases = []
    for entry in safe_load(text)["cases"]:
        job = job_from_options(presets[entry["model"]], entry["method"], entry["seq_len"], entry["batch"],
                               checkpointing=entry["checkpointing"], lora_rank=entry["lora_rank"],
                               lora_targets=entry["lora_targets"])  # fmt: skip
        source = entry["source"].split("@")[0].replace("github:", "").strip()
        cases.append(Case(job, bool(entry["pure_16bit"]), float(entry["peak_gb"]), entry["gpu"],
                          float(entry["gpu_memory_gb"]), f"{source}: {entry['model']}",
                          f"{entry['workload']} | {entry['published_method']} | seq {entry['seq_len']} | "
                          f"batch {entry['batch']}"))  # fmt: skip
    return tuple(cases)


def _parts(cases: tuple[Case, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per case: the static GB, the activations' GB before the factor, the published peak."""
    static, acts = [], []
    for case in cases:
        unit = memory.predict(case.job, case.pure_16bit, factor=1.0, overhead_gb=0.0)
        static.append(unit.total_gb - unit.activations_gb)
        acts.append(unit.activations_gb)
    return np.array(static), np.array(acts), np.array([c.peak_gb for c in cases])


def fit(cases: tuple[Case, ...]) -> tuple[float, float]:
    """(activation factor, overhead GB) of least squared log error (an under-prediction weighing
    ``OPTIMISM_WEIGHT`` times more), on a grid."""
    static, acts, peaks = _parts(cases)
    predicted = static[None, None] + FACTORS[:, None, None] * acts[None, None] + OVERHEADS[None, :, None]
    error = np.log(peaks[None, None] / predicted)
    loss = (np.where(error > 0, OPTIMISM_WEIGHT, 1.0) * error**2).sum(axis=2)
    i, j = np.unravel_index(int(np.argmin(loss)), loss.shape)
    return float(FACTORS[i]), float(OVERHEADS[j])


@dataclass(frozen=True)
class Report:
    """The cross-validated errors: observed / predicted per case (predicted without the case's group)."""

    cases: tuple[Case, ...]
    ratios: tuple[float, ...]  # published / predicted
    factor: float
    overhead_gb: float

    @property
    def median_error(self) -> float:
        """The median factor off, either way (1.10: 10 % off)."""
        return float(math.exp(np.median(np.abs(np.log(self.ratios)))))

    @property
    def optimistic_share(self) -> float:
        """The share of peaks the prediction puts below 0.8x of the published figure... as the range's upper end
        does: what a buyer would be misled by."""
        highs = np.array(self.ratios) / memory.RANGE_HIGH
        return float(np.mean(highs > 1 / 0.8))

    @property
    def point_below_share(self) -> float:
        """The share of predictions (the range's centre) below 0.8x of the published peak."""
        return float(np.mean(np.array(self.ratios) > 1 / 0.8))

    def range(self) -> tuple[float, float]:
        """The 5th and 95th percentiles of published / predicted: the range every prediction gets."""
        low, high = np.percentile(self.ratios, [5, 95])
        return float(low), float(high)

    def said_not_to_fit(self) -> list[Case]:
        """Published runs the model (cross-validated) would say do not fit the GPU they ran on."""
        found = []
        for case, ratio in zip(self.cases, self.ratios, strict=True):
            predicted = case.peak_gb / ratio
            footprint_low = predicted * memory.RANGE_LOW
            if footprint_low > case.gpu_memory_gb:
                found.append(case)
        return found


def cross_validate(cases: tuple[Case, ...] | None = None) -> Report:
    cases = load_cases() if cases is None else cases
    static, acts, peaks = _parts(cases)
    groups = sorted({c.group for c in cases})
    ratios = np.empty(len(cases))
    for group in groups:
        inside = np.array([c.group == group for c in cases])
        factor, overhead = fit(tuple(c for c, i in zip(cases, inside, strict=True) if not i))
        ratios[inside] = peaks[inside] / (static[inside] + factor * acts[inside] + overhead)
    factor, overhead = fit(cases)
    return Report(cases, tuple(float(r) for r in ratios), factor, overhead)


def report_text(report: Report) -> str:
    low, high = report.range()
    lines = [
        f"memory model on {len(report.cases)} published peaks ({len({c.group for c in report.cases})} source-model "
        "groups), each predicted without its group:",
        f"  median error {report.median_error:.3f}x; range (5th-95th percentile of published / predicted) "
        f"{low:.3f}..{high:.3f}",
        f"  predictions below 0.8x of the published peak: {report.point_below_share:.1%} (the prediction), "
        f"{report.optimistic_share:.1%} (the range's upper end)",
        f"  published runs said not to fit their own GPU: {len(report.said_not_to_fit())}",
        f"  fitted on all: ACTIVATION_FACTOR = {report.factor:.3g}, OVERHEAD_GB = {report.overhead_gb:.3g}",
    ]
    for case, ratio in sorted(zip(report.cases, report.ratios, strict=True), key=lambda p: p[1]):
        lines.append(f"  {ratio:6.3f}  {case.peak_gb:7.2f} GB  {case.label}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report_text(cross_validate()))
    sys.exit(0)
