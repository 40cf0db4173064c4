"""A language-model job's words: its table per GPU, the least memory it needs, the summary. No I/O."""

from __future__ import annotations

import math
from typing import Any

from advisor.format.formatting import fmt_seconds, fmt_usd
from advisor.render.tables import Column, text_table_of


def _job_memory(option: Any) -> str:
    f = option.footprint
    return f"{f.total_gb:.1f} GB ({f.low_gb:.0f}-{f.high_gb:.0f}) of {option.gpu.value('memory_gb'):g}"


MOVE_WORDS = {"chunked loss": "chunked loss", "fused loss": "fused loss", "activation checkpointing": "checkpointing",
              "activation offloading": "offloading", "paged optimizer states": "paged states",
              "optimizer step in the backward pass": "step in backward"}  # fmt: skip


def ladder_text(option: Any) -> str:
    """The least memory the job needs on this GPU where it does not fit as asked: the cheapest set of the stack's
    choices that fits, its memory and time; else the nearest ways out. Empty where the job fits."""
    from advisor.llm.ladder import Nearest  # the LLM layer, no framework

    ladder = option.ladder
    if ladder is None:
        return ""
    rung = ladder.fits
    if rung is not None:
        moves = " + ".join(MOVE_WORDS[str(m)] for m in rung.moves)
        cost = "no slower" if rung.slowdown <= 1.005 else f"{(rung.slowdown - 1) * 100:.0f} % slower"
        return f"{moves}: {rung.footprint.total_gb:.1f} GB (up to {rung.footprint.high_gb:.0f}), {cost}"
    words = {Nearest.QLORA: lambda w: f"QLoRA {w.footprint.total_gb:.1f} GB",
             Nearest.SHORTER: lambda w: f"seq <= {w.value:,}",
             Nearest.SHARDED: lambda w: f"{w.value} GPUs sharded"}  # fmt: skip
    ways = [words[w.kind](w) for w in ladder.nearest]
    return "nothing fits; nearest: " + ", ".join(ways) if ways else "nothing fits"


JOB_TABLE: list[Column] = [
    ("gpu", lambda o: o.name + (f", {o.split.words()}" if o.split.model > 1 else "")),
    ("fits?", lambda o: str(o.verdict)),
    ("memory (range) of the card", _job_memory),
    ("ckpt", lambda o: "on" if o.checkpointing else "off"),
    ("precision", lambda o: o.precision),
    ("tokens/s", lambda o: f"{o.tokens_per_second:,.0f}"),
    ("the run", lambda o: f"{fmt_seconds(o.seconds)} ({fmt_seconds(o.low)} - {fmt_seconds(o.high)})"),
    ("to buy", lambda o: fmt_usd(o.price_usd if o.price_usd else math.nan)),
    ("rented, the run", lambda o: "-" if o.rental_cost_usd is None else
     f"${o.rental_cost_usd:,.2f} at ${o.rental_usd_per_hour:,.2f}/h"),
    ("largest batch / seq that fits", lambda o: f"{o.largest_micro_batch} / {o.largest_seq_len:,}"),
    ("least memory that fits (the stack's choices)", ladder_text),
]


FP8_SOURCE = ("; the fp8 rows from the tuned FP8 stack's fit on NVIDIA's published NeMo and Megatron-Bridge FP8 "
              "runs (advisor.llm.fp8), their range its error with each run's GPU, model or method left out")


def fp8_source(advice: Any) -> str:
    """Where the fp8 rows' time comes from, where the answer has any (the CLI's and the app's words)."""
    from advisor.llm.advice import FP8_PRECISION  # the LLM layer, no framework

    return FP8_SOURCE if any(o.precision == FP8_PRECISION for o in advice.options) else ""


def job_advice_text(advice: Any) -> str:
    """``estimate --model-config``: the job, a row per GPU (fits first, fastest first), the decision."""
    from advisor.llm.advice import memory_basis, summary_lines  # the LLM layer, no framework

    job = advice.job
    head = [
        f"Training job: {job.describe()}; {job.run_tokens:,.0f} tokens "
        f"({job.model.parameters / 1e9:.2f} B parameters, {job.trainable_parameters / 1e6:,.1f} M trained, "
        f"{job.flops_per_token() / 1e9:.1f} GFLOPs per token).",
        "Estimated, not measured: time from the performance model calibrated on every published result (the "
        "language-model throughputs of llm-foundry, NeMo AutoModel and Qwen among them), its range the "
        "cross-validated error of its situation" + fp8_source(advice) + "; "
        + (memory_basis(advice.options[0].footprint) if advice.options else "no GPU estimated") + ".",
        "",
        text_table_of(advice.options, JOB_TABLE, left={"gpu", "fits?", "memory (range) of the card", "precision"}),
        "",
        *summary_lines(advice),
    ]
    if advice.missing:
        head.append(f"Not estimated: {'; '.join(advice.missing[:5])}" + (" ..." if len(advice.missing) > 5 else ""))
    return "\n".join(head)
