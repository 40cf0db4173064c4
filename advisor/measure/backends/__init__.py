"""One small module per Keras backend; each imports its framework only when a run starts.

A backend starts its framework (quietly, with the GPUs hidden for ``--device cpu``), finds the device,
states its software, measures its own matmul peak, feeds the data, says where the model's weights
live, and names its out-of-memory errors. Everything else (the model, the timing, the profile) is
shared Keras code in ``advisor.measure.train``.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from advisor.errors import AdvisorError, InputError
from advisor.format.vocabulary import DType

MODULES = {"tensorflow": "tf_backend", "jax": "jax_backend", "torch": "torch_backend"}


@dataclass
class DeviceInfo:
    kind: str  # cpu | gpu
    name: str
    framework_device: str  # "/GPU:0", "cuda:0", "cpu"...
    facts: dict[str, Any] = field(default_factory=dict)
    count: int = 1


class Backend:
    """The interface every backend module implements (a class named ``KerasBackend``)."""

    name = ""
    accelerator_words: tuple[str, ...] = ("GPU",)  # one of these must name the variables' device on a GPU

    def start(self, device: str, devices: int) -> None:
        raise NotImplementedError

    def resolve_device(self, requested: str, host: dict[str, Any], devices: int) -> DeviceInfo:
        raise NotImplementedError

    def software_facts(self, device: DeviceInfo) -> dict[str, Any]:
        raise NotImplementedError

    def matmul_peak_gflops(self, dtype: str, size: int, device: DeviceInfo) -> float:
        raise NotImplementedError

    def placement(self, device: DeviceInfo) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

    def distribution(self, device: DeviceInfo) -> contextlib.AbstractContextManager:
        """The scope the model is built in (several devices: a distribution strategy)."""
        return contextlib.nullcontext()

    def fit_arguments(self, x, y, batch_size: int, steps_per_epoch: int, seed: int) -> dict[str, Any]:
        """What ``model.fit`` is given, besides epochs and callbacks (plain arrays by default, shuffled each epoch)."""
        return {"x": x, "y": y, "batch_size": batch_size, "shuffle": True}

    def is_out_of_memory(self, error: BaseException) -> bool:
        return "out of memory" in str(error).lower() or "resource_exhausted" in str(error).lower()

    def failure_types(self) -> tuple[type[BaseException], ...]:
        """Exceptions a training run can raise that are the hardware's or the size's fault, not a bug."""
        return (RuntimeError, ValueError, TypeError)

    def synchronize(self, tensor) -> None:
        """Wait until ``tensor`` is computed (fetching one element waits for the device)."""
        import keras

        keras.ops.convert_to_numpy(keras.ops.cast(keras.ops.reshape(tensor, (-1,))[0], DType.FLOAT32.value))

    def variable_device(self, model) -> str:
        try:
            variable = model.trainable_variables[0]
            value = getattr(variable, "value", variable)
            device = getattr(value, "device", None)
            if callable(device):  # jax arrays: .device is a method in some versions
                device = device()
            if device is None and hasattr(value, "devices"):
                device = next(iter(value.devices()))
            return str(device) or "unknown"
        except Exception:
            return "unknown"

    def version(self) -> str:
        return str(getattr(sys.modules.get(self.name), "__version__", "unknown"))


MATMUL_WARMUPS, MATMUL_REPEATS, MATMUL_INNER = 2, 5, 4  # the matmul peak test: calls before timing, timed rounds of
# MATMUL_INNER calls each (the best round counts: the peak, not the average)


def matmul_gflops(multiply: Callable[[], Any], wait: Callable[[Any], None], size: int) -> float:
    """The best rate of ``multiply()`` (a ``size`` x ``size`` matmul) over MATMUL_REPEATS rounds, in GFLOP/s: each
    round launches MATMUL_INNER products and ``wait``s for the last (a device runs ahead of Python). The one timing
    loop of every backend's :meth:`Backend.matmul_peak_gflops`."""
    product = None
    for _ in range(MATMUL_WARMUPS):  # compile, autotune, allocate
        product = multiply()
    wait(product)
    best = math.inf
    for _ in range(MATMUL_REPEATS):
        start = time.perf_counter()
        for _ in range(MATMUL_INNER):
            product = multiply()
        wait(product)
        best = min(best, time.perf_counter() - start)
    return 2.0 * size**3 * MATMUL_INNER / best / 1e9


def load(name: str) -> Backend:
    """The backend of that name (its framework is not imported yet)."""
    if name not in MODULES:
        raise InputError("backend", f"unknown backend {name!r} (use {', '.join(MODULES)})")
    module = importlib.import_module(f"advisor.measure.backends.{MODULES[name]}")
    return module.KerasBackend()


def select_keras_backend(name: str) -> None:
    """Keras reads KERAS_BACKEND once, at its first import: refuse to switch in a process that already chose."""
    current = os.environ.get("KERAS_BACKEND")
    keras_loaded = "keras" in sys.modules
    if keras_loaded:
        import keras

        chosen = keras.backend.backend()
        if chosen != name:
            raise AdvisorError(
                f"this process already runs Keras on {chosen}; measure --backend {name} in a new process"
            )
    elif current and current != name:
        os.environ["KERAS_BACKEND"] = name
    else:
        os.environ.setdefault("KERAS_BACKEND", name)


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Send file descriptor 2 to /dev/null for the duration (frameworks' C++ start-up lines ignore log levels)."""
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
