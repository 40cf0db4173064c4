"""The maintainers' reports of the fits the advisor ships (``scripts/maintain.py`` prints them): the language-model
throughputs' cross-validation, the memory model against the published peaks, and the tuned FP8 stack's speed."""

from __future__ import annotations

import math

import numpy as np

from advisor.llm import fp8, validation
from advisor.render.basis import rate_words
from advisor.store.catalog import Catalog


def llm_crossval_text(summary: dict[str, dict[str, float]]) -> str:
    """The language-model throughputs' cross-validation, a line per situation."""
    lines = [
        "Language-model throughputs, each predicted by a fit that did not see it (launch-bound: with the "
        "published results whose kernels were counted, Tacotron 2's among them):"
    ]
    for situation, row in summary.items():
        lines.append(
            f"  {situation:24} {row['results']:4d} results  median error {row['median']:.3f}x  "
            f"90th percentile {row['p90']:.3f}x"
        )
    return "\n".join(lines)


def memory_fit_text(report: validation.Report) -> str:
    """The memory model against every published peak: per stack, each peak, and the peaks kept out of every fit."""
    pooled = report.fitted[""]
    lines = [
        f"memory model on {len(report.cases)} published peaks ({len({c.group for c in report.cases})} source-model "
        "groups), each predicted without its group:",
        f"  all: median error {report.median_error():.3f}x, median published / predicted "
        f"{report.median_ratio():.3f}; pooled range of the fitted part {pooled.range_low:.3f}.."
        f"{pooled.range_high:.3f}",
        f"  predictions below 0.8x of the published peak: {report.point_below_share():.1%}; published peaks above "
        f"the range's upper end: {report.optimistic_share():.1%}",
        f"  published runs said not to fit their own GPU: {len(report.said_not_to_fit())}",
        f"  pooled fit: factor {pooled.factor:.3g}, overhead {pooled.overhead_gb:.3g} GB",
    ]
    for name in report.stacks():
        cases, ratios = report.of(name)
        own = report.fitted.get(name)
        how = (
            f"own fit: factor {own.factor:.3g}, overhead {own.overhead_gb:.3g} GB, range of the fitted part "
            f"{own.range_low:.3f}..{own.range_high:.3f}"
            if own
            else "the pooled fit"
        )
        lines.append(
            f"  {name}: {len(cases)} peaks, median published / predicted {np.median(ratios):.3f} "
            f"(min {ratios.min():.3f}, max {ratios.max():.3f}); {how}"
        )
    for case in report.set_aside:
        lines.append(
            f"  left out: {case.label}: {case.peak_gb:.2f} GB published, below the "
            f"{validation.step_floor_gb(case):.2f} GB its weights, gradients and optimizer states alone hold at "
            "the step"
        )
    for case, ratio in sorted(zip(report.cases, report.ratios, strict=True), key=lambda p: p[1]):
        lines.append(f"  {ratio:6.3f}  {case.peak_gb:7.2f} GB  {case.label}")
    lines.append("kept out of every fit, predicted with the shipped constants (published / predicted, the range):")
    for found in validation.held_out():
        where = "inside" if found.in_range else "OUTSIDE"
        lines.append(
            f"  {found.ratio:6.3f}  {found.case.peak_gb:7.2f} GB  {found.footprint.total_gb:.2f} GB "
            f"({found.footprint.low_gb:.2f}-{found.footprint.high_gb:.2f}), {where} its range  "
            f"{found.case.label}"
        )
    return "\n".join(lines)


def fp8_fit_text(catalog: Catalog) -> str:
    """The tuned FP8 stack's fit, each run left out and the MLPerf check, as text."""
    fitted = fp8.fit_fp8(catalog)
    lines = [
        f"tuned FP8 stack: {fitted.utilization:.3f} of {rate_words(fitted.rate.sustained)} in model FLOPs, fitted on "
        f"{fitted.runs} published runs ({', '.join(sorted(fitted.architectures))}); the range "
        f"{math.exp(fitted.half_width):.3f}x, the widest 90th percentile below"
    ]
    for by in fp8.LEFT_OUT:
        errors = [abs(math.log(r)) for _, r in fp8.left_out(fp8.load_runs()[0], catalog, by)]
        lines.append(
            f"each run with {by} left out: median error {math.exp(float(np.median(errors))):.3f}x, "
            f"90th percentile {math.exp(fp8.quantile(errors)):.3f}x"
        )
    for arch, ratios in fp8.architecture_left_out(fp8.load_runs()[0], catalog).items():
        arch_errors = [abs(math.log(r)) for r in ratios]
        lines.append(
            f"{arch} left out (fitted on the other architecture): {len(ratios)} runs, median error "
            f"{math.exp(float(np.median(arch_errors))):.3f}x, 90th percentile "
            f"{math.exp(fp8.quantile(arch_errors)):.3f}x"
        )
    lines += ["", "MLPerf Training Llama 2 70B LoRA, 8 GPUs (never in the fit): published / predicted tokens/s per GPU"]
    gpus = catalog.by_id()
    for run, ratio in fp8.checked(catalog, fitted):
        published = run.tokens_per_second_per_gpu
        step = fp8.MLPERF_GLOBAL_BATCH * run.seq_len / (run.gpus * published)
        lines.append(
            f"  {gpus[run.gpu].name:16s} {published:6.0f} / {published / ratio:6.0f} = {ratio:.3f}  "
            f"(a step of {fp8.MLPERF_GLOBAL_BATCH} sequences: {step:.2f} s published, {step * ratio:.2f} s "
            "predicted)"
        )
    return "\n".join([*lines, "", *_rocm_fit_lines(catalog, fitted)])


def _rocm_fit_lines(catalog: Catalog, nvidia: fp8.Fp8Fit) -> list[str]:
    """AMD's own fit on its MLPerf runs, each GPU left out, its check on a newer architecture, and what NVIDIA's fit
    would have said of AMD's runs (why it is never borrowed)."""
    rocm = fp8.fit_fp8(catalog, platform="rocm")
    gpus = catalog.by_id()
    lines = [
        f"ROCm (AMD): {rocm.utilization:.3f} of {rate_words(rocm.rate.sustained)}, fitted on {rocm.runs} of AMD's "
        "MLPerf Llama 2 70B LoRA runs "
        f"({', '.join(sorted(rocm.architectures))}); the range {math.exp(rocm.half_width):.3f}x; a GPU without a "
        f"measured rate counts its peak times the fitted GPUs' {rocm.rate.share:.3f}"
    ]
    held = fp8.left_out(fp8.load_runs("rocm")[0], catalog)
    lines += [f"  {gpus[r.gpu].name} ({r.workload.split()[2]}), its GPU left out: {x:.3f}" for r, x in held]
    lines += [
        f"  {gpus[r.gpu].name} ({gpus[r.gpu].architecture}, never fitted): published / predicted {x:.3f}"
        for r, x in fp8.checked(catalog, rocm, "rocm")
    ]
    borrowed = fp8.checked(catalog, nvidia, "rocm") + [
        (r, fp8.utilization(r, gpus[r.gpu]) / nvidia.utilization) for r in fp8.load_runs("rocm")[0]
    ]
    lines.append(
        "  NVIDIA's fit on AMD's runs (never applied): "
        + ", ".join(f"{gpus[r.gpu].name} {x:.2f}" for r, x in sorted(borrowed, key=lambda p: p[1]))
    )
    return lines
