"""Tracking Keras 3 ``model.fit`` with a callback (any backend: TensorFlow, JAX, PyTorch).

Keras calls ``on_train_batch_end`` once per execution (``steps_per_execution`` steps, its batch index the last
step's), after turning the step's logs into Python numbers, which waits for the device: the time between two calls
is one execution, divided among its steps. The callback is ``async_safe``: where Keras dispatches batch-end
callbacks to a thread, each call still comes after its step's logs were computed, and the calls are put back in
step order. The first execution of each epoch (its iterator, the validation before it) is left out, and so are the
warm-up steps (tracing and compiling). Keras's input pipeline runs inside the step, so the wait for data is not
timed apart. FLOPs come from the project's layer counter (:mod:`advisor.measure.flops`).
"""

from __future__ import annotations

import contextlib
import math
import platform
import threading
from typing import Any

from advisor.format.vocabulary import DeviceKind, Precision, words
from advisor.measure import flops as flop_counter
from advisor.measure import hardware
from advisor.measure.peak_memory import PeakMemory
from advisor.track.session import Counted, Options, RunFacts, Session, StepRecord, TrackError, finish, say

MATMUL_LAYERS = ("Dense", "EinsumDense", "Conv1D", "Conv2D", "Conv3D", "DepthwiseConv2D", "SeparableConv2D")
ATTENTION_LAYERS = ("MultiHeadAttention",)
RECURRENT_LAYERS = ("LSTM", "GRU", "SimpleRNN", "Bidirectional")
STATES_PER_UNIT = {"LSTM": 6, "GRU": 4, "SimpleRNN": 1}  # values a timestep keeps per unit (gates and states)


def make(batch_size: int, options: Options) -> Any:
    """The callback (a ``keras.callbacks.Callback``)."""
    _check_batch_size(batch_size)
    options.check()
    keras = _keras()

    class AdvisorTrack(keras.callbacks.Callback):
        """advisor.track for Keras: add it to ``model.fit(callbacks=[...])``."""

        async_safe = True  # timestamps are taken after Keras computed the step's logs: safe on its thread

        def __init__(self) -> None:
            super().__init__()
            self.session: Session | None = None
            self.memory: PeakMemory | None = None
            self.ends: list[tuple[int, float]] = []
            self.lock, self.epoch_start, self.fit_started = threading.Lock(), 0.0, False
            self.path, self.problem = None, None
            self.device: dict[str, Any] = {}

        def on_train_begin(self, logs=None) -> None:
            if not options.enabled:
                return
            self.fit_started = True
            self.device, framework_device = _device(keras)
            self.memory = PeakMemory(keras.backend.backend(), self.device["kind"], framework_device)
            self.memory.__enter__()
            self.session = Session(options)

        def on_epoch_begin(self, epoch, logs=None) -> None:
            with self.lock:
                self.ends = []
            self.epoch_start = Session.now()

        def on_train_batch_end(self, batch, logs=None) -> None:
            if self.session is not None:
                now = Session.now()
                with self.lock:
                    self.ends.append((int(batch), now))

        def on_epoch_end(self, epoch, logs=None) -> None:
            session = self.session
            if session is None:
                return
            with self.lock:
                ends = sorted(self.ends)
            for record in epoch_records(ends, self.epoch_start, batch_size):
                session.add(record)

        def on_test_begin(self, logs=None) -> None:
            if not self.fit_started and self.problem is None:
                self.problem = "used outside fit (evaluate or predict): nothing is tracked"
                say(self.problem)

        def on_train_end(self, logs=None) -> None:
            session, self.session = self.session, None
            if session is not None:
                self.path = _write_profile(keras, self, session, options, batch_size)

    return AdvisorTrack()


def _write_profile(keras, callback, session: Session, options: Options, batch_size: int) -> Any:
    """The fit's profile written (its path), or None and one line saying why: collecting never breaks the user's
    training."""
    if callback.memory is not None:
        callback.memory.__exit__(None, None, None)
    try:
        facts = _facts(
            keras,
            callback.model,
            callback.device,
            callback.params or {},
            batch_size,
            callback.memory.reading() if callback.memory else None,
        )
        session.counted = _counted(callback.model, batch_size, facts.precision) if options.count_flops else None
        return finish(session, facts)
    except Exception as failure:  # said, not raised
        say(f"no profile written: {type(failure).__name__}: {failure}")
        return None


def _check_batch_size(batch_size: Any) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise TrackError(f"advisor.track.keras: batch_size must be the whole number given to fit, got {batch_size!r}")


def _keras() -> Any:
    """Keras, imported only when a callback is made (the core never imports it)."""
    try:
        import keras
    except ImportError:
        raise TrackError("advisor.track.keras: Keras is not installed (pip install keras)") from None
    return keras


def epoch_records(ends: list[tuple[int, float]], epoch_start: float, batch_size: int) -> list[StepRecord]:
    """An epoch's steps from the (batch index, time) at which each logged batch ended: a batch Keras ran several
    steps of at once (``steps_per_execution``) counts them all; the epoch's first step is never clean (it holds the
    epoch's start-up)."""
    records, previous_index, previous_time = [], -1, epoch_start
    for number, (index, at) in enumerate(ends):
        steps = max(index - previous_index, 1)
        records.append(
            StepRecord(seconds=at - previous_time, wait=None, samples=batch_size * steps, steps=steps, clean=number > 0)
        )
        previous_index, previous_time = index, at
    return records


def _device(keras) -> tuple[dict[str, Any], str]:
    """The device facts of the Keras backend's first accelerator (else the CPU), and the framework's name for it."""
    backend = keras.backend.backend()
    host = hardware.host_facts()
    cpu = ({"kind": DeviceKind.CPU.value, "name": host.get("cpu", "CPU"), "count": 1}, "cpu")
    with contextlib.suppress(Exception):
        if backend == "tensorflow":
            import tensorflow as tf

            gpus = tf.config.list_physical_devices("GPU")
            if gpus:
                details = tf.config.experimental.get_device_details(gpus[0])
                return {"kind": DeviceKind.GPU.value, "name": details.get("device_name", "GPU"), "count": 1}, "GPU:0"
        elif backend == "jax":
            import jax

            device = jax.devices()[0]
            if device.platform == "gpu":
                return {"kind": DeviceKind.GPU.value, "name": device.device_kind, "count": 1}, "gpu:0"
        elif backend == "torch":
            import torch

            if torch.cuda.is_available():
                return hardware.torch_gpu_facts(torch, torch.device("cuda", 0)), "cuda:0"
            if torch.backends.mps.is_available():
                return hardware.torch_gpu_facts(torch, torch.device("mps")), "mps"
    return cpu


def _facts(
    keras, model, device: dict[str, Any], params: dict[str, Any], batch_size: int, memory: dict[str, Any] | None
) -> RunFacts:
    backend = keras.backend.backend()
    framework = __import__({"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}.get(backend, backend))
    policy = getattr(getattr(model, "dtype_policy", None), "name", None) or keras.config.dtype_policy().name
    precision = policy if policy in words(Precision) else Precision.FLOAT32.value
    optimizer = getattr(model, "optimizer", None)
    trainable = sum(int(_size(w.shape)) for w in model.trainable_weights)
    steps_per_epoch = params.get("steps")
    return RunFacts(
        device=device,
        software={
            "framework": backend,
            "framework_version": str(getattr(framework, "__version__", "unknown")),
            "keras_version": keras.__version__,
            "keras_backend": backend,
            "python": platform.python_version(),
        },
        precision=precision,
        model_class=type(model).__name__ if type(model).__name__ not in ("Sequential", "Functional") else model.name,
        parameters=int(model.count_params()),
        trainable_parameters=trainable,
        optimizer=type(optimizer).__name__.lower() if optimizer is not None else "unknown",
        identity=[(w.path, tuple(w.shape), str(w.dtype)) for w in model.weights],
        planned_epochs=params.get("epochs"),
        steps_per_epoch=steps_per_epoch if isinstance(steps_per_epoch, int) and steps_per_epoch > 0 else None,
        memory=memory,
        checks={
            "steps_per_execution": int(getattr(model, "steps_per_execution", 1) or 1),
            "synchronised": "each execution's logs converted to numbers (which waits for the device)",
        },
        notes=["Keras fit's input pipeline runs inside the step: the wait for data is not timed apart."],
    )


def _size(shape) -> int:
    total = 1
    for dimension in shape:
        total *= int(dimension)
    return total


def _layers(model) -> list:
    found = []
    for layer in getattr(model, "layers", []):
        found.append(layer)
        if hasattr(layer, "layers"):
            found += _layers(layer)
    return found


def _units(layer) -> float | None:
    """A recurrent layer's units per timestep (both directions of a Bidirectional)."""
    if hasattr(layer, "forward_layer"):
        return 2.0 * float(getattr(layer.forward_layer, "units", 0) or 0) or None
    value = getattr(layer, "units", None)
    return float(value) if value else None


def _counted(model, batch_size: int, precision: str) -> Counted:
    """One step's FLOPs by kind and the values it keeps for the backward pass, from the layer counter."""
    work = flop_counter.count(model)
    units = {layer.name: _units(layer) for layer in _layers(model)}
    by_kind = {"matmul": 0.0, "attention": 0.0, "recurrent": 0.0}
    kept, recurrent_steps = 0.0, 0
    for layer in work.layers:
        kind = (
            "attention"
            if layer.type in ATTENTION_LAYERS
            else "recurrent"
            if layer.type in RECURRENT_LAYERS
            else "matmul"
        )
        by_kind[kind] += layer.training_flops * batch_size
        if layer.type in RECURRENT_LAYERS:
            recurrent_steps = max(recurrent_steps, layer.sequential_steps)
            per_step = units.get(layer.name) or layer.activations
            kept += STATES_PER_UNIT.get(layer.type, 6) * per_step * layer.sequential_steps
        else:
            kept += 2 * layer.activations  # a layer keeps its input and output for the backward pass
    value_bytes = 4 if precision == Precision.FLOAT32 else 2
    outputs = sum(math.prod(int(d or 1) for d in tuple(t.shape)[1:]) for t in model.outputs)
    return Counted(
        flops_by_kind=by_kind,
        samples=batch_size,
        activation_bytes=kept * value_bytes * batch_size,
        activation_values=kept * batch_size,
        output_values=float(outputs * batch_size),
        precision=precision,
        method="advisor's Keras layer counter (advisor.measure.flops): forward x 3 for layers with weights",
        not_counted=list(work.not_counted),
        recurrent_steps=recurrent_steps or None,
    )
