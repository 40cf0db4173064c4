"""Several machines on this one: the custom step against `fit`, and two localhost workers against one device.

1. The custom training step (what `measure --workers` times, on the chief alone and across workers) against
   Keras's `fit` (what `measure` times on one machine), one device, the same model, data and pipeline, alternated
   in one process for ROUNDS rounds: the steady epoch medians' ratio (target: within 5 %).
2. `measure --workers` with two workers on localhost ports, then a plain `measure` of the same workload: the
   two-worker run's scaling efficiency (speedup over the chief's one device / 2) and the overhead of the chief's
   one-device timing (the custom step, in a process that serves the cluster) against the plain run's `fit`.
   Two workers on one machine share its cores: the efficiency measures the machinery, not a second machine.

Usage: python benchmarks/bench_multiworker.py [UNITS] [EPOCHS] [ROUNDS]   (default 256 units, 6 epochs, 2 rounds)
"""

import json
import os
import socket
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

units = sys.argv[1] if len(sys.argv) > 1 else "256"
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 6
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
WORKLOAD = [
    "--units",
    units,
    "--epochs",
    str(epochs),
    "--precision",
    "float32",
    "--device",
    "cpu",
    "--matmul-size",
    "256",
]
ENV = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "KERAS_BACKEND", "TF_CPP_MIN_LOG_LEVEL")}


def steady(times: list[float]) -> float:
    return statistics.median(times[1:])


def custom_against_fit() -> None:
    from advisor.measure import backends
    from advisor.measure.backends import tf_multiworker
    from advisor.measure.signals import InterruptGuard
    from advisor.measure.train import lstm_job, train_once
    from advisor.perf.workload import Workload

    backend = backends.load("tensorflow")
    backend.start("cpu", 1)
    device = backend.resolve_device("cpu", {}, 1)
    workload = Workload(**{**Workload().as_dict(), "units": int(units), "epochs": epochs})
    job, guard = lstm_job(workload), InterruptGuard()
    times: dict[str, list[float]] = {"fit": [], "custom step": []}
    for round_ in range(rounds):
        fit = train_once(backend, job, "float32", device, 0, False, lambda _: None, guard)
        custom = tf_multiworker.train_steps(backend.tf, job, "float32", device, 0, lambda _: None, guard, "custom")
        times["fit"].append(steady(fit.epoch_seconds))
        times["custom step"].append(steady(custom.epoch_seconds))
        print(
            f"round {round_ + 1}: fit {times['fit'][-1]:.3f} s, custom step {times['custom step'][-1]:.3f} s "
            "(steady epoch medians)",
            flush=True,
        )
    ratio = statistics.median(times["custom step"]) / statistics.median(times["fit"])
    print(
        f"custom step / fit, one device, LSTM({units}): {ratio:.3f} (target within 5 %: "
        f"{'met' if abs(ratio - 1) <= 0.05 else 'missed'})\n"
    )


def two_workers() -> None:
    ports = []
    for _ in range(2):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            ports.append(probe.getsockname()[1])
    addresses = ",".join(f"localhost:{port}" for port in ports)
    command = [sys.executable, "-m", "advisor", "measure", *WORKLOAD, "--dry-run", "--json", "--workers", addresses]
    workers = [
        subprocess.Popen(
            [*command, "--worker-index", str(i)],
            cwd=ROOT,
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for i in (0, 1)
    ]
    outs = [worker.communicate()[0] for worker in workers]  # the chief's first
    out = outs[0]
    result = json.loads(out)["profile"]["results"][0]
    plain = subprocess.run(
        [sys.executable, "-m", "advisor", "measure", *WORKLOAD, "--dry-run", "--json"],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    alone = json.loads(plain)["profile"]["results"][0]
    scaling = result["scaling"]
    print(
        f"two localhost workers, LSTM({units}), {epochs} epochs: total {result['total_seconds']:.2f} s, the chief's "
        f"one device {scaling['single_device_seconds']:.2f} s: speedup {scaling['speedup']:.3f}, efficiency "
        f"{scaling['efficiency']:.3f}"
    )
    print(
        f"the chief's one-device timing {scaling['single_device_seconds']:.2f} s against a plain measure (fit) "
        f"{alone['total_seconds']:.2f} s: {scaling['single_device_seconds'] / alone['total_seconds']:.3f}"
    )


if __name__ == "__main__":
    print(f"host: {os.cpu_count()} logical CPUs\n", flush=True)
    two_workers()  # first: its processes must not share the machine with this one's TensorFlow threads
    custom_against_fit()
