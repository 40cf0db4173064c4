"""Fidelity: the steady epoch time of `advisor measure` against the independent plain Keras script.

Runs the two interleaved (A B A B ...), each in a fresh process, on the same machine in one go, and
reports the ratio of their steady-state medians. Target: within 2 %.

Usage: python benchmarks/bench_fidelity.py [ROUNDS] [EPOCHS]   (default 3 rounds of 6 epochs)
"""

import json
import statistics
import subprocess
import sys
from pathlib import Path

from _measure import measure_result

ROOT = Path(__file__).resolve().parent.parent
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 6


def advisor_epochs() -> list[float]:
    return measure_result("float32", epochs)[0]["epoch_seconds"]


def plain_epochs() -> list[float]:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "plain_keras.py"), str(epochs)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])["epoch_seconds"]


advisor_steady, plain_steady = [], []
for index in range(rounds):
    a, p = advisor_epochs(), plain_epochs()
    advisor_steady += a[1:]
    plain_steady += p[1:]
    print(
        f"round {index + 1}: advisor median {statistics.median(a[1:]):.3f} s, "
        f"plain Keras median {statistics.median(p[1:]):.3f} s",
        flush=True,
    )

a_med, p_med = statistics.median(advisor_steady), statistics.median(plain_steady)
ratio = a_med / p_med
print(f"steady median over {len(advisor_steady)} epochs each: advisor {a_med:.3f} s, plain Keras {p_med:.3f} s")
print(
    f"ratio advisor / plain = {ratio:.4f} ({100 * (ratio - 1):+.2f}%); target within 2%: "
    f"{'PASS' if abs(ratio - 1) <= 0.02 else 'FAIL'}"
)
