"""The performance model: a workload's training time on hardware nobody measured, with an honest range.

A training run is a sequence of dependent steps (for an LSTM: every timestep of every batch of every
epoch, forward and backward). Each step of each phase of the work is bound by one of three things,
whichever is slowest:

- **arithmetic**: its FLOPs / (eta_arith x the device's peak for the precision: float32, TF32, or
  float16 / bfloat16 tensor cores);
- **memory**: its bytes / (eta_mem x the device's memory bandwidth); an LSTM re-reads its gate
  weights every timestep unless they fit in the L2 cache;
- **per-step**: a fixed cost per step (kernel launches and synchronisation), which dominates on
  very fast GPUs;

plus a fixed start-up per run (tracing, autotuning: the first epoch's extra time). The four
constants (eta_arith, eta_mem, step_seconds, startup_seconds) are fitted to the measured and quoted
results of the workload, in log space, with weak priors that only matter where the results cannot
pin a constant down. The error is the leave-one-out error over those results; every estimate's
``low``..``high`` range widens when the device lies outside what the results cover (a far higher
peak, a newer architecture, a bound no result showed).

Pure NumPy; no I/O, no TensorFlow. docs/reference.md writes the model and its fitted constants out.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from advisor.format.vocabulary import Bound, DeviceKind, DType, Precision, WorkloadKind, words
from advisor.perf.basis import Basis, ClauseRecord, MachineCalibration, NoPeak, NoPlatformFit
from advisor.perf.workload import lstm_step_flops
from advisor.store.catalog import Gpu

BOUNDS = words(Bound)
# what `measure` runs on a GPU ("mixed" = mixed_float16)
GPU_PRECISIONS = (Precision.FLOAT32.value, Precision.MIXED_FLOAT16.value)
BYTES = {Precision.FLOAT32: 4, Precision.MIXED_FLOAT16: 2, Precision.MIXED_BFLOAT16: 2}

# Weak priors (median, spread as a factor): physically plausible values that decide a constant only
# when the results cannot.
PRIORS = {
    "eta_arith": (0.4, 4.0),  # share of the precision's peak a recurrent step reaches
    "eta_mem": (0.5, 4.0),  # share of the memory bandwidth
    "step_seconds": (20e-6, 10.0),  # per dependent step: about ten kernel launches
    "startup_seconds": (2.0, 5.0),  # tracing and autotuning in the first epoch
}
RESULT_SIGMA = 0.10  # a measured total's spread in log space (about 10 %)
APPROXIMATE_SIGMA = 0.20  # a rounded quoted total
MIN_HALF_WIDTH = math.log(1.25)  # never claim better than +-25 % for an unmeasured device
NO_CROSS_CHECK_HALF_WIDTH = math.log(2.0)  # one result cannot check itself: a factor of 2 at least
WIDEN_PER_DOUBLING = 0.25  # log half-width added per doubling of the deciding resource beyond the results
WIDEN_NEW_ARCHITECTURE = 0.20  # an architecture no result measured
WIDEN_NEW_BOUND = 0.30  # a bound none of the results was under (its constant rests on the prior)
WIDEN_OTHER_WORK = 0.40  # no result of this work on this kind of device: the constants come from other work


@dataclass(frozen=True)
class Phase:
    """A repeated step of the work: how often it runs and what one step asks of the device."""

    name: str
    steps: float  # dependent steps per run
    flops: float  # per step
    weight_bytes: float  # per step at float32, re-read unless resident
    resident_bytes: float  # float32 size of what must stay in cache for the weights to be resident
    other_bytes: float = 0.0  # per step at float32, never resident (activations)
    operations: float = 0.0  # kernels a step launches, where counted (the step takes at least their launches)
    iteration: bool = False  # a training iteration's own cost (the optimizer's step, the host), not a dependent step


@dataclass(frozen=True)
class Work:
    """What one run of a workload asks of a device."""

    name: str
    phases: tuple[Phase, ...]
    startup: bool = True  # a measured total includes the first epoch's start-up; a published throughput does not

    @property
    def flops(self) -> float:
        return sum(p.steps * p.flops for p in self.phases)


def model_work(workload: dict) -> Work:
    """A Keras model's work (a profile's ``workload`` of kind model): one phase per layer.

    A layer runs once per batch (an RNN: once per timestep, its ``sequential_steps``); per step it does
    its training FLOPs for the batch, reads its weights three times (forward, the input gradient, the
    weight gradient) unless they fit in cache, and moves its activations three times.
    """
    batches = math.ceil(workload["train_samples"] / workload["batch_size"])
    samples_per_batch = workload["train_samples"] / batches
    phases = []
    for layer in workload["layers"]:
        sequential = int(layer.get("sequential_steps") or 1)
        per_step_samples = samples_per_batch / sequential
        weights = 4.0 * layer["parameters"]
        phases.append(
            Phase(
                name=f"{layer['name']} ({layer['type']})",
                steps=float(workload["epochs"] * batches * sequential),
                flops=layer["flops_per_sample"] * per_step_samples,
                weight_bytes=3 * weights,
                resident_bytes=weights,
                other_bytes=3 * 4.0 * (layer.get("activations_per_sample") or 0.0) * per_step_samples,
            )
        )
    return Work(name=str(workload.get("name", "model")), phases=tuple(phases))


def published_work(workload: dict, batch_size: int | None = None, devices: int = 1) -> Work:
    """A published benchmark's work (a profile's ``workload`` of kind published) on one of ``devices`` GPUs.

    Per iteration of ``batch_size`` items (the result's own batch when it ran another; each ``units_per_item``
    samples of the throughput's unit), each phase does its FLOPs for the batch (a recurrent phase in
    ``sequential_steps`` dependent steps) and moves its activations three times (written forward, read forward and
    backward); the matmul phase re-reads the weights three times. Where counted, a phase's step launches its
    ``operations_per_step`` and the iteration the workload's own.
    """
    # a batch's samples in the throughput's unit (a batch of utterances holds their mel frames)
    batch = (batch_size or workload["batch_size"]) * float(workload.get("units_per_item") or 1.0)
    iterations = workload["train_samples"] * workload["epochs"] / devices / batch
    return _phased_work(workload, batch, iterations, launches=True)


def tracked_work(workload: dict) -> Work:
    """A tracked run's work (a profile's ``workload`` of kind tracked): its phases as counted on a real step, for
    each of the run's optimizer steps (``steps``), ``batch_size`` samples a step. Like a published throughput, the
    total has no start-up: a tracked total is its steady steps (the warm-up is timed apart). Its counted kernels are
    not a phase: their launches overlap the GPU's work, a floor under the estimate (:mod:`advisor.perf.launch`)."""
    return _phased_work(workload, workload["batch_size"], float(workload["steps"]))


def _phased_work(workload: dict, batch: float, iterations: float, launches: bool = False) -> Work:
    weights = 4.0 * (workload.get("parameters") or 0)
    phases = []
    for number, phase in enumerate(workload["phases"]):
        sequential = int(phase.get("sequential_steps") or 1) if phase["kind"] == "recurrent" else 1
        per_step = batch / sequential
        earlier = workload["phases"][:number]
        reads_weights = phase["kind"] == "matmul" and not any(p["kind"] == "matmul" for p in earlier)
        phases.append(
            Phase(
                name=f"{phase['kind']} {number + 1}",
                steps=iterations * sequential,
                flops=float(phase.get("flops_per_sample") or 0.0) * per_step,
                weight_bytes=3 * weights if reads_weights else 0.0,
                resident_bytes=weights if reads_weights else 0.0,
                other_bytes=3 * 4.0 * float(phase.get("activations_per_sample") or 0.0) * per_step,
                operations=float(phase.get("operations_per_step") or 0.0) if launches else 0.0,
            )
        )
    # What an iteration costs besides its work (kernel launches, the optimizer's step, the data loader): its
    # length is fitted per workload (the per-step term), which makes a small batch slower per sample.
    # With ``launches`` (a published job), where the kernels an iteration launches were counted, that phase's
    # per-step cost is their launches instead, at the fitted cost of one; else an iteration's own fitted cost (the
    # optimizer's step, the host's data loading). A tracked job counted its iteration's kernels, optimizer step
    # included, and timed its data wait apart (a floor and a wait: advisor.perf.launch), so its iteration is a plain
    # dependent step here.
    operations = float(workload.get("operations_per_step") or 0.0) if launches else 0.0
    phases.append(
        Phase(
            name="per-iteration overhead",
            steps=iterations,
            flops=0.0,
            weight_bytes=0.0,
            resident_bytes=0.0,
            operations=operations,
            iteration=launches,
        )
    )
    return Work(name=str(workload["name"]), phases=tuple(phases), startup=False)


def lstm_work(units: int, timesteps: int, features: int, train_samples: int, batch_size: int, epochs: int) -> Work:
    """The post's job in these terms: one LSTM phase (the Dense(1) head is negligible).

    Per timestep of a batch, forward: a [batch x (features + units)] by [(features + units) x 4 units]
    matmul, 8 x batch x units x (features + units) FLOPs; backward about twice that. The gate weights,
    4 x units x (features + units) values, are read forward and twice backward (the input gradient and
    the weight-gradient accumulation); the gates' activations (4 x batch x units) three times.
    """
    batches = math.ceil(train_samples / batch_size)
    weights = 4.0 * units * (features + units)
    per_sample_step = 3 * lstm_step_flops(units, features)  # forward and backward
    steps = float(epochs * batches * timesteps)
    flops_per_step = per_sample_step * train_samples / batches  # exact total: samples, not full batches
    return Work(
        name=WorkloadKind.LSTM,
        phases=(
            Phase(
                name="LSTM timestep (forward and backward)",
                steps=steps,
                flops=flops_per_step,
                weight_bytes=3 * weights * 4,
                resident_bytes=weights * 4,
                other_bytes=3 * 4.0 * batch_size * units * 4,
            ),
        ),
    )


@dataclass(frozen=True)
class Device:
    """What the model needs to know of a device: its peaks per precision, bandwidth and cache."""

    name: str
    kind: str  # gpu | cpu
    architecture: str
    launch_year: int | None
    peaks: tuple[tuple[str, float | None, str], ...]  # (precision, TFLOPS, which peak: "TF32 tensor"...)
    bandwidth_gbs: float | None
    l2_mb: float | None
    catalog_id: str | None = None  # the catalog GPU, or a measured machine's hardware signature
    segment: str = ""  # the catalog's segment (consumer, workstation, datacenter)
    power_w: float | None = None  # board power: what sustains the clocks under load

    def peak(self, precision: str) -> float | None:
        return next((tflops for name, tflops, _ in self.peaks if name == precision), None)

    def peak_label(self, precision: str) -> str:
        return next((label for name, _, label in self.peaks if name == precision), precision)


def device_from_gpu(gpu: Gpu) -> Device:
    """A catalog GPU as the model sees it. float32 uses TF32 where the catalog gives it above the CUDA cores' peak
    (TensorFlow's and NGC PyTorch's default on Ampere and newer), else the CUDA cores' float32 peak."""
    fp32, tf32 = gpu.value("fp32_tflops"), gpu.value("tf32_tflops")
    if tf32 is not None and (fp32 is None or tf32 > 1.05 * fp32):  # GeForce Ampere: TF32 no faster, rounded
        float32, label = tf32, "TF32 tensor"
    else:
        float32, label = fp32, DType.FLOAT32.value
    return Device(
        name=gpu.name,
        kind=DeviceKind.GPU.value,
        architecture=gpu.architecture,
        launch_year=gpu.launch_year,
        peaks=(
            (Precision.FLOAT32, float32, label),
            (Precision.MIXED_FLOAT16, gpu.value("fp16_tensor_tflops"), "float16 tensor"),
            (Precision.MIXED_BFLOAT16, gpu.value("bf16_tflops"), "bfloat16 tensor"),
        ),
        bandwidth_gbs=gpu.value("memory_bandwidth_gbs"),
        l2_mb=gpu.value("l2_cache_mb"),
        catalog_id=gpu.id,
        segment=gpu.segment,
        power_w=gpu.value("board_power_w"),
    )


def device_from_measured(name: str, kind: str, signature: str, peaks_gflops: dict[str, float]) -> Device:
    """A measured machine as the model sees it: the matmul peaks `measure` recorded (per precision); its
    bandwidth and cache are unknown, so the memory bound is left out for it (the fit absorbs it)."""
    return Device(
        name=name,
        kind=kind,
        architecture=f"{kind}: {name}",
        launch_year=None,
        peaks=tuple((p, v / 1000.0, "measured matmul") for p, v in sorted(peaks_gflops.items())),
        bandwidth_gbs=None,
        l2_mb=None,
        catalog_id=signature,
    )


@dataclass(frozen=True)
class Params:
    eta_arith: float
    eta_mem: float
    step_seconds: float
    startup_seconds: float

    def as_dict(self) -> dict[str, float]:
        return {
            "eta_arith": self.eta_arith,
            "eta_mem": self.eta_mem,
            "step_seconds": self.step_seconds,
            "startup_seconds": self.startup_seconds,
        }


@dataclass(frozen=True)
class Terms:
    """One step's three candidate times (seconds) and whether the weights stayed in cache."""

    arithmetic: float
    memory: float
    per_step: float
    resident: bool


def phase_terms(phase: Phase, device: Device, precision: str) -> Terms | None:
    """A step's time under each bound at unit efficiency (None when the device lacks the precision's peak)."""
    peak = device.peak(precision)
    if peak is None or peak <= 0:
        return None
    scale = BYTES[precision] / 4
    resident = device.l2_mb is not None and phase.resident_bytes * scale <= device.l2_mb * 1e6
    traffic = phase.other_bytes * scale + (0.0 if resident else phase.weight_bytes * scale)
    memory = traffic / (device.bandwidth_gbs * 1e9) if device.bandwidth_gbs else 0.0
    return Terms(phase.flops / (peak * 1e12), memory, 1.0, resident)


def predict(work: Work, device: Device, precision: str, params: Params) -> tuple[float, str] | None:
    """(total seconds, the bound of the phase that costs most), or None when the precision has no peak."""
    total = params.startup_seconds
    worst = (0.0, Bound.ARITHMETIC.value)
    for phase in work.phases:
        terms = phase_terms(phase, device, precision)
        if terms is None:
            return None
        candidates = {
            Bound.ARITHMETIC.value: terms.arithmetic / params.eta_arith,
            Bound.MEMORY.value: terms.memory / params.eta_mem,
            Bound.STEP.value: params.step_seconds,
        }
        bound = max(candidates, key=candidates.__getitem__)
        cost = phase.steps * candidates[bound]
        total += cost
        worst = max(worst, (cost, bound))
    return total, worst[1]


# --------------------------------------------------------------------------- calibration


@dataclass(frozen=True)
class Point:
    """A calibration result: a measured or quoted total of some work on a known device."""

    label: str
    device: Device
    precision: str
    seconds: float
    work: Work
    approximate: bool = False


def _arrays(points: tuple[Point, ...]) -> tuple[np.ndarray, ...]:
    """Per point and phase (padded with empty phases): steps, arithmetic and memory seconds at unit efficiency;
    per point: log seconds, sigma."""
    width = max(len(p.work.phases) for p in points)
    steps, arith, memory = [], [], []
    for point in points:
        terms = [phase_terms(phase, point.device, point.precision) for phase in point.work.phases]
        pad = [0.0] * (width - len(terms))
        steps.append([phase.steps for phase in point.work.phases] + pad)
        arith.append([t.arithmetic for t in terms] + pad)
        memory.append([t.memory for t in terms] + pad)
    observed = np.log([p.seconds for p in points])
    sigma = np.array([APPROXIMATE_SIGMA if p.approximate else RESULT_SIGMA for p in points])
    return np.array(steps), np.array(arith), np.array(memory), observed, sigma


_NAMES = ("eta_arith", "eta_mem", "step_seconds", "startup_seconds")
_LIMITS = {  # log-space search box
    "eta_arith": (math.log(0.005), math.log(1.0)),
    "eta_mem": (math.log(0.01), math.log(1.0)),
    "step_seconds": (math.log(1e-7), math.log(1e-2)),
    "startup_seconds": (math.log(0.05), math.log(60.0)),
}


def _objective(grid: np.ndarray, arrays: tuple[np.ndarray, ...]) -> np.ndarray:
    """Penalised squared log error of every parameter set in ``grid`` (rows of log parameters)."""
    steps, arith, memory, observed, sigma = arrays
    eta_a, eta_m, step, startup = (np.exp(grid[:, i])[:, None, None] for i in range(4))
    per_step = np.maximum(np.maximum(arith[None] / eta_a, memory[None] / eta_m), step)
    predicted = np.log(startup[:, :, 0] + (steps[None] * per_step).sum(axis=2))
    data = (((predicted - observed[None]) / sigma[None]) ** 2).sum(axis=1)
    prior = sum(((grid[:, i] - math.log(PRIORS[n][0])) / math.log(PRIORS[n][1])) ** 2 for i, n in enumerate(_NAMES))
    return data + prior


def _fit_arrays(arrays: tuple[np.ndarray, ...]) -> Params:
    """Grid search in log space, refined twice around the best point."""
    low = np.array([_LIMITS[n][0] for n in _NAMES])
    high = np.array([_LIMITS[n][1] for n in _NAMES])
    center, span, count = (low + high) / 2, (high - low) / 2, 13
    for _ in range(4):
        axes = [
            np.clip(np.linspace(c - s, c + s, count), lo, hi)
            for c, s, lo, hi in zip(center, span, low, high, strict=True)
        ]
        grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 4)
        center = grid[int(np.argmin(_objective(grid, arrays)))]
        span, count = span / 4, 9
    return Params(*(float(math.exp(v)) for v in center))


def fit_params(points: tuple[Point, ...]) -> Params:
    """The constants that best explain the points (the priors alone when there are none)."""
    if not points:
        return Params(*(PRIORS[n][0] for n in _NAMES))
    return _fit_arrays(_arrays(points))


@dataclass(frozen=True)
class Estimate:
    """An estimate of a device's total for the work, or why there is none (``seconds`` None, ``no_peak``); ``basis``:
    what it rests on, by part (a measured machine's: its calibration alone)."""

    device: Device
    precision: str
    seconds: float | None
    low: float | None
    high: float | None
    bound: str | None
    basis: Basis
    no_peak: NoPeak | NoPlatformFit | None = None  # why there is no estimate

    def with_clause(self, clause: ClauseRecord, **changes) -> Estimate:
        """The estimate with a clause added to its basis and ``changes``."""
        return dataclasses.replace(self, basis=self.basis.with_clause(clause), **changes)


@dataclass
class Model:
    """A fitted model: its constants, the results it rests on and their leave-one-out errors (log)."""

    params: Params
    points: tuple[Point, ...]
    loo_errors: tuple[float, ...]  # log(predicted without the point / observed), per point
    bounds_seen: frozenset[str] = field(default_factory=frozenset)

    @property
    def half_width(self) -> float:
        """The range every estimate gets at least: the worst leave-one-out error (log)."""
        if len(self.points) < 2:
            return NO_CROSS_CHECK_HALF_WIDTH
        return max(MIN_HALF_WIDTH, max(abs(e) for e in self.loo_errors))

    def loo_factor(self) -> float | None:
        """The worst leave-one-out error as a factor (2.0: off by 2x), None without a cross-check."""
        return math.exp(max(abs(e) for e in self.loo_errors)) if len(self.points) > 1 else None

    def basis(self, work: Work | None = None) -> MachineCalibration:
        """What the model rests on: its results, their leave-one-out error, whether they are all of ``work``."""
        return MachineCalibration(
            results=tuple(f"{p.label} {p.precision}" for p in self.points),
            loo_factor=self.loo_factor(),
            of_this_workload=work is None or all(p.work == work for p in self.points),
        )

    def estimate(self, work: Work, device: Device, precision: str) -> Estimate:
        predicted = predict(work, device, precision, self.params)
        if predicted is None:
            return Estimate(
                device,
                precision,
                None,
                None,
                None,
                None,
                Basis(self.basis(work)),
                NoPeak(device.peak_label(precision), device.name),
            )
        seconds, bound = predicted
        width, wider = self._width(work, device, precision, bound)
        return Estimate(
            device, precision, seconds, seconds * math.exp(-width), seconds * math.exp(width), bound, Basis(wider)
        )

    def _width(self, work: Work, device: Device, precision: str, bound: str) -> tuple[float, MachineCalibration]:
        """The log half-width of an estimate, and the calibration with what widened it."""
        width = self.half_width
        calibrated = self.basis(work)
        if not self.points:
            return width, calibrated
        if not any(p.work == work for p in self.points):
            width += WIDEN_OTHER_WORK
            calibrated = dataclasses.replace(calibrated, other_work=True)
        resource = _resource(device, precision, bound)
        covered = [r for p in self.points if (r := _resource(p.device, p.precision, bound)) is not None]
        if resource is not None and covered:
            beyond = max(0.0, math.log(resource / max(covered)), math.log(min(covered) / resource))
            if beyond > 0:
                width += WIDEN_PER_DOUBLING * beyond / math.log(2)
                label = "peak" if bound == Bound.ARITHMETIC else "bandwidth"
                calibrated = dataclasses.replace(calibrated, beyond=(label, math.exp(beyond)))
        if device.architecture not in {p.device.architecture for p in self.points}:
            width += WIDEN_NEW_ARCHITECTURE
            calibrated = dataclasses.replace(calibrated, new_architecture=device.architecture)
        if bound not in self.bounds_seen:
            width += WIDEN_NEW_BOUND
            calibrated = dataclasses.replace(calibrated, new_bound=bound)
        return width, calibrated


def _resource(device: Device, precision: str, bound: str) -> float | None:
    """The device's resource that decides a bound: its peak (arithmetic), its bandwidth (memory), none (per-step)."""
    if bound == Bound.ARITHMETIC:
        return device.peak(precision)
    if bound == Bound.MEMORY:
        return device.bandwidth_gbs
    return None


def calibrate(points: tuple[Point, ...]) -> Model:
    """Fit the constants and cross-check them: refit without each point and predict it."""
    return _calibrate_cached(points)


@lru_cache(maxsize=64)
def _calibrate_cached(points: tuple[Point, ...]) -> Model:
    params = fit_params(points)
    errors = []
    if len(points) > 1:
        for index, point in enumerate(points):
            rest = points[:index] + points[index + 1 :]
            predicted = predict(point.work, point.device, point.precision, fit_params(rest))
            errors.append(math.log(predicted[0] / point.seconds) if predicted else 0.0)
    bounds = frozenset(b for p in points if (r := predict(p.work, p.device, p.precision, params)) for b in [r[1]])
    return Model(params, points, tuple(errors), bounds)
