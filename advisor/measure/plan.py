"""The checked plan of a run, and the checks of its values (no framework is imported here; the command line's
words become a plan in ``advisor.commands.measure_options``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from advisor.errors import InputError
from advisor.format.vocabulary import Precision
from advisor.measure.cluster import Cluster
from advisor.perf.workload import Workload

MIXED_POLICIES = (Precision.MIXED_FLOAT16.value, Precision.MIXED_BFLOAT16.value)
BACKENDS = ("tensorflow", "jax", "torch")
# The extra that installs each backend (pip install 'advisor[EXTRA]').
BACKEND_EXTRAS = {"tensorflow": "measure", "jax": "jax", "torch": "torch"}


@dataclass
class MeasurePlan:
    """Everything a run needs, checked before any framework starts."""

    workload: Workload
    precisions: list[str]  # "float32", "mixed" or an explicit mixed policy
    mixed_policy: str | None
    device: str  # auto | cpu | gpu
    backend: str = "tensorflow"
    devices: int = 1  # > 1: tf.distribute.MirroredStrategy over this many devices (with a cluster: per worker)
    cluster: Cluster | None = None  # several machines: tf.distribute.MultiWorkerMirroredStrategy
    scale_batch: bool = False  # with devices > 1: keep the batch per device (global batch = batch x devices)
    quick: bool = False
    seed: int = 0
    matmul_size: int = 2048
    model: Path | None = None  # a Keras model file to time instead of the LSTM
    loss: str | None = None  # for a model saved without a compile configuration
    optimizer: str | None = None
    price_usd: float | None = None
    price_usd_per_hour: float | None = None
    price_note: str | None = None
    price_date: str | None = None
    price_source: str | None = None
    power_watts: float | None = None
    name: str | None = None
    out: Path | None = None
    force: bool = False
    command: str = "advisor measure"


def check_backend(backend: str) -> None:
    """One line naming the extra to install when the backend is unknown or missing (before anything runs)."""
    if backend not in BACKENDS:
        raise InputError("backend", f"unknown backend {backend!r} (use {', '.join(BACKENDS)})")
    import importlib.util

    if importlib.util.find_spec(backend) is None or importlib.util.find_spec("keras") is None:
        extra = BACKEND_EXTRAS[backend]
        raise InputError("backend", f"the {backend} package is not installed: pip install 'advisor[{extra}]'", backend)
