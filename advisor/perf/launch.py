"""The launch floor: a training step on a GPU takes at least the time its host needs to launch the step's kernels.

A FLOP count sees the work; it does not see that every operation of an eager framework's step is a kernel the host
launches, one after the other (PyTorch's dispatcher, the CUDA driver, the launch itself). A small step (a tiny CNN,
a batch of a few samples) is bound by that: its GPU waits for the host. The GPU's work and the host's launches
overlap (the host runs ahead), so a step takes the longer of the two, never their sum.

The operations are counted on a real step (``advisor.track.torch``: every dispatched operation that launches a
kernel, views left out; a language-model job's by ``advisor.llm.operations``). The cost of one is fitted: the
calibration's ``tau_op`` (:mod:`advisor.perf.calibration`), on the published results whose kernels are counted, the
launch-bound ones among them (Qwen's LoRA fine-tuning at 256 to 1,024 tokens: 1.0 s an iteration whatever the
length). Its range is the cross-validated error of the launch-bound results (``launch-bound`` in
``advisor/data/llm_crossval.yaml``), never narrower; without a fit, the quoted cost and its quoted spread.

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
    """The least time a run's steps take on a GPU: ``steps`` x ``operations`` launches at ``operation_seconds`` each,
    within a factor ``width`` either way (``fitted``: the calibration's cost and its cross-validated error; else the
    quoted cost and spread)."""

    operations: float  # per step, counted
    steps: float  # steps of the run
    operation_seconds: float = OPERATION_SECONDS
    width: float = math.sqrt(OPERATION_SECONDS_HIGH / OPERATION_SECONDS_LOW)
    fitted: bool = False

    @property
    def seconds(self) -> float:
        return self.steps * self.operations * self.operation_seconds

    @property
    def low(self) -> float:
        return self.seconds / self.width

    @property
    def high(self) -> float:
        return self.seconds * self.width


def floor_of(spec: dict, operation_seconds: float | None = None, width: float | None = None) -> LaunchFloor | None:
    """A tracked workload's launch floor (None where its operations were not counted: a Keras run, a published
    benchmark, a profile from before they were), at the fitted cost and width where given, else the quoted ones."""
    operations = spec.get("operations_per_step")
    steps = spec.get("steps")
    if not operations or not steps:
        return None
    if operation_seconds is None or width is None:
        return LaunchFloor(float(operations), float(steps))
    return LaunchFloor(float(operations), float(steps), operation_seconds, width, fitted=True)


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
