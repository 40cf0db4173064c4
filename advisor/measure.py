"""``advisor measure``: time the LSTM training on this device and write a profile.

The only module that imports TensorFlow and Keras, and only inside functions, once a run starts.
The training uses Keras 3's backend-neutral API (``keras.*``); TensorFlow appears only for device
placement, the input pipeline, build facts and error types.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import math
import os
import signal
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor import __version__, hardware, schema, store, timing
from advisor.errors import AdvisorError
from advisor.workload import Workload, make_dataset, workload_from_args

MIXED_POLICIES = ("mixed_float16", "mixed_bfloat16")
EPOCH_SPREAD_WARNING = 0.10  # stdev / median of the steady epochs
OTHER_LOAD_WARNING = 0.05  # other processes' share of the machine's CPU time

Progress = Callable[[str], None]


@dataclass
class MeasurePlan:
    """Everything a run needs, checked before TensorFlow starts."""

    workload: Workload
    precisions: list[str]  # "float32", "mixed" or an explicit mixed policy
    mixed_policy: str | None
    device: str  # auto | cpu | gpu
    quick: bool = False
    seed: int = 0
    matmul_size: int = 2048
    price_usd: float | None = None
    price_note: str | None = None
    price_date: str | None = None
    price_source: str | None = None
    power_watts: float | None = None
    name: str | None = None
    out: Path | None = None
    force: bool = False
    command: str = "advisor measure"


def parse_precisions(text: str) -> list[str]:
    allowed = ("float32", "mixed", *MIXED_POLICIES)
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise AdvisorError("--precision: give at least one of float32, mixed, mixed_float16, mixed_bfloat16")
    for item in items:
        if item not in allowed:
            raise AdvisorError(
                f"--precision: unsupported precision {item!r} (use float32, mixed, mixed_float16 or mixed_bfloat16)"
            )
    if len(set(items)) != len(items):
        raise AdvisorError("--precision: a precision is listed twice")
    return items


def plan_from_args(args: argparse.Namespace) -> MeasurePlan:
    workload = workload_from_args(args)
    price_date = args.price_date
    if price_date is not None and not schema.is_iso_date(price_date):
        raise AdvisorError(f"--price-date must be a date like 2026-11-30, got {price_date!r}")
    if args.price_usd is not None and price_date is None:
        price_date = _dt.date.today().isoformat()
    if args.name is not None and not args.name.strip():
        raise AdvisorError("--name must not be empty")
    return MeasurePlan(
        workload=workload,
        precisions=parse_precisions(args.precision),
        mixed_policy=args.mixed_policy,
        device=args.device,
        quick=args.quick,
        seed=args.seed,
        matmul_size=args.matmul_size,
        price_usd=args.price_usd,
        price_note=args.price_note,
        price_date=price_date,
        price_source=args.price_source,
        power_watts=args.power_watts,
        name=args.name,
        out=None if args.dry_run else Path(args.out or args.profiles),
        force=args.force,
        command=" ".join(["advisor", "measure", *_command_words(args)]),
    )


def _command_words(args: argparse.Namespace) -> list[str]:
    words = []
    for key in (
        "units",
        "timesteps",
        "features",
        "samples",
        "batch_size",
        "epochs",
        "precision",
        "mixed_policy",
        "device",
        "seed",
    ):
        value = getattr(args, key, None)
        if value is not None:
            words.append(f"--{key.replace('_', '-')} {value}")
    if getattr(args, "quick", False):
        words.append("--quick")
    return words


# --------------------------------------------------------------------------- signals


class InterruptGuard:
    """SIGINT and SIGTERM stop a run cleanly, at a safe point.

    Raising KeyboardInterrupt from a signal handler while TensorFlow's C++ code is calling back into
    Python can abort the whole process, so the first signal only records the request; the run checks
    it after every training batch and between phases (``check``). A second signal raises at once.
    """

    def __init__(self) -> None:
        self.requested: int | None = None

    def handle(self, signum: int, frame: Any) -> None:
        if self.requested is not None:
            raise KeyboardInterrupt(f"signal {signum}")
        self.requested = signum

    def check(self) -> None:
        if self.requested is not None:
            raise KeyboardInterrupt(f"signal {self.requested}")

    @contextlib.contextmanager
    def installed(self) -> Iterator[InterruptGuard]:
        signals = (signal.SIGINT, signal.SIGTERM)
        try:
            previous = {sig: signal.signal(sig, self.handle) for sig in signals}
        except ValueError:  # not the main thread: leave the signals alone
            yield self
            return
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


# --------------------------------------------------------------------------- TensorFlow


def import_tensorflow(device: str):
    """Import TensorFlow quietly; ``device == 'cpu'`` hides the GPUs first (like a CPU-only install)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    if os.environ["KERAS_BACKEND"] != "tensorflow":
        raise AdvisorError(f"advisor measure needs KERAS_BACKEND=tensorflow, got {os.environ['KERAS_BACKEND']!r}")
    if device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = "-1"
    try:
        with _quiet_stderr():  # TensorFlow's C++ start-up lines ignore TF_CPP_MIN_LOG_LEVEL
            import tensorflow as tf
    except ImportError:
        raise AdvisorError(
            "advisor measure needs TensorFlow: pip install 'advisor[measure]' (or pip install tensorflow)"
        ) from None
    with contextlib.suppress(Exception):
        import absl.logging

        absl.logging.set_verbosity(absl.logging.ERROR)
    tf.get_logger().setLevel("ERROR")
    if device == "cpu":
        with contextlib.suppress(Exception):
            tf.config.set_visible_devices([], "GPU")
    return tf


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Send file descriptor 2 to /dev/null for the duration (Python's sys.stderr included)."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


@dataclass
class DeviceInfo:
    kind: str  # cpu | gpu
    name: str
    tf_device: str  # "/GPU:0" or "/CPU:0"
    facts: dict[str, Any] = field(default_factory=dict)


def resolve_device(tf, requested: str, host: dict[str, Any]) -> DeviceInfo:
    gpus = tf.config.list_physical_devices("GPU") if requested != "cpu" else []
    if requested == "gpu" and not gpus:
        raise AdvisorError(
            "--device gpu: no GPU is visible to TensorFlow (check the driver, CUDA_VISIBLE_DEVICES and that "
            "TensorFlow was installed with GPU support, e.g. pip install 'tensorflow[and-cuda]')"
        )
    if gpus:
        facts: dict[str, Any] = {}
        details = {}
        with contextlib.suppress(Exception):
            details = tf.config.experimental.get_device_details(gpus[0])
        smi = hardware.nvidia_gpus()
        if smi:
            facts.update({k: v for k, v in smi[0].items() if k != "name"})
        name = details.get("device_name") or (smi[0]["name"] if smi else None) or "GPU"
        capability = details.get("compute_capability")
        if capability and "compute_capability" not in facts:
            facts["compute_capability"] = ".".join(str(part) for part in capability)
        return DeviceInfo("gpu", name, "/GPU:0", facts)
    return DeviceInfo("cpu", host.get("cpu", "CPU"), "/CPU:0", {})


def default_mixed_policy(device_kind: str) -> str:
    """The mixed policy that helps the device: float16 tensor cores on GPUs, bfloat16 on CPUs."""
    return "mixed_float16" if device_kind == "gpu" else "mixed_bfloat16"


def software_facts(tf, device: DeviceInfo) -> dict[str, Any]:
    import keras

    facts: dict[str, Any] = {
        "framework": "tensorflow",
        "framework_version": tf.__version__,
        "keras_version": keras.__version__,
        "keras_backend": keras.backend.backend(),
        **hardware.software_facts(),
    }
    if device.kind == "gpu":
        with contextlib.suppress(Exception):
            build = tf.sysconfig.get_build_info()
            if build.get("cuda_version"):
                facts["cuda"] = str(build["cuda_version"])
            if build.get("cudnn_version"):
                facts["cudnn"] = str(build["cudnn_version"])
    return facts


def matmul_peak_gflops(tf, dtype: str, size: int, device: str, repeats: int = 5, inner: int = 4) -> float:
    """Best dense matmul throughput of ``size`` x ``size`` matrices in ``dtype`` (GFLOP/s)."""
    import keras

    with tf.device(device):
        a = keras.random.normal((size, size), dtype="float32", seed=1)
        b = keras.random.normal((size, size), dtype="float32", seed=2)
        a, b = keras.ops.cast(a, dtype), keras.ops.cast(b, dtype)
        product = None
        for _ in range(2):  # warm-up
            product = keras.ops.matmul(a, b)
        _wait(keras, product)
        best = math.inf
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(inner):
                product = keras.ops.matmul(a, b)
            _wait(keras, product)
            best = min(best, time.perf_counter() - start)
    return 2.0 * size**3 * inner / best / 1e9


def _wait(keras, tensor) -> float:
    """Block until ``tensor`` is computed (fetching one element waits for the device)."""
    return float(keras.ops.convert_to_numpy(keras.ops.cast(tensor[0, 0], "float32")))


# --------------------------------------------------------------------------- training


def build_model(workload: Workload, policy: str):
    """The post's model: LSTM(units) -> Dense(1, sigmoid), the output kept in float32."""
    import keras

    keras.config.set_dtype_policy(policy)
    model = keras.Sequential(
        [
            keras.Input(shape=(workload.timesteps, workload.features)),
            keras.layers.LSTM(workload.units, return_sequences=False),
            keras.layers.Dense(1, activation="sigmoid", dtype="float32"),
        ]
    )
    model.compile(
        loss="binary_crossentropy",
        optimizer=keras.optimizers.Adam(learning_rate=workload.learning_rate),
        metrics=["accuracy"],
    )
    return model


def make_input_pipeline(tf, x, y, workload: Workload, seed: int):
    """A tf.data pipeline that is iterated once across all epochs (``repeat`` + ``steps_per_epoch``).

    Shuffled each epoch like ``fit(x, y)``; batches never straddle an epoch boundary.
    """
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).cache()
    dataset = dataset.shuffle(workload.train_samples, seed=seed, reshuffle_each_iteration=True)
    return dataset.batch(workload.batch_size).repeat().prefetch(tf.data.AUTOTUNE)


@dataclass
class TrainingRun:
    precision: str
    epoch_seconds: list[float]
    final_loss: float | None
    final_accuracy: float | None
    checks: dict[str, Any]
    warnings: list[str]
    other_cpu_load: float | None
    estimate: timing.Estimate | None = None

    @property
    def total_seconds(self) -> float:
        return self.estimate.total_seconds if self.estimate else math.fsum(self.epoch_seconds)


def _epoch_timer(workload: Workload, label: str, quick: bool, progress: Progress, guard: InterruptGuard):
    import keras

    class EpochTimer(keras.callbacks.Callback):
        """Times each epoch's wall clock; under --quick stops once the median is known."""

        def __init__(self) -> None:
            super().__init__()
            self.times: list[float] = []
            self.logs: dict[str, float] = {}
            self._start = 0.0
            self._run_start = time.perf_counter()
            self.cap = timing.quick_epoch_cap(workload.epochs) if quick else workload.epochs

        def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
            self._start = time.perf_counter()

        def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
            if guard.requested is not None:  # Ctrl-C or SIGTERM: stop at this batch boundary
                self.model.stop_training = True

        def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
            self.times.append(time.perf_counter() - self._start)  # logs are host floats here: the epoch is done
            self.logs = {k: float(v) for k, v in (logs or {}).items()}
            elapsed = time.perf_counter() - self._run_start
            done = len(self.times)
            steady = statistics.median(self.times[1:]) if done > 1 else self.times[-1]
            left = steady * (self.cap - done)
            progress(
                f"{label}: epoch {done}/{workload.epochs}  {self.times[-1]:.2f} s  "
                f"elapsed {_duration(elapsed)}  left ~{_duration(left)}"
                + (f"  loss {self.logs['loss']:.4f}" if "loss" in self.logs else "")
            )
            if quick and (timing.quick_should_stop(self.times) or done >= self.cap):
                self.model.stop_training = True

    return EpochTimer()


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def train_once(
    tf,
    workload: Workload,
    policy: str,
    device: DeviceInfo,
    seed: int,
    quick: bool,
    progress: Progress,
    guard: InterruptGuard,
) -> TrainingRun:
    """Train the model once under ``policy`` and time every epoch."""
    import keras

    keras.backend.clear_session()
    keras.utils.set_random_seed(seed)
    x, y = make_dataset(workload, seed)
    try:
        with tf.device(device.tf_device):
            model = build_model(workload, policy)
            dataset = make_input_pipeline(tf, x, y, workload, seed)
            timer = _epoch_timer(workload, policy, quick, progress, guard)
            with hardware.CpuUsageMonitor() as monitor:
                model.fit(
                    dataset,
                    epochs=workload.epochs,
                    steps_per_epoch=workload.steps_per_epoch,
                    shuffle=False,  # the pipeline shuffles each epoch itself
                    verbose=0,
                    callbacks=[timer],
                )
    except tf.errors.ResourceExhaustedError:
        raise AdvisorError(
            f"out of memory training {policy} on {device.name}: try a smaller --units or --batch-size"
        ) from None
    except (tf.errors.OpError, ValueError, TypeError) as error:
        message = (getattr(error, "message", None) or str(error)).strip().splitlines()[0][:300]
        raise AdvisorError(f"{policy} training failed on {device.name}: {message}") from None
    finally:
        keras.config.set_dtype_policy("float32")

    lstm = model.layers[0]
    checks: dict[str, Any] = {
        "lstm_compute_dtype": str(lstm.compute_dtype),
        "lstm_variable_dtype": str(lstm.variable_dtype),
        "output_dtype": str(model.layers[-1].compute_dtype),
        "variables_device": _variable_device(model),
    }
    warnings = _run_warnings(checks, policy, device, timer.times, monitor)
    run = TrainingRun(
        precision=policy,
        epoch_seconds=timer.times,
        final_loss=timer.logs.get("loss"),
        final_accuracy=timer.logs.get("accuracy"),
        checks=checks,
        warnings=warnings,
        other_cpu_load=monitor.other_load(),
    )
    if len(timer.times) < workload.epochs:
        run.estimate = timing.estimate_total(timer.times, workload.epochs)
    return run


def _variable_device(model) -> str:
    try:
        variable = model.trainable_variables[0]
        return str(getattr(variable, "value", variable).device) or "unknown"
    except Exception:
        return "unknown"


def _run_warnings(
    checks: dict[str, Any], policy: str, device: DeviceInfo, times: list[float], monitor: hardware.CpuUsageMonitor
) -> list[str]:
    """The run's self-checks: right device, right dtype, a quiet machine and steady epochs."""
    warnings = []
    expected_dtype = {"float32": "float32", "mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}[policy]
    if checks["lstm_compute_dtype"] != expected_dtype:
        raise AdvisorError(
            f"{policy}: the LSTM computed in {checks['lstm_compute_dtype']}, not {expected_dtype}; "
            "the result would be wrong"
        )
    if device.kind == "gpu" and "GPU" not in checks["variables_device"].upper():
        raise AdvisorError(f"--device gpu: the model's variables live on {checks['variables_device']}, not the GPU")
    load = monitor.other_load()
    cpus = os.cpu_count() or 1
    if load is not None and load / cpus > OTHER_LOAD_WARNING:
        warnings.append(
            f"other processes used {load:.2f} CPU cores on average ({100 * load / cpus:.0f}% of the machine) "
            "during the run: the times may be slower than this hardware can do"
        )
    stats = timing.steady_stats(times)
    if stats is not None and stats.count > 1 and stats.stdev / stats.median > EPOCH_SPREAD_WARNING:
        warnings.append(
            f"steady epoch times vary by {100 * stats.stdev / stats.median:.0f}% (stdev / median, over 10%): "
            "the machine was busy or throttling"
        )
    return warnings


# --------------------------------------------------------------------------- the profile


def result_record(run: TrainingRun, workload: Workload, peak_gflops: float | None, peak_dtype: str) -> dict[str, Any]:
    stats = timing.steady_stats(run.epoch_seconds)
    record: dict[str, Any] = {
        "precision": run.precision,
        "total_seconds": round(run.total_seconds, 4),
        "estimated": run.estimate is not None,
    }
    if run.estimate is not None:
        record["estimate"] = {
            "method": run.estimate.method,
            "error_seconds": round(run.estimate.error_seconds, 3),
            "confidence": timing.QUICK_CONFIDENCE,
            "steady_epochs_timed": run.estimate.steady_epochs_timed,
        }
        record["epochs_run"] = len(run.epoch_seconds)
    record["first_epoch_seconds"] = round(run.epoch_seconds[0], 4)
    if stats is not None:
        record["steady"] = stats.as_dict()
    record["epoch_seconds"] = [round(t, 4) for t in run.epoch_seconds]
    if run.final_loss is not None and math.isfinite(run.final_loss):
        record["final_loss"] = round(run.final_loss, 4)
    if run.final_accuracy is not None and math.isfinite(run.final_accuracy):
        record["final_accuracy"] = round(run.final_accuracy, 4)
    flops = workload.training_flops_per_epoch()
    if stats is not None:
        achieved = flops / stats.median / 1e9
        throughput: dict[str, Any] = {"flops_per_epoch": flops, "achieved_gflops": _significant(achieved)}
        if peak_gflops:
            throughput.update(
                matmul_peak_gflops=_significant(peak_gflops),
                matmul_dtype=peak_dtype,
                efficiency=_significant(achieved / peak_gflops),
            )
        record["throughput"] = throughput
    record["checks"] = run.checks
    if run.warnings:
        record["warnings"] = run.warnings
    return record


def _significant(value: float, digits: int = 5) -> float:
    """Round to significant digits (a tiny workload's GFLOP/s must not round to 0)."""
    return float(f"{value:.{digits}g}")


def build_profile(
    plan: MeasurePlan,
    device: DeviceInfo,
    host: dict[str, Any],
    software: dict[str, Any],
    results: list[dict[str, Any]],
    profile_id: str,
) -> dict[str, Any]:
    price: dict[str, Any] = {"usd": plan.price_usd, "date": plan.price_date}
    if plan.price_note:
        price["includes"] = plan.price_note
    if plan.price_source:
        price["source"] = plan.price_source
    elif plan.price_usd is not None:
        price["source"] = "given with --price-usd by the person who measured"
    if plan.power_watts:
        price["power_watts"] = plan.power_watts
    notes = []
    if plan.price_usd is None:
        notes.append("The price is unknown: compared by speed only, never recommended. Add price.usd to fix.")
    if device.kind == "cpu" and plan.device == "cpu":
        notes.append("Measured with --device cpu (GPUs hidden).")
    profile: dict[str, Any] = {
        "schema_version": schema.SCHEMA_VERSION,
        "id": profile_id,
        "name": plan.name or device.name,
        "device": {"kind": device.kind, "name": device.name, "count": 1, **device.facts},
        "host": host,
        "software": software,
        "price": price,
        "workload": plan.workload.as_dict(),
        "results": results,
        "provenance": {
            "method": "measured",
            "advisor_version": __version__,
            "date": _dt.date.today().isoformat(),
            "command": plan.command,
        },
    }
    if notes:
        profile["notes"] = notes
    return profile


def measure(plan: MeasurePlan, progress: Progress, guard: InterruptGuard | None = None) -> dict[str, Any]:
    """Run the whole measurement and return the profile (not yet written). TensorFlow starts here."""
    guard = guard or InterruptGuard()
    progress("starting TensorFlow...")
    tf = import_tensorflow(plan.device)
    host = hardware.host_facts()
    device = resolve_device(tf, plan.device, host)
    mixed = plan.mixed_policy or default_mixed_policy(device.kind)
    policies = [mixed if p == "mixed" else p for p in plan.precisions]
    if len(set(policies)) != len(policies):
        raise AdvisorError(f"--precision: {mixed} is listed twice (mixed means {mixed} here)")
    progress(f"device: {device.name} ({device.kind}); precisions: {', '.join(policies)}")
    software = software_facts(tf, device)

    peaks: dict[str, float] = {}
    for dtype in {"float32" if p == "float32" else p.removeprefix("mixed_") for p in policies}:
        progress(f"matmul peak ({dtype}, {plan.matmul_size}x{plan.matmul_size})...")
        try:
            peaks[dtype] = matmul_peak_gflops(tf, dtype, plan.matmul_size, device.tf_device)
            guard.check()
        except tf.errors.ResourceExhaustedError:
            raise AdvisorError("out of memory in the matmul test: try a smaller --matmul-size") from None
        progress(f"matmul peak ({dtype}): {peaks[dtype]:,.1f} GFLOP/s")

    results = []
    for policy in policies:
        guard.check()
        run = train_once(tf, plan.workload, policy, device, plan.seed, plan.quick, progress, guard)
        dtype = "float32" if policy == "float32" else policy.removeprefix("mixed_")
        results.append(result_record(run, plan.workload, peaks.get(dtype), dtype))
        for warning in run.warnings:
            progress(f"warning: {policy}: {warning}")

    slug_source = plan.name or device.name
    # --force replaces the profile of the same slug; otherwise a clash takes the next free slug.
    overwrite_or_dry = plan.out is None or plan.force
    profile_id = store.slugify(slug_source) if overwrite_or_dry else store.unique_slug(plan.out, slug_source)
    return build_profile(plan, device, host, software, results, profile_id)


def summary_table(profile: dict[str, Any]) -> str:
    from advisor.report import fmt_seconds

    header = ("precision", "total", "first", "median", "min", "max", "stdev", "GFLOP/s", "of peak", "loss", "acc")
    rows = []
    for r in profile["results"]:
        steady = r.get("steady", {})
        thr = r.get("throughput", {})
        total = fmt_seconds(r["total_seconds"])
        if r.get("estimated"):
            total = f"~{total} ± {r['estimate']['error_seconds']:.2g}"
        rows.append(
            (
                r["precision"],
                total,
                fmt_seconds(r["first_epoch_seconds"]),
                *(fmt_seconds(steady[k]) if k in steady else "-" for k in ("median", "min", "max")),
                f"{steady['stdev']:.3g} s" if "stdev" in steady else "-",
                f"{thr['achieved_gflops']:,.4g}" if "achieved_gflops" in thr else "-",
                f"{100 * thr['efficiency']:.0f}%" if "efficiency" in thr else "-",
                f"{r['final_loss']:.4f}" if "final_loss" in r else "-",
                f"{r['final_accuracy']:.3f}" if "final_accuracy" in r else "-",
            )
        )
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(lines)


def _stderr_progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_measure_command(args: argparse.Namespace) -> int:
    """The CLI's ``measure``: plan, check the output folder, measure, validate, write, report."""
    plan = plan_from_args(args)
    if plan.out is not None:
        store.check_writable_folder(plan.out)  # before minutes of training, not after
    with InterruptGuard().installed() as guard:
        profile = measure(plan, _stderr_progress, guard)
        problems, _ = schema.validate(profile, "(measured profile)")
        if problems:
            raise AdvisorError("the measured profile is invalid (a bug): " + "; ".join(map(str, problems)))
        guard.check()  # a stop asked for during the run: write nothing
        path = store.write_profile(profile, plan.out, overwrite=plan.force) if plan.out is not None else None
    if args.json:
        print(json.dumps({"path": str(path) if path else None, "profile": profile}, indent=2))
    else:
        print(summary_table(profile))
        print(f"\nprofile written to {path}" if path else "\n--dry-run: no profile written")
        if profile["price"]["usd"] is None:
            print("The price is unknown: add --price-usd (or edit price.usd) so the advisor can recommend it.")
    return 0
