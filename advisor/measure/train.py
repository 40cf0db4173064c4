"""The model and its timed training: backend-neutral Keras 3, one run per precision."""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from advisor.errors import AdvisorError, InputError
from advisor.format.formatting import fmt_duration
from advisor.format.vocabulary import DeviceKind, DType, Precision
from advisor.measure import hardware, timing
from advisor.measure.backends import Backend, DeviceInfo
from advisor.measure.peak_memory import PeakMemory
from advisor.measure.signals import InterruptGuard
from advisor.perf.workload import Workload, make_dataset

OTHER_LOAD_WARNING = 0.05  # other processes' share of the machine's CPU time
EXPECTED_DTYPE = {precision.value: precision.dtype.value for precision in Precision}

Progress = Callable[[str], None]


def build_model(workload: Workload, policy: str):
    """The post's model: LSTM(units) -> Dense(1, sigmoid), the output kept in float32."""
    import keras

    keras.config.set_dtype_policy(policy)
    model = keras.Sequential(
        [
            keras.Input(shape=(workload.timesteps, workload.features)),
            keras.layers.LSTM(workload.units, return_sequences=False),
            keras.layers.Dense(1, activation="sigmoid", dtype=DType.FLOAT32.value),
        ]
    )
    model.compile(
        loss="binary_crossentropy",
        optimizer=keras.optimizers.Adam(learning_rate=workload.learning_rate),
        metrics=["accuracy"],
    )
    return model


@dataclass
class TrainingRun:
    precision: str
    epoch_seconds: list[float]
    final_loss: float | None
    final_accuracy: float | None
    checks: dict[str, Any]
    warnings: list[str]
    other_cpu_load: float | None
    power: dict[str, Any] | None = None
    estimate: timing.Estimate | None = None
    memory: dict[str, Any] | None = None

    @property
    def total_seconds(self) -> float:
        return self.estimate.total_seconds if self.estimate else math.fsum(self.epoch_seconds)


def _epoch_timer(epochs: int, label: str, quick: bool, progress: Progress, guard: InterruptGuard):
    import keras

    class EpochTimer(keras.callbacks.Callback):
        """Times each epoch's wall clock; under --quick stops once the median is known."""

        def __init__(self) -> None:
            super().__init__()
            self.times: list[float] = []
            self.logs: dict[str, float] = {}
            self._start = 0.0
            self._run_start = time.perf_counter()
            self.cap = timing.quick_epoch_cap(epochs) if quick else epochs

        def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
            self._start = time.perf_counter()

        def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
            if guard.requested is not None:  # Ctrl-C or SIGTERM: stop at this batch boundary
                self.model.stop_training = True

        def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
            # float() fetches the metrics to the host: every backend has finished the epoch's work here.
            values = {k: float(v) for k, v in (logs or {}).items()}
            self.times.append(time.perf_counter() - self._start)
            self.logs = values
            elapsed = time.perf_counter() - self._run_start
            done = len(self.times)
            progress(epoch_line(label, self.times, epochs, elapsed, done, self.cap, self.logs.get("loss")))
            if quick and (timing.quick_should_stop(self.times) or done >= self.cap):
                self.model.stop_training = True

    return EpochTimer()


def epoch_line(
    label: str, times: list[float], epochs: int, elapsed: float, done: int, cap: int, loss: float | None
) -> str:
    """The progress line after an epoch: its time, the elapsed time and what is left (from the steady median)."""
    steady = statistics.median(times[1:]) if done > 1 else times[-1]
    left = steady * (cap - done)
    return (
        f"{label}: epoch {done}/{epochs}  {times[-1]:.2f} s  elapsed {fmt_duration(elapsed)}  "
        f"left ~{fmt_duration(left)}" + (f"  loss {loss:.4f}" if loss is not None else "")
    )


@dataclass(frozen=True)
class Job:
    """What to train and how to check it: the post's LSTM (``lstm_job``) or a model from a file."""

    epochs: int
    batch_size: int
    steps_per_epoch: int
    build: Callable[[str], Any]  # dtype policy -> a compiled Keras model
    data: Callable[[int], tuple[Any, Any]]  # seed -> (x, y)
    checks: Callable[[Any], dict[str, Any]]  # model -> what the run's checks saw; "compute_dtype" is checked


def lstm_job(workload: Workload) -> Job:
    def checks(model) -> dict[str, Any]:
        lstm = model.layers[0]
        return {
            "lstm_compute_dtype": str(lstm.compute_dtype),
            "lstm_variable_dtype": str(lstm.variable_dtype),
            "output_dtype": str(model.layers[-1].compute_dtype),
            "compute_dtype": str(lstm.compute_dtype),
        }

    return Job(
        epochs=workload.epochs,
        batch_size=workload.batch_size,
        steps_per_epoch=workload.steps_per_epoch,
        build=lambda policy: build_model(workload, policy),
        data=lambda seed: make_dataset(workload, seed),
        checks=checks,
    )


def train_once(
    backend: Backend,
    job: Job,
    policy: str,
    device: DeviceInfo,
    seed: int,
    quick: bool,
    progress: Progress,
    guard: InterruptGuard,
    label: str | None = None,
) -> TrainingRun:
    """Train the job's model once under ``policy`` and time every epoch."""
    import keras

    keras.backend.clear_session()
    keras.utils.set_random_seed(seed)
    x, y = job.data(seed)
    label = label or policy
    try:
        with backend.placement(device), backend.distribution(device):
            model = job.build(policy)
        with backend.placement(device):
            inputs = backend.fit_arguments(x, y, job.batch_size, job.steps_per_epoch, seed)
            timer = _epoch_timer(job.epochs, label, quick, progress, guard)
            peak = PeakMemory(backend.name, device.kind, device.framework_device)
            with hardware.CpuUsageMonitor() as monitor, hardware.PowerMonitor(device.kind, device.count) as power, peak:
                model.fit(**inputs, epochs=job.epochs, verbose=0, callbacks=[timer])
    except AdvisorError:
        raise
    except backend.failure_types() as error:
        if backend.is_out_of_memory(error):
            raise AdvisorError(
                f"out of memory training {policy} on {device.name}: try a smaller --units or --batch-size"
            ) from None
        message = (getattr(error, "message", None) or str(error)).strip().splitlines()[0][:300]
        raise AdvisorError(f"{policy} training failed on {device.name}: {message}") from None
    finally:
        keras.config.set_dtype_policy(Precision.FLOAT32.value)

    checks = _run_checks(backend, job, model, device)
    warnings = run_warnings(checks, policy, device, backend.accelerator_words, timer.times, monitor)
    run = TrainingRun(
        precision=policy,
        epoch_seconds=timer.times,
        final_loss=timer.logs.get("loss"),
        final_accuracy=timer.logs.get("accuracy"),
        checks=checks,
        warnings=warnings,
        other_cpu_load=monitor.other_load(),
        power=power.reading(),
        memory=peak.reading(),
    )
    if len(timer.times) < job.epochs:
        run.estimate = timing.estimate_total(timer.times, job.epochs)
    return run


def _run_checks(backend: Backend, job: Job, model: Any, device: DeviceInfo) -> dict[str, Any]:
    """What the run checked: the model's own checks, where its variables live, the backend and the replicas."""
    checks: dict[str, Any] = {
        **job.checks(model),
        "variables_device": backend.variable_device(model),
        "backend": backend.name,
    }
    if device.count > 1:
        checks["replicas"] = int(getattr(getattr(backend, "strategy", None), "num_replicas_in_sync", device.count))
    return checks


def run_warnings(
    checks: dict[str, Any],
    policy: str,
    device: DeviceInfo,
    accelerator_words: tuple[str, ...],
    times: list[float],
    monitor: hardware.CpuUsageMonitor,
    others_expected: bool = False,
) -> list[str]:
    """The run's self-checks: right device, right dtype, a quiet machine (unless other processes are expected:
    a cluster's workers on this one machine) and steady epochs."""
    warnings = []
    expected_dtype = EXPECTED_DTYPE[policy]
    computed = checks.pop("compute_dtype")
    if computed != expected_dtype:
        raise AdvisorError(
            f"{policy}: the model computed in {computed}, not {expected_dtype}; the result would be wrong"
        )
    placed = checks["variables_device"].upper()
    if device.kind == DeviceKind.GPU and device.count == 1 and not any(word in placed for word in accelerator_words):
        raise InputError("device", f"the model's variables live on {checks['variables_device']}, not the GPU", "gpu")
    load = monitor.other_load()
    cpus = os.cpu_count() or 1
    if load is not None and load / cpus > OTHER_LOAD_WARNING and not others_expected:
        warnings.append(
            f"other processes used {load:.2f} CPU cores on average ({100 * load / cpus:.0f}% of the machine) "
            "during the run: the times may be slower than this hardware can do"
        )
    stats = timing.steady_stats(times)
    if stats is not None and stats.noisy:
        warnings.append(
            f"steady epoch times vary by {100 * stats.relative_stdev:.0f}% (stdev / median, over "
            f"{timing.NOISY_SPREAD:.0%}): the machine was busy or throttling"
        )
    return warnings
