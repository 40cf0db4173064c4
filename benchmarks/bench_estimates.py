"""The performance model: time to estimate the whole catalog for one workload, and the width of its ranges.

Targets (issue: estimates that stand on published results): the whole catalog estimated for one workload in under
0.2 s with the larger calibration set (the fit cached on the results it rests on); the range widths printed per
GPU. The model's accuracy is `python -m advisor crossval` (see benchmarks/README.md).

Usage: python benchmarks/bench_estimates.py [--before DIR]   (DIR: a checkout of the code before, run side by side)
"""

import argparse
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor import store  # noqa: E402
from advisor.decision import analysis  # noqa: E402
from advisor.format.schema import DEFAULT_WORKLOAD, workload_key  # noqa: E402
from advisor.perf import calibration, estimates  # noqa: E402
from advisor.store import catalog, results  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--before", metavar="DIR", help="a checkout of the code before: its own benchmark, run here too")
args = parser.parse_args()

gpus = catalog.load_catalog()
frame = results.results_frame(store.load_profiles(ROOT / "profiles").profiles)
workloads = {
    "the post's LSTM": workload_key(DEFAULT_WORKLOAD),
    "BERT-large (published)": analysis.find_workload(frame, "BERT-large"),
}

for label, key in workloads.items():
    cold, warm = [], []
    for _ in range(7):
        calibration._fit_cached.cache_clear()
        start = time.perf_counter()
        found = estimates.estimate_catalog(frame, gpus, key)
        cold.append(time.perf_counter() - start)
        start = time.perf_counter()
        estimates.estimate_catalog(frame, gpus, key)
        warm.append(time.perf_counter() - start)
    rows = found.rows
    factors = (rows["high"] / rows["low"]).sort_values()
    print(
        f"{label}: {len(rows)} estimates on {len(gpus.gpus)} GPUs, calibrated on {len(found.fit.samples)} results; "
        f"fit + estimates {1000 * statistics.median(cold):.0f} ms median, fit cached "
        f"{1000 * statistics.median(warm):.0f} ms (target under 200 ms: "
        f"{'PASS' if statistics.median(warm) < 0.2 else 'FAIL'})"
    )
    print(f"  range high/low: median {factors.median():.2f}, from {factors.iloc[0]:.2f} to {factors.iloc[-1]:.2f}")
    for _, row in rows.sort_values(["device", "precision"]).iterrows():
        situation = row["basis"].split("; ", 1)[1].split(": range")[0]
        print(
            f"    {row['device']:<30} {row['precision']:<14} {row['seconds']:>10.4g} s  "
            f"x{row['high'] / row['low']:.2f} ({math.exp(math.log(row['high'] / row['low']) / 2):.2f} either way)"
            f"  {situation}"
        )

if args.before:
    print(f"before ({args.before}):", flush=True)
    subprocess.run([sys.executable, str(Path(args.before) / "benchmarks" / "bench_estimates.py")], check=True)
