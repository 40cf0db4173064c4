"""The timed training job: its parameters and its data set (NumPy only; its command-line words are in
``advisor.commands.arguments``)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from advisor.format.schema import DEFAULT_WORKLOAD
from advisor.format.vocabulary import WorkloadKind


@dataclass(frozen=True)
class Workload:
    """The LSTM training job. The defaults are the post's: LSTM(1000) on 937 series of 100 steps."""

    name: str = DEFAULT_WORKLOAD["name"]
    kind: str = WorkloadKind.LSTM
    units: int = DEFAULT_WORKLOAD["units"]
    timesteps: int = DEFAULT_WORKLOAD["timesteps"]
    features: int = DEFAULT_WORKLOAD["features"]
    train_samples: int = DEFAULT_WORKLOAD["train_samples"]
    batch_size: int = DEFAULT_WORKLOAD["batch_size"]
    epochs: int = DEFAULT_WORKLOAD["epochs"]
    optimizer: str = DEFAULT_WORKLOAD["optimizer"]
    learning_rate: float = DEFAULT_WORKLOAD["learning_rate"]

    @property
    def steps_per_epoch(self) -> int:
        return math.ceil(self.train_samples / self.batch_size)

    def is_default(self) -> bool:
        return self.as_dict() == DEFAULT_WORKLOAD

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def training_flops_per_epoch(self) -> float:
        """Floating-point operations of one training epoch (forward + backward), see docs/reference.md.

        An LSTM step does 4 gate matmuls of (features + units) x units per sample: 8 * units *
        (features + units) FLOPs forward. Backward costs about twice the forward (gradients for the
        inputs and for the weights), so training is 3x forward; the Dense(1) head adds 6 * units.
        """
        forward_step = lstm_step_flops(self.units, self.features)
        per_sample = 3 * (self.timesteps * forward_step) + 6 * self.units
        return float(per_sample * self.train_samples)


def make_dataset(workload: Workload, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A seeded, learnable binary classification set of univariate (or multivariate) series.

    Class 1 series carry a slow sine wave, class 0 series a faster one, both under heavy noise, so
    the model can learn something (as the post's ~70 % accuracy) without a downloaded data set.
    Returns x of shape (train_samples, timesteps, features) float32 and y of shape (train_samples, 1).
    """
    rng = np.random.default_rng(seed)
    n, t, f = workload.train_samples, workload.timesteps, workload.features
    labels = rng.integers(0, 2, size=n)
    steps = np.arange(t, dtype=np.float64)[None, :, None]
    periods = np.where(labels == 1, 40.0, 15.0)[:, None, None] * rng.uniform(0.8, 1.25, size=(n, 1, f))
    phases = rng.uniform(0, 2 * np.pi, size=(n, 1, f))
    signal = 0.6 * np.sin(2 * np.pi * steps / periods + phases)
    noise = rng.normal(0.0, 1.0, size=(n, t, f))
    x = (signal + noise).astype(np.float32)
    y = labels.astype(np.float32).reshape(n, 1)
    return x, y


def lstm_step_flops(units: int, features: int) -> float:
    """Forward FLOPs of one LSTM timestep for one sample: four gate matmuls of (features + units) x units,
    8 x units x (features + units). Training costs about 3x (backward is twice the forward)."""
    return 8.0 * units * (features + units)
