"""The --quick stopping rule and its estimate, on synthetic epoch times."""

from __future__ import annotations

import random

import pytest

from advisor.measure import timing


def test_needs_three_steady_epochs():
    assert not timing.quick_should_stop([5.0, 1.0, 1.0])
    assert timing.quick_should_stop([5.0, 1.0, 1.0, 1.0])


def test_noisy_epochs_do_not_stop_early():
    assert not timing.quick_should_stop([5.0, 1.0, 1.3, 0.8, 1.2])


def test_stops_once_the_median_is_known_within_two_percent():
    rng = random.Random(1)
    times = [9.0]
    while not timing.quick_should_stop(times):
        times.append(rng.gauss(7.0, 0.1))
        assert len(times) < 50
    steady = times[1:]
    assert timing.median_half_width(steady) <= 0.02 * sorted(steady)[len(steady) // 2] * 1.0001
    assert len(steady) >= 3


def test_estimate_is_first_plus_remaining_times_median():
    estimate = timing.estimate_total([10.0, 2.0, 2.0, 2.0, 2.0], epochs=100)
    assert estimate.total_seconds == pytest.approx(10.0 + 99 * 2.0)
    assert estimate.error_seconds == pytest.approx(99 * 2.0 * timing.drift_allowance(4))  # no spread: drift alone
    assert estimate.steady_epochs_timed == 4
    assert "first epoch + 99 x median of 4 steady epochs" in estimate.method


def test_estimate_error_grows_with_noise():
    quiet = timing.estimate_total([10, 2.0, 2.01, 1.99, 2.0], 100)
    noisy = timing.estimate_total([10, 2.0, 2.4, 1.6, 2.0], 100)
    assert noisy.error_seconds > quiet.error_seconds > 0


def test_quick_epoch_cap():
    assert timing.quick_epoch_cap(100) == 10
    assert timing.quick_epoch_cap(3) == 3
    assert timing.quick_epoch_cap(20) == 4


def test_steady_stats_exclude_the_first_epoch():
    stats = timing.steady_stats([30.0, 2.0, 4.0, 3.0])
    assert stats.count == 3 and stats.median == 3.0 and stats.min == 2.0 and stats.max == 4.0
    assert timing.steady_stats([30.0]) is None


def test_the_quick_error_covers_the_drift_of_the_recorded_full_runs():
    """The stated error of a --quick estimate from the first k epochs of each recorded full run covers the full
    run's real total (the drift that early epochs cannot see is part of the stated error)."""
    import yaml

    from helpers import SHIPPED

    data = yaml.safe_load((SHIPPED / "amd-epyc-2-vcpu-cloud-vm.yaml").read_text())
    for result in data["results"]:
        epochs = result["epoch_seconds"]
        for k in range(3, 11):
            estimate = timing.estimate_total(epochs[: k + 1], len(epochs))
            assert abs(estimate.total_seconds - result["total_seconds"]) <= estimate.error_seconds, (k, estimate)


def test_the_drift_allowance_shrinks_with_more_epochs_but_never_vanishes():
    assert timing.drift_allowance(3) > timing.drift_allowance(9) > timing.drift_allowance(1000) > timing.DRIFT_FLOOR
    estimate = timing.estimate_total([5.0] + [1.0] * 9, 100)
    assert estimate.error_seconds == pytest.approx(99 * 1.0 * timing.drift_allowance(9))  # no spread: drift alone
    assert "drift a short run cannot see" in estimate.method
