"""Peak training memory: the prediction (advisor/perf/memory.py) against runs measured here and the published batches.

1. Measures the post's LSTM and the three example models at several batch sizes, float32 and mixed, on this
   machine (`measure --dry-run --json`: the peak resident memory above the run's start on a CPU), fits the
   activation factor and the CPU overhead on them by least squares, and reports each prediction's error, the
   fitted values and each run's error when it is left out of the fit.
2. Checks the published per-GPU batch sizes (each did fit its GPU): fits the GPU activation factor as the largest
   at which 95 % of them fit, holds each workload out of that fit in turn, and reports the share predicted to fit
   and how full the prediction says each GPU was.

Usage: python benchmarks/bench_memory.py [--skip-measure]   (about 10 minutes on 2 cores)
"""

import itertools
import json
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor import store  # noqa: E402
from advisor.perf import memory  # noqa: E402
from advisor.store import results  # noqa: E402
from advisor.store.catalog import load_catalog  # noqa: E402

CACHE = ROOT / "benchmarks" / "memory_runs.json"  # the measured runs, kept so the fit can be re-run without them


def advisor(*argv: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "advisor", *argv], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


def measure() -> list[dict]:
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        advisor("examples", "--out", tmp)
        cases = [([], batch) for batch in (25, 100, 400)]
        cases += [
            (["--model", str(Path(tmp) / f"{name}.keras")], batch)
            for name in ("small-cnn", "gru-text", "transformer-block")
            for batch in (16, 64, 256)
        ]
        for (extra, batch), precision in itertools.product(cases, ("float32", "mixed")):
            # one precision a process: a second run in the same process reuses the first one's freed memory
            out = advisor(
                "measure",
                *extra,
                "--samples",
                str(max(2 * batch, 200)),
                "--batch-size",
                str(batch),
                "--epochs",
                "2",
                "--precision",
                precision,
                "--dry-run",
                "--json",
            )
            profile = json.loads(out)["profile"]
            for result in profile["results"]:
                if "memory" in result:
                    runs.append(
                        {
                            "workload": profile["workload"],
                            "precision": result["precision"],
                            "peak_gb": result["memory"]["peak_gb"],
                        }
                    )
            print(f"measured {profile['workload']['name']} batch {batch} {precision}", flush=True)
    CACHE.write_text(json.dumps(runs, indent=1))
    return runs


def fit(runs: list[dict]) -> tuple[float, float]:
    """Activation factor and CPU overhead by least squares on the measured peaks (static part known)."""
    rows, target = [], []
    for run in runs:
        base = memory.predict(run["workload"], run["precision"], "cpu", activation_factor=1.0, overhead_gb=0.0)
        assert base is not None
        rows.append([base.activation_gb, 1.0])
        target.append(run["peak_gb"] - base.static_gb)
    (factor, overhead), *_ = np.linalg.lstsq(np.array(rows), np.array(target), rcond=None)
    return float(factor), float(overhead)


NOISE_GB = 0.02  # below this a CPU's resident-memory peak is the allocator's noise, not the model's
measured = json.loads(CACHE.read_text()) if "--skip-measure" in sys.argv and CACHE.exists() else measure()
runs = [run for run in measured if run["peak_gb"] >= NOISE_GB]
print(f"{len(measured) - len(runs)} of {len(measured)} runs under {NOISE_GB} GB left out (noise)")
factor, overhead = fit(runs)
print(
    f"\nfitted on {len(runs)} measured runs: CPU activation factor {factor:.2f}, CPU overhead {overhead:.3f} GB "
    f"(in advisor/perf/memory.py: {memory.ACTIVATION_FACTOR['cpu']}, {memory.OVERHEAD_GB['cpu']})"
)
print(f"{'workload':<26} {'precision':<15} {'batch':>5} {'measured':>9} {'predicted':>9} {'error':>7} {'left out':>8}")
errors, held = [], []
for index, run in enumerate(runs):
    predicted = memory.predict(run["workload"], run["precision"], "cpu").total_gb
    rest_factor, rest_overhead = fit(runs[:index] + runs[index + 1 :])
    left_out = memory.predict(
        run["workload"], run["precision"], "cpu", activation_factor=rest_factor, overhead_gb=rest_overhead
    ).total_gb
    error, held_error = predicted / run["peak_gb"], left_out / run["peak_gb"]
    errors.append(abs(math.log(error)))
    held.append(abs(math.log(held_error)))
    print(
        f"{run['workload']['name'][:26]:<26} {run['precision']:<15} {run['workload']['batch_size']:>5} "
        f"{run['peak_gb']:>8.3f}G {predicted:>8.3f}G {error:>6.2f}x {held_error:>7.2f}x"
    )
print(
    f"error (shipped constants): median {math.exp(statistics.median(errors)):.2f}x, worst "
    f"{math.exp(max(errors)):.2f}x; left out of the fit: median {math.exp(statistics.median(held)):.2f}x, worst "
    f"{math.exp(max(held)):.2f}x"
)

catalog = load_catalog()
frame = results.results_frame(store.load_profiles(ROOT / "profiles").profiles)
published = frame[(frame["source"] == "quoted") & frame["workload_spec"].map(lambda s: s.get("kind") == "published")]
cases = []
for row in published.to_dict("records"):
    gpu = catalog.match(str(row["device_name"]))
    described = memory.predict(row["workload_spec"], row["precision"], "gpu") is not None  # a language-model job:
    # its memory is advisor.llm.job_memory's (python -m advisor.llm.validation checks it on published peaks)
    if gpu is not None and gpu.value("memory_gb") is not None and described:
        batch = int(row["batch_size"]) if row["batch_size"] == row["batch_size"] else None
        cases.append((row["workload_name"], row["workload_spec"], row["precision"], batch, gpu.value("memory_gb")))


def use(case: tuple, factor: float | None = None) -> float:
    """The predicted share of the GPU's usable memory the published batch takes."""
    _, spec, precision, batch, capacity = case
    return memory.predict(spec, precision, "gpu", batch=batch, activation_factor=factor).total_gb / (
        memory.card_gb(capacity) * memory.USABLE
    )


def share_fitting(subset: list, factor: float | None = None) -> float:
    return sum(use(c, factor) <= 1 for c in subset) / len(subset)


def largest_factor(subset: list, target: float = 0.95) -> float:
    low, high = 0.01, 8.0
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (middle, high) if share_fitting(subset, middle) >= target else (low, middle)
    return low


print(f"\npublished batches (each fit its GPU): {len(cases)} results of {len({c[0] for c in cases})} workloads")
print(
    f"GPU activation factor, the largest at which 95 % of them fit: {largest_factor(cases):.2f} "
    f"(in advisor/perf/memory.py: {memory.ACTIVATION_FACTOR['gpu']})"
)
ratios = [use(c) for c in cases]
print(
    f"with it: {share_fitting(cases):.1%} predicted to fit; predicted use of the GPU's memory: median "
    f"{statistics.median(ratios):.0%}, 10th percentile {np.quantile(ratios, 0.1):.0%}, worst {max(ratios):.0%}"
)
print("each workload held out of the factor's fit:")
for name in sorted({c[0] for c in cases}):
    own, rest = [c for c in cases if c[0] == name], [c for c in cases if c[0] != name]
    factor = largest_factor(rest)
    print(
        f"  {name:<40} factor {factor:.2f}: {share_fitting(own, factor):.0%} of its {len(own)} results fit, "
        f"median use {statistics.median(use(c, factor) for c in own):.0%}"
    )
