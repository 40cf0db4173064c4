"""The post's workload on each Keras backend on this machine, side by side: steady epoch, float32 and mixed.

Each backend runs `measure --backend B --epochs N --dry-run --json` in its own process (a backend is
chosen once per process), float32 and mixed (mixed_bfloat16 on a CPU), and the steady median of
epochs 2..N is compared with TensorFlow's. Rounds alternate the backends to spread the machine's
noise over all of them.

Usage: python benchmarks/bench_backends.py [EPOCHS] [ROUNDS]   (default 3 epochs, 1 round)
"""

import importlib.util
import statistics
import sys

from _measure import measure_result

epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1
backends = [b for b in ("tensorflow", "jax", "torch") if importlib.util.find_spec(b)]
steady: dict[tuple[str, str], list[float]] = {}
for _ in range(rounds):
    for backend in backends:
        for precision in ("float32", "mixed"):
            result, wall = measure_result(precision, epochs, "--backend", backend)
            steady.setdefault((backend, result["precision"]), []).extend(result["epoch_seconds"][1:])
            print(
                f"{backend:>10} {result['precision']:>15}: epochs {result['epoch_seconds']} (process {wall:.0f} s)",
                flush=True,
            )
print(f"\n{'backend':>10}  {'precision':>15}  {'steady median':>13}  {'vs TensorFlow':>13}")
for (backend, precision), times in sorted(steady.items()):
    base = steady.get(("tensorflow", precision))
    ratio = statistics.median(times) / statistics.median(base) if base else float("nan")
    print(f"{backend:>10}  {precision:>15}  {statistics.median(times):>11.2f} s  {ratio:>12.2f}x")
