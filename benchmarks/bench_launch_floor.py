"""A small, launch-bound step (issue 35, item 6): a tiny CNN tracked with advisor.track.torch on this machine's CPU
(its loader sleeping a little, as a real input pipeline would), then estimated on a few GPUs of the catalog with its
counted operations (the launch floor) and without them (the FLOPs alone, as before the floor), side by side.

    python benchmarks/bench_launch_floor.py

Not a test: it prints the tracked step and a table of estimates (seconds, low..high, bound).
"""

from __future__ import annotations

import copy
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402
import torch  # noqa: E402

import advisor.track  # noqa: E402
from advisor import store  # noqa: E402
from advisor.decision import analysis  # noqa: E402
from advisor.perf import estimates  # noqa: E402
from advisor.store import catalog, results  # noqa: E402

GPUS = ("rtx-4060-ti", "rtx-4090", "h100-sxm", "b300")
STEPS_PER_EPOCH, EPOCHS, BATCH = 100, 20, 32


def tiny_cnn() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(32 * 7 * 7, 10),
    )


def track(folder: Path) -> Path:
    model = tiny_cnn()
    optimizer = torch.optim.Adam(model.parameters(), 1e-3)
    items = [(torch.randn(BATCH, 1, 28, 28), torch.randint(0, 10, (BATCH,))) for _ in range(STEPS_PER_EPOCH)]

    def loader():
        for item in items:
            time.sleep(0.002)  # decoding a batch
            yield item

    with advisor.track.torch(
        model,
        optimizer,
        name="tiny cnn",
        workload="tiny CNN (tracked)",
        out=folder,
        epochs=EPOCHS,
        steps_per_epoch=STEPS_PER_EPOCH,
    ) as run:
        for x, y in run.batches(loader()):
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
            optimizer.zero_grad()
            run.step()
    assert run.path is not None
    return run.path


def main() -> None:
    folder = Path(tempfile.mkdtemp())
    path = track(folder)
    profile, problems = store.load_profile(path)
    assert not problems, problems
    shipped = results.results_frame(store.load_profiles(ROOT / "profiles").profiles)
    gpus = catalog.load_catalog()
    data = profile.data
    result = data["results"][0]
    print(
        f"tracked: {result['step']['median'] * 1e3:.1f} ms a step, {result['data_wait']['share']:.0%} waiting for "
        f"data, {data['workload']['operations_per_step']} operations a step, {data['workload']['steps']} steps: "
        f"{result['total_seconds']:.1f} s on this CPU"
    )
    without = copy.deepcopy(data)
    del without["workload"]["operations_per_step"]
    print(f"\n{'GPU':14s} {'precision':15s} {'with the launch floor':>32s}   {'FLOPs alone (before)':>32s}")
    frame = pd.concat([shipped, results.results_frame([profile])], ignore_index=True)
    key = analysis.find_workload(frame, data["workload"]["name"])
    tables = {}
    for label, spec in (("with", data), ("without", without)):
        request = estimates.EstimateRequest(key, spec=spec["workload"], gpu_ids=GPUS)
        tables[label] = estimates.estimate_catalog(frame, gpus, request).rows.set_index(["catalog_id", "precision"])
    for gpu, precision in tables["with"].index:
        cells = []
        for label in ("with", "without"):
            row = tables[label].loc[(gpu, precision)]
            cells.append(f"{row['seconds']:7.2f} s ({row['low']:.2f}-{row['high']:.2f}) {row['bound']:>10s}")
        print(f"{gpu:14s} {precision:15s} {cells[0]:>32s}   {cells[1]:>32s}")


if __name__ == "__main__":
    main()
