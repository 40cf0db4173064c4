"""The recurrent family held out (issue 51): the post's LSTM left out of the calibration and its results predicted,
in the checkout the command runs from, so a worktree of an older commit gives that commit's figure.

    git worktree add /tmp/old 04ccd27 && cd /tmp/old && python /path/to/benchmarks/recurrent_held_out.py

It reads only what every commit since 04ccd27 has: the shipped profiles' calibration samples, ``calibration.fit`` and
``Fit.estimate``. Prints each result's measured and predicted seconds and the float32 pair's error.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))

from advisor.perf import calibration, estimates
from advisor.store.catalog import DEFAULT_CATALOG, load_catalog

try:  # where the loader lived before it moved to the store layer
    from advisor.decision.analysis import load_frame
except ImportError:
    from advisor.store.results import load_frame


def main() -> int:
    samples = estimates.calibration_samples(load_frame("profiles").frame, load_catalog(DEFAULT_CATALOG))
    lstm = [s for s in samples if "lstm" in s.workload.lower() or "lstm" in s.label.lower()]
    fit = calibration.fit(tuple(s for s in samples if s not in lstm))
    float32 = {}
    for s in lstm:
        predicted = fit.estimate(s.work, s.device, s.precision, s.workload)[0]
        print(f"{s.gpu} {s.precision}: measured {s.seconds:.1f} s, predicted {predicted:.1f} s")
        if s.precision == "float32":
            float32[s.gpu] = (s.seconds, predicted)
    (slow_m, slow_p), (fast_m, fast_p) = (float32[g] for g in sorted(float32))
    measured, predicted = slow_m / fast_m, slow_p / fast_p
    error = max(measured / predicted, predicted / measured)
    pair = " / ".join(sorted(float32))
    print(f"float32 pair {pair}: measured {measured:.2f}x, predicted {predicted:.2f}x, error {error:.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
