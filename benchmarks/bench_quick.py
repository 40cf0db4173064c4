"""Time to a profile, honestly: `measure --quick` against full runs of the same workload, side by side.

For each workload size, runs `measure --quick` and then the full run (both --dry-run --json, float32),
and reports the quick estimate, its stated 95 % error, the real error against the full total, whether
the real error lies within the stated one, and the quick run's training time as a share of the full
run's. Smaller workloads than the post's keep the pairs affordable; the rule is the same.

Usage: python benchmarks/bench_quick.py [UNITS:EPOCHS ...]   (default 200:60 300:60 400:40 600:30)
"""

import sys

from _measure import measure_result

pairs = [tuple(int(v) for v in arg.split(":")) for arg in sys.argv[1:]] or [(200, 60), (300, 60), (400, 40), (600, 30)]

print(
    f"{'workload':>16}  {'quick estimate':>15}  {'stated error':>12}  {'full total':>10}  {'real error':>10}  "
    f"{'within':>6}  {'quick/full time':>15}  machine"
)


def _busy(*results: dict) -> str:
    """What measure's own check saw: other processes using the CPU during a run disturb its times."""
    busy = [w for r in results for w in r.get("warnings", []) if w.startswith("other processes")]
    return "busy: " + busy[0].split(" (")[0] if busy else "quiet"


inside = 0
for units, epochs in pairs:
    quick, _ = measure_result("float32", epochs, "--units", str(units), "--quick")
    full, _ = measure_result("float32", epochs, "--units", str(units))
    stated = quick["estimate"]["error_seconds"]
    real = quick["total_seconds"] - full["total_seconds"]
    within = abs(real) <= stated
    inside += within
    share = sum(quick["epoch_seconds"]) / sum(full["epoch_seconds"])
    print(
        f"{f'LSTM({units}) x {epochs}':>16}  {quick['total_seconds']:>13.1f} s  "
        f"{100 * stated / full['total_seconds']:>10.1f} %  {full['total_seconds']:>8.1f} s  "
        f"{100 * real / full['total_seconds']:>+8.2f} %  {'yes' if within else 'NO':>6}  {100 * share:>13.1f} %  "
        + _busy(quick, full),
        flush=True,
    )
print(f"{inside} of {len(pairs)} real errors within the stated error: {'PASS' if inside == len(pairs) else 'FAIL'}")
