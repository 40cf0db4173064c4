"""How fast an inference job runs, from the hardware's limits and constants fitted per engine on measured speeds.

- **decode**: a step of B sequences reads the weights it needs once (MoE: the experts its tokens are routed to) and
  each sequence's cache: ``floor + bytes / bandwidth x (bandwidth / 1,000 GB/s)^beta x m x k_bytes`` (``k_bytes`` >=
  1: the bandwidth a kernel does not reach, one for 16-bit weights and one for quantized ones, whose dequantising
  costs; ``beta``: a wider memory system's smaller reached share within one kind of memory, fitted where an engine's
  rows span several bandwidths, the bandwidth held within the span its rows of that kind cover; ``m``: the memory
  kind's own factor, stacked HBM against a card's GDDR, fitted where the rows hold both: :class:`BandwidthTrend`), or
  the matrix work when that is longer (large batches): ``2 x active weights x B / tensor peak x k_compute``;
- **prefill**: ``2 x active weights x tokens`` over the tensor peak at the weight format's matrix rate (FP8 W8A8 twice
  the 16-bit peak on Ada and newer: ``matrix_rate`` in engines.yaml) plus the causal attention (``2 x tokens^2 x
  width`` a full layer) over the 16-bit peak, times ``k_compute`` (16-bit and quantized apart), plus a floor; where
  an engine's rows span cards of several peaks per watt, the peak it reaches is at most ``w x board power`` (``w``:
  TFLOPS a watt, fitted as beta is): a card whose tensor peak outruns its power budget clocks down under a long matrix
  load, and an engine's kernels reach less of a larger peak;
- the **floor** is the per-step time no bandwidth removes (kernel launches, sampling, the host): what a small model
  hits on a big GPU;
- several GPUs (tensor parallelism) split the bytes and the work, and add two all-reduces of the step's activations a
  layer over the catalog's link (NVLink where the card has it, else PCIe), each with a latency.

The constants are fitted by least squares on relative error over ``advisor/data/inference_results.yaml``; their
accuracy is cross-validated leaving one GPU out (:func:`crossval`), and a prediction's range is that error. An engine
without measurements gets the hardware's bound (k = 1, no floor), said as a bound, never as an estimate. Pure.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from advisor.errors import AdvisorError
from advisor.infer.architecture import resolve_inference_model
from advisor.infer.job import InferenceJob, make_job
from advisor.store.catalog import FITTED_PLATFORMS, Catalog, Gpu
from advisor.store.parse import safe_load

RESULTS_FILE = "inference_results.yaml"
RESULTS_VERSION = 1
# estimated: one small all-reduce's fixed cost (Infinity Fabric's taken as NVLink's: both join the GPUs directly)
ALL_REDUCE_LATENCY_S = {"nvlink": 10e-6, "infinity fabric": 10e-6, "pcie": 30e-6}
CLASSES = ("16bit", "quantized")
REFERENCE_BANDWIDTH_GBS = 1000.0  # beta's pivot: a GPU of this bandwidth reads at k_bytes alone
BANDWIDTH_EXPONENTS = tuple(round(0.05 * i, 2) for i in range(17))  # beta's grid, 0 to 0.8
MEMORY_KIND_FACTORS = tuple(round(1.0 + 0.05 * i, 2) for i in range(41))  # a memory kind's factor's grid, 1 to 3
TFLOPS_PER_WATT = (0.0, *(round(0.2 + 0.1 * i, 1) for i in range(19)))  # w's grid: 0 (no ceiling), 0.2 to 2.0


@dataclass(frozen=True)
class Measured:
    """One published or measured speed (a row of inference_results.yaml)."""

    engine: str
    gpu: str
    model: str
    weights: str
    metric: str  # decode | prefill
    batch: int
    context: int
    value: float  # tokens a second (decode: of all the batch's sequences)
    source: str


@dataclass(frozen=True)
class BandwidthTrend:
    """How a decode step's bytes read slower than ``k`` alone says, by the GPU's memory: ``(bandwidth / 1,000
    GB/s)^beta`` times its memory kind's factor (catalog ``memory_kind``: stacked HBM reaches another share of its
    bandwidth at one user than a card's GDDR). The bandwidth is held within the span the fit's rows of the same kind
    cover (a kind without rows: all the rows' span), so no trend is carried past its evidence: a GDDR card faster
    than every fitted GDDR card reads as the fastest of them, never as an HBM card of its bandwidth."""

    exponent: float = 0.0  # beta
    spans: tuple[tuple[str, float, float], ...] = ()  # (memory kind, least, greatest bandwidth of its rows), GB/s
    factors: tuple[tuple[str, float], ...] = ()  # (memory kind, factor); a kind not listed: 1

    def span_of(self, kind: str | None) -> tuple[float, float]:
        """The bandwidths the fit saw for ``kind`` (all of its rows' where it saw none of that kind)."""
        for name, low, high in self.spans:
            if name == kind:
                return low, high
        if not self.spans:
            return 0.0, 0.0
        return min(low for _, low, _ in self.spans), max(high for _, _, high in self.spans)

    def factor_of(self, kind: str | None) -> float:
        return dict(self.factors).get(kind or "", 1.0)

    def scale(self, kind: str | None, bandwidth: float) -> float:
        """The factor on a step's bytes at ``bandwidth`` (GB/s) on memory of ``kind``."""
        factor = self.factor_of(kind)
        if not self.exponent:
            return factor
        low, high = self.span_of(kind)
        if high:
            bandwidth = min(max(bandwidth, low), high)
        return factor * (bandwidth / REFERENCE_BANDWIDTH_GBS) ** self.exponent


NO_TREND = BandwidthTrend()  # the hardware's bound: a step's bytes at k alone


@dataclass(frozen=True)
class EngineFit:
    """An engine's fitted constants (None where no measurement fits them: the hardware's bound is used)."""

    decode_floor_s: float = 0.0
    decode_k: tuple[float, float] = (1.0, 1.0)  # 16-bit, quantized
    bandwidth_trend: BandwidthTrend = NO_TREND  # decode's bytes by the GPU's bandwidth and memory kind
    prefill_floor_s: float = 0.0
    prefill_k: tuple[float, float] = (1.0, 1.0)
    rows: int = 0
    tflops_per_watt: float = 0.0  # w: the matrix work's peak is at most w x board power (0: the tensor peak)

    @property
    def fitted(self) -> bool:
        return self.rows > 0


@dataclass(frozen=True)
class Speed:
    """An inference job's speeds on one GPU model (times in seconds)."""

    time_to_first_token_s: float
    time_per_output_token_s: float  # each user's, at the asked load: a step and its share of the others' prompts
    decode_step_s: float  # one decode step of the asked users' batch, the prompts apart (what a static batch times)
    single_stream_tokens_per_s: float  # one user, unloaded
    prefill_tokens_per_s: float
    output_tokens_per_s: float  # all users together at the asked load, their prompts computed between the steps
    bound: str  # memory | compute | floor: what decides a decode step at the load
    fitted: bool  # False: the hardware's bound (no measurement of this engine)


def weight_class(job: InferenceJob) -> int:
    return 0 if job.weights.bits >= 16 else 1


# Architectures without matrix units: their float32 peak is what their matrix products reach. Any other GPU whose
# catalog entry gives no 16-bit tensor peak (one nobody published, as the DGX Spark's) gets no speed: its float32 peak
# would be a guess several times too slow.
NO_MATRIX_UNITS = ("Pascal",)


def _peak_tflops(gpu: Gpu, job: InferenceJob) -> float:
    """The tensor peak the engine's matrix products reach for: float16 accumulation (GeForce cards run it at twice
    the float32-accumulate rate the catalog gives) where the engine uses it."""
    tensor = gpu.value("bf16_tflops") or gpu.value("fp16_tensor_tflops")
    if not tensor and gpu.architecture not in NO_MATRIX_UNITS:
        raise AdvisorError(f"{gpu.name}: the catalog gives no 16-bit tensor peak (none published); no speed estimated")
    peak = float(tensor or gpu.value("fp32_tflops") or 0.0)
    if job.engine.fp16_accumulate and gpu.segment == "consumer":
        peak *= 2
    return peak


def _link(gpu: Gpu) -> tuple[str, float]:
    """The link the GPUs exchange activations over: NVLink or AMD's Infinity Fabric where the card has it, else PCIe
    (never guessed)."""
    for kind, field in (("nvlink", "nvlink_gbs"), ("infinity fabric", "infinity_fabric_gbs")):
        if gpu.value(field):
            return kind, float(gpu.value(field) or 0)
    pcie = gpu.value("pcie_gbs")
    if not pcie:
        raise AdvisorError(f"{gpu.name}: the catalog gives no link between GPUs; several of them are not estimated")
    return "pcie", float(pcie)


def _stepping(job: InferenceJob) -> InferenceJob:
    """The job whose step a GPU's step times: a layer split's is the single-GPU step of the whole model (a token
    passes the cards in turn, each its layers' part: :mod:`advisor.infer.mixed`), with no exchange but the
    activations' hand-over; tensor parallel, the job itself."""
    return replace(job, devices=1) if job.splits_layers else job


def _allreduce_s(job: InferenceJob, gpu: Gpu, tokens: int) -> float:
    """The GPUs' exchanges of a step of ``tokens`` (the whole group's): tensor parallel, two all-reduces of the
    activations a layer (a ring moves 2(n-1)/n of them); attention data parallel, an all-gather of the tokens before
    each layer of experts and a reduce-scatter after it ((n-1)/n each: vLLM's default allgather_reducescatter)."""
    job = _stepping(job)
    if job.devices == 1:
        return 0.0
    kind, gbs = _link(gpu)
    share = (job.devices - 1) / job.devices
    if job.attention_data_parallel:
        operations, size = 2 * job.model.moe_layers, tokens * job.model.hidden * 2 * share
    else:
        operations, size = 2 * len(job.model.layers), tokens * job.model.hidden * 2 * 2 * share
    return operations * (ALL_REDUCE_LATENCY_S[kind] + size / (gbs * 1e9))


def decode_read_bytes(job: InferenceJob, batch: int, context: int) -> float:
    """The bytes one decode step of ``batch`` sequences at ``context`` tokens reads, per GPU: its part of the weights
    it needs once and of each sequence's cache (attention data parallel: the busiest GPU's own sequences' whole
    caches)."""
    return job.weight_bytes_read_per_gpu(batch) + job.sequences_per_gpu(batch) * job.kv_bytes_per_gpu(context)


def decode_memory_seconds(job: InferenceJob, gpu: Gpu, batch: int, context: int) -> float:
    """One decode step's bytes (:func:`decode_read_bytes`) at the catalog's full memory bandwidth, per GPU: the whole
    step on a GPU without a published compute peak, for one user."""
    bandwidth = float(gpu.value("memory_bandwidth_gbs") or 0) * 1e9
    if not bandwidth:
        raise AdvisorError(f"{gpu.name}: the catalog gives no memory bandwidth; no speed estimated")
    return decode_read_bytes(job, batch, context) / bandwidth


def bandwidth_scale(gpu: Gpu, trend: BandwidthTrend) -> float:
    """How much longer a decode step's bytes take than at ``k_bytes`` alone on ``gpu``: :class:`BandwidthTrend`'s
    ``(bandwidth / 1,000 GB/s)^beta`` times its memory kind's factor (1 with no trend: the hardware's bound and an
    engine fitted on one bandwidth). Outside the span the fit saw of the GPU's memory kind, the nearest edge's."""
    return trend.scale(gpu.memory_kind, float(gpu.value("memory_bandwidth_gbs") or REFERENCE_BANDWIDTH_GBS))


def compute_scale(gpu: Gpu, job: InferenceJob, tflops_per_watt: float) -> float:
    """How much longer an engine's matrix work takes on ``gpu`` than at its tensor peak: the 16-bit peak over ``w x
    board power`` where that is lower (1 where no ``w`` is fitted or the card's power is not in the catalog)."""
    return power_ceiling(peak_per_watt(gpu, job), tflops_per_watt)


def peak_per_watt(gpu: Gpu, job: InferenceJob) -> float:
    """The card's 16-bit tensor peak over its board power (TFLOPS a watt; 0 where the catalog has no power)."""
    power = gpu.value("board_power_w")
    return _peak_tflops(gpu, job) / float(power) if power else 0.0


def power_ceiling(peak_tflops_per_watt: float, tflops_per_watt: float) -> float:
    """How much longer matrix work takes than at the tensor peak where the peak is at most ``w x board power``: the
    card's peak per watt over ``w`` where that is more than 1 (1 where either is unknown or 0)."""
    if not tflops_per_watt or not peak_tflops_per_watt:
        return 1.0
    return max(1.0, peak_tflops_per_watt / tflops_per_watt)


def _matrix_peak(gpu: Gpu, job: InferenceJob) -> float:
    """The tensor peak the blocks' matrix products reach for (TFLOPS): the 16-bit one times the weight format's own
    rate where the activations are quantized too and the architecture has the type (FP8 on Ada and newer)."""
    return _peak_tflops(gpu, job) * job.weights.matrix_rate_on(gpu.architecture)


def _decode_terms(job: InferenceJob, gpu: Gpu, batch: int, context: int) -> tuple[float, float]:
    """(memory seconds at full bandwidth, compute seconds at full peak) of one decode step, per GPU."""
    job = _stepping(job)
    bandwidth = float(gpu.value("memory_bandwidth_gbs") or 0) * 1e9
    peak = _matrix_peak(gpu, job) * 1e12
    if not bandwidth or not peak:
        raise AdvisorError(f"{gpu.name}: the catalog gives no memory bandwidth or tensor peak; no speed estimated")
    read = decode_read_bytes(job, batch, context)
    work = 2 * job.model.active_parameters * _per_gpu_share(job, batch)
    return read / bandwidth, work / peak


def _per_gpu_share(job: InferenceJob, sequences: int) -> float:
    """How many sequences' worth of a step's matrix work the busiest GPU does: 1/devices of all (tensor parallel),
    or its own sequences' (attention data parallel: the experts' work of the group's tokens, split over the GPUs,
    comes to about as much)."""
    return job.sequences_per_gpu(sequences) if job.attention_data_parallel else sequences / job.devices


def _prefill_work(job: InferenceJob, gpu: Gpu, tokens: int, batch: int) -> float:
    """Seconds of one prefill of ``batch`` prompts of ``tokens`` at the full tensor peaks, per GPU: the weights' matrix
    products at the format's rate (:func:`_matrix_peak`), the causal attention at the 16-bit one."""
    job = _stepping(job)
    full_layers = sum(1 for layer in job.model.layers if layer.window is None and layer.kind != "linear")
    model = job.model
    experts = model.expert_parameters * model.experts_per_token / model.experts if model.experts else 0.0
    dense = 2 * (model.active_parameters - experts) * tokens / (_matrix_peak(gpu, job) * 1e12)
    routed = 2 * experts * tokens / (_matrix_peak(gpu, job) * 1e12)
    attention = 2 * tokens * tokens * model.hidden * full_layers / (_peak_tflops(gpu, job) * 1e12)
    # attention data parallel: each GPU its own prompts' dense layers and attention, the experts split over all
    return _per_gpu_share(job, batch) * (dense + attention) + batch * routed / job.devices


def predict(job: InferenceJob, gpu: Gpu, fit: EngineFit) -> Speed:
    """The job's speeds on ``gpu`` with an engine's fitted constants."""
    cls = weight_class(job)
    context = job.prompt + job.output // 2  # the cache's mean length while the output is written
    scale = compute_scale(gpu, job, fit.tflops_per_watt)

    def step(batch: int) -> tuple[float, str]:
        memory, compute = _decode_terms(job, gpu, batch, context)
        memory *= fit.decode_k[cls] * bandwidth_scale(gpu, fit.bandwidth_trend)
        compute *= fit.prefill_k[cls] * scale
        body = max(memory, compute)
        bound = "memory" if memory >= compute else "compute"
        if fit.decode_floor_s > body:
            bound = "floor"
        return fit.decode_floor_s + body + _allreduce_s(job, gpu, batch), bound

    single, _ = step(1)
    loaded, bound = step(job.users)
    prompt = max(job.prompt, 1)
    prefill_one = fit.prefill_floor_s + _prefill_work(job, gpu, prompt, 1) * fit.prefill_k[cls] * scale
    prefill_one += _allreduce_s(job, gpu, prompt)
    return speeds_of(job, prefill_one, single, (loaded, bound), fitted=fit.fitted)


def speeds_of(job: InferenceJob, prefill_s: float, single_s: float, loaded: tuple[float, str], fitted: bool) -> Speed:
    """A job's speeds from one prompt's prefill, one user's decode step and the step at the asked users (with what
    bounds it), as every speed model writes them. The users' output tokens a second count their prompts: each user's
    next prompt is computed between the steps, once in its output's steps (as under maximum load and at a rate), so a
    user's time per output token is a step and the other users' prompts spread over its output."""
    step_s, bound = loaded
    output = max(job.output, 1)
    return Speed(
        time_to_first_token_s=prefill_s + single_s,
        time_per_output_token_s=step_s + (job.users - 1) * prefill_s / output,
        decode_step_s=step_s,
        single_stream_tokens_per_s=1 / single_s,
        prefill_tokens_per_s=max(job.prompt, 1) / prefill_s,
        output_tokens_per_s=output_per_second(job.users, output, step_s, prefill_s),
        bound=bound,
        fitted=fitted,
    )


def output_per_second(users, output, step_s, prefill_s):
    """Output tokens a second of ``users`` sequences at once, each writing ``output`` tokens a decode step each and its
    next prompt computed between the steps: users x output / (output x step + users x prefill) (arrays too)."""
    return users * output / (output * step_s + users * prefill_s)


@lru_cache(maxsize=1)
def results_file() -> dict[str, Any]:
    """``advisor/data/inference_results.yaml``, read and checked once (its measurements, saturated throughputs and
    fit edges)."""
    text = resources.files("advisor").joinpath("data", RESULTS_FILE).read_text(encoding="utf-8")
    data = safe_load(text)
    if data.get("inference_results_version") != RESULTS_VERSION:
        raise AdvisorError(f"advisor/data/{RESULTS_FILE}: inference_results_version must be {RESULTS_VERSION}")
    return data


@lru_cache(maxsize=2)
def load_measured(key: str = "measurements") -> tuple[Measured, ...]:
    """The shipped measurements (``advisor/data/inference_results.yaml``); ``key`` "held_out": the rows no fit ever
    sees, only predicts."""
    data = results_file()
    rows = []
    for index, row in enumerate(data.get(key) or []):
        if len(row) != 9 or row[8] not in data["sources"]:
            raise AdvisorError(f"advisor/data/{RESULTS_FILE}: {key}[{index}]: 9 fields and a known source expected")
        engine, gpu, model, weights, metric, batch, context, value, source = row
        rows.append(Measured(engine, gpu, model, weights, metric, int(batch), int(context), float(value), source))
    return tuple(rows)


def row_job(row: Measured) -> InferenceJob:
    """The job a measured row timed (its model, engine, weights, context and batch)."""
    model = resolve_inference_model(row.model)
    return make_job(model, row.engine, row.weights, None, prompt=row.context, output=1, users=row.batch)


def _design(row: Measured, gpu: Gpu, tflops_per_watt: float = 0.0) -> tuple[list[float], float]:
    """A row's least-squares line: [1, 16-bit term, quantized term] and its measured seconds (a prefill's work at
    the peak ``tflops_per_watt`` leaves it)."""
    job = row_job(row)
    cls = weight_class(job)
    terms = [0.0, 0.0]
    if row.metric == "decode":
        memory, _ = _decode_terms(job, gpu, row.batch, row.context)
        terms[cls] = memory
        seconds = row.batch / row.value
    else:
        terms[cls] = _prefill_work(job, gpu, row.context, row.batch) * compute_scale(gpu, job, tflops_per_watt)
        seconds = row.batch * row.context / row.value
    return [1.0, *terms], seconds


def solve(lines: list[tuple[list[float], float]], floor: bool = True) -> tuple[float, tuple[float, float]]:
    """Floor and the two k's minimising the squared relative error (a floor below 0 is refitted as 0)."""
    a = np.array([line for line, _ in lines])
    t = np.array([seconds for _, seconds in lines])
    weights = 1 / t
    used = [0] * floor + [c for c in (1, 2) if a[:, c].any()]
    solution, *_ = np.linalg.lstsq(a[:, used] * weights[:, None], t * weights, rcond=None)
    values = {0: 0.0, **dict(zip(used, solution, strict=True))}
    if values[0] < 0:
        used = used[1:]
        solution, *_ = np.linalg.lstsq(a[:, used] * weights[:, None], t * weights, rcond=None)
        values = {0: 0.0, **dict(zip(used, solution, strict=True))}
    ks = tuple(max(float(values.get(c, math.nan)), 1.0) if c in values else math.nan for c in (1, 2))
    return float(values[0]), ks  # type: ignore[return-value]


def _relative_error(lines: list[tuple[list[float], float]], floor: float, ks: tuple[float, float]) -> float:
    """The squared relative error of fitted constants over their lines (what :func:`solve` minimises)."""
    return sum(((floor + sum(t * k for t, k in zip(line[1:], ks, strict=True) if t) - s) / s) ** 2 for line, s in lines)


def _spans(kinds: list[str | None], bandwidths: list[float]) -> tuple[tuple[str, float, float], ...]:
    """Each memory kind's least and greatest bandwidth among the rows (a row of no known kind: ``""``)."""
    found: dict[str, list[float]] = {}
    for kind, bandwidth in zip(kinds, bandwidths, strict=True):
        found.setdefault(kind or "", []).append(bandwidth)
    return tuple((kind, min(values), max(values)) for kind, values in sorted(found.items()))


def _trends(kinds: list[str | None], bandwidths: list[float]) -> list[BandwidthTrend]:
    """The trends :func:`fit_decode` tries: each beta of :data:`BANDWIDTH_EXPONENTS` (0 alone where the rows have one
    bandwidth), and where they hold two memory kinds, the rarer kind's factor from :data:`MEMORY_KIND_FACTORS` (the
    commoner kind's is 1)."""
    spans = _spans(kinds, bandwidths)
    betas = BANDWIDTH_EXPONENTS if len(set(bandwidths)) > 1 else (0.0,)
    counts = Counter(kind or "" for kind in kinds)
    rarer = sorted(counts, key=lambda kind: (-counts[kind], kind))[-1]
    factors = [((rarer, f),) for f in MEMORY_KIND_FACTORS] if len(counts) == 2 and "" not in counts else [()]
    return [BandwidthTrend(beta, spans, chosen) for beta in betas for chosen in factors]


def fit_decode(
    lines: list[tuple[list[float], float]], bandwidths: list[float], kinds: list[str | None]
) -> tuple[float, tuple, BandwidthTrend]:
    """Decode's floor, k's and bandwidth trend: the trend of :func:`_trends` whose least-squares fit errs least (the
    rows' ``bandwidths`` and memory ``kinds``, one each)."""
    best = None
    for trend in _trends(kinds, bandwidths):
        scales = [trend.scale(kind, bw) for kind, bw in zip(kinds, bandwidths, strict=True)]
        scaled = [([line[0], *(t * s for t in line[1:])], sec) for (line, sec), s in zip(lines, scales, strict=True)]
        floor, ks = solve(scaled)
        error = _relative_error(scaled, floor, tuple(k if not math.isnan(k) else 0.0 for k in ks))
        if best is None or error < best[0]:
            best = (error, floor, ks, trend)
    assert best is not None
    return best[1], best[2], best[3]


def fit_prefill(rows: list[Measured], catalog: Catalog) -> tuple[tuple[float, float], float]:
    """Prefill's k's and ``w`` (TFLOPS a watt): the ``w`` of :data:`TFLOPS_PER_WATT` whose least-squares fit errs
    least, where the rows' GPUs differ in peak per watt (else 0: one card cannot tell ``w`` from k)."""
    gpus = catalog.by_id()
    ratios = {_peak_tflops(gpus[r.gpu], row_job(r)) / float(gpus[r.gpu].value("board_power_w") or 1) for r in rows}
    best = None
    for per_watt in TFLOPS_PER_WATT if len(ratios) > 1 else (0.0,):
        lines = [_design(r, gpus[r.gpu], per_watt) for r in rows]
        _, ks = solve(lines, floor=False)  # the work dominates
        error = _relative_error(lines, 0.0, tuple(k if not math.isnan(k) else 0.0 for k in ks))
        if best is None or error < best[0] - 1e-12:
            best = (error, ks, per_watt)
    assert best is not None
    return best[1], best[2]


def fit_engine(rows: list[Measured], catalog: Catalog) -> EngineFit:
    """An engine's constants from its rows (decode and prefill fitted apart)."""
    gpus = catalog.by_id()
    decoded = [r for r in rows if r.metric == "decode"]
    decode = [_design(r, gpus[r.gpu]) for r in decoded]
    prefill = [r for r in rows if r.metric == "prefill"]
    bandwidths = [float(gpus[r.gpu].value("memory_bandwidth_gbs") or 0) for r in decoded]
    kinds = [gpus[r.gpu].memory_kind for r in decoded]
    d_floor, d_k, trend = fit_decode(decode, bandwidths, kinds) if decode else (0.0, (1.0, 1.0), NO_TREND)
    p_k, per_watt = fit_prefill(prefill, catalog) if prefill else ((1.0, 1.0), 0.0)
    # a class without rows borrows the other's constant (said in the crossval's table as not measured)
    d_k = tuple(k if not math.isnan(k) else next(x for x in d_k if not math.isnan(x)) for k in d_k)
    p_k = tuple(k if not math.isnan(k) else next(x for x in p_k if not math.isnan(x)) for k in p_k)
    return EngineFit(d_floor, d_k, trend, 0.0, p_k, len(rows), per_watt)  # type: ignore[arg-type]


def on_fitted_platform(rows: tuple[Measured, ...] | list[Measured], catalog: Catalog) -> list[Measured]:
    """The rows of GPUs on the platforms this model is fitted on (CUDA's); the others' (Metal's) have their own fit,
    :mod:`advisor.infer.platform_decode`."""
    gpus = catalog.by_id()
    return [r for r in rows if gpus[r.gpu].platform in FITTED_PLATFORMS]


def fits_by_engine(catalog: Catalog, rows: tuple[Measured, ...] | None = None) -> dict[str, EngineFit]:
    """Every engine with measurements, fitted on all of them (on the fitted platforms)."""
    rows = on_fitted_platform(load_measured() if rows is None else rows, catalog)
    engines = sorted({r.engine for r in rows})
    return {e: fit_engine([r for r in rows if r.engine == e], catalog) for e in engines}


def predicted_value(row: Measured, fit: EngineFit, gpu: Gpu) -> float:
    """What the model says a measured row should read (its tokens a second)."""
    job = row_job(row)
    cls = weight_class(job)
    if row.metric == "decode":
        memory, _ = _decode_terms(job, gpu, row.batch, row.context)
        scale = bandwidth_scale(gpu, fit.bandwidth_trend)
        return row.batch / (fit.decode_floor_s + memory * fit.decode_k[cls] * scale)
    work = _prefill_work(job, gpu, row.context, row.batch) * compute_scale(gpu, job, fit.tflops_per_watt)
    return row.batch * row.context / (fit.prefill_floor_s + work * fit.prefill_k[cls])


@dataclass(frozen=True)
class CrossvalRow:
    engine: str
    metric: str
    held_out: str  # the GPU left out
    model: str
    weights: str
    measured: float
    predicted: float

    @property
    def ratio(self) -> float:
        return self.predicted / self.measured


def crossval(catalog: Catalog, rows: tuple[Measured, ...] | None = None) -> list[CrossvalRow]:
    """Each GPU's rows predicted by the fit of its engine's other GPUs (engines measured on one GPU only are left
    out: nothing to hold out; the fitted platforms' GPUs only)."""
    rows = on_fitted_platform(load_measured() if rows is None else rows, catalog)
    gpus = catalog.by_id()
    out = []
    for engine in sorted({r.engine for r in rows}):
        held_out = leave_each_gpu_out(
            [r for r in rows if r.engine == engine],
            lambda train: fit_engine(train, catalog),
            lambda row, fit: predicted_value(row, fit, gpus[row.gpu]),
        )
        for row, value in held_out:
            out.append(CrossvalRow(engine, row.metric, row.gpu, row.model, row.weights, row.value, value))
    return out


def leave_each_gpu_out(
    rows: list[Measured], fit: Callable[[list[Measured]], Any], predict: Callable[[Measured, Any], float]
) -> list[tuple[Measured, float]]:
    """Each GPU's rows predicted by ``fit`` of the other GPUs' rows (a GPU alone in ``rows``: nothing to hold out)."""
    out = []
    for held in sorted({r.gpu for r in rows}):
        train = [r for r in rows if r.gpu != held]
        if not train:
            continue
        constants = fit(train)
        out.extend((row, predict(row, constants)) for row in rows if row.gpu == held)
    return out


@lru_cache(maxsize=4)
def engine_fits(catalog: Catalog) -> dict[str, EngineFit]:
    """:func:`fits_by_engine` of the shipped measurements, worked out once per catalog."""
    return fits_by_engine(catalog)


@lru_cache(maxsize=4)
def decode_range(catalog: Catalog) -> dict[str, float]:
    """Each engine's cross-validated 90th-percentile decode error (engines measured on two GPUs or more)."""
    rows = crossval(catalog)
    out = {}
    for engine in {r.engine for r in rows}:
        summary = error_summary([r for r in rows if r.engine == engine])
        if "decode" in summary:
            out[engine] = summary["decode"]["p90"]
    return out


def error_summary(rows: list[CrossvalRow]) -> dict[str, dict[str, float]]:
    """Per metric: rows, median and 90th-percentile error factor (max(p/m, m/p)), and Spearman's rank."""
    summary = {}
    for metric in sorted({r.metric for r in rows}):
        mine = [r for r in rows if r.metric == metric]
        factors = np.array([max(r.ratio, 1 / r.ratio) for r in mine])
        measured = np.array([r.measured for r in mine])
        predicted = np.array([r.predicted for r in mine])
        rank = float(np.corrcoef(np.argsort(np.argsort(measured)), np.argsort(np.argsort(predicted)))[0, 1])
        summary[metric] = {
            "rows": len(mine),
            "median": float(np.median(factors)),
            "p90": float(np.percentile(factors, 90, method="higher")),
            "worst": float(factors.max()),
            "spearman": rank,
        }
    return summary
