"""A workload's peak training memory on a device, and the largest batch that fits.

    memory = weights + gradients + optimizer state          (4 bytes a parameter each; Adam keeps two states)
             + activations kept for the backward pass       (values per sample x batch x bytes x ACTIVATION_FACTOR)
             + the outputs and their loss                   (a model's output values per sample x batch x
                                                             OUTPUT_BYTES: a softmax over every step of a sequence
                                                             is often the largest tensor of the step)
             + the framework's own                           (OVERHEAD_GB: CUDA context, workspaces; a CPU's runtime)

in float32 or mixed precision (activations in 2 bytes; the float32 weights stay, plus a 16-bit copy). The
activations per sample come from the workload's description (a model's layers, a published workload's phases, the
LSTM's gates and states per timestep). ACTIVATION_FACTOR is fitted per device kind: on a GPU against the
published per-GPU batch sizes (each fit its GPU), on a CPU with the CPU overhead on runs measured here
(``python benchmarks/bench_memory.py``). Pure; no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from advisor.format.units import CARD_BYTES_PER_STATED_GB
from advisor.format.vocabulary import DeviceKind, Precision, WorkloadKind
from advisor.llm.job import FAMILY as LANGUAGE_MODEL_FAMILY

GB = 1e9
# Optimizer states per parameter (each the size of the weights). SGD counts its momentum buffer (the published
# benchmarks' SGD uses momentum; Keras's SGD without momentum keeps none: then this overstates by one copy).
OPTIMIZER_STATES = {
    "adam": 2,
    "adamw": 2,
    "nadam": 2,
    "adamax": 2,
    "lamb": 2,
    "adafactor": 1,
    "lion": 1,
    "rmsprop": 1,
    "adagrad": 1,
    "adadelta": 2,
    "ftrl": 2,
    "sgd": 1,
}
DEFAULT_STATES = 2  # an optimizer not in the table: as Adam
# Activations kept per described activation (the inputs saved for the backward pass, masks; in-place layers keep
# none), and the framework's own memory, per device kind. GPU: the largest factor at which 95 % of the published
# per-GPU batches fit their card's memory (0.71, the card's binary GB counted as the decimal GB they are; the CUDA
# context and workspaces taken as 0.8 GB, not measured here); CPU: fitted on the runs measured here
# (benchmarks/bench_memory.py, 2026-12-01; the GPU factor refitted 2026-12-03).
ACTIVATION_FACTOR = {DeviceKind.GPU: 0.71, DeviceKind.CPU: 1.45}
OVERHEAD_GB = {DeviceKind.GPU: 0.8, DeviceKind.CPU: 0.135}
USABLE = 0.95  # the share of a GPU's memory a training run can use (the driver, a display, fragmentation keep the rest)


def card_gb(capacity_gb: float) -> float:
    """A card's memory in decimal GB (what every prediction counts), from its datasheet's binary figure: 24 -> 25.77."""
    return capacity_gb * CARD_BYTES_PER_STATED_GB


# Bytes per output value at the loss, in either precision: the output in float32 (Keras keeps an output layer
# float32 under a mixed policy; a 16-bit output and its float32 copy cost as much), the loss's float32 intermediate
# it keeps for the backward pass (the log of a softmax), and the output's float32 gradient. Arithmetic: no factor.
OUTPUT_BYTES = 4 + 4 + 4
# A tracked run's saved tensors already hold the output's copies the loss keeps; its float32 gradient comes on top.
OUTPUT_GRADIENT_BYTES = 4


@dataclass(frozen=True)
class Footprint:
    """A prediction: the parts in GB and their total."""

    static_gb: float  # weights, gradients, optimizer state
    activation_gb: float
    overhead_gb: float

    @property
    def total_gb(self) -> float:
        return self.static_gb + self.activation_gb + self.overhead_gb


def parameters(spec: dict[str, Any]) -> float | None:
    """The workload's weights: a model's or a published workload's parameters, or the LSTM's
    (4 x units x (features + units + 1) and the Dense head)."""
    if spec.get("parameters"):
        return float(spec["parameters"])
    if spec.get("kind", WorkloadKind.LSTM) == WorkloadKind.LSTM:
        return 4.0 * spec["units"] * (spec["features"] + spec["units"] + 1) + spec["units"] + 1
    return None


# A tracked run's activations are counted, not described: the bytes autograd kept for the backward pass on a real
# step. The backward pass adds what it computes while those are alive (the activations' gradients, a layer at a
# time, and the temporaries of its kernels): TRANSIENT_FACTOR, on top of what was kept, bounds that from above for
# the tracked loops of the tests (the CPU's measured peak against the counted parts, tests/test_track.py).
TRANSIENT_FACTOR = 1.5


def activations_per_sample(spec: dict[str, Any]) -> float | None:
    """Values a sample's forward pass writes: a model's layers', a published workload's phases', the LSTM's four
    gates, cell and hidden state per timestep (and its input)."""
    kind = spec.get("kind", WorkloadKind.LSTM)
    if kind == WorkloadKind.MODEL:
        return float(sum(layer.get("activations_per_sample") or 0.0 for layer in spec["layers"]))
    if kind == WorkloadKind.PUBLISHED:
        return float(sum(phase.get("activations_per_sample") or 0.0 for phase in spec["phases"]))
    if kind == WorkloadKind.LSTM:
        return float(spec["timesteps"] * (6 * spec["units"] + spec["features"]))
    return None


def output_values_per_sample(spec: dict[str, Any]) -> float:
    """A model's output values per sample, from its outputs' shapes (``float32[512, 8000]``: 4,096,000); 0 where
    the description has none."""
    total = 0.0
    for text in spec.get("outputs") or []:
        dims = str(text).partition("[")[2].rstrip("]")
        sizes = [d.strip() for d in dims.split(",") if d.strip()]
        if all(d.isdigit() for d in sizes):
            total += float(math.prod(int(d) for d in sizes))
    return total


def predict(
    spec: dict[str, Any],
    precision: str,
    device_kind: str = DeviceKind.GPU.value,
    batch: int | None = None,
    activation_factor: float | None = None,
    overhead_gb: float | None = None,
) -> Footprint | None:
    """The peak training memory of the workload (at its batch per device, or ``batch``); None when its parameters
    or activations are unknown, and for a language-model job: its memory is :mod:`advisor.llm.job_memory`'s, which
    needs what the description leaves out (the method, the adapters, the training stack)."""
    if spec.get("family") == LANGUAGE_MODEL_FAMILY:
        return None
    if spec.get("kind") == WorkloadKind.TRACKED:
        return _tracked(spec, precision, device_kind, batch, overhead_gb)
    weights, activations = parameters(spec), activations_per_sample(spec)
    if weights is None or activations is None:
        return None
    mixed = precision != Precision.FLOAT32
    states = OPTIMIZER_STATES.get(str(spec.get("optimizer", "")).lower(), DEFAULT_STATES)
    static = weights * (4 * (2 + states) + (2 if mixed else 0))
    batch = batch or int(spec["batch_size"])
    factor = ACTIVATION_FACTOR[device_kind] if activation_factor is None else activation_factor
    outputs = min(output_values_per_sample(spec), activations)  # the output layer's values, counted at the loss
    kept = (activations - outputs) * batch * (2 if mixed else 4) * factor + outputs * batch * OUTPUT_BYTES
    overhead = OVERHEAD_GB[device_kind] if overhead_gb is None else overhead_gb
    return Footprint(static / GB, kept / GB, overhead)


def _tracked(
    spec: dict[str, Any], precision: str, device_kind: str, batch: int | None, overhead_gb: float | None
) -> Footprint | None:
    """A tracked run's footprint from its counted parts: every weight (4 bytes), a gradient and the optimizer's
    states for each trainable one, a 16-bit copy in mixed precision, the bytes its forward pass kept per sample
    (counted in the precision it was tracked in) for one micro-batch, times TRANSIENT_FACTOR, and its outputs'
    float32 gradient at the loss."""
    counted = spec.get("activation_bytes_per_sample")
    if counted is None or spec.get("parameters") is None:
        return None
    weights, trainable = float(spec["parameters"]), float(spec.get("trainable_parameters", spec["parameters"]))
    mixed = precision != Precision.FLOAT32
    states = OPTIMIZER_STATES.get(str(spec.get("optimizer", "")).lower(), DEFAULT_STATES)
    static = 4 * weights + 4 * trainable * (1 + states) + (2 * weights if mixed else 0)
    micro = (batch or int(spec["batch_size"])) / int(spec.get("gradient_accumulation") or 1)
    # Counted in mixed precision, predicted in float32: the 16-bit activations would take twice the bytes. The
    # other way round they are kept as counted (float32 bytes: an upper bound).
    widen = 2.0 if not mixed and spec.get("counted_precision", Precision.FLOAT32) != Precision.FLOAT32 else 1.0
    kept = float(counted) * micro * TRANSIENT_FACTOR * widen
    kept += float(spec.get("output_values_per_sample") or 0.0) * micro * OUTPUT_GRADIENT_BYTES
    overhead = OVERHEAD_GB[device_kind] if overhead_gb is None else overhead_gb
    return Footprint(static / GB, kept / GB, overhead)


def largest_batch(spec: dict[str, Any], precision: str, memory_gb: float) -> int:
    """The largest batch whose footprint fits a card of ``memory_gb`` (its datasheet's figure; x USABLE); 0 when not
    even one sample does."""
    one = predict(spec, precision, batch=1)
    if one is None:
        return 0
    room = card_gb(memory_gb) * USABLE - one.static_gb - one.overhead_gb
    return max(0, math.floor(room / one.activation_gb)) if one.activation_gb > 0 else 10**9
