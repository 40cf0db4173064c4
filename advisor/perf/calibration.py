"""Calibration across workloads: what the specifications alone do not say about each GPU, learnt from every
GPU result the performance model can describe (the post's LSTM, the published benchmarks, your own runs).

Each result is a total time of some described work on a catalog GPU. Its prediction keeps the three physical
bounds of :mod:`advisor.perf.perfmodel`: every step of every phase takes the slowest of its arithmetic time (its
FLOPs over the precision's peak), its memory time (its bytes over the bandwidth) and a per-step cost, combined
smoothly (the per-step cost: a dependent step's ``tau``, a training iteration's own ``tau_iteration``, or, where the
kernels a step launches were counted, their number times one fitted cost per kernel, ``tau_op``); a measured total
adds a start-up. What the fit learns are the efficiencies, in log space:

    arithmetic time = FLOPs / peak x exp(c[workload] - eta - eta_arch[architecture] - eta_gpu[gpu])
    memory time     = bytes / bandwidth x exp(m[workload] - mu - mu_arch[architecture] - mu_gpu[gpu])

per precision group (float32, mixed), the arithmetic time also times (peak / REFERENCE_TFLOPS)^(1 - gamma); in mixed
precision gamma grows by ``kappa`` per unit of the work's log arithmetic intensity (a language model's large matmuls
follow a newer GPU's tensor peak more closely than a convolutional network's small kernels). ``eta`` and ``mu`` are
the shares of the peak and of the bandwidth that training reaches on average; the architecture and GPU terms say how
far one architecture or one GPU reaches more or less (cuDNN's kernels for it, its clocks under load, its caches);
``c`` and ``m`` say how far a workload's kernels reach more or less than its described FLOPs and bytes suggest.
Every term but the global ones has a ridge prior at 0 (sigma in ``PRIOR_SIGMA``): a GPU with no result gets its
architecture's terms, an architecture with no result the global ones, a workload with no GPU result its description
at face value.

Fitted by damped Gauss-Newton (Levenberg-Marquardt) with an analytic Jacobian and Huber weights, in NumPy; no
I/O. :mod:`advisor.perf.crossval` measures how far the predictions are off on results the fit did not see.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from advisor.format.vocabulary import Precision, PrecisionGroup
from advisor.perf import launch, perfmodel
from advisor.perf.perfmodel import Device, Work

GROUPS = {precision.value: precision.group.value for precision in Precision}
SMOOTHNESS = 4.0  # the p-norm that stands in for max() between the three bounds of a step
RESULT_SIGMA = 0.10  # a measured or published total's spread in log space
APPROXIMATE_SIGMA = 0.20  # a rounded quoted total
HUBER = 1.5  # residuals beyond this many sigmas weigh less (a published outlier does not bend every GPU)
# Global constants: (prior median, sigma in log space); weak, they only matter without results.
GLOBAL_PRIORS = {
    "eta": (0.4, 2.0),  # share of the precision's peak that training's matmuls reach
    "mu": (0.5, 2.0),  # share of the memory bandwidth that element-wise work reaches
    "tau": (1e-4, 3.0),  # seconds per dependent step (an RNN's timestep: its kernel launches)
    "tau_iteration": (1e-3, 3.0),  # seconds an iteration costs besides its work (the optimizer's step, the host)
    # seconds per kernel an iteration launches, where they were counted: the quoted geometric mean of a null kernel's
    # launch and a PyTorch element-wise kernel's round trip (advisor.perf.launch), a factor e either way
    "tau_op": (launch.OPERATION_SECONDS, 1.0),
    "startup": (2.0, 2.0),  # seconds of tracing and autotuning in a measured run's first epoch
}
# How time scales with the peak and the bandwidth (1: in proportion): (prior, sigma), not in log space. ``kappa``:
# how much closer to proportional the mixed-precision peak's scaling gets per unit of the work's log arithmetic
# intensity (large matmuls follow the tensor peak, small kernels do not), pivoting at REFERENCE_INTENSITY.
SCALING_PRIORS = {"gamma": (1.0, 0.5), "delta": (1.0, 0.5), "rho": (0.0, 0.5), "kappa": (0.0, 0.25)}
REFERENCE_INTENSITY = 4.0  # log(FLOPs / byte) where kappa pivots: about ResNet-50's, the middle of the workloads
REFERENCE_TFLOPS = 100.0  # the scaling exponents pivot here: a GPU of this peak, bandwidth and power is unaffected
REFERENCE_GBS = 1000.0
REFERENCE_WATTS = 300.0
# Ridge priors (sigma in log space) of the terms that deviate from the global ones.
PRIOR_SIGMA = {
    "eta_arch": 0.5,
    "mu_arch": 0.5,
    "eta_gpu": 0.25,
    "mu_gpu": 0.25,
    "c": 1.0,
    "m": 1.5,
    "eta_peak": 0.5,
    "eta_segment": 0.5,
    "tau_w": 2.0,
}


@dataclass(frozen=True)
class Sample:
    """A calibration result: a measured or quoted total of some described work on one catalog GPU."""

    label: str
    gpu: str  # the catalog id
    workload: str  # the workload's identity, as text
    precision: str
    seconds: float
    work: Work
    device: Device
    approximate: bool = False
    model: str | None = None  # the language model of a transformer-family job (its workload's ``model``)
    model_family: str | None = None  # the kind of model (vocabulary.ModelFamily), None where it is not known

    @property
    def architecture(self) -> str:
        return self.device.architecture

    @property
    def group(self) -> str:
        return GROUPS[self.precision]


@dataclass(frozen=True)
class Situation:
    """What the calibration knows of an estimate's GPU and workload; ranges are cross-validated per situation."""

    gpu: str  # "gpu": the GPU has results of other work; "architecture": others of its architecture do; "new"
    workload: str  # in its precision group: "results" on 5 GPUs or more, "few" on 2-4, "reference" on one,
    # "description" on none (its description at face value)

    @property
    def key(self) -> str:
        return f"{self.gpu}/{self.workload}"


GPU_SITUATIONS = ("gpu", "architecture", "new")
WORKLOAD_SITUATIONS = ("results", "few", "reference", "description")
MANY_GPUS = 5  # a workload with results on this many GPUs or more is "results", fewer (but 2) "few"
TYPICAL_WEIGHT = 0.5  # a workload with one reference GPU: the share of the typical workload's scaling
SIMILARITY = 1.0  # how fast a workload's weight in the typical scaling falls with its distance in log intensity


_Terms = tuple[np.ndarray, np.ndarray, np.ndarray, float, float, float]


def _iterations(work: Work) -> np.ndarray:
    """Per phase: whether it is an iteration's own cost (its per-step term ``tau_iteration``, else ``tau``)."""
    return np.array([p.iteration for p in work.phases])


def _log_operations(work: Work) -> np.ndarray:
    """Per phase: the log of the kernels a step launches, where counted; NaN where not (the fitted per-step term)."""
    return np.array([math.log(p.operations) if p.operations > 0 else np.nan for p in work.phases])


def _terms(work: Work, device: Device, precision: str) -> _Terms | None:
    """Per phase: steps, log arithmetic and log memory seconds per step at unit efficiency on a reference device
    (REFERENCE_TFLOPS, REFERENCE_GBS); then the device's log peak, bandwidth and power relative to the reference
    (None without the peak)."""
    terms = [perfmodel.phase_terms(phase, device, precision) for phase in work.phases]
    if any(t is None for t in terms):
        return None
    steps = np.array([phase.steps for phase in work.phases], dtype=float)
    peak = math.log(device.peak(precision) / REFERENCE_TFLOPS)  # type: ignore[operator]
    bandwidth = math.log(device.bandwidth_gbs / REFERENCE_GBS) if device.bandwidth_gbs else 0.0
    arith = _log(np.array([t.arithmetic for t in terms])) + peak
    memory = _log(np.array([t.memory for t in terms])) + bandwidth
    power = math.log(device.power_w / REFERENCE_WATTS) if device.power_w else 0.0
    return steps, arith, memory, peak, bandwidth, power


def _log(values: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(values)


@dataclass
class Fit:
    """The fitted efficiencies and what the results covered."""

    theta: np.ndarray
    index: dict[tuple, int]
    samples: tuple[Sample, ...]
    gpu_workloads: dict[str, set[str]] = field(default_factory=dict)  # per GPU: the workloads it has results of
    workload_gpus: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # per (workload, group): GPUs
    architectures: frozenset[str] = frozenset()
    _typical: dict[str, list[Sample]] = field(default_factory=dict, repr=False)  # per group, made on first use
    _there: dict[tuple, tuple[float, str] | None] = field(default_factory=dict, repr=False)  # on the reference GPU
    _here: dict[tuple, tuple[float, str] | None] = field(default_factory=dict, repr=False)  # on the GPUs estimated

    def value(self, *key) -> float:
        """A fitted log-space term (its prior mean, 0 or the global prior, when no result decided it)."""
        position = self.index.get(key)
        if position is not None:
            return float(self.theta[position])
        return _prior(key)[0]

    def factors(self, device: Device, precision: str, workload: str) -> tuple[float, float]:
        """(log arithmetic factor, log memory factor): what multiplies unit-efficiency times."""
        group, gpu, arch = GROUPS[precision], device.catalog_id or device.name, device.architecture
        alpha = self.value("c", workload, group) - sum(self.value(*key) for key in _eta_keys(device, group))
        beta = (
            self.value("m", workload, group)
            - self.value("mu")
            - self.value("mu_arch", arch)
            - self.value("mu_gpu", gpu)
        )
        return alpha, beta

    def _phase_costs(
        self, work: Work, device: Device, precision: str, workload: str
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Per phase: the log seconds a step takes by each bound (arithmetic, memory, per-step), the log seconds of a
        step (their smooth maximum) and the phase's seconds; None without the precision's peak."""
        terms = _terms(work, device, precision)
        if terms is None:
            return None
        steps, arith, memory, peak, bandwidth, power = terms
        alpha, beta = self.factors(device, precision, workload)
        gamma, delta, rho = self.value("gamma", GROUPS[precision]), self.value("delta"), self.value("rho")
        if GROUPS[precision] == PrecisionGroup.MIXED:
            gamma += self.value("kappa") * (_intensity(work) - REFERENCE_INTENSITY)
        own = np.where(_iterations(work), self.value("tau_iteration"), self.value("tau"))
        tau = own + self.value("tau_w", workload)
        operations = _log_operations(work)
        launches = np.where(np.isnan(operations), tau, np.nan_to_num(operations) + self.value("tau_op"))
        candidates = np.stack([alpha + arith - gamma * peak - rho * power, beta + memory - delta * bandwidth, launches])
        log_step = np.logaddexp.reduce(SMOOTHNESS * candidates, axis=0) / SMOOTHNESS
        return candidates, log_step, steps * np.exp(log_step)

    def predict(self, work: Work, device: Device, precision: str, workload: str) -> tuple[float, str] | None:
        """(total seconds, the bound of the costliest phase), or None when the device lacks the precision's peak."""
        found = self._phase_costs(work, device, precision, workload)
        if found is None:
            return None
        candidates, _, costs = found
        startup = math.exp(self.value("startup")) if work.startup else 0.0
        bound = perfmodel.BOUNDS[int(np.argmax(candidates[:, int(np.argmax(costs))]))]
        return startup + float(costs.sum()), bound

    def shares(self, work: Work, device: Device, precision: str, workload: str) -> dict[str, float]:
        """Each bound's share of the predicted steps' time (the smooth maximum's weights, by phase cost): how far
        the arithmetic, the memory traffic or the per-step cost decides it; empty without the precision's peak."""
        found = self._phase_costs(work, device, precision, workload)
        if found is None:
            return {}
        candidates, log_step, costs = found
        weights = np.exp(SMOOTHNESS * (candidates - log_step[None])) * costs[None] / costs.sum()
        return dict(zip(perfmodel.BOUNDS, (float(w) for w in weights.sum(axis=1)), strict=True))

    def estimate(self, work: Work, device: Device, precision: str, workload: str) -> tuple[float, str] | None:
        """The estimate: :meth:`predict`, except for a workload with results on one GPU only, whose own description
        decides how it scales from that GPU to this one no better than other workloads do. There the estimate
        averages (in log space, ``TYPICAL_WEIGHT``) its own prediction and the reference's time scaled as the
        workloads with results scale between the two GPUs, weighted by how close their arithmetic intensity
        (described FLOPs per byte) is to this workload's."""
        predicted = self.predict(work, device, precision, workload)
        if predicted is None or self.situation(device, workload, precision).workload != "reference":
            return predicted
        group = GROUPS[precision]
        reference = next(
            s
            for s in self.samples
            if s.workload == workload and s.group == group and s.gpu != (device.catalog_id or device.name)
        )
        ratios, weights = [], []
        for other in self._representatives(group):
            if other.workload == workload:
                continue
            here = self._on(other, device, precision)
            there = self._at_reference(other, reference)
            if here and there:
                ratios.append(math.log(here[0] / there[0]))
                weights.append(math.exp(-((_intensity(other.work) - _intensity(work)) ** 2) / (2 * SIMILARITY**2)))
        if not ratios:
            return predicted
        typical = math.log(reference.seconds) + float(np.average(ratios, weights=weights))
        blended = (1 - TYPICAL_WEIGHT) * math.log(predicted[0]) + TYPICAL_WEIGHT * typical
        return math.exp(blended), predicted[1]

    def _on(self, other: Sample, device: Device, precision: str) -> tuple[float, str] | None:
        """A representative workload's prediction on a GPU estimated: kept, for the GPU's other estimates of this
        workload (two GPUs' share of a batch, the whole batch again) ask for the same ones (a third of a restart's
        estimates)."""
        key = (other.workload, other.precision, device, precision)
        if key not in self._here:
            self._here[key] = self.predict(other.work, device, precision, other.workload)
        return self._here[key]

    def _at_reference(self, other: Sample, reference: Sample) -> tuple[float, str] | None:
        """A representative workload's prediction on the reference GPU: the same for every GPU estimated, kept."""
        key = (other.workload, other.precision, reference.gpu, reference.precision)
        if key not in self._there:
            self._there[key] = self.predict(other.work, reference.device, reference.precision, other.workload)
        return self._there[key]

    def _representatives(self, group: str) -> list[Sample]:
        """One sample per workload of the group with results on MANY_GPUS or more (their scaling is known)."""
        if group not in self._typical:
            found: dict[str, Sample] = {}
            for s in self.samples:
                if s.group == group and len(self.workload_gpus.get((s.workload, group), ())) >= MANY_GPUS:
                    found.setdefault(s.workload, s)
            self._typical[group] = list(found.values())
        return self._typical[group]

    def situation(self, device: Device, workload: str, precision: str) -> Situation:
        """What the fit knows of this GPU (apart from this workload) and of this workload (apart from this GPU)."""
        gpu = device.catalog_id or device.name
        if self.gpu_workloads.get(gpu, set()) - {workload}:
            gpu_situation = "gpu"
        elif device.architecture in self.architectures:
            gpu_situation = "architecture"
        else:
            gpu_situation = "new"
        covered = len(self.workload_gpus.get((workload, GROUPS[precision]), set()) - {gpu})
        workload_situation = (
            "results"
            if covered >= MANY_GPUS
            else "few"
            if covered >= 2
            else "reference"
            if covered == 1
            else "description"
        )
        return Situation(gpu_situation, workload_situation)

    def constants(self) -> dict[str, float]:
        """The global constants, as plain numbers (the reference and the app write them out)."""
        return {
            "eta_float32": math.exp(self.value("eta", PrecisionGroup.FLOAT32)),
            "eta_mixed": math.exp(self.value("eta", PrecisionGroup.MIXED)),
            "mu": math.exp(self.value("mu")),
            "gamma_float32": self.value("gamma", PrecisionGroup.FLOAT32),
            "gamma_mixed": self.value("gamma", PrecisionGroup.MIXED),
            "kappa_mixed": self.value("kappa"),
            "delta": self.value("delta"),
            "rho": self.value("rho"),
            "step_seconds": math.exp(self.value("tau")),
            "iteration_seconds": math.exp(self.value("tau_iteration")),
            "startup_seconds": math.exp(self.value("startup")),
        }

    def operation_seconds(self) -> float | None:
        """The fitted seconds a GPU step spends per kernel it launches (None: no result with counted kernels)."""
        return math.exp(self.value("tau_op")) if ("tau_op",) in self.index else None

    def terms(self, kind: str) -> dict[tuple, float]:
        """Every fitted term of one kind (eta_arch, eta_gpu, c...) as a factor: exp(its log value)."""
        return {key[1:]: math.exp(float(self.theta[i])) for key, i in self.index.items() if key[0] == kind}


def _intensity(work: Work) -> float:
    """log(FLOPs / bytes moved) of the work as described."""
    flops = sum(p.steps * p.flops for p in work.phases)
    moved = sum(p.steps * (p.other_bytes + p.weight_bytes) for p in work.phases)
    return math.log(max(flops, 1.0) / max(moved, 1.0))


def _eta_keys(device: Device, group: str) -> tuple[tuple, ...]:
    """The terms of a device's arithmetic efficiency: global, its peak's kind (CUDA-core float32, TF32 tensor,
    float16 tensor), its segment, its architecture and itself."""
    gpu = device.catalog_id or device.name
    return (
        ("eta", group),
        ("eta_peak", device.peak_label(_PRECISION_OF[group]), group),
        ("eta_segment", device.segment, group),
        ("eta_arch", device.architecture, group),
        ("eta_gpu", gpu, group),
    )


_PRECISION_OF = {PrecisionGroup.FLOAT32.value: Precision.FLOAT32, PrecisionGroup.MIXED.value: Precision.MIXED_FLOAT16}


def _prior(key: tuple) -> tuple[float, float]:
    """A term's prior mean and sigma (log space, except the scaling exponents)."""
    if key[0] in GLOBAL_PRIORS:
        median, sigma = GLOBAL_PRIORS[key[0]]
        return math.log(median), sigma
    if key[0] in SCALING_PRIORS:
        return SCALING_PRIORS[key[0]]
    return 0.0, PRIOR_SIGMA[key[0]]


def _layout(samples: tuple[Sample, ...]) -> tuple[dict[tuple, int], np.ndarray, np.ndarray]:
    """The parameters the samples can inform: their index, prior means and prior sigmas."""
    keys: list[tuple] = []

    def add(key: tuple) -> None:
        if key not in seen:
            seen.add(key)
            keys.append(key)

    seen: set[tuple] = set()
    for s in samples:
        for key in (
            *_eta_keys(s.device, s.group),
            ("mu",),
            ("mu_arch", s.architecture),
            ("mu_gpu", s.gpu),
            ("c", s.workload, s.group),
            ("m", s.workload, s.group),
            ("tau",),
            ("tau_w", s.workload),
            ("gamma", s.group),
            ("delta",),
            ("rho",),
        ):
            add(key)
        if s.group == PrecisionGroup.MIXED:
            add(("kappa",))
        if s.work.startup:
            add(("startup",))
        if any(p.operations > 0 for p in s.work.phases):
            add(("tau_op",))
        if any(p.iteration and not p.operations for p in s.work.phases):
            add(("tau_iteration",))
    means = np.array([_prior(k)[0] for k in keys])
    sigmas = np.array([_prior(k)[1] for k in keys])
    return {key: i for i, key in enumerate(keys)}, means, sigmas


class _Problem:
    """The samples as arrays: phases padded to the longest work, incidence of each parameter."""

    def __init__(self, samples: tuple[Sample, ...], index: dict[tuple, int]) -> None:
        width = max(len(s.work.phases) for s in samples)
        n, size = len(samples), len(index)
        self.steps = np.zeros((n, width))
        self.log_arith = np.full((n, width), -np.inf)
        self.log_memory = np.full((n, width), -np.inf)
        self.alpha = np.zeros((n, size))  # d log(arithmetic factor) / d theta
        self.beta = np.zeros((n, size))
        self.startup = np.array([1.0 if s.work.startup else 0.0 for s in samples])
        self.scale_arith = np.zeros((n, size))  # d log(arithmetic time) / d theta through the scaling exponent
        self.scale_memory = np.zeros((n, size))
        for row, s in enumerate(samples):
            steps, arith, memory, peak, bandwidth, power = _terms(s.work, s.device, s.precision)  # type: ignore[misc]
            count = len(steps)
            self.steps[row, :count] = steps
            self.log_arith[row, :count] = arith
            self.log_memory[row, :count] = memory
            self.scale_arith[row, index[("gamma", s.group)]] = -peak
            if s.group == PrecisionGroup.MIXED:
                self.scale_arith[row, index[("kappa",)]] = -peak * (_intensity(s.work) - REFERENCE_INTENSITY)
            self.scale_arith[row, index[("rho",)]] = -power
            self.scale_memory[row, index[("delta",)]] = -bandwidth
            self.alpha[row, index[("c", s.workload, s.group)]] += 1
            for key in _eta_keys(s.device, s.group):
                self.alpha[row, index[key]] -= 1
            self.beta[row, index[("m", s.workload, s.group)]] += 1
            for key in (("mu",), ("mu_arch", s.architecture), ("mu_gpu", s.gpu)):
                self.beta[row, index[key]] -= 1
        self.tau = np.zeros((n, size))  # d log(per-step time) / d theta: a dependent step's
        self.tau[:, index[("tau",)]] = 1
        self.tau_iteration = np.zeros((n, size))  # an iteration's own
        if ("tau_iteration",) in index:
            self.tau_iteration[:, index[("tau_iteration",)]] = 1
        # the phases whose kernels were counted: their per-step time is log(operations) + tau_op instead
        self.log_operations = np.full((n, width), np.nan)
        self.iteration = np.zeros((n, width), dtype=bool)  # the phases that are an iteration's own cost
        for row, s in enumerate(samples):
            self.tau[row, index[("tau_w", s.workload)]] = 1
            self.tau_iteration[row, index[("tau_w", s.workload)]] = 1
            self.log_operations[row, : len(s.work.phases)] = _log_operations(s.work)
            self.iteration[row, : len(s.work.phases)] = _iterations(s.work)
        self.counted = ~np.isnan(self.log_operations)
        self.iteration &= ~self.counted  # counted, an iteration's per-step time is its launches
        self.tau_op = np.zeros((n, size))
        if ("tau_op",) in index:
            self.tau_op[self.counted.any(axis=1), index[("tau_op",)]] = 1
        self.start = index.get(("startup",))
        self.observed = np.log([s.seconds for s in samples])
        self.sigma = np.array([APPROXIMATE_SIGMA if s.approximate else RESULT_SIGMA for s in samples])

    def evaluate(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Log predicted totals and their Jacobian."""
        alpha = self.alpha @ theta + self.scale_arith @ theta
        beta = self.beta @ theta + self.scale_memory @ theta
        uncounted = np.where(self.iteration, (self.tau_iteration @ theta)[:, None], (self.tau @ theta)[:, None])
        per_step = np.where(
            self.counted, np.nan_to_num(self.log_operations) + (self.tau_op @ theta)[:, None], uncounted
        )
        candidates = np.stack([alpha[:, None] + self.log_arith, beta[:, None] + self.log_memory, per_step])
        log_step = np.logaddexp.reduce(SMOOTHNESS * candidates, axis=0) / SMOOTHNESS
        weights = np.exp(SMOOTHNESS * (candidates - log_step[None]))  # each bound's share of a step's time
        cost = self.steps * np.exp(log_step)
        startup = self.startup * (math.exp(theta[self.start]) if self.start is not None else 0.0)
        total = startup + cost.sum(axis=1)
        shares = (cost[None] * weights).sum(axis=2) / total  # d log total / d (log factor of each bound)
        jacobian = shares[0][:, None] * (self.alpha + self.scale_arith) + shares[1][:, None] * (
            self.beta + self.scale_memory
        )
        launched = (cost * weights[2] * self.counted).sum(axis=1) / total  # the counted phases' per-step share
        iterated = (cost * weights[2] * self.iteration).sum(axis=1) / total  # the iterations' own, uncounted
        jacobian += (
            (shares[2] - launched - iterated)[:, None] * self.tau
            + iterated[:, None] * self.tau_iteration
            + launched[:, None] * self.tau_op
        )
        if self.start is not None:
            jacobian[:, self.start] += startup / total
        return np.log(total), jacobian


def fit(samples: tuple[Sample, ...], iterations: int = 60) -> Fit:
    """The efficiencies that best explain the samples (the priors alone when there are none)."""
    return _fit_cached(samples, iterations)


@lru_cache(maxsize=256)
def _fit_cached(samples: tuple[Sample, ...], iterations: int) -> Fit:
    if not samples:
        return Fit(np.zeros(0), {}, ())
    index, means, sigmas = _layout(samples)
    problem = _Problem(samples, index)
    theta = means.copy()
    precision = 1.0 / sigmas**2

    def cost_of(values: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        predicted, jacobian = problem.evaluate(values)
        scaled = (predicted - problem.observed) / problem.sigma
        weights = np.where(np.abs(scaled) <= HUBER, 1.0, HUBER / np.maximum(np.abs(scaled), 1e-12))
        loss = np.where(np.abs(scaled) <= HUBER, scaled**2, 2 * HUBER * np.abs(scaled) - HUBER**2)
        return float(loss.sum() + (precision * (values - means) ** 2).sum()), scaled, weights, jacobian

    cost, scaled, weights, jacobian = cost_of(theta)
    damping = 1e-3
    for _ in range(iterations):
        scaled_jacobian = jacobian / problem.sigma[:, None]
        normal = scaled_jacobian.T @ (weights[:, None] * scaled_jacobian) + np.diag(precision)
        gradient = scaled_jacobian.T @ (weights * scaled) + precision * (theta - means)
        for _ in range(10):
            step = np.linalg.solve(normal + damping * np.diag(np.diag(normal)), -gradient)
            trial = theta + step
            new = cost_of(trial)
            if new[0] <= cost:
                theta, (cost, scaled, weights, jacobian) = trial, new
                damping = max(damping / 3, 1e-9)
                break
            damping *= 4
        else:
            break
        if np.max(np.abs(step)) < 1e-6:
            break
    gpu_workloads: dict[str, set[str]] = {}
    workload_gpus: dict[tuple[str, str], set[str]] = {}
    for s in samples:
        gpu_workloads.setdefault(s.gpu, set()).add(s.workload)
        workload_gpus.setdefault((s.workload, s.group), set()).add(s.gpu)
    return Fit(theta, index, samples, gpu_workloads, workload_gpus, frozenset(s.architecture for s in samples))


def signature(samples: tuple[Sample, ...]) -> str:
    """A short hash of what the calibration rests on (workloads, GPUs, precisions, times)."""
    text = "\n".join(f"{s.workload}|{s.gpu}|{s.precision}|{s.seconds:.6g}" for s in samples)
    return hashlib.sha256(text.encode()).hexdigest()[:12]
