"""TensorFlow across machines: join the cluster, agree on the workload, train with a custom step.

Keras 3's ``fit`` does not run under ``tf.distribute.MultiWorkerMirroredStrategy`` (keras-team/keras#20585:
"Attempt to convert a value (PerReplica...) to a Tensor"), so the distributed runs use a custom training step
(``strategy.run`` over ``experimental_distribute_dataset``, the loss averaged over the global batch by
``tf.nn.compute_average_loss``) with the job's own Keras model, optimizer and loss. The chief times one device
with the same step, so the scaling ratio compares like with like. TensorFlow is imported by the caller
(:class:`advisor.measure.backends.tf_backend.KerasBackend`) and passed in.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import threading
import time
from typing import Any

from advisor import hardware
from advisor.errors import AdvisorError
from advisor.measure.backends import DeviceInfo
from advisor.measure.cluster import Cluster, missing_line
from advisor.measure.memory import PeakMemory
from advisor.measure.signals import InterruptGuard
from advisor.measure.train import Job, Progress, TrainingRun, epoch_line, run_warnings

SIGNALS = (signal.SIGINT, signal.SIGTERM)
POLL_MS = 500  # how often a waiting worker looks at its Ctrl-C and its deadline
KEY_PREFIX = "advisor"
_TASK = re.compile(r"/job:(?:worker|chief)/replica:0/task:(\d+)")


def join(tf, cluster: Cluster, device_kind: str, progress: Progress) -> Any:
    """Start this worker's server and wait for the others: the strategy, or one line and exit 1 (exit 130 on
    Ctrl-C) when they do not all join within the timeout.

    TensorFlow waits for the cluster inside C++, where neither a Python signal handler nor an exception can
    reach it; so the signals are blocked here and a watchdog thread waits for them (and for the deadline)
    instead, and ends the process itself.
    """
    os.environ["TF_CONFIG"] = cluster.tf_config()
    joined = threading.Event()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    watchdog = threading.Thread(target=_watch, args=(cluster, joined, progress), daemon=True)
    watchdog.start()  # inherits the blocked signals: sigtimedwait takes them
    try:
        implementation = tf.distribute.experimental.CommunicationImplementation
        chosen = implementation.NCCL if device_kind == "gpu" else implementation.RING
        options = tf.distribute.experimental.CommunicationOptions(implementation=chosen)
        strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
        strategy.advisor_collective = chosen.name  # what the profile records
    finally:
        joined.set()
        watchdog.join()
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    return strategy


def _watch(cluster: Cluster, joined: threading.Event, progress: Progress) -> None:
    deadline = time.monotonic() + cluster.join_timeout
    while not joined.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            _exit(progress, f"advisor: error: {missing_line(cluster, cluster.join_timeout)}", 1)
        if signal.sigtimedwait(SIGNALS, min(POLL_MS / 1000, left)) is not None and not joined.is_set():
            _exit(progress, "advisor: interrupted while waiting for the workers; no profile written", 130)


def _exit(progress: Progress, line: str, status: int) -> None:
    progress(line)
    sys.stdout.flush()
    os._exit(status)  # the main thread is inside TensorFlow's C++ wait: nothing else can end it


def reinstall(guard: InterruptGuard) -> None:
    """TensorFlow's cluster start-up installs its own SIGTERM handler (for preemption); put the guard back."""
    for sig in SIGNALS:
        with contextlib.suppress(ValueError):
            signal.signal(sig, guard.handle)


def exchange(tf, cluster: Cluster, key: str, value: str, guard: InterruptGuard) -> dict[int, str]:
    """Every worker publishes ``value`` under ``key`` and reads everyone's (through the cluster's coordination
    service): {worker index: value}."""
    from tensorflow.python.eager import context  # the coordination service's key-value store has no public API

    context.context().set_config_key_value(f"{KEY_PREFIX}/{key}/{cluster.index}", value)
    return {i: wait_for(tf, cluster, f"{key}/{i}", guard) for i in range(len(cluster.workers))}


def publish(cluster: Cluster, key: str, value: str) -> None:
    from tensorflow.python.eager import context

    context.context().set_config_key_value(f"{KEY_PREFIX}/{key}", value)


def wait_for(tf, cluster: Cluster, key: str, guard: InterruptGuard, timeout: float | None = None) -> str:
    """A key's value once some worker has set it; Ctrl-C stays live while waiting."""
    from tensorflow.python.eager import context

    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        guard.check()
        try:
            return context.context().get_config_key_value(f"{KEY_PREFIX}/{key}", POLL_MS)
        except tf.errors.DeadlineExceededError:
            if deadline is not None and time.monotonic() > deadline:
                raise AdvisorError(f"waited {timeout:g} s for {key}; no profile written") from None
        except tf.errors.OpError as error:
            raise AdvisorError(failure_line(cluster, error, "waiting for the other workers")) from None


def failure_line(cluster: Cluster, error: BaseException, doing: str) -> str:
    """One line for a collective that failed: which worker stopped answering, if the error says."""
    text = getattr(error, "message", None) or str(error)
    found = _TASK.search(text)
    lost = [int(found.group(1))] if found and int(found.group(1)) != cluster.index else []
    reason = next((line.strip() for line in text.splitlines() if "aborted by" in line or "Connection" in line),
                  text.strip().splitlines()[0] if text.strip() else type(error).__name__)  # fmt: skip
    who = cluster.name(lost[0]) if lost else "another worker"
    return f"{who} stopped answering while {doing} ({reason[:160]}); no profile written"


def train_steps(
    tf,
    job: Job,
    policy: str,
    device: DeviceInfo,
    seed: int,
    progress: Progress,
    guard: InterruptGuard,
    label: str,
    strategy: Any = None,
    cluster: Cluster | None = None,
) -> TrainingRun:
    """Train the job's model with the custom step (under ``strategy`` across the cluster, else on ``device``)
    and time every epoch; the same step either way."""
    import keras

    keras.backend.clear_session()
    keras.utils.set_random_seed(seed)
    x, y = job.data(seed)
    placement = tf.device(device.framework_device) if strategy is None else contextlib.nullcontext()
    try:
        with placement, (strategy.scope() if strategy is not None else contextlib.nullcontext()):
            model = job.build(policy)
            optimizer = model.optimizer
            optimizer.build(model.trainable_variables)
        per_example = _per_example_loss(keras, model.loss)
        with placement:
            iterator = _batches(tf, x, y, job.batch_size, seed, strategy)
            step = _step(tf, model, optimizer, per_example, strategy)
            times, loss = [], None
            peak = PeakMemory("tensorflow", device.kind, device.framework_device)
            with hardware.CpuUsageMonitor() as monitor, hardware.PowerMonitor(device.kind, 1) as power, peak:
                started = time.perf_counter()
                for _ in range(job.epochs):
                    begin = time.perf_counter()
                    for _ in range(job.steps_per_epoch):
                        loss = step(iterator)
                        guard.check()  # Ctrl-C: stop at this step; the other workers see the chief leave
                    last = float(loss)  # fetched to the host: the epoch's work is done on every replica
                    times.append(time.perf_counter() - begin)
                    progress(epoch_line(label, times, job.epochs, time.perf_counter() - started, len(times),
                                        job.epochs, last))  # fmt: skip
    except AdvisorError:
        raise
    except tf.errors.ResourceExhaustedError:
        hint = "try a smaller --units or --batch-size"
        raise AdvisorError(f"out of memory training {policy} on {device.name}: {hint}") from None
    except (tf.errors.UnavailableError, tf.errors.AbortedError, tf.errors.CancelledError,
            tf.errors.DeadlineExceededError, tf.errors.InternalError, tf.errors.UnknownError) as error:  # fmt: skip
        if cluster is None:
            raise AdvisorError(f"{policy} training failed on {device.name}: {str(error).strip()[:300]}") from None
        raise AdvisorError(failure_line(cluster, error, f"training {label}")) from None
    finally:
        keras.config.set_dtype_policy("float32")
    checks: dict[str, Any] = {
        **job.checks(model),
        "variables_device": _variable_device(model),
        "backend": "tensorflow",
        "training_step": "custom (strategy.run)" if strategy is not None else "custom",
    }
    if strategy is not None:
        checks["replicas"] = int(strategy.num_replicas_in_sync)
    warnings = run_warnings(checks, policy, dataclass_one(device), ("GPU",), times, monitor)
    return TrainingRun(
        precision=policy,
        epoch_seconds=times,
        final_loss=last,
        final_accuracy=None,
        checks=checks,
        warnings=warnings,
        other_cpu_load=monitor.other_load(),
        power=power.reading(),
        memory=peak.reading(),
    )


def dataclass_one(device: DeviceInfo) -> DeviceInfo:
    """The device as one device (the placement check then applies to the reference run)."""
    import dataclasses

    return dataclasses.replace(device, count=1)


def _per_example_loss(keras, loss):
    """The compiled loss as a function of (y, prediction) giving one value per example."""
    if isinstance(loss, keras.losses.Loss):
        return loss.call
    function = keras.losses.get(loss)
    if isinstance(function, keras.losses.Loss):
        return function.call
    return function


def _batches(tf, x, y, batch_size: int, seed: int, strategy):
    """The same tf.data pipeline as ``fit`` gets (shuffled each epoch, iterated once across all epochs); under a
    strategy each worker keeps its share of every global batch."""
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).cache()
    dataset = dataset.shuffle(len(x), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.batch(batch_size).repeat().prefetch(tf.data.AUTOTUNE)
    if strategy is None:
        return iter(dataset)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return iter(strategy.experimental_distribute_dataset(dataset.with_options(options)))


def _step(tf, model, optimizer, per_example, strategy):
    """One training step: forward, the loss averaged over the global batch, gradients (scaled under float16),
    the optimizer's update (Keras all-reduces the gradients across replicas)."""
    scales = hasattr(optimizer, "scale_loss")

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            prediction = model(x, training=True)
            loss = tf.nn.compute_average_loss(per_example(tf.cast(y, prediction.dtype), prediction))
            scaled = optimizer.scale_loss(loss) if scales else loss
        gradients = tape.gradient(scaled, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return loss

    @tf.function
    def step(iterator):
        x, y = next(iterator)
        if strategy is None:
            return replica_step(x, y)
        losses = strategy.run(replica_step, args=(x, y))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    return step


def _variable_device(model) -> str:
    try:
        variable = model.trainable_variables[0]
        value = getattr(variable, "value", variable)
        return str(getattr(value, "device", "")) or "unknown"
    except Exception:
        return "unknown"

