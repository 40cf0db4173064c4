"""Training FLOPs of a Keras model, layer by layer (forward and backward), for the layers people use.

Forward FLOPs count a multiply-add as 2. Training costs the forward pass plus the backward pass:
about twice the forward for a layer with weights (the input gradient and the weight gradient), once
the forward for a layer without. A layer the counter does not know is counted as 0 and named in
``not_counted``. Checked against the LSTM formula of docs/reference.md and ResNet-50's published ~4 GMACs
(tests/test_model_workload.py). Keras is imported by the caller; this module reads built layers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class LayerWork:
    name: str
    type: str
    forward_flops: float  # per sample
    parameters: int
    sequential_steps: int = 1  # an RNN's timesteps: dependent steps per batch
    activations: float = 0.0  # values it keeps for the backward pass per sample (its output; an RNN: every step)

    @property
    def training_flops(self) -> float:
        return self.forward_flops * (3.0 if self.parameters else 2.0)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "flops_per_sample": float(self.training_flops),
            "parameters": int(self.parameters),
            "sequential_steps": int(self.sequential_steps),
            "activations_per_sample": float(self.activations),
        }


@dataclass
class ModelWork:
    layers: list[LayerWork] = field(default_factory=list)
    not_counted: list[str] = field(default_factory=list)

    @property
    def forward_flops(self) -> float:
        return sum(layer.forward_flops for layer in self.layers)

    @property
    def training_flops(self) -> float:
        return sum(layer.training_flops for layer in self.layers)


def _shape(tensor: Any) -> tuple:
    return tuple(tensor.shape)[1:]  # without the batch


def _size(shape: tuple) -> float:
    return float(math.prod(d for d in shape if d is not None))


def _io(layer) -> tuple[list[tuple], tuple]:
    """Input shapes and the output shape of a built layer (per sample)."""
    inputs = layer.input if isinstance(layer.input, (list, tuple)) else [layer.input]
    output = layer.output[0] if isinstance(layer.output, (list, tuple)) else layer.output
    return [_shape(t) for t in inputs], _shape(output)


def _dense(layer, inputs, output) -> float:
    return 2.0 * inputs[0][-1] * layer.units * _size(output[:-1]) + _size(output)


def _conv(layer, inputs, output) -> float:
    groups = getattr(layer, "groups", 1) or 1
    kernel = math.prod(layer.kernel_size)
    return 2.0 * kernel * (inputs[0][-1] / groups) * _size(output) + _size(output)


def _depthwise(layer, inputs, output) -> float:
    return 2.0 * math.prod(layer.kernel_size) * _size(output)


def _separable(layer, inputs, output) -> float:
    depth = 2.0 * math.prod(layer.kernel_size) * inputs[0][-1] * layer.depth_multiplier * _size(output[:-1])
    return depth + 2.0 * inputs[0][-1] * layer.depth_multiplier * _size(output)


RNN_GATES = {"LSTM": 4, "GRU": 3, "SimpleRNN": 1}


def _rnn_step(cell_type: str, units: int, features: int) -> float:
    return 2.0 * RNN_GATES[cell_type] * units * (features + units)


def _rnn(layer, inputs, output) -> float:
    timesteps, features = inputs[0][0], inputs[0][-1]
    return timesteps * _rnn_step(type(layer).__name__, layer.units, features)


def _recurrent_kept(layer, inputs) -> float:
    """What a recurrent layer keeps for the backward pass per sample, whatever it outputs: every timestep's gates,
    cell and hidden state (an LSTM's 4 gates + 2 states: 6 x units a step; a GRU's 3 + 1; a SimpleRNN's 1 + 1),
    both directions of a Bidirectional one. Its output alone (the last state) would count a thousandth of it."""
    timesteps = inputs[0][0]
    cell = layer.forward_layer if type(layer).__name__ == "Bidirectional" else layer
    directions = 2 if cell is not layer else 1
    kind = type(cell).__name__
    states = 2 if kind == "LSTM" else 1
    return float(directions * timesteps * (RNN_GATES[kind] + states) * cell.units)


def _bidirectional(layer, inputs, output) -> float:
    timesteps, features = inputs[0][0], inputs[0][-1]
    inner = layer.forward_layer
    return 2 * timesteps * _rnn_step(type(inner).__name__, inner.units, features)


def _attention(layer, inputs, output) -> float:
    """MultiHeadAttention: the query, key and value projections, the scores, their softmax, the weighted sum and
    the output projection."""
    query = inputs[0]
    value = inputs[1] if len(inputs) > 1 else query
    key = inputs[2] if len(inputs) > 2 else value
    heads, key_dim = layer.num_heads, layer.key_dim
    value_dim = layer.value_dim or key_dim
    sq, sk = _size(query[:-1]), _size(key[:-1])
    out_dim = output[-1]
    projections = 2.0 * (
        sq * query[-1] * heads * key_dim + sk * key[-1] * heads * key_dim + sk * value[-1] * heads * value_dim
    )
    scores = 2.0 * heads * sq * sk * key_dim + 3.0 * heads * sq * sk
    weighted = 2.0 * heads * sq * sk * value_dim
    return projections + scores + weighted + 2.0 * sq * heads * value_dim * out_dim


def _pooling(layer, inputs, output) -> float:
    return _size(output) * math.prod(layer.pool_size)


def _global_pooling(layer, inputs, output) -> float:
    return _size(inputs[0])


def _normalization(layer, inputs, output) -> float:
    return 5.0 * _size(output)


def _elementwise(layer, inputs, output) -> float:
    return _size(output) * max(len(inputs) - 1, 1)


def _free(layer, inputs, output) -> float:
    return 0.0


COUNTERS: dict[str, Callable[[Any, list, tuple], float]] = {
    "Dense": _dense,
    "Conv1D": _conv,
    "Conv2D": _conv,
    "Conv3D": _conv,
    "DepthwiseConv2D": _depthwise,
    "SeparableConv2D": _separable,
    "LSTM": _rnn,
    "GRU": _rnn,
    "SimpleRNN": _rnn,
    "Bidirectional": _bidirectional,
    "MultiHeadAttention": _attention,
    "MaxPooling1D": _pooling,
    "MaxPooling2D": _pooling,
    "AveragePooling1D": _pooling,
    "AveragePooling2D": _pooling,
    "GlobalAveragePooling1D": _global_pooling,
    "GlobalAveragePooling2D": _global_pooling,
    "GlobalMaxPooling1D": _global_pooling,
    "GlobalMaxPooling2D": _global_pooling,
    "BatchNormalization": _normalization,
    "LayerNormalization": _normalization,
    "GroupNormalization": _normalization,
    "Activation": _elementwise,
    "ReLU": _elementwise,
    "Softmax": _elementwise,
    "Add": _elementwise,
    "Subtract": _elementwise,
    "Multiply": _elementwise,
    "Average": _elementwise,
    "Dropout": _elementwise,
    "Embedding": _free,  # a lookup: memory, not arithmetic
    "InputLayer": _free,
    "Flatten": _free,
    "Reshape": _free,
    "Permute": _free,
    "RepeatVector": _free,
    "Concatenate": _free,
    "ZeroPadding1D": _free,
    "ZeroPadding2D": _free,
    "Cropping2D": _free,
    "Rescaling": _elementwise,
}


def count(model) -> ModelWork:
    """Every layer's forward FLOPs per sample, parameters and timesteps; nested models counted through."""
    work = ModelWork()
    for layer in model.layers:
        kind = type(layer).__name__
        if hasattr(layer, "layers") and kind not in COUNTERS:  # a nested model
            inner = count(layer)
            work.layers += inner.layers
            work.not_counted += inner.not_counted
            continue
        counter = COUNTERS.get(kind)
        try:
            inputs, output = _io(layer)
            flops = counter(layer, inputs, output) if counter else None
        except Exception:  # a layer whose shapes cannot be read (shared, unbuilt): not counted, and said so
            inputs, output, flops = [()], (), None
        if flops is None:
            work.not_counted.append(f"{layer.name} ({kind})")
            flops = 0.0
        recurrent = kind in RNN_GATES or kind == "Bidirectional"
        sequential = int(inputs[0][0]) if recurrent else 1
        kept = _recurrent_kept(layer, inputs) if recurrent and flops else (_size(output) if output else 0.0)
        work.layers.append(LayerWork(layer.name, kind, float(flops), int(layer.count_params()), sequential, kept))
    return work
