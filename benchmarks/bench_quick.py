"""Time to a profile: `measure --quick` against a full run of the same precision, in one go.

Reports the quick estimate's error against the full total (target: within 5 %) and the quick run's
training wall time as a share of the full run's (target: at most 10 %).

Usage: python benchmarks/bench_quick.py [PRECISION] [EPOCHS]   (default float32, 100 epochs: ~30 min here)
"""

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
precision = sys.argv[1] if len(sys.argv) > 1 else "float32"
epochs = sys.argv[2] if len(sys.argv) > 2 else "100"


def run(*extra: str) -> tuple[dict, float]:
    start = time.perf_counter()
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "advisor",
            "measure",
            "--precision",
            precision,
            "--epochs",
            epochs,
            "--dry-run",
            "--json",
            "--matmul-size",
            "256",
            *extra,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out)["profile"]["results"][0], time.perf_counter() - start


quick, quick_wall = run("--quick")
full, full_wall = run()
quick_training = sum(quick["epoch_seconds"])
full_training = sum(full["epoch_seconds"])
error = quick["total_seconds"] / full["total_seconds"] - 1
share = quick_training / full_training
print(
    f"quick: {quick['epochs_run']} epochs, estimate {quick['total_seconds']:.1f} s "
    f"± {quick['estimate']['error_seconds']:.1f} (95%), training {quick_training:.1f} s, process {quick_wall:.1f} s"
)
print(f"full:  {len(full['epoch_seconds'])} epochs, total {full['total_seconds']:.1f} s, process {full_wall:.1f} s")
print(
    f"estimate error {100 * error:+.2f}% (target within 5%: {'PASS' if abs(error) <= 0.05 else 'FAIL'}); "
    f"quick/full training time {100 * share:.1f}% (target at most 10%: {'PASS' if share <= 0.10 else 'FAIL'}); "
    f"quick/full process time {100 * quick_wall / full_wall:.1f}%"
)
