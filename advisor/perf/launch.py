"""The launch floor: a training step on a GPU takes at least the time its host needs to launch the step's kernels.

A FLOP count sees the work; it does not see that every operation of an eager framework's step is a kernel the host
launches, one after the other (PyTorch's dispatcher, the CUDA driver, the launch itself). A small step (a tiny CNN,
a batch of a few samples) is bound by that: its GPU waits for the host. The GPU's work and the host's launches
overlap (the host runs ahead), so a step takes the longer of the two, never their sum.

The operations are counted on a real step (``advisor.track.torch``: every dispatched operation that launches a
kernel, views left out); the cost of one is quoted, not fitted: no GPU result of a tracked job with its operations
counted exists to fit it on, and the published benchmarks say nothing of their kernels. Its range is the quoted
spread, which is what is known of it (a factor of 2.6 each way), never the narrower range of the FLOPs' part.

Pure Python; no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Seconds a GPU step spends per operation it launches: (low, high), each quoted with its source.
OPERATION_SECONDS_LOW = 3e-6  # a null kernel's launch on recent hardware and software, the "speed of light"
# (NVIDIA developer forums: https://forums.developer.nvidia.com/t/too-much-time-for-kernel-launch-latency/233645/3)
OPERATION_SECONDS_HIGH = 20e-6  # a PyTorch element-wise kernel's host-to-device round trip on a Tesla V100, as
# NVIDIA's Nsight Systems guide measured it (quoted by
# https://groundy.com/articles/every-cuda-kernel-pays-a-launch-tax-the-host-to-device-walkthrough/)
OPERATION_SECONDS = math.sqrt(OPERATION_SECONDS_LOW * OPERATION_SECONDS_HIGH)  # the point: their geometric mean


@dataclass(frozen=True)
class LaunchFloor:
    """The least time a run's steps take on a GPU: ``steps`` x ``operations`` launches at the quoted cost."""

    operations: float  # per optimizer step, counted
    steps: float  # optimizer steps of the run

    @property
    def seconds(self) -> float:
        return self.steps * self.operations * OPERATION_SECONDS

    @property
    def low(self) -> float:
        return self.steps * self.operations * OPERATION_SECONDS_LOW

    @property
    def high(self) -> float:
        return self.steps * self.operations * OPERATION_SECONDS_HIGH


def floor_of(spec: dict) -> LaunchFloor | None:
    """A tracked workload's launch floor (None where its operations were not counted: a Keras run, a published
    benchmark, a profile from before they were)."""
    operations = spec.get("operations_per_step")
    steps = spec.get("steps")
    if not operations or not steps:
        return None
    return LaunchFloor(float(operations), float(steps))


@dataclass(frozen=True)
class Floored:
    """An estimate's time and range once the launch floor is applied, and whether the floor decided it."""

    seconds: float
    low: float
    high: float
    launch_bound: bool


def apply(seconds: float, low: float, high: float, floor: LaunchFloor | None) -> Floored:
    """The GPU's estimated time (``seconds``, ``low``..``high``) against the host's launches: each end the longer of
    the two (they overlap). Where the launches decide the point, the range is theirs at least."""
    if floor is None:
        return Floored(seconds, low, high, False)
    return Floored(max(seconds, floor.seconds), max(low, floor.low), max(high, floor.high), floor.seconds > seconds)
