"""What an estimate rests on, as facts: the calibration, the estimate's situation, how its range was found, and
the clauses added on the way (several GPUs, the launch floor, the wait for data, a sharded or split model, FP8
where its fit does not reach). Each part is a small frozen record of figures and names; the sentence every output
shows is written from them once, in :mod:`advisor.render.basis`, and a reader of a part reads the record, never the
sentence. Pure; no I/O.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar


class Clause(StrEnum):
    """What a clause of a basis says (:class:`Basis`)."""

    SEVERAL = "several"  # several GPUs in data parallel
    LAUNCH = "launch"  # the host's launches decide
    WAIT = "wait"  # the measured wait for data, kept
    SHARDED = "sharded"  # the model sharded over the GPUs
    FP8 = "fp8"  # FP8 asked where the tuned FP8 stack's fit does not reach


class RangeMethod(StrEnum):
    """How a situation's range was found (:func:`advisor.perf.crossval.width_for`)."""

    CROSS_VALIDATED = "cross-validated"  # the situation's own cross-validated error
    COMBINED = "combined"  # from the GPU's and the workload's situations
    FALLBACK = "fallback"  # no cross-validation: the fallback width


# The calibrations an estimate rests on.


@dataclass(frozen=True)
class CatalogCalibration:
    """The performance model calibrated on the profiles' single-GPU results (:mod:`advisor.perf.calibration`)."""

    results: int
    workloads: int
    gpus: int
    cross_validated: bool  # a cross-validation file exists
    stale_results: int | None = None  # where it was made on other results: how many ...
    stale_date: str | None = None  # ... and when


@dataclass(frozen=True)
class MachineCalibration:
    """A measured machine's own model, fitted on its results (:meth:`advisor.perf.perfmodel.Model.basis`)."""

    results: tuple[str, ...]  # each result's device and precision
    loo_factor: float | None  # the worst leave-one-out error (None: one result, no cross-check)
    of_this_workload: bool  # every result is of the estimated workload
    other_work: bool = False  # widened: no result of this workload on this kind of device
    beyond: tuple[str, float] | None = None  # widened: the resource ("peak", "bandwidth") beyond the results', x
    new_architecture: str | None = None  # widened: no result on this architecture
    new_bound: str | None = None  # widened: no result was of this bound


@dataclass(frozen=True)
class Fp8Calibration:
    """The tuned FP8 stack's utilization of the GPU's 16-bit rate (:mod:`advisor.llm.fp8`): its tensor peak, or its
    vendor's measured sustained rate (``sustained``)."""

    utilization: float
    runs: int
    platform: str = "cuda"  # whose published runs: NVIDIA's (cuda) or AMD's (rocm)
    sustained: bool = False  # over the vendor's measured max-achievable rate, not the peak


# The situations whose cross-validated error is an estimate's range.


@dataclass(frozen=True)
class CatalogSituation:
    """A catalog estimate's situation (:class:`advisor.perf.calibration.Situation`): what the GPU and the workload
    have results of, and whether the workload is a job tracked in place."""

    gpu: str  # "gpu", "architecture", "new"
    architecture: str
    workload: str  # "results", "few", "reference", "description"
    gpus_with_results: int  # the GPUs the workload has results on
    tracked: bool = False


@dataclass(frozen=True)
class LanguageModelSituation:
    """A language-model job's situation in its cross-validation (:mod:`advisor.llm.throughput_crossval`)."""

    situation: str  # "llm-new-model", "llm-new-model-new-gpu"
    measured_gpu: bool  # the GPU has published language-model results


@dataclass(frozen=True)
class Fp8Situation:
    """A tuned FP8 job on a GPU whose architecture the FP8 fit covers."""


# How the range was found.


@dataclass(frozen=True)
class SituationRange:
    """The 90th-percentile error of the situation, as a factor, and how it was found."""

    factor: float
    method: RangeMethod


@dataclass(frozen=True)
class LanguageModelRange:
    """The language-model situation's 90th-percentile error (with the scaling's in quadrature on several GPUs)."""

    factor: float
    with_scaling: bool


@dataclass(frozen=True)
class Fp8Range:
    """The widest 90th-percentile error of the FP8 runs predicted with their GPU, model or method left out."""

    factor: float


# The clauses added on the way.


@dataclass(frozen=True)
class Several:
    """``count`` GPUs (on each of ``machines``) in data parallel, the batch per GPU kept: the efficiency the fitted
    scaling predicts, its cross-validated error widening the range; between machines, the network's cost."""

    kind: ClassVar[Clause] = Clause.SEVERAL
    count: int
    link: str
    efficiency: float
    scaling_error: float  # the scaling's cross-validated error, a factor
    machines: int = 1
    link_gbps: float | None = None
    network_cost: float = 0.0  # the share of the time the network costs (machines > 1)


@dataclass(frozen=True)
class Mirrored:
    """``count`` GPUs under tf.distribute.MirroredStrategy with the global batch kept and split."""

    kind: ClassVar[Clause] = Clause.SEVERAL
    count: int
    link: str
    batch: float
    share_of_one: float  # each GPU's share of the batch, as a share of one GPU's time
    share_bound: str
    efficiency: float
    speedup: float  # over one GPU


@dataclass(frozen=True)
class Launch:
    """The host's launches decide the step: ``operations`` counted on a real step (:mod:`advisor.perf.launch`)."""

    kind: ClassVar[Clause] = Clause.LAUNCH
    operations: float
    operation_seconds: float  # per kernel launched
    width: float  # the range of this part: a factor either way
    fitted: bool  # the calibration's fit and its cross-validated error; else the quoted cost and spread


@dataclass(frozen=True)
class Wait:
    """The run's measured wait for data, kept: ``seconds`` in all, ``share`` of each step (measured on the device
    that tracked it). No GPU shortens it: every estimate of the workload keeps the seconds."""

    kind: ClassVar[Clause] = Clause.WAIT
    seconds: float
    share: float


@dataclass(frozen=True)
class Sharded:
    """Weights, gradients and optimizer state sharded over ``count`` GPUs (FSDP / ZeRO-3)."""

    kind: ClassVar[Clause] = Clause.SHARDED
    count: int


@dataclass(frozen=True)
class Split:
    """The model split Megatron's way over ``tensor`` x ``pipeline`` GPUs, the optimizer's fp32 states sharded over
    all ``count``."""

    kind: ClassVar[Clause] = Clause.SHARDED
    tensor: int
    pipeline: int
    count: int

    @property
    def model(self) -> int:
        """The GPUs one copy of the model is split over."""
        return self.tensor * self.pipeline


@dataclass(frozen=True)
class NoFp8:
    """FP8 asked on an architecture the tuned FP8 stack's fit does not cover: the 16-bit time kept."""

    kind: ClassVar[Clause] = Clause.FP8
    architecture: str
    fitted: tuple[str, ...]  # the architectures it covers


@dataclass(frozen=True)
class NoPlatformFit:
    """Why a GPU has no estimate at all: its software platform has no published results the model is fitted and
    cross-validated on, and another platform's fit (and its range) is never borrowed."""

    platform: str  # the GPU's platform (rocm, mps)
    device: str
    fitted: tuple[str, ...]  # the platforms the model is fitted on
    stack_architectures: tuple[str, ...] = ()  # an FP8 job: the architectures its platform's tuned-stack fit covers


@dataclass(frozen=True)
class NoPeak:
    """Why a GPU has no estimate in a precision: the catalog lacks its ``peak`` (and the catalog's note on it)."""

    peak: str  # the peak's label, e.g. "bfloat16"
    device: str
    note: str = ""


Calibration = CatalogCalibration | MachineCalibration | Fp8Calibration
Situation = CatalogSituation | LanguageModelSituation | Fp8Situation
Range = SituationRange | LanguageModelRange | Fp8Range
ClauseRecord = Several | Mirrored | Launch | Wait | Sharded | Split | NoFp8


@dataclass(frozen=True)
class Basis:
    """What an estimate rests on, by part: the calibration, the estimate's situation and how its range was found
    (None where the estimate has none), then the clauses added on the way, in order."""

    calibration: Calibration
    situation: Situation | None = None
    range: Range | None = None
    clauses: tuple[ClauseRecord, ...] = ()

    def with_clause(self, clause: ClauseRecord) -> Basis:
        return dataclasses.replace(self, clauses=(*self.clauses, clause))

    def of_kind(self, kind: Clause) -> tuple[ClauseRecord, ...]:
        return tuple(clause for clause in self.clauses if clause.kind == kind)
