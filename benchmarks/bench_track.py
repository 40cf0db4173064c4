"""advisor.track's own cost: the same PyTorch loop tracked and untracked, interleaved in one run.

Target (issue: your real training job, in place): the tracker's cost under 2 % of a step on the tested loops, and
nothing when disabled. Each round runs the loop untracked, tracked, and tracked with ``enabled=False``, in a rotating
order (so drift and the machine's noise fall on all three alike); the ratio of each round's tracked to untracked
median step is the cost, reported as the median of the rounds with its spread, in wall time and in the process's
CPU time (torch runs on one thread here). The counted step (FLOPs and saved tensors) is excluded from the tracked
loop's timing as the tracker excludes it from the profile, so what is measured is what the tracker adds to every
other step: three clock reads, the batch's size and the bookkeeping. ``own_cost`` measures that work alone, on a
near-empty step.

Usage: python benchmarks/bench_track.py [ROUNDS] [STEPS]   (defaults 21 and 100)
"""

from __future__ import annotations

import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import advisor.track  # noqa: E402

LOOPS = {
    # (widths of a Linear stack, batch): a small step (about 1 ms, where a fixed cost shows most) and a larger one
    "small MLP (16-256-256-10, batch 64)": ((16, 256, 256, 10), 64),
    "larger MLP (256-1024-1024-1024-10, batch 128)": ((256, 1024, 1024, 1024, 10), 128),
}


def make(widths: tuple[int, ...], batch: int, steps: int):
    torch.manual_seed(0)
    layers: list = []
    for a, b in itertools.pairwise(widths):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1])
    optimizer = torch.optim.SGD(model.parameters(), 0.01)
    data = [(torch.randn(batch, widths[0]), torch.randint(0, widths[-1], (batch,))) for _ in range(steps)]
    return model, optimizer, data


def step(model, optimizer, x, y) -> None:
    torch.nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
    optimizer.zero_grad()


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def untracked(model, optimizer, data, clock) -> list[float]:
    times = []
    for x, y in data:
        start = clock()
        step(model, optimizer, x, y)
        times.append(clock() - start)
    return times


def tracked(model, optimizer, data, folder: str, clock, enabled: bool = True) -> list[float]:
    """Each step's wall time as the loop sees it, the tracker's work included (the counted step left out)."""
    times = []
    with advisor.track.torch(
        model, optimizer, out=folder, enabled=enabled, quiet=True, overwrite=True, name="bench"
    ) as run:
        iterator = iter(run.batches(data))
        for number in range(len(data)):
            start = clock()
            x, y = next(iterator)
            step(model, optimizer, x, y)
            run.step()
            if number != run.options.warmup_steps:  # the counted step: timed apart by the tracker too
                times.append(clock() - start)
    return times


def own_cost(rounds: int, steps: int = 2000) -> float:
    """The tracker's own work per step in seconds: a near-empty step (a 4 x 4 Linear on 2 samples) tracked and not,
    interleaved; the median over the rounds of the difference of the mean steps."""
    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.SGD(model.parameters(), 0.1)
    data = [(torch.randn(2, 4), None)] * steps
    differences = []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(rounds):
            start = time.perf_counter()
            for x, _ in data:
                model(x)
            plain = (time.perf_counter() - start) / steps
            with advisor.track.torch(model, optimizer, out=folder, quiet=True, overwrite=True, name="own") as run:
                start = time.perf_counter()
                for x, _ in run.batches(data):
                    model(x)
                    run.step()
                differences.append((time.perf_counter() - start) / steps - plain)
    return statistics.median(differences)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 21
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    torch.set_num_threads(1)  # one core: the other runs nothing of ours, and the steps are steadier
    cost = own_cost(rounds)
    print(
        f"the tracker's own work: {1e6 * cost:.1f} us a step (a near-empty step tracked and not, median of "
        f"{rounds} interleaved rounds of 2,000 steps)"
    )
    with tempfile.TemporaryDirectory() as folder:
        for label, (widths, batch) in LOOPS.items():
            for clock_name, clock in CLOCKS.items():
                ratios, disabled, medians = [], [], []
                for number in range(rounds):
                    order = ["plain", "tracked", "disabled"]
                    order = order[number % 3 :] + order[: number % 3]
                    result = {}
                    for kind in order:
                        model, optimizer, data = make(widths, batch, steps)
                        times = (
                            untracked(model, optimizer, data, clock)
                            if kind == "plain"
                            else tracked(model, optimizer, data, folder, clock, enabled=kind == "tracked")
                        )
                        result[kind] = statistics.median(times[10:])  # past the warm-up
                    ratios.append(result["tracked"] / result["plain"])
                    disabled.append(result["disabled"] / result["plain"])
                    medians.append(result["plain"])
                cost = statistics.median(ratios) - 1
                print(
                    f"{label}, {clock_name} time: untracked step {1000 * statistics.median(medians):.3f} ms (median "
                    f"of {rounds} rounds); tracked / untracked {statistics.median(ratios):.4f} (rounds "
                    f"{min(ratios):.4f}-{max(ratios):.4f}): cost {100 * cost:+.2f}% (target under 2%: "
                    f"{'PASS' if cost < 0.02 else 'FAIL'}); disabled / untracked {statistics.median(disabled):.4f} "
                    f"({min(disabled):.4f}-{max(disabled):.4f})"
                )


if __name__ == "__main__":
    main()
