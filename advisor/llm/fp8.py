"""The speed of a tuned FP8 stack (NVIDIA NeMo / Megatron-Core with Transformer Engine, as MLPerf's records run it),
fitted on NVIDIA's published FP8 throughputs and checked on MLPerf Training's Llama 2 70B LoRA logs:

    tokens/s per GPU = UTILIZATION x the GPU's 16-bit rate / the job's training FLOPs per token

UTILIZATION is the geometric mean, over the published runs, of the model FLOPs each reached per second (its tokens/s
per GPU times :meth:`~advisor.llm.job.TrainingJob.flops_per_token`) over its GPU's 16-bit rate: the dense tensor peak,
or where every GPU of the fit's runs has a sustained rate its vendor measured (``bf16_max_achievable_tflops``: AMD's
max-achievable FLOPs, the clock a board holds under a dense GEMM within its power), that rate; a GPU of such a fit
without one counts its peak times the fitted GPUs' own sustained share of theirs. The FP8
matmuls run at twice the 16-bit rate on Hopper and Blackwell; attention, the norms, the casts and the communication do
not, so a tuned run lands near 0.7 of the 16-bit peak. The runs span 8 to 1,024 GPUs with tensor, pipeline and
context parallelism and FSDP at the settings NVIDIA chose: the figure holds their parallel overhead at that scale,
no more is added for several GPUs.

Range: each run predicted by a fit without any run of its GPU (then of its model, then of its method); the widest of
the three 90th percentiles of the absolute log errors. Only the architectures the fit saw (Hopper, Blackwell) are
estimated: elsewhere :func:`tokens_per_second` answers None and the job keeps the 16-bit estimate. The MLPerf runs
never enter the fit.

AMD's ROCm has its own fit (:func:`platform_fits`), the same quantity over AMD's own MLPerf Llama 2 70B LoRA runs on
CDNA 3 (MI300X, MI325X), never NVIDIA's, its range theirs (each GPU's runs predicted from the other's); its CDNA 4
runs (MI350X, MI355X) only check it. Its rate is AMD's measured max-achievable one: the MI300X (750 W) and the MI325X
(1,000 W) share one peak, yet hold 1,207 and 1,447 MHz under a dense GEMM, which a peak cannot tell.

    python scripts/maintain.py fp8-fit      # the fit, each run left out, and the MLPerf check

Pure, but for :func:`load_runs` (one packaged file, written by ``scripts/import_fp8_runs.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from advisor.errors import AdvisorError
from advisor.llm.config import load_presets
from advisor.llm.job import TrainingJob, job_from_options
from advisor.store.catalog import Catalog, Gpu
from advisor.store.parse import safe_load

RUNS_FILE = "fp8_runs.yaml"
RUNS_VERSION = 1
PEAK = "fp16_tensor_tflops"  # the dense 16-bit tensor peak (full rate on the data-centre parts fitted)
SUSTAINED = "bf16_max_achievable_tflops"  # a vendor's measured sustained 16-bit rate (an optional catalog field)
QUANTILE = 0.9
MLPERF_GLOBAL_BATCH = 8  # sequences a step in the MLPerf runs checked (their logs' global_batch_size)


@dataclass(frozen=True)
class Run:
    """One published run: the job, its GPU (a catalog id) and count, and its tokens/s per GPU."""

    model: str
    method: str
    seq_len: int
    micro_batch: int
    gpu: str
    gpus: int
    tokens_per_second_per_gpu: float
    workload: str
    source: str

    def job(self) -> TrainingJob:
        return job_from_options(load_presets()[self.model], self.method, self.seq_len, self.micro_batch)


@lru_cache(maxsize=1)
def _runs_file() -> dict[str, tuple[Run, ...]]:
    data = safe_load(resources.files("advisor").joinpath("data", RUNS_FILE).read_text(encoding="utf-8"))
    if data.get("fp8_runs_version") != RUNS_VERSION:
        raise AdvisorError(f"advisor/data/{RUNS_FILE}: fp8_runs_version must be {RUNS_VERSION}")
    keep = {f for f in Run.__dataclass_fields__}
    parts = ("fit", "check", "rocm_fit", "rocm_check")
    return {p: tuple(Run(**{k: v for k, v in row.items() if k in keep}) for row in data.get(p) or []) for p in parts}


def load_runs(platform: str = "cuda") -> tuple[tuple[Run, ...], tuple[Run, ...]]:
    """(the runs the fit reads, the MLPerf runs it is checked on) from ``advisor/data/fp8_runs.yaml``: NVIDIA's
    (``platform`` "cuda") or AMD's ("rocm")."""
    runs = _runs_file()
    return (runs["fit"], runs["check"]) if platform == "cuda" else (runs["rocm_fit"], runs["rocm_check"])


@dataclass(frozen=True)
class Rate:
    """What a fit's utilization is over: the 16-bit tensor peak (``field`` PEAK), or the vendor's sustained rate
    (SUSTAINED) where every fitted GPU has one, ``share`` the fitted GPUs' sustained over peak (geometric mean)."""

    field: str = PEAK
    share: float = 1.0

    @property
    def sustained(self) -> bool:
        """Over the vendor's measured sustained rate, not the peak."""
        return self.field == SUSTAINED

    def tflops(self, gpu: Gpu) -> float:
        """``gpu``'s rate: its peak, or its sustained rate (none published: its peak times ``share``)."""
        peak = float(gpu.value(PEAK) or 0)
        sustained = gpu.value(SUSTAINED) if self.field == SUSTAINED else None
        return float(sustained) if sustained else peak * self.share


PEAK_RATE = Rate()


def rate_of(gpus: list[Gpu]) -> Rate:
    """The rate a fit on runs of ``gpus`` is over: the vendor's sustained one where each publishes it, else the
    peak."""
    if not gpus or not all(gpu.value(SUSTAINED) and gpu.value(PEAK) for gpu in gpus):
        return PEAK_RATE
    return Rate(SUSTAINED, _geomean([float(gpu.value(SUSTAINED)) / float(gpu.value(PEAK)) for gpu in gpus]))


def utilization(run: Run, gpu: Gpu, rate: Rate = PEAK_RATE) -> float:
    """The run's model FLOPs per second per GPU over its GPU's 16-bit ``rate`` (the tensor peak by default)."""
    return run.tokens_per_second_per_gpu * run.job().flops_per_token() / (rate.tflops(gpu) * 1e12)


@dataclass(frozen=True)
class Fp8Fit:
    """The fitted utilization, its range (a log half-width: the widest experiment of ``LEFT_OUT``), the architectures
    it covers, the runs it was fitted on and the rate its utilization is over."""

    utilization: float
    half_width: float
    architectures: frozenset[str]
    runs: int
    platform: str = "cuda"  # whose runs: NVIDIA's (cuda) or AMD's (rocm)
    rate: Rate = PEAK_RATE

    def covers(self, gpu: Gpu) -> bool:
        return gpu.architecture in self.architectures and bool(gpu.value(PEAK))


def quantile(errors: list[float]) -> float:
    """The 90th percentile of absolute log errors (0 for none): the range a fit claims."""
    return float(np.quantile(errors, QUANTILE)) if errors else 0.0


def _geomean(values: list[float]) -> float:
    return float(np.exp(np.mean(np.log(values))))


# What a new job can be new in: each experiment leaves every run of one GPU (model, method) out of the fit.
LEFT_OUT: dict[str, Callable[[Run], str]] = {
    "its GPU": lambda r: r.gpu,
    "its model": lambda r: r.model,
    "its method": lambda r: r.method,
}


def _ratios(runs: tuple[Run, ...], values: list[float], key: Callable[[Run], str]) -> list[tuple[Run, float]]:
    """Each run and its published / predicted ratio, predicted from the runs of another ``key`` only (``values``:
    the runs' utilizations)."""
    found = []
    for run, value in zip(runs, values, strict=True):
        others = [v for r, v in zip(runs, values, strict=True) if key(r) != key(run)]
        if others:
            found.append((run, value / _geomean(others)))
    return found


def _rate(runs: tuple[Run, ...], catalog: Catalog) -> Rate:
    gpus = catalog.by_id()
    return rate_of([gpus[gpu_id] for gpu_id in sorted({r.gpu for r in runs})])


def _utilizations(runs: tuple[Run, ...], catalog: Catalog) -> list[float]:
    """The runs' utilizations over the rate their GPUs share (a vendor's sustained figure needs no fitting: a run
    held out is divided by its own GPU's, never one learned from it)."""
    gpus, rate = catalog.by_id(), _rate(runs, catalog)
    return [utilization(r, gpus[r.gpu], rate) for r in runs]


def left_out(runs: tuple[Run, ...], catalog: Catalog, by: str = "its GPU") -> list[tuple[Run, float]]:
    """Each run and its published / predicted ratio, predicted from the runs of the other GPUs (``by``: of the other
    models, methods; a key of ``LEFT_OUT``) only."""
    return _ratios(runs, _utilizations(runs, catalog), LEFT_OUT[by])


def architecture_left_out(runs: tuple[Run, ...], catalog: Catalog) -> dict[str, list[float]]:
    """Per architecture, its runs' published / predicted ratios from a fit on the other architectures' runs only (a
    new architecture, as ``crossval --experiments new-architecture`` asks of the 16-bit model)."""
    gpus = catalog.by_id()
    found: dict[str, list[float]] = {}
    for run, ratio in _ratios(runs, _utilizations(runs, catalog), lambda r: gpus[r.gpu].architecture):
        found.setdefault(gpus[run.gpu].architecture, []).append(ratio)
    return dict(sorted(found.items()))


def fit_fp8(catalog: Catalog, runs: tuple[Run, ...] | None = None, platform: str = "cuda") -> Fp8Fit:
    """The utilization over ``runs`` (the packaged fit rows of ``platform`` by default) and its range: the widest
    90th-percentile error of the experiments (a GPU, a model or a method left out)."""
    runs = load_runs(platform)[0] if runs is None else runs
    gpus = catalog.by_id()
    values = _utilizations(runs, catalog)
    widths = [quantile([abs(math.log(ratio)) for _, ratio in _ratios(runs, values, key)]) for key in LEFT_OUT.values()]
    architectures = frozenset(gpus[r.gpu].architecture for r in runs)
    return Fp8Fit(_geomean(values), max(widths), architectures, len(runs), platform, _rate(runs, catalog))


def platform_fits(catalog: Catalog) -> tuple[Fp8Fit, ...]:
    """The tuned stack's fit on each platform with published runs: NVIDIA's (CUDA), then AMD's (ROCm), each from its
    own runs only."""
    return tuple(fit_fp8(catalog, platform=platform) for platform in ("cuda", "rocm"))


def fit_for(fits: tuple[Fp8Fit, ...], gpu: Gpu) -> Fp8Fit | None:
    """The fit that covers ``gpu``'s architecture (None: no platform's runs are of it)."""
    return next((fit for fit in fits if fit.covers(gpu)), None)


def tokens_per_second(job: TrainingJob, gpu: Gpu, fitted: Fp8Fit) -> float | None:
    """Tokens/s per GPU of the job on a tuned FP8 stack, None where the fit has not seen the GPU's architecture."""
    if not fitted.covers(gpu):
        return None
    return fitted.utilization * fitted.rate.tflops(gpu) * 1e12 / job.flops_per_token()


def checked(catalog: Catalog, fitted: Fp8Fit | None = None, platform: str = "cuda") -> list[tuple[Run, float]]:
    """The MLPerf runs of ``platform`` and each one's published / predicted ratio from the whole fit of that platform
    (which never saw them), on the architecture it covers or not (a new one: the check of what it would say)."""
    fitted = fitted or fit_fp8(catalog, platform=platform)
    gpus = catalog.by_id()
    found = []
    for run in load_runs(platform)[1]:
        if gpus[run.gpu].value(PEAK):
            found.append((run, utilization(run, gpus[run.gpu], fitted.rate) / fitted.utilization))
    return found
