"""An estimate's basis in words: each part of :class:`advisor.perf.basis.Basis` written by one function, the
sentence every output shows put together from them once (:func:`sentence`), and the parts as JSON beside it
(:func:`record`). No I/O."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable
from typing import Any

from advisor.format.vocabulary import PLATFORM_SOFTWARE, PLATFORM_VENDORS, Platform
from advisor.perf import launch
from advisor.perf.basis import (
    Basis,
    CatalogCalibration,
    CatalogSituation,
    Fp8Calibration,
    Fp8Range,
    Fp8Situation,
    LanguageModelRange,
    LanguageModelSituation,
    Launch,
    MachineCalibration,
    Mirrored,
    NoFp8,
    NoPeak,
    NoPlatformFit,
    RangeMethod,
    Several,
    Sharded,
    SituationRange,
    Split,
    Wait,
)

# The software the published language-model throughputs ran: what a language-model estimate's centre assumes.
LANGUAGE_MODEL_STACKS = (
    "MosaicML llm-foundry's FSDP, NVIDIA NeMo AutoModel's TE kernels, Qwen's Hugging Face scripts; bf16, no FP8: a "
    "tuned stack (Megatron, Unsloth) runs faster than the centre, a plain loop without flash attention slower"
)


@functools.singledispatch
def words(part: Any) -> str:
    """One part of a basis in words."""
    raise TypeError(f"no words for a basis part of type {type(part).__name__}")


@words.register
def _catalog_calibration(part: CatalogCalibration) -> str:
    if not part.results:
        return "no GPU results to calibrate on: the priors alone (not cross-validated)"
    text = f"calibrated on {part.results} single-GPU results of {part.workloads} workloads on {part.gpus} GPUs"
    if not part.cross_validated:
        return text + "; not cross-validated (python -m advisor crossval --write)"
    if part.stale_date is not None:
        return text + f", cross-validated on the {part.stale_results} results of {part.stale_date}"
    return text


@words.register
def _machine_calibration(part: MachineCalibration) -> str:
    if not part.results:
        text = "no results to calibrate on: the priors alone (a factor of 2 or more)"
    else:
        factor = part.loo_factor
        check = f"; leave-one-out error up to {factor:.2f}x" if factor else "; one result, no cross-check"
        scope = "of this workload " if part.of_this_workload else ""
        text = f"fitted on {len(part.results)} result(s) {scope}({', '.join(part.results)}){check}"
    wider = []
    if part.other_work:
        wider.append("no result of this workload on this kind of device: its constants come from other work")
    if part.beyond is not None:
        wider.append(f"its {part.beyond[0]} is {part.beyond[1]:.1f}x beyond the results'")
    if part.new_architecture is not None:
        wider.append(f"no result on {part.new_architecture}")
    if part.new_bound is not None:
        wider.append(f"no result was {part.new_bound}-bound")
    return text + (f"; wider: {', '.join(wider)}" if wider else "")


@words.register
def _fp8_calibration(part: Fp8Calibration) -> str:
    if part.platform == "rocm":
        runs = f"{part.runs} of AMD's own MLPerf Llama 2 70B LoRA runs on 8 CDNA 3 GPUs (NeMo on ROCm), never NVIDIA's"
    else:
        runs = f"{part.runs} published NeMo and Megatron-Bridge FP8 runs on 8 to 1,024 GPUs"
    return (
        f"the tuned FP8 stack's speed (advisor.llm.fp8): {part.utilization:.2f} of {rate_words(part.sustained)} in "
        f"model FLOPs, the geometric mean of {runs}, their parallel overhead included"
    )


def rate_words(sustained: bool) -> str:
    """What a tuned-stack fit's utilization is over, in words: the vendor's measured sustained rate, or the peak."""
    if sustained:
        return (
            "the GPU's bfloat16 rate its vendor measured sustained on a dense GEMM (max-achievable FLOPs: the clock it "
            "holds there within its power, not the peak's)"
        )
    return "the GPU's 16-bit tensor peak"


_GPU_SITUATIONS = {
    "gpu": "this GPU has results of other workloads",
    "architecture": "no result on this GPU, some on {architecture}",
    "new": "no result on {architecture}",
}
_WORKLOAD_SITUATIONS = {
    "results": "this workload has results on {count} GPUs",
    "few": "this workload has results on {count} GPUs",
    "reference": "this workload has a result on one GPU (scaled from it)",
    "description": "no GPU result of this workload: its description at face value",
}
_TRACKED_SITUATIONS = {  # a job tracked in place says where it was tracked
    "reference": "tracked on one GPU of the catalog (scaled from that run)",
    "description": "tracked on a CPU (or a GPU the catalog lacks): its time says nothing of a GPU's, so the FLOPs "
    "counted on its step are taken at face value",
}


@words.register
def _catalog_situation(part: CatalogSituation) -> str:
    gpu = _GPU_SITUATIONS[part.gpu].format(architecture=part.architecture)
    work = _WORKLOAD_SITUATIONS[part.workload].format(count=part.gpus_with_results)
    if part.tracked and part.workload in _TRACKED_SITUATIONS:
        work = _TRACKED_SITUATIONS[part.workload]
    return f"{gpu}; {work}"


@words.register
def _language_model_situation(part: LanguageModelSituation) -> str:
    has = "this GPU has" if part.measured_gpu else "no"
    return (
        f"a language-model job ({part.situation}: {has} published language-model results), on the published "
        f"stacks' mix ({LANGUAGE_MODEL_STACKS})"
    )


@words.register
def _fp8_situation(part: Fp8Situation) -> str:
    return "a tuned FP8 job on a GPU of a fitted architecture"


_RANGE_METHODS = {
    RangeMethod.CROSS_VALIDATED: "cross-validated",
    RangeMethod.COMBINED: "combined from cross-validated situations",
    RangeMethod.FALLBACK: "not cross-validated",
}


@words.register
def _situation_range(part: SituationRange) -> str:
    return f"range = the 90th-percentile error of that situation, {part.factor:.2f}x ({_RANGE_METHODS[part.method]})"


@words.register
def _language_model_range(part: LanguageModelRange) -> str:
    scaling = ", and the data-parallel scaling's in quadrature" if part.with_scaling else ""
    return f"range = the 90th-percentile error of that situation on their throughputs{scaling}, {part.factor:.2f}x"


@words.register
def _fp8_range(part: Fp8Range) -> str:
    return (
        f"range = the widest 90th-percentile error of its runs predicted with their GPU, model or method left "
        f"out, {part.factor:.2f}x"
    )


@words.register
def _several(part: Several) -> str:
    where = f"{part.count} GPUs over {part.link}" if part.count > 1 else "one GPU"
    if part.machines > 1:
        where = (
            f"{part.machines} machines of {where}, linked at {part.link_gbps:g} Gb/s (the network costs "
            f"{part.network_cost:.0%}: an estimate from the link's speed, no published multi-machine results "
            "to check it against, not in the range)"
        )
    return (
        f"{where} in data parallel (the batch per GPU kept): efficiency {part.efficiency:.0%} predicted by the "
        f"scaling fitted on published multi-GPU results, whose error ({part.scaling_error:.2f}x) widens the "
        "range"
    )


@words.register
def _mirrored(part: Mirrored) -> str:
    return (
        f"{part.count} GPUs over {part.link} in data parallel under tf.distribute.MirroredStrategy, the global "
        f"batch of {part.batch:g} split ({part.batch / part.count:g} a GPU): each GPU's share timed by the model "
        f"({part.share_of_one:.0%} of one GPU's time: {part.share_bound}-bound), the all-reduce after the "
        f"backward pass not overlapped: efficiency {part.efficiency:.0%} ({part.speedup:.2f}x one GPU)"
    )


@words.register
def _launch(part: Launch) -> str:
    if part.fitted:
        how = (
            f"fitted on the published results whose kernels are counted, x/{part.width:.2f}..x{part.width:.2f}: "
            "the launch-bound results' cross-validated error, the range of this part"
        )
    else:
        how = (
            f"{launch.OPERATION_SECONDS_LOW * 1e6:g}-{launch.OPERATION_SECONDS_HIGH * 1e6:g} us quoted: the range "
            "of this part"
        )
    return (
        f"at least the host's launches: {part.operations:,.0f} operations a step counted on a real step, "
        f"{part.operation_seconds * 1e6:.1f} us each ({how})"
    )


@words.register
def _wait(part: Wait) -> str:
    return (
        f"plus {part.seconds:,.4g} s waiting for data ({part.share:.0%} of each step, measured where the run was "
        f"tracked): a faster GPU cannot shorten it, so no GPU makes this run more than {1 / part.share:.3g}x "
        "faster"
    )


@words.register
def _sharded(part: Sharded) -> str:
    return (
        f"weights, gradients and optimizer state sharded over the {part.count} GPUs (FSDP / ZeRO-3), two blocks "
        "gathered at a time; the time takes the all-gathers as overlapped as DDP's all-reduce"
    )


def split_words(tensor: int, pipeline: int) -> str:
    """Megatron's split of a model in short: "tensor 8", "tensor 8 x pipeline 4"."""
    return f"tensor {tensor} x pipeline {pipeline}" if pipeline > 1 else f"tensor {tensor}"


@words.register
def _split(part: Split) -> str:
    return (
        f"the model split over {part.model} GPUs ({split_words(part.tensor, part.pipeline)}, the fewest on which "
        f"it fits), each holding 1/{part.model} of the weights and 1/{part.tensor} of the activations, the "
        f"optimizer's fp32 states sharded over all {part.count}"
    )


@words.register
def _no_fp8(part: NoFp8) -> str:
    return (
        f"FP8 is not estimated on {part.architecture} (the tuned FP8 stack's runs are of "
        f"{' and '.join(part.fitted)}): the 16-bit time"
    )


@words.register
def _no_platform_fit(part: NoPlatformFit) -> str:
    return f"no estimate for {part.device}: {_platform_reason(part)}"


def _platform_reason(part: NoPlatformFit) -> str:
    """Why no GPU of ``part``'s platform is estimated (no GPU named)."""
    fitted = ", ".join(platform_name(p) for p in part.fitted)
    return (
        f"the model is fitted and cross-validated on {fitted} results only, and none on "
        f"{platform_name(part.platform)} (its software reaches another share of its peaks; the "
        f"{fitted} range is never borrowed){_stack_only(part)}"
    )


def not_estimated_lines(missing: Iterable[Any]) -> list[str]:
    """The GPUs not estimated and why (``missing``: estimates without seconds, each with its ``no_peak``): a line per
    GPU and precision whose peak the catalog lacks, and one per platform without a fit, naming its GPUs once."""
    lines: list[str] = []
    platforms: dict[NoPlatformFit, dict[str, list[str]]] = {}
    for estimate in missing:
        why = estimate.no_peak
        if isinstance(why, NoPlatformFit):
            named = platforms.setdefault(dataclasses.replace(why, device=""), {})
            named.setdefault(estimate.device.name, []).append(estimate.precision)
        else:
            lines.append(f"Not estimated: {estimate.device.name} {estimate.precision}: {words(why)}")
    for why, devices in platforms.items():
        precisions = " and ".join(dict.fromkeys(p for ps in devices.values() for p in ps))
        lines.append(
            f"Not estimated on {platform_name(why.platform)} ({precisions}): {', '.join(devices)}: "
            f"{_platform_reason(why)}"
        )
    return lines


def _stack_only(part: NoPlatformFit) -> str:
    """Where the platform's tuned FP8 stack has a fit of other architectures: which ('' where none)."""
    if not part.stack_architectures:
        return ""
    return f"; its tuned FP8 stack's runs are of {' and '.join(part.stack_architectures)} only"


PLATFORM_NAMES = {str(p): f"{PLATFORM_SOFTWARE[p]} ({PLATFORM_VENDORS[p]})" for p in Platform}


def no_time_reason(why: NoPlatformFit | NoPeak) -> str:
    """Why a GPU answered for memory has no time, in a few words: 'no ROCm (AMD) training results are fitted yet',
    'no bfloat16 peak in the catalog for ...'."""
    if isinstance(why, NoPlatformFit) and why.stack_architectures:
        return (
            f"no {platform_name(why.platform)} training results of its architecture are fitted yet, the tuned FP8 "
            f"stack's being of {' and '.join(why.stack_architectures)} only"
        )
    if isinstance(why, NoPlatformFit):
        return f"no {platform_name(why.platform)} training results are fitted yet"
    return f"no {why.peak} peak in the catalog for {why.device}"


def platform_name(platform: str) -> str:
    """A software platform as a reader knows it, with its vendor ('ROCm (AMD)'); an unknown one as written."""
    return PLATFORM_NAMES.get(platform, platform)


def capacity_text(gpu: Any) -> str:
    """The memory a fit is decided against, in GB as the catalog states it: '24 GB'; a unified-memory GPU's allocatable
    share with the whole it comes from: '96 GB usable of 128 GB unified'."""
    usable = gpu.usable_memory_gb
    if gpu.allocatable is None or usable is None:
        return f"{usable:g} GB"
    return f"{usable:g} GB usable of {gpu.value('memory_gb'):g} GB unified"


@words.register
def _no_peak(part: NoPeak) -> str:
    return f"no {part.peak} peak in the catalog for {part.device}" + (f" ({part.note})" if part.note else "")


def situation(basis: Any) -> str:
    """The situation an estimate's range is cross-validated for, in words (empty where there is no basis)."""
    return words(basis.situation) if isinstance(basis, Basis) and basis.situation is not None else ""


def sentence(basis: Any) -> str | None:
    """The one sentence every output shows: the calibration, the situation and its range, then each clause (None
    where the row has no basis: a measured or quoted result)."""
    if not isinstance(basis, Basis):
        return None
    head = situation(basis)
    if basis.range is not None:
        head = f"{head}: {words(basis.range)}"
    parts = (words(basis.calibration), head, *(words(clause) for clause in basis.clauses))
    return "; ".join(part for part in parts if part)


def record(basis: Any) -> dict[str, Any] | None:
    """The parts as JSON (``--json``'s ``basis_parts``, beside the sentence): each part's figures, its kind and its
    words."""
    if not isinstance(basis, Basis):
        return None
    parts = {"calibration": basis.calibration, "situation": basis.situation, "range": basis.range}
    return {
        **{name: _part_record(part) for name, part in parts.items()},
        "clauses": [_part_record(clause) for clause in basis.clauses],
    }


_KINDS = {
    CatalogCalibration: "catalog",
    MachineCalibration: "machine",
    Fp8Calibration: "fp8",
    CatalogSituation: "catalog",
    LanguageModelSituation: "language-model",
    Fp8Situation: "fp8",
    SituationRange: "situation",
    LanguageModelRange: "language-model",
    Fp8Range: "fp8",
}


def _part_record(part: Any) -> dict[str, Any] | None:
    if part is None:
        return None
    kind = str(part.kind) if hasattr(part, "kind") else _KINDS[type(part)]
    figures = {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(part).items()}
    # the figures a record derives (its properties) stand in front of the ones it holds
    derived = {name: getattr(part, name) for name, member in vars(type(part)).items() if isinstance(member, property)}
    return {"kind": kind, **derived, **figures, "words": words(part)}
