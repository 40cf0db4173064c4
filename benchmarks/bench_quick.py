"""Time to a profile: `measure --quick` against a full run of the same precision, in one go.

Reports the quick estimate's error against the full total (target: within 5 %) and the quick run's
training wall time as a share of the full run's (target: at most 10 %).

Usage: python benchmarks/bench_quick.py [PRECISION] [EPOCHS]   (default float32, 100 epochs: ~30 min here)
"""

import sys

from _measure import measure_result

precision = sys.argv[1] if len(sys.argv) > 1 else "float32"
epochs = sys.argv[2] if len(sys.argv) > 2 else "100"


def run(*extra: str) -> tuple[dict, float]:
    return measure_result(precision, epochs, *extra)


quick, quick_wall = run("--quick")
full, full_wall = run()
quick_training = sum(quick["epoch_seconds"])
full_training = sum(full["epoch_seconds"])
error = quick["total_seconds"] / full["total_seconds"] - 1
share = quick_training / full_training
print(
    f"quick: {len(quick['epoch_seconds'])} epochs, estimate {quick['total_seconds']:.1f} s "
    f"± {quick.get('estimate', {}).get('error_seconds', 0.0):.1f} (95%), "
    f"training {quick_training:.1f} s, process {quick_wall:.1f} s"
)
print(f"full:  {len(full['epoch_seconds'])} epochs, total {full['total_seconds']:.1f} s, process {full_wall:.1f} s")
print(
    f"estimate error {100 * error:+.2f}% (target within 5%: {'PASS' if abs(error) <= 0.05 else 'FAIL'}); "
    f"quick/full training time {100 * share:.1f}% (target at most 10%: {'PASS' if share <= 0.10 else 'FAIL'}); "
    f"quick/full process time {100 * quick_wall / full_wall:.1f}%"
)
