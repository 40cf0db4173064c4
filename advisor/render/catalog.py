"""The catalog and models commands' tables, and what the catalog's dates say. No I/O."""

from __future__ import annotations

import contextlib
import datetime as _dt
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from advisor.format.formatting import fmt_usd
from advisor.render.tables import Column, text_table_of
from advisor.store.catalog import Catalog, Gpu


def catalog_text(catalog: Catalog) -> str:
    """The catalog as a table: specifications, the purchase price the advisor uses and the cheapest rental."""

    def spec(name: str, digits: str = ",.0f") -> Callable[[Any], str]:
        return lambda g: "-" if g.value(name) is None else format(g.value(name), digits)

    def price(gpu: Gpu) -> str:
        if not gpu.price:
            return "unknown"
        return f"{fmt_usd(gpu.price.usd)} ({gpu.price.date[:7]}{', machine' if gpu.whole_machine else ''})"

    def memory(gpu: Gpu) -> str:
        usable = gpu.usable_memory_gb
        if gpu.allocatable is None:
            return "-" if usable is None else f"{usable:g}"
        return f"{usable:g} of {gpu.value('memory_gb'):g}"

    def rental(gpu: Gpu) -> str:
        best = gpu.best_rental
        return f"${best.usd_per_hour:.2f}/h {best.provider}" if best else "-"

    columns: list[Column] = [
        ("id", lambda g: g.id),
        ("architecture", lambda g: g.architecture),
        ("platform", lambda g: g.platform),
        ("launched", lambda g: g.launch_date[:7]),
        ("GB", memory),
        ("FP32", spec("fp32_tflops", ".1f")),
        ("TF32", spec("tf32_tflops", ".1f")),
        ("FP16 tensor", spec("fp16_tensor_tflops", ".1f")),
        ("GB/s", spec("memory_bandwidth_gbs")),
        ("L2 MB", spec("l2_cache_mb", "g")),
        ("W", spec("board_power_w")),
        ("price", price),
        ("rent", rental),
    ]
    table = text_table_of(list(catalog.gpus), columns, left={"id", "architecture", "platform", "launched", "rent"})
    return "\n".join(
        [
            f"GPU catalog: {len(catalog.gpus)} GPUs, prices as of {catalog.as_of} ({_shown_path(catalog.origin)})",
            "TFLOPS are dense peaks; FP16 tensor is with float32 accumulation (mixed_float16); '-' means no "
            "source gives it.",
            "GB: the memory a fit counts ('96 of 128': what the GPU may allocate of a machine's unified memory); "
            "'machine': the whole machine's price.",
            "",
            table,
        ]
    )


def _shown_path(path: str) -> str:
    """The package's own files as ``advisor/...`` (installed or not, wherever the command runs); another path
    relative to the working folder when it lies inside it (shorter, and the same on every machine)."""
    resolved = Path(path).resolve()
    for base in (Path(__file__).resolve().parents[2], Path.cwd().resolve()):  # the folder that holds advisor/
        with contextlib.suppress(ValueError):
            return str(resolved.relative_to(base))
    return path


def models_text(rows: Sequence[dict[str, Any]]) -> str:
    """``advisor models``: the presets, a line each, with where their numbers come from."""
    columns: list[Column] = [
        ("id", lambda r: r["id"]),
        ("model", lambda r: r["name"]),
        ("parameters", lambda r: f"{r['counted_parameters'] / 1e9:.2f} B"),
        ("layers", lambda r: str(r["layers"])),
        ("hidden", lambda r: f"{r['hidden']:,}"),
        ("heads / kv", lambda r: f"{r['heads']} / {r['kv_heads']}"),
        ("mlp", lambda r: f"{r['intermediate']:,}" + (" gated" if r["gated_mlp"] else "")),
        ("vocabulary", lambda r: f"{r['vocab']:,}" + (" tied" if r["tied_embeddings"] else "")),
        ("config.json", lambda r: r["source"]),
    ]
    return text_table_of(rows, columns, left={"id", "model", "config.json"}) + (
        "\n\nNumbers from each model's config.json on the Hugging Face Hub (or the file named); "
        "`estimate --model-config FILE` reads your own."
    )


def engines_text(rows: Sequence[dict[str, Any]]) -> str:
    """``advisor engines``: each inference engine in a few lines: where it runs, the formats it runs (with the
    architectures a format is limited to), how it splits a model over GPUs."""

    def listed(names: Sequence[str], limits: dict[str, list[str]]) -> str:
        return ", ".join(f"{n} ({'/'.join(limits[n])})" if n in limits else n for n in names)

    blocks = []
    for row in rows:
        where = ", ".join(row["platforms"]) + (f": {', '.join(row['architectures'])}" if row["architectures"] else "")
        blocks.append(
            f"{row['name']} ({row['id']}, {row['version']})\n"
            f"  runs on: {where}; several GPUs: {row['splits']}\n"
            f"  weights: {listed(row['weights'], row['weights_on'])}\n"
            f"  cache: {listed(row['kv_cache'], row['kv_cache_on'])}"
            + (f"\n  speeds fitted: {_fitted(row['fitted'])}" if "fitted" in row else "")
        )
    return "\n\n".join(blocks) + (
        "\n\nA format in brackets runs on those architectures only. Each default and limit with its source: "
        "advisor/data/engines.yaml (`advisor engines --json`); `estimate --inference --engine ID` uses one. Speeds "
        "are fitted on the published and measured runs of advisor/data/inference_results.yaml, each on its own "
        "platform (their held-out errors: benchmarks/bench_inference.py); elsewhere an engine's figure is the "
        "hardware's bound on CUDA, none on another platform."
    )


def _fitted(fits: Sequence[dict[str, Any]]) -> str:
    """'decode and prefill, one user to a batch on cuda (102 runs, 15 GPUs); ...' or that there are none."""
    if not fits:
        return "none (on CUDA the hardware's bound)"
    return "; ".join(
        f"{f['speed']} on {f['platform']} ({f['runs']} runs, {len(f['gpus'])} GPU{'s' if len(f['gpus']) > 1 else ''}"
        + (f"; {', '.join(f['only'])} only" if f.get("only") else "")
        + ")"
        for f in fits
    )


def catalog_dates(catalog: Catalog, today: _dt.date | None = None) -> str:
    """What the catalog's dates say, in a sentence: when its prices were collected and how long ago, and the span of
    its rentals' dates (each price keeps its own)."""
    age = ((today or _dt.date.today()) - _dt.date.fromisoformat(catalog.as_of)).days
    years = sorted({r.date[:4] for gpu in catalog.gpus for r in gpu.rentals if r.date})
    span = (
        f"rentals date from {years[0]}-{years[-1]}"
        if len(years) > 1
        else (f"rentals date from {years[0]}" if years else "no rental is listed")
    )
    return (
        f"GPU catalog: {len(catalog.gpus)} GPUs; prices collected {catalog.as_of} ({age:,} days ago). Each price "
        f"keeps its own date: launch prices are as old as the GPU, {span}."
    )
