"""A language-model job on the whole catalog: the time to answer (``estimate --model-config``, the app's "What are
you training?"), side by side with the post's LSTM on the same catalog in the same run.

Target (issue 23: still fast): the whole catalog estimated in under 0.2 s, the calibration's fit cached (it is, on
the results it rests on: the app and a CLI call fit once). Printed: the medians of 7 runs, cold (the fit made) and
warm, and their ratio to the LSTM's estimate in this run (hosts differ: compare within one run).

Usage: python benchmarks/bench_llm.py
"""

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor import store  # noqa: E402
from advisor.format.schema import DEFAULT_WORKLOAD, workload_key  # noqa: E402
from advisor.llm import advice  # noqa: E402
from advisor.llm import job_memory as memory  # noqa: E402
from advisor.llm.config import load_presets  # noqa: E402
from advisor.llm.job import job_from_options  # noqa: E402
from advisor.perf import calibration, estimates  # noqa: E402
from advisor.store import catalog, results  # noqa: E402

gpus = catalog.load_catalog()
frame = results.results_frame(store.load_profiles(ROOT / "profiles").profiles)
job = job_from_options(load_presets()["llama-3.1-8b"], "lora", 2048, 1, tokens=10_000 * 2048)


def timed(call) -> tuple[float, float]:
    cold, warm = [], []
    for _ in range(7):
        calibration._fit_cached.cache_clear()
        start = time.perf_counter()
        call()
        cold.append(time.perf_counter() - start)
        start = time.perf_counter()
        call()
        warm.append(time.perf_counter() - start)
    return statistics.median(cold), statistics.median(warm)


lstm = timed(lambda: estimates.estimate_catalog(frame, gpus, workload_key(DEFAULT_WORKLOAD)))
llm = timed(lambda: advice.advise(frame, gpus, job))
found = advice.advise(frame, gpus, job)
print(f"{len(gpus.gpus)} GPUs, {len(frame)} results")
print(f"the post's LSTM, estimate_catalog: cold {1000 * lstm[0]:.0f} ms, warm {1000 * lstm[1]:.0f} ms")
print(
    f"Llama 3.1 8B LoRA, advise ({len(found.options)} options, both checkpointing plans): cold "
    f"{1000 * llm[0]:.0f} ms, warm {1000 * llm[1]:.0f} ms ({llm[1] / lstm[1]:.2f}x the LSTM's warm); target under "
    f"200 ms warm: {'PASS' if llm[1] < 0.2 else 'FAIL'}"
)
start = time.perf_counter()
for _ in range(100):
    for model in load_presets().values():
        memory.predict(job_from_options(model, "qlora", 4096, 2))
per = (time.perf_counter() - start) / (100 * len(load_presets()))
print(f"memory.predict: {1e6 * per:.1f} us a job")
