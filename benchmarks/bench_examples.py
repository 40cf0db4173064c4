"""The three example models on this CPU: measured time per epoch against the model's estimate for this CPU,
leave-one-out (the estimate of an example never sees that example's run).

Writes the examples, measures each (float32 and mixed_bfloat16) into a copy of the shipped profiles, then
calibrates the CPU model on every CPU result but that example's (the shipped LSTM runs of this machine and
the other two examples) and predicts it.

Usage: python benchmarks/bench_examples.py [SAMPLES] [EPOCHS]   (default 2048 samples, 6 epochs)
"""

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor import store  # noqa: E402
from advisor.perf import estimates  # noqa: E402
from advisor.store import results  # noqa: E402

samples = sys.argv[1] if len(sys.argv) > 1 else "2048"
epochs = sys.argv[2] if len(sys.argv) > 2 else "6"
names = ["small-cnn", "gru-text", "transformer-block"]


def advisor(*argv: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "advisor", *argv], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


with tempfile.TemporaryDirectory() as tmp:
    folder = Path(tmp) / "profiles"
    shutil.copytree(ROOT / "profiles", folder, ignore=shutil.ignore_patterns("catalog"))
    advisor("examples", "--out", str(Path(tmp) / "models"))
    for name in names:
        out = advisor(
            "measure",
            "--model",
            str(Path(tmp) / "models" / f"{name}.keras"),
            "--samples",
            samples,
            "--batch-size",
            "64",
            "--epochs",
            epochs,
            "--out",
            str(folder),
            "--name",
            f"bench {name}",
            "--json",
        )
        print(
            f"measured {name}: "
            + ", ".join(
                f"{r['precision']} {r['steady']['median']:.3f} s/epoch" for r in json.loads(out)["profile"]["results"]
            ),
            flush=True,
        )
    frame = results.results_frame(store.load_profiles(folder).profiles)
    print(
        f"\n{'model':>18}  {'precision':>15}  {'measured':>10}  {'estimate (LOO)':>14}  {'likely range':>17}  "
        f"{'error':>6}  {'in range':>8}"
    )
    for name in names:
        rows = frame[frame["profile"] == f"bench-{name}"]
        key, spec = rows["workload"].iloc[0], rows["workload_spec"].iloc[0]
        found = {e.precision: e for e in estimates.estimate_machines(frame, key, spec, leave_out=(key,))}
        for _, row in rows.iterrows():
            estimate = found[row["precision"]]
            n = int(spec["epochs"])
            measured, guess = row["seconds"] / n, estimate.seconds / n
            inside = estimate.low <= row["seconds"] <= estimate.high
            print(
                f"{name:>18}  {row['precision']:>15}  {measured:>8.3f} s  {guess:>12.3f} s  "
                f"{estimate.low / n:>7.3f}-{estimate.high / n:<7.3f}s  {guess / measured:>5.2f}x  "
                f"{'yes' if inside else 'no':>8}"
            )
