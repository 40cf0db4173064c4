"""Inference speed, cross-validated leaving one GPU out (advisor.infer.speed.crossval): per engine and metric the
rows, median and 90th-percentile error factor, the worst, and Spearman's rank over GPUs; then each row.

    python benchmarks/bench_inference.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


import numpy as np

from advisor.infer import platform_decode
from advisor.infer.logged_pools import load_logged_pools, predicted_tokens
from advisor.infer.saturated import crossval_saturated, held_out_saturated, saturated_fits
from advisor.infer.speed import crossval, error_summary, fits_by_engine
from advisor.store.catalog import load_catalog

PROMPT = 512  # the published prefill rows' prompt (llama-bench's pp 512)


def metal() -> None:
    """A platform without peaks (Apple's Metal): one user's decode, its own fit, each Mac left out in turn."""
    catalog = load_catalog()
    held = platform_decode.held_out(catalog)
    for (engine, platform), fit in platform_decode.platform_fits(catalog).items():
        errors = np.array([h.error for h in held if h.engine == engine and h.gpu in fit.gpus])
        print(
            f"{engine} on {platform} (decode only): floor {fit.floor_s * 1e3:.2f} ms, bandwidth factor (16-bit, "
            f"quantized) {fit.k[0]:.2f}, {fit.k[1]:.2f}; {fit.rows} rows on {len(fit.gpus)} GPUs; leaving each GPU "
            f"out: median {np.median(errors):.3f}x, worst {errors.max():.3f}x (the range)"
        )
    for h in held:
        print(f"  {h.engine} {h.gpu} {h.model} {h.weights}: measured {h.measured:,.2f}, predicted {h.predicted:,.2f}")
    unseen = platform_decode.published_held_out(catalog)
    errors = np.array([h.error for h in unseen])
    print(
        f"machines the decode fits never saw: {len(unseen)} rows, median {np.median(errors):.3f}x, "
        f"worst {errors.max():.3f}x"
    )
    for h in unseen:
        print(f"  {h.engine} {h.gpu} {h.model} {h.weights}: measured {h.measured:,.2f}, predicted {h.predicted:,.2f}")


def cache_pools() -> None:
    """The cache pools engines logged at start, against the serving memory model's count (never fitted on them)."""
    catalog = load_catalog()
    for pool in load_logged_pools():
        predicted = predicted_tokens(pool, catalog)
        print(
            f"cache pool {pool.engine} {pool.gpu} x{pool.devices} {pool.model} {pool.weights} at {pool.share:.2f} of "
            f"the card: logged {pool.tokens:,} tokens, predicted {predicted:,} ({predicted / pool.tokens:.3f}x)"
        )


def first_token(rows: list) -> None:
    """Time to first token, unloaded, where a GPU's held-out rows time both of a model's phases: the prompt's
    prefill and one decode step, measured and predicted; time per output token at one user is decode's own error."""
    phases: dict[tuple, dict] = {}
    for r in rows:
        phases.setdefault((r.engine, r.held_out, r.model, r.weights), {})[r.metric] = r
    factors = []
    for found in phases.values():
        if {"decode", "prefill"} <= set(found):
            decode, prefill = found["decode"], found["prefill"]
            measured = PROMPT / prefill.measured + 1 / decode.measured
            predicted = PROMPT / prefill.predicted + 1 / decode.predicted
            factors.append(max(predicted / measured, measured / predicted))
    if factors:
        print(
            f"time to first token ({PROMPT}-token prompt + one step), held out: {len(factors)} pairs, median "
            f"{np.median(factors):.3f}x, p90 {np.percentile(factors, 90, method='higher'):.3f}x"
        )


def main() -> int:
    catalog = load_catalog()
    rows = crossval(catalog)
    for engine, fit in fits_by_engine(catalog).items():
        print(
            f"{engine}: decode floor {fit.decode_floor_s * 1e3:.2f} ms, bandwidth factor (16-bit, quantized) "
            f"{fit.decode_k[0]:.2f}, {fit.decode_k[1]:.2f} at 1,000 GB/s, x (bandwidth / 1,000)^"
            f"{fit.bandwidth_trend.exponent:.2f} within each memory kind's span ("
            + ", ".join(f"{kind or '?'} {low:,.0f}-{high:,.0f}" for kind, low, high in fit.bandwidth_trend.spans)
            + " GB/s)"
            + "".join(f", x {factor:.2f} on {kind}" for kind, factor in fit.bandwidth_trend.factors)
            + "; "
            f"prefill factor {fit.prefill_k[0]:.2f}, {fit.prefill_k[1]:.2f}"
            + (f", the peak at most {fit.tflops_per_watt:.1f} TFLOPS a watt" if fit.tflops_per_watt else "")
            + f"; {fit.rows} rows"
        )
    for engine in sorted({r.engine for r in rows}):
        for metric, s in error_summary([r for r in rows if r.engine == engine]).items():
            print(
                f"{engine} {metric}: {s['rows']} rows, median {s['median']:.3f}x, p90 {s['p90']:.3f}x, "
                f"worst {s['worst']:.3f}x, Spearman {s['spearman']:.3f}"
            )
    for r in rows:
        print(
            f"  {r.engine} {r.metric} {r.held_out} {r.model} {r.weights}: measured {r.measured:,.1f}, "
            f"predicted {r.predicted:,.1f} ({r.ratio:.2f})"
        )
    first_token(rows)
    metal()
    cache_pools()
    saturated = crossval_saturated(catalog)
    factors = np.array([max(p / r.value, r.value / p) for r, p in saturated])
    print(
        f"saturated: {len(saturated)} rows, median {np.median(factors):.3f}x, "
        f"p90 {np.percentile(factors, 90, method='higher'):.3f}x, worst {factors.max():.3f}x; "
        f"fit {saturated_fits(catalog)}"
    )
    for r, p in saturated:
        print(f"  {_saturated_run(r)}: measured {r.value:,.0f}, predicted {p:,.0f} ({p / r.value:.2f})")
    saturated_architectures(catalog)
    saturated_held_out(catalog)
    return 0


def saturated_held_out(catalog) -> None:
    """Saturated throughputs no fit sees: the engine's fit's prediction, or its bound (a ceiling) where it has none."""
    for r, p, bound in held_out_saturated(catalog):
        what = "bound (a ceiling)" if bound else "fit"
        found = f"measured {r.value:,.2f}, {what} {p:,.2f} ({p / r.value:.2f})"
        print(f"saturated, never fitted: {_saturated_run(r)}: {found}")


def _saturated_run(r) -> str:
    """A published saturated run in a few words, its batch limit where the run set one."""
    limit = f" max {r.max_num_seqs} seqs" if r.max_num_seqs else ""
    return f"{r.engine} {r.gpu} x{r.devices} {r.model} {r.weights} {r.isl}/{r.osl}{limit}"


def saturated_architectures(catalog) -> None:
    """Each architecture's saturated rows predicted by the fit of the others (a new generation's first estimate); a
    platform whose runs are all of one architecture holds out each model instead, said so."""
    held = crossval_saturated(catalog, by="architecture")
    gpus = catalog.by_id()
    for architecture in sorted({gpus[r.gpu].architecture for r, _ in held}):
        factors = np.array([max(p / r.value, r.value / p) for r, p in held if gpus[r.gpu].architecture == architecture])
        platform = {gpus[r.gpu].platform for r, _ in held if gpus[r.gpu].architecture == architecture}
        alone = {gpus[r.gpu].architecture for r, _ in held if gpus[r.gpu].platform in platform} == {architecture}
        what = "its platform's only architecture, each model held out" if alone else "held out"
        print(
            f"saturated, {architecture} {what}: {len(factors)} rows, median {np.median(factors):.3f}x, "
            f"p90 {np.percentile(factors, 90, method='higher'):.3f}x, worst {factors.max():.3f}x"
        )


if __name__ == "__main__":
    sys.exit(main())
