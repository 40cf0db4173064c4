"""Statistics of epoch times: steady-state summary, the --quick stopping rule and its estimate.

Pure functions (no TensorFlow), so the rules are tested on synthetic epoch times.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# Two-sided 97.5 % quantiles of Student's t for df = 1..30; beyond that the normal 1.96.
_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)
# Asymptotic standard error of the median relative to that of the mean for normal data: sqrt(pi / 2).
_MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2)

QUICK_RELATIVE_PRECISION = 0.02
QUICK_CONFIDENCE = 0.95
QUICK_MIN_STEADY = 3
# How far the median of the first k steady epochs may miss the mean of a whole run's steady epochs: epoch times
# drift during a long run (noisy neighbours, throttling), which the spread of a few early epochs cannot see.
# Learned from the full 100-epoch runs recorded in profiles/amd-epyc-2-vcpu-cloud-vm.yaml (float32 and
# mixed_bfloat16): the early median missed the whole run's mean by up to 6.8 % at k = 3 and 3.2 % at k = 9;
# DRIFT_SCALE / sqrt(k) + DRIFT_FLOOR bounds both (8.9 % and 6.0 %). Checked in benchmarks/bench_quick.py.
DRIFT_SCALE = 0.12
DRIFT_FLOOR = 0.02
# Steady times whose stdev is above this share of their median are noisy: measure's epochs and a tracked run's
# steps both warn (another process on the device, throttling, steps of different sizes).
NOISY_SPREAD = 0.10


def t_quantile_975(df: int) -> float:
    if df < 1:
        return math.inf
    return _T975[df - 1] if df <= len(_T975) else 1.96


@dataclass(frozen=True)
class SteadyStats:
    """The steady times of a run (measure's epochs, a tracked run's optimizer steps): the one statistics type both
    write (``as_dict``) and warn from (``noisy``)."""

    count: int
    median: float
    mean: float
    min: float
    max: float
    stdev: float

    @property
    def spread(self) -> float:
        """(max - min) / median: how far the steady epochs range."""
        return (self.max - self.min) / self.median if self.median > 0 else math.inf

    @property
    def relative_stdev(self) -> float:
        """stdev / median (0 for a single time)."""
        return self.stdev / self.median if self.median > 0 else 0.0

    @property
    def noisy(self) -> bool:
        """Whether the times vary by more than NOISY_SPREAD (stdev / median)."""
        return self.count > 1 and self.relative_stdev > NOISY_SPREAD

    def as_dict(self) -> dict[str, float | int]:
        return {
            "count": self.count,
            "median": _round(self.median),
            "mean": _round(self.mean),
            "min": _round(self.min),
            "max": _round(self.max),
            "stdev": _round(self.stdev),
        }


def _round(value: float) -> float:
    return float(f"{value:.6g}")


def steady_stats(epoch_seconds: Sequence[float]) -> SteadyStats | None:
    """Statistics of the steady epochs: all but the first (warm-up). None when there are none."""
    return stats_of(epoch_seconds[1:])


def stats_of(times: Sequence[float]) -> SteadyStats | None:
    """Statistics of steady times (seconds); None when there are none."""
    steady = list(times)
    if not steady:
        return None
    return SteadyStats(
        count=len(steady),
        median=statistics.median(steady),
        mean=statistics.fmean(steady),
        min=min(steady),
        max=max(steady),
        stdev=statistics.stdev(steady) if len(steady) > 1 else 0.0,
    )


def median_half_width(steady: Sequence[float]) -> float:
    """Half-width of a 95 % confidence interval of the median of ``steady`` (seconds)."""
    n = len(steady)
    if n < 2:
        return math.inf
    return t_quantile_975(n - 1) * _MEDIAN_SE_FACTOR * statistics.stdev(steady) / math.sqrt(n)


def quick_should_stop(
    epoch_seconds: Sequence[float],
    relative_precision: float = QUICK_RELATIVE_PRECISION,
    min_steady: int = QUICK_MIN_STEADY,
) -> bool:
    """True once at least ``min_steady`` steady epochs pin the median within ``relative_precision``."""
    steady = list(epoch_seconds[1:])
    if len(steady) < min_steady:
        return False
    return median_half_width(steady) <= relative_precision * statistics.median(steady)


def quick_epoch_cap(epochs: int, min_steady: int = QUICK_MIN_STEADY) -> int:
    """The most epochs --quick runs: 10 % of the job, but enough for the minimum steady epochs."""
    return min(epochs, max(min_steady + 1, math.ceil(0.1 * epochs)))


@dataclass(frozen=True)
class Estimate:
    total_seconds: float
    error_seconds: float
    steady_epochs_timed: int
    method: str


def drift_allowance(steady_epochs: int) -> float:
    """The relative drift a run of ``steady_epochs`` early epochs cannot see (see DRIFT_SCALE)."""
    return DRIFT_SCALE / math.sqrt(max(steady_epochs, 1)) + DRIFT_FLOOR


def estimate_total(epoch_seconds: Sequence[float], epochs: int) -> Estimate:
    """first epoch + (epochs - 1) x steady median; its error adds the median's 95 % confidence half-width and the
    drift allowance, both relative to the median, times (epochs - 1) x median."""
    if len(epoch_seconds) < 2:
        raise ValueError("an estimate needs the first epoch and at least one steady epoch")
    steady = list(epoch_seconds[1:])
    median = statistics.median(steady)
    half = median_half_width(steady)
    confidence = half / median if math.isfinite(half) and median > 0 else 1.0
    relative = confidence + drift_allowance(len(steady))
    return Estimate(
        total_seconds=epoch_seconds[0] + (epochs - 1) * median,
        error_seconds=(epochs - 1) * median * relative,
        steady_epochs_timed=len(steady),
        method=(
            f"first epoch + {epochs - 1} x median of {len(steady)} steady epochs (--quick); error: the median's "
            f"95% confidence half-width ({100 * confidence:.1f}%) plus the drift a short run cannot see "
            f"({100 * drift_allowance(len(steady)):.1f}%), times {epochs - 1} x median"
        ),
    )
