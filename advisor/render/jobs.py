"""A language-model job's words: its table per GPU, the least memory it needs, the summary, the choice for a goal
and their JSON records. No I/O."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from advisor.format.formatting import fmt_duration, fmt_seconds, fmt_usd, fmt_usd_small
from advisor.format.vocabulary import Goal, Source
from advisor.render import basis
from advisor.render.tables import Column, text_table_of


def _to_buy(option: Any) -> str:
    """What the GPUs cost; a whole machine's price says so ('$3,999 (machine)')."""
    if not option.price_usd:
        return fmt_usd(math.nan)
    return fmt_usd(option.price_usd) + (" (machine)" if option.gpu.whole_machine else "")


def _job_memory(option: Any) -> str:
    f = option.footprint
    return f"{f.total_gb:.1f} GB ({f.low_gb:.0f}-{f.high_gb:.0f}) of {basis.capacity_text(option.gpu)}"


MOVE_WORDS = {
    "chunked loss": "chunked loss",
    "fused loss": "fused loss",
    "activation checkpointing": "checkpointing",
    "activation offloading": "offloading",
    "paged optimizer states": "paged states",
    "optimizer step in the backward pass": "step in backward",
    "torch.compile": "torch.compile",
    "8-bit optimizer": "8-bit AdamW",
    "pure bf16": "pure bf16",
}


def _defaults_words(rung: Any) -> str:
    """'; the defaults of torchtune (8-bit optimizer, pure bf16), unsloth (8-bit optimizer)': which stacks make the
    rung's choices by default ('' where none does)."""
    by_stack: dict[str, list[str]] = {}
    for move, stacks in rung.defaults:
        for name in stacks:
            by_stack.setdefault(name, []).append(str(move))
    if not by_stack:
        return ""
    return "; stacks that make these choices by default: " + ", ".join(
        f"{name} ({', '.join(moves)})" for name, moves in by_stack.items()
    )


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
    words = {
        Nearest.QLORA: lambda w: f"QLoRA {w.footprint.total_gb:.1f} GB",
        Nearest.SHORTER: lambda w: f"seq <= {w.value:,}",
        Nearest.SHARDED: lambda w: f"{w.value} GPUs sharded",
    }
    ways = [words[w.kind](w) for w in ladder.nearest]
    return "nothing fits; nearest: " + ", ".join(ways) if ways else "nothing fits"


def _rented(option: Any) -> str:
    """The run (or the step) rented at the cheapest rental's rate; '-' where none is, or the job does not fit."""
    if option.rental_cost_usd is None:
        return "-"
    return f"{fmt_usd_small(option.rental_cost_usd)} at ${option.rental_usd_per_hour:,.2f}/h"


def run_word(advice: Any) -> str:
    """'run', or 'step' where the job has no size (no --tokens: one optimizer step is what is timed and priced)."""
    return "run" if advice.job.tokens > 0 else "step"


def job_table(advice: Any) -> list[Column]:
    """The job's table, its time and rental columns headed by what they price (the run, or one step)."""
    word = run_word(advice)
    return [(head.replace("the run", f"the {word}"), render) for head, render in JOB_TABLE]


JOB_TABLE: list[Column] = [
    (
        "gpu",
        lambda o: o.name + (f", {basis.split_words(o.split.tensor, o.split.pipeline)}" if o.split.model > 1 else ""),
    ),
    ("fits?", lambda o: str(o.verdict)),
    ("memory (range) of the card", _job_memory),
    ("ckpt", lambda o: "on" if o.checkpointing else "off"),
    ("precision", lambda o: o.precision),
    ("tokens/s", lambda o: f"{o.tokens_per_second:,.0f}"),
    ("the run", lambda o: f"{fmt_seconds(o.seconds)} ({fmt_seconds(o.low)} - {fmt_seconds(o.high)})"),
    ("to buy", lambda o: _to_buy(o)),
    ("rented, the run", lambda o: _rented(o)),
    ("largest batch / seq that fits", lambda o: f"{o.largest_micro_batch} / {o.largest_seq_len:,}"),
    ("least memory that fits (the stack's choices)", ladder_text),
]


FP8_SOURCE = (
    "; the fp8 rows from the tuned FP8 stack's fit on NVIDIA's published NeMo and Megatron-Bridge FP8 "
    "runs (advisor.llm.fp8; AMD's CDNA 3 GPUs from AMD's own MLPerf runs, never NVIDIA's), their range its error "
    "with each run's GPU, model or method left out"
)


def fp8_source(advice: Any) -> str:
    """Where the fp8 rows' time comes from, where the answer has any (the CLI's and the app's words)."""
    from advisor.llm.advice import FP8_PRECISION  # the LLM layer, no framework

    return FP8_SOURCE if any(o.precision == FP8_PRECISION for o in advice.options) else ""


def weights_text(job: Any) -> str:
    """'8.03 B parameters, 41.9 M trained' (and how many the stack holds where it unties a tied embedding)."""
    held = job.held_parameters
    untied = (
        f", {held / 1e9:.2f} B as {job.stack} holds them with an output layer of its own"
        if held != job.model.parameters
        else ""
    )
    return f"{job.model.parameters / 1e9:.2f} B parameters{untied}, {job.trainable_parameters / 1e6:,.1f} M trained"


def job_advice_text(advice: Any) -> str:
    """``estimate --model-config``: the job, a row per GPU (fits first, fastest first), the decision."""
    job = advice.job
    size = (
        f"{job.run_tokens:,.0f} tokens"
        if job.tokens > 0
        else f"one optimizer step of {job.run_tokens:,.0f} tokens (no run size given: timed and priced a step; "
        "--tokens sizes the run)"
    )
    head = [
        f"Training job: {job.describe()}; {size} ({weights_text(job)}, "
        f"{job.flops_per_token() / 1e9:.1f} GFLOPs per token).",
        "Estimated, not measured: time from the performance model calibrated on every published result (the "
        "language-model throughputs of llm-foundry, NeMo AutoModel and Qwen among them), its range the "
        "cross-validated error of its situation"
        + fp8_source(advice)
        + "; "
        + (memory_basis(advice.options[0].footprint) if advice.options else "no GPU estimated")
        + ".",
        "",
        text_table_of(
            advice.options, job_table(advice), left={"gpu", "fits?", "memory (range) of the card", "precision"}
        ),
        "",
        *summary_lines(advice),
    ]
    if advice.memory_only:
        head.append(memory_only_line(advice.memory_only))
    answered = {a.gpu.id for a in advice.memory_only}
    unanswered = [e for e in advice.missing if e.device.catalog_id not in answered]
    if unanswered:
        said = [f"{e.device.name}: {basis.words(e.no_peak)}" for e in unanswered[:5]]
        head.append(f"Not estimated: {'; '.join(said)}" + (" ..." if len(unanswered) > 5 else ""))
    return "\n".join(head)


def memory_only_line(answers: Sequence[Any]) -> str:
    """The GPUs left without a time (a platform with no fitted results, a peak nobody published): whether the job fits
    each one's memory (no time, no cost), with why."""
    reasons = list(dict.fromkeys(basis.no_time_reason(a.why) for a in answers))
    said = [
        f"{a.name} {a.verdict}, {a.footprint.total_gb:.1f} GB ({a.footprint.low_gb:.1f}-{a.footprint.high_gb:.1f}) "
        f"of {basis.capacity_text(a.gpu)}"
        for a in answers
    ]
    return f"Memory only, no time or cost ({'; '.join(reasons)}): " + "; ".join(said)


def _fit_record(found: Any) -> dict[str, Any]:
    """The memory fields of a GPU's JSON record (an estimated option's or a memory-only answer's)."""
    f = found.footprint
    return {
        "fits": str(found.verdict),
        "memory_gb": round(f.total_gb, 2),
        "memory_low_gb": round(f.low_gb, 2),
        "memory_high_gb": round(f.high_gb, 2),
        "gpu_memory_gb": found.gpu.value("memory_gb"),
        "gpu_usable_memory_gb": found.gpu.usable_memory_gb,  # unified memory: the share the GPU may allocate
    }


def memory_only_record(answer: Any) -> dict[str, Any]:
    """``estimate --model-config --json``: a GPU of a platform with no fitted time, its memory answered, no time."""
    return {
        "gpu": answer.name,
        "catalog_id": answer.gpu.id,
        "devices": answer.devices,
        "platform": answer.gpu.platform,
        **_fit_record(answer),
        "seconds_estimate": None,
        "time_not_estimated": basis.no_time_reason(answer.why),
        "price_usd": answer.price_usd,
        "price_is_whole_machine": answer.gpu.whole_machine,
    }


def option_record(option: Any) -> dict[str, Any]:
    """``estimate --model-config --json``: one object per GPU (and GPU count)."""
    f = option.footprint
    return {
        "gpu": option.name,
        "catalog_id": option.gpu.id,
        "devices": option.devices,
        "tensor_parallel": option.split.tensor,
        "pipeline_parallel": option.split.pipeline,
        "precision": option.precision,
        "checkpointing": option.checkpointing,
        **_fit_record(option),
        "memory_parts_gb": {k: round(v, 2) for k, v in f.parts().items()},
        "gradients_apart": f.gradients_apart,  # the parts peak at two moments: memory_gb is the larger, not the sum
        "largest_micro_batch": option.largest_micro_batch,
        "largest_seq_len": option.largest_seq_len,
        "seconds_estimate": option.seconds,
        "low": option.low,
        "high": option.high,
        "tokens_per_second": option.tokens_per_second,
        "bound": option.bound,
        "price_usd": option.price_usd,
        "price_is_whole_machine": option.gpu.whole_machine,  # a Mac, a mini-PC, a DGX Spark: the machine's price
        "rental_usd_per_hour": option.rental_usd_per_hour,
        "rental_provider": option.rental_provider,
        "rental_cost_usd": option.rental_cost_usd,
        "memory_host_gb": round(f.host_gb, 2),
        "least_memory": ladder_record(option),
        "basis": basis.sentence(option.basis),
        "basis_parts": basis.record(option.basis),
        "memory_basis": memory_basis(option.footprint),
        "source": Source.ESTIMATED.value,
    }


def ladder_record(option: Any) -> dict[str, Any] | None:
    """The least memory the job needs on this GPU where it does not fit as asked (None where it does)."""
    ladder = option.ladder
    if ladder is None:
        return None
    rung = ladder.fits
    return {
        "fits_with": [str(m) for m in rung.moves] if rung else None,
        "memory_gb": round(rung.footprint.total_gb, 2) if rung else None,
        "memory_high_gb": round(rung.footprint.high_gb, 2) if rung else None,
        "slowdown": round(rung.slowdown, 3) if rung else None,
        "stack_defaults": {str(m): list(names) for m, names in rung.defaults} if rung else None,
        "nearest": [_way_record(w) for w in ladder.nearest],
    }


def _way_record(way: Any) -> dict[str, Any]:
    from advisor.llm.ladder import Nearest  # the LLM layer, no framework

    record: dict[str, Any] = {"way": str(way.kind)}
    if way.kind == Nearest.SHORTER:
        record["seq_len"] = way.value
    elif way.kind == Nearest.SHARDED:
        record["devices"] = way.value
    return {**record, "memory_gb": round(way.footprint.total_gb, 2), "memory_high_gb": round(way.footprint.high_gb, 2)}


def memory_basis(footprint: Any) -> str:
    """Where a footprint's figures come from, with its stack's range."""
    apart = (
        (
            " (the gradients and the activations peak apart, the larger counted: no gradient is held through the "
            "forward pass without --grad-accum)"
        )
        if footprint.gradients_apart
        else ""
    )
    return (
        f"memory: weights, gradients, optimizer state, activations (as the training stack holds them){apart} and "
        f"the framework's own (advisor.llm.job_memory), fitted on published peaks; range: the activations and the "
        f"framework's part x {footprint.low_factor:.2f}..{footprint.high_factor:.2f} (the 5th-95th percentile of "
        "its cross-validated error on the stack's published peaks, each source's model left out of its own "
        "fit); fits = the range's upper end fits 95 % of the card"
    )


def summary_lines(advice: Any) -> list[str]:
    """The decision in words: the cheapest rental and purchase that fit, and the fastest."""
    lines = []
    rent, buy, fast = advice.cheapest_rental(), advice.cheapest_purchase(), advice.fastest()
    if rent is not None:
        lines.append(
            f"Cheapest rented: {rent.name} at ${rent.rental_usd_per_hour:,.2f}/h ({rent.rental_provider}): "
            f"{fmt_duration(rent.seconds)} (up to {fmt_duration(rent.high)}), {fmt_usd_small(rent.rental_cost_usd)} "
            f"for the {run_word(advice)} at the range's upper end"
        )
    if buy is not None:
        lines.append(
            f"Cheapest to buy that fits: {buy.name} (${buy.price_usd:,.0f}): {fmt_duration(buy.seconds)} "
            f"({fmt_duration(buy.low)} to {fmt_duration(buy.high)})"
        )
    if fast is not None:
        lines.append(
            f"Fastest that fits: {fast.name}: {fmt_duration(fast.seconds)} ({fast.tokens_per_second:,.0f} tokens/s)"
        )
    unestimated = advice.cheaper_without_time()
    if unestimated is not None:
        platform = basis.platform_name(unestimated.gpu.platform)
        lines.append(
            f"Cheaper, fits, speed not estimated: {unestimated.name} (${unestimated.price_usd:,.0f}, {platform}): "
            f"{unestimated.footprint.total_gb:.1f} GB (up to {unestimated.footprint.high_gb:.1f}) of "
            f"{basis.capacity_text(unestimated.gpu)}; {basis.no_time_reason(unestimated.why)}, so its time "
            "is not estimated"
        )
    cheaper = advice.cheapest_with_choices()
    if cheaper is not None and cheaper.ladder is not None and cheaper.ladder.fits is not None:
        rung = cheaper.ladder.fits
        cost = "no slower" if rung.slowdown <= 1.005 else f"about {(rung.slowdown - 1) * 100:.0f} % slower"
        lines.append(
            f"Cheaper with the stack's choices changed: {cheaper.name} (${cheaper.price_usd:,.0f}) fits with "
            f"{' and '.join(str(m) for m in rung.moves)}: {rung.footprint.total_gb:.1f} GB (up to "
            f"{rung.footprint.high_gb:.1f}), {cost}{_defaults_words(rung)}"
        )
    if not advice.fitting() and cheaper is None and not advice.fitting_without_time():
        lines.append(
            "None of these GPUs fits this job with room to spare, even with the stack's memory-saving "
            "choices: the rows say the nearest ways (QLoRA, a shorter sequence, several GPUs sharded)"
        )
    return lines


def choice_reason(choice: Any) -> str:
    """Why the choice chose its option, or none (:class:`advisor.llm.advice.ChoiceWhy`)."""
    from advisor.llm.advice import ChoiceWhy  # the LLM layer, no framework

    within = f" within ${choice.budget:,.0f}" if choice.budget is not None else ""
    return {
        ChoiceWhy.RENTED: "rented: the cheapest way to run it",
        ChoiceWhy.FASTEST: "the fastest that fits" + within,
        ChoiceWhy.CHEAPEST: "the cheapest to buy that fits" + within,
        ChoiceWhy.NONE_FOR_SALE: "nothing that fits is for sale within the budget",
        ChoiceWhy.NONE_FITS: f"{_none_of(choice.asked)} this job with room to spare: QLoRA, checkpointing or a "
        "shorter sequence",
        ChoiceWhy.NO_TIME: "what fits has no estimated time (its platform's results are not fitted), so nothing to "
        "weigh by speed or cost: its memory below",
    }[choice.why]


def _none_of(asked: tuple[str, ...]) -> str:
    """Who fits nothing: the GPU asked, the GPUs asked, or the whole catalog."""
    if len(asked) == 1:
        return f"the {asked[0]} does not fit"
    return f"none of the {len(asked)} GPUs asked fits" if asked else "no catalog GPU fits"


def choice_lines(choice: Any) -> list[str]:
    """The choice in words."""
    best, rent = choice.best, choice.rent
    if best is None:
        return [f"No recommendation ({choice.goal}): {choice_reason(choice)}."]
    word = "run" if best.sized else "step"  # a job without a size is one optimizer step, timed and priced as such
    cost = (
        f"{fmt_usd_small(best.rental_cost_usd)} for the {word} at ${best.rental_usd_per_hour:,.2f}/h "
        f"({best.rental_provider})"
        if choice.goal == Goal.COST and best.rental_cost_usd
        else f"${best.price_usd:,.0f} to buy"
    )
    lines = [
        f"Best ({choice.goal}): {best.name}, {choice_reason(choice)}: {cost}; {fmt_duration(best.seconds)} a {word} "
        f"({fmt_duration(best.low)} to {fmt_duration(best.high)}), {best.tokens_per_second:,.0f} tokens/s, memory "
        f"{best.footprint.total_gb:.1f} GB (up to {best.footprint.high_gb:.1f}) of "
        f"{basis.capacity_text(best.gpu)}" + (", activation checkpointing on" if best.checkpointing else "")
    ]
    if choice.break_even_runs is not None and rent is not None:
        lines.append(
            f"Renting instead: {rent.name} at ${rent.rental_usd_per_hour:,.2f}/h ({rent.rental_provider}), "
            f"about {fmt_usd_small(rent.rental_cost_usd)} a {word}: buying pays for itself after "
            f"{choice.break_even_runs:,.0f} {word}s (energy not counted)"
        )
    return lines


def choice_record(choice: Any) -> dict[str, Any]:
    """``recommend --model-config --json``."""
    return {
        "goal": choice.goal,
        "reason": choice_reason(choice),
        "best": option_record(choice.best) if choice.best else None,
        "rent": option_record(choice.rent) if choice.rent else None,
        "break_even_runs": choice.break_even_runs,
        "lines": choice_lines(choice),
    }
