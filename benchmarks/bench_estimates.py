"""The performance model: its leave-one-out error on the shipped profiles, and the time to estimate the catalog.

Targets (issue: today's market): the whole catalog estimated in under 0.2 s, so the app stays fast;
the leave-one-out error reported per calibration result.

Usage: python benchmarks/bench_estimates.py
"""

import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor import analysis, catalog, estimates, perfmodel, store  # noqa: E402
from advisor.schema import DEFAULT_WORKLOAD, workload_key  # noqa: E402

key = workload_key(DEFAULT_WORKLOAD)
gpus = catalog.load_catalog()
frame = analysis.results_frame(store.load_profiles(ROOT / "profiles").profiles)
points = estimates.calibration_points(frame, gpus, key)
work = estimates.work_for(frame, key)

model = perfmodel.calibrate(points)
p = model.params
print(f"constants: eta_arith {p.eta_arith:.3f}, eta_mem {p.eta_mem:.3f}, per step {p.step_seconds * 1e6:.1f} us, "
      f"start-up {p.startup_seconds:.2f} s")  # fmt: skip
print(f"{'result':<34} {'observed':>9} {'fitted':>9} {'left out':>9} {'LOO error':>10}  bound")
for point, error in zip(model.points, model.loo_errors, strict=True):
    fitted, bound = perfmodel.predict(work, point.device, point.precision, p)
    print(f"{point.label + ' ' + point.precision:<34} {point.seconds:>8.1f}s {fitted:>8.1f}s "
          f"{point.seconds * math.exp(error):>8.1f}s {math.exp(error):>9.2f}x  {bound}")  # fmt: skip
print(f"worst leave-one-out error: {model.loo_factor():.2f}x; every estimate's range is at least "
      f"x/{math.exp(model.half_width):.2f}")  # fmt: skip

cold, warm = [], []
for _ in range(7):
    perfmodel._calibrate_cached.cache_clear()
    start = time.perf_counter()
    found = estimates.estimate_catalog(frame, gpus, key)
    cold.append(time.perf_counter() - start)
    start = time.perf_counter()
    estimates.estimate_catalog(frame, gpus, key)
    warm.append(time.perf_counter() - start)
rows = len(found.rows)
target = statistics.median(cold)
print(f"estimate the catalog ({len(gpus.gpus)} GPUs, {rows} estimates): calibration + leave-one-out + estimates "
      f"{1000 * target:.1f} ms median (target under 200 ms: {'PASS' if target < 0.2 else 'FAIL'}); "
      f"estimates alone, calibration cached: {1000 * statistics.median(warm):.1f} ms")  # fmt: skip
