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
import dataclasses
import math
import os
import re
import signal
import time
from collections.abc import Callable
from typing import Any

from advisor.errors import AdvisorError
from advisor.format.vocabulary import DeviceKind, Precision
from advisor.measure import hardware
from advisor.measure.backends import Backend, DeviceInfo
from advisor.measure.backends.tf_backend import batches
from advisor.measure.cluster import Cluster, missing_line
from advisor.measure.peak_memory import PeakMemory
from advisor.measure.signals import InterruptGuard
from advisor.measure.train import Job, Progress, TrainingRun, epoch_line, run_warnings

SIGNALS = (signal.SIGINT, signal.SIGTERM)
HEARTBEAT_MS = 10_000  # a worker silent this long is taken for dead by the coordination service
POLL_MS = 500  # how often a waiting worker looks at its Ctrl-C and its deadline
KEY_PREFIX = "advisor"
_TASK = re.compile(r"/job:(?:worker|chief)/replica:0/task:(\d+)")


def join(tf, cluster: Cluster, device_kind: str) -> Any:
    """Start this worker's server and wait for the others: the strategy, or one line naming who is missing when
    they do not all join within the timeout.

    The coordination service is configured here (before the strategy would with its defaults, which wait an hour)
    so that registering is a barrier bounded by ``--join-timeout``. TensorFlow waits inside C++ holding the
    interpreter, where no Python signal handler runs; so Ctrl-C keeps its default action (end the process) until
    the workers have joined: nothing has been measured yet.
    """
    from tensorflow.compiler.xla.tsl.protobuf import coordination_config_pb2  # no public API for these settings
    from tensorflow.python.eager import context

    os.environ["TF_CONFIG"] = cluster.tf_config()
    timeout_ms = int(cluster.join_timeout * 1000)
    context.context().configure_coordination_service(
        service_type="standalone",
        service_leader="/job:worker/replica:0/task:0",
        cluster_register_timeout_in_ms=timeout_ms,
        heartbeat_timeout_in_ms=HEARTBEAT_MS,
        shutdown_barrier_timeout_in_ms=timeout_ms,
        coordinated_jobs=[coordination_config_pb2.CoordinatedJob(name="worker", num_tasks=len(cluster.workers))],
    )
    with contextlib.suppress(AttributeError, ValueError):  # older protos: the hour-long default wait stays
        context.context().coordination_service.cluster_register_with_barrier = True
    implementation = tf.distribute.experimental.CommunicationImplementation
    chosen = implementation.NCCL if device_kind == DeviceKind.GPU else implementation.RING
    options = tf.distribute.experimental.CommunicationOptions(implementation=chosen)
    previous = {sig: signal.signal(sig, signal.SIG_DFL) for sig in SIGNALS}
    try:
        strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    except (tf.errors.DeadlineExceededError, tf.errors.UnavailableError):
        raise AdvisorError(missing_line(cluster, cluster.join_timeout)) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    strategy.advisor_collective = chosen.name  # what the profile records
    return strategy


def exchange(
    tf,
    cluster: Cluster,
    key: str,
    value: str,
    guard: InterruptGuard,
    verdict: Callable[[dict[int, str]], str | None] | None = None,
) -> dict[int, str]:
    """Every worker publishes ``value`` under ``key`` and reads everyone's (through the cluster's coordination
    service, which the chief hosts): {worker index: value}. A barrier at the end keeps the chief alive until every
    worker has read. ``verdict`` (the values: a line, or None when they agree) is each worker's own, from what it
    read before the barrier: when the chief, having decided, leaves before the barrier's answer reaches a worker,
    that worker still says the verdict, not that the chief stopped answering."""
    from tensorflow.python.eager import context  # the coordination service's key-value store has no public API

    context.context().set_config_key_value(f"{KEY_PREFIX}/{key}/{cluster.index}", value)
    values = {i: wait_for(tf, cluster, f"{key}/{i}", guard) for i in range(len(cluster.workers))}
    line = verdict(values) if verdict is not None else None
    try:
        barrier(tf, cluster, f"{key}/read", "comparing the workloads")
    except AdvisorError:
        if line:
            raise AdvisorError(line) from None
        raise
    if line:
        raise AdvisorError(line)
    return values


def barrier(tf, cluster: Cluster, name: str, doing: str) -> None:
    """Wait until every worker is here (at most the join timeout)."""
    from tensorflow.python.eager import context

    try:
        context.context().wait_at_barrier(f"{KEY_PREFIX}/{name}", int(cluster.join_timeout * 1000))
    except tf.errors.OpError as error:
        raise AdvisorError(failure_line(cluster, error, doing)) from None


def publish(cluster: Cluster, key: str, value: str) -> None:
    from tensorflow.python.eager import context

    context.context().set_config_key_value(f"{KEY_PREFIX}/{key}", value)


def wait_for(tf, cluster: Cluster, key: str, guard: InterruptGuard) -> str:
    """A key's value once some worker has set it; Ctrl-C stays live while waiting (a worker that dies meanwhile
    ends the wait with an error)."""
    from tensorflow.python.eager import context

    while True:
        guard.check()
        try:
            return context.context().get_config_key_value(f"{KEY_PREFIX}/{key}", POLL_MS)
        except tf.errors.DeadlineExceededError:
            continue  # not yet: look at Ctrl-C again
        except tf.errors.OpError as error:
            raise AdvisorError(failure_line(cluster, error, "waiting for the other workers")) from None


def failure_line(cluster: Cluster, error: BaseException, doing: str) -> str:
    """One line for a collective that failed: which worker stopped answering, if the error says."""
    text = getattr(error, "message", None) or str(error)
    found = _TASK.search(text)
    lost = [int(found.group(1))] if found and int(found.group(1)) != cluster.index else []
    reason = next(
        (line.strip() for line in text.splitlines() if "aborted by" in line or "Connection" in line),
        text.strip().splitlines()[0] if text.strip() else type(error).__name__,
    )
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
    others_expected: bool = False,
) -> TrainingRun:
    """Train the job's model with the custom step (under ``strategy`` across the cluster, else on ``device``)
    and time every epoch; the same step either way."""
    import keras

    keras.backend.clear_session()
    keras.utils.set_random_seed(seed)
    x, y = job.data(seed)
    placement = tf.device(device.framework_device) if strategy is None else contextlib.nullcontext()
    try:
        with placement, strategy.scope() if strategy is not None else contextlib.nullcontext():
            model = job.build(policy)
            optimizer = model.optimizer
            optimizer.build(model.trainable_variables)
        per_example = _per_example_loss(keras, model.loss)
        with placement:
            iterator = _batches(tf, x, y, job.batch_size, seed, strategy)
            step = _step(tf, model, optimizer, per_example, strategy)
            peak = PeakMemory("tensorflow", device.kind, device.framework_device)
            with hardware.CpuUsageMonitor() as monitor, hardware.PowerMonitor(device.kind, 1) as power, peak:
                times, last = _timed_epochs(job, lambda: step(iterator), guard, progress, label)
    except AdvisorError:
        raise
    except tf.errors.ResourceExhaustedError:
        hint = "try a smaller --units or --batch-size"
        raise AdvisorError(f"out of memory training {policy} on {device.name}: {hint}") from None
    except _run_failures(tf) as error:
        if cluster is None:
            raise AdvisorError(f"{policy} training failed on {device.name}: {str(error).strip()[:300]}") from None
        raise AdvisorError(failure_line(cluster, error, f"training {policy}")) from None
    finally:
        keras.config.set_dtype_policy(Precision.FLOAT32.value)
    checks = _run_checks(job, model, strategy)
    one_device = dataclasses.replace(device, count=1)  # the placement check applies to the reference run
    warnings = run_warnings(checks, policy, one_device, Backend.accelerator_words, times, monitor, others_expected)
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


def _run_checks(job: Job, model: Any, strategy: Any) -> dict[str, Any]:
    """What the run checked: the model's own checks, where its variables live, the step and the replicas."""
    return {
        **job.checks(model),
        "variables_device": Backend().variable_device(model),
        "backend": "tensorflow",
        "training_step": "custom (strategy.run)" if strategy is not None else "custom",
        **({"replicas": int(strategy.num_replicas_in_sync)} if strategy is not None else {}),
    }


def _run_failures(tf) -> tuple[type[Exception], ...]:
    """TensorFlow's errors that end a run (a lost worker, a cancelled collective), reported with their cause."""
    errors = tf.errors
    return (
        errors.UnavailableError,
        errors.AbortedError,
        errors.CancelledError,
        errors.DeadlineExceededError,
        errors.InternalError,
        errors.UnknownError,
    )


def _timed_epochs(
    job: Job, step: Any, guard: InterruptGuard, progress: Progress, label: str
) -> tuple[list[float], float]:
    """Run the job's epochs of ``step()`` calls; each epoch's seconds and the last loss."""
    times: list[float] = []
    loss, last = None, math.nan
    started = time.perf_counter()
    for _ in range(job.epochs):
        begin = time.perf_counter()
        for _ in range(job.steps_per_epoch):
            loss = step()
            guard.check()  # Ctrl-C: stop at this step; the other workers see the chief leave
        last = float(loss)  # fetched to the host: the epoch's work is done on every replica
        times.append(time.perf_counter() - begin)
        progress(epoch_line(label, times, job.epochs, time.perf_counter() - started, len(times), job.epochs, last))
    return times, last


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
    dataset = batches(tf, x, y, batch_size, seed)
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
