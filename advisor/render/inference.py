"""Words and tables for an inference job (``estimate --model-config NAME --inference``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from advisor.format.formatting import fmt_seconds
from advisor.format.names import SHOWN
from advisor.format.vocabulary import Source
from advisor.infer.architecture import unknown_maximum_cap
from advisor.infer.estimate import CostInputs, InferencePicks, InferenceRow
from advisor.infer.job import InferenceJob
from advisor.infer.measured import MeasuredGeneration
from advisor.infer.mixed import LLAMA_CPP_SPLIT_SOURCE, MixedAnswer
from advisor.infer.token_costs import BuyOrRent
from advisor.infer.ways import Way
from advisor.render import charts, tables

GB = 1e9


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}" if value < 100 else f"${value:,.0f}"


def _bounded(row: InferenceRow) -> bool:
    """A speed from the hardware's limits alone (an engine without measurements): its times and costs are floors,
    its tokens a second ceilings."""
    return row.speed is not None and not row.speed.fitted


def _at_least(row: InferenceRow, text: str, mark: str = ">= ") -> str:
    """``text`` marked as a floor where the speed is a bound (``mark``: '>= ' in a cell, 'at least ' in words)."""
    return f"{mark}{text}" if _bounded(row) and text != "-" else text


def _cost(row: InferenceRow, value: float | None, mark: str = ">= ") -> str:
    """A million tokens' cost: a floor where the speed is a bound or one user's decode is all that is estimated, but
    for a rate of requests, whose tokens are the rate's wherever the GPU carries it."""
    if row.costs_are_floors and value is not None:
        return f"{mark}{_money(value)}"
    return _money(value) if row.at_rate is not None else _at_least(row, _money(value), mark)


def _at_most(row: InferenceRow, text: str) -> str:
    return f"<= {text}" if _bounded(row) else text


def _ranged(value: float, factor: float | None) -> str:
    if factor is None:
        return f"<= {value:,.0f} (bound)"
    return f"{value:,.0f} ({value / factor:,.0f}-{value * factor:,.0f})"


def model_and_load(job: InferenceJob) -> list[str]:
    """The header's model, engine and load lines (the load without how many GPUs)."""
    m = job.model
    kinds = ", ".join(f"{n} {kind}" for kind, n in m.kinds.items())
    moe = f"; {m.experts} experts, {m.experts_per_token} a token" if m.experts else ""
    whole = "; its cache keeps every token of the sliding layers (no window applied)" if job.keeps_whole_windows else ""
    return [
        f"Model: {m.name}: {m.parameters / 1e9:.3g} B weights "
        f"({m.active_parameters / 1e9:.3g} B read a token{moe}); layers: {kinds}",
        f"Engine: {job.engine.name} ({job.engine.version}); weights {job.weights.id} "
        f"({job.weights.bits:g} bits), cache {job.kv.id}{whole}",
        f"Load: {_load(job)}, {job.prompt:,} prompt + {job.output:,} output tokens (context {job.sequence_tokens:,})",
    ]


def _load(job: InferenceJob) -> str:
    """The asked load in words: users at once, or a steady rate of requests."""
    if job.rate is None:
        return f"{job.users} user(s) at once"
    return f"{job.rate:g} request(s) a second arriving steadily (the users each GPU keeps in flight: 'all tok/s')"


def inference_header(job: InferenceJob, inputs: CostInputs) -> str:
    model, engine, load = model_and_load(job)
    return "\n".join(
        [
            model,
            engine,
            f"{load}; {job.devices} GPU(s) each ({_parallel(job)}){_copies(job)}",
            f"Costs: owned over {inputs.lifetime_years:g} years serving {inputs.hours_per_week:g} h a week, energy at "
            f"${inputs.kwh_price:.2f}/kWh; rented at the catalog's cheapest on-demand price",
        ]
    )


def _parallel(job: InferenceJob) -> str:
    """How a copy's GPUs share the model."""
    if job.attention_data_parallel:
        return "attention data parallel: each GPU its own users' attention and cache, the experts split"
    if job.splits_layers:
        return "whole layers on each GPU, a token passing them in turn: one GPU's speed"
    return "tensor parallel"


def _copies(job: InferenceJob) -> str:
    """', 2 copies of the model (data parallel, ...), 4 user(s) each: ...': where there are several."""
    if job.replicas == 1:
        return ""
    return (
        f", {job.replicas} copies of the model (data parallel, {job.gpus} GPUs in all), "
        f"{job.per_copy().users} user(s) each: memory, speed and cost a million tokens are one copy's, "
        "all tok/s are all copies'"
    )


def _longest(row: InferenceRow) -> str:
    """The longest context; '+' where the search stopped at the cap of a model with no known maximum."""
    unknown = row.memory.longest_context >= unknown_maximum_cap() and row.memory.model_max is None
    return f"{row.memory.longest_context:,}" + ("+" if unknown else "")


def _saturated_text(row: InferenceRow) -> str:
    if row.saturated_tokens_per_s is None:
        return "-"
    bound = "" if row.saturated_fitted else " bound"
    return f"{row.total_saturated_tokens_per_s:,.0f} ({row.saturated_batch * row.replicas:,}){bound}"


def _single_stream(row: InferenceRow) -> str:
    """One user's decode: the fitted speed with its range, or a platform's decode-only figure (Metal's, ROCm's), or
    none."""
    if row.speed is not None:
        return _ranged(row.speed.single_stream_tokens_per_s, row.range_factor)
    if row.decode_only is not None:
        extrapolated = ", extrapolated" if row.decode_only.extrapolated else ""
        return _ranged(row.decode_only.tokens_per_s, row.decode_only.range_factor) + " decode only" + extrapolated
    return "-"


def decode_only_note(rows: list[InferenceRow]) -> list[str]:
    """What a decode-only figure rests on (each platform's fit once)."""
    fits = {r.decode_only.fit for r in rows if r.decode_only is not None}
    return [
        f"decode only ({fit.platform}): one user's decode from {fit.engine}'s {fit.rows} published {fit.platform} "
        f"results on {len(fit.gpus)} GPUs of {fit.evidence_span[0]:,.0f}-{fit.evidence_span[1]:,.0f} GB/s "
        f"(advisor/infer/platform_decode.py), the range its error leaving each GPU out ({fit.range_factor:.2f}x; "
        f"'extrapolated': a GPU outside those bandwidths, its error there unknown); no first token or load: they "
        f"need the GPU's published compute peak and the platform's own prefill results; its costs are floors ('>='), "
        f"from the most tokens a second the asked users could get (each at the top of one user's range, all at the "
        f"memory's full bandwidth; an extrapolated GPU's at its bandwidth alone) with no prompt's time."
        for fit in sorted(fits, key=lambda f: (f.engine, f.platform))
    ]


def _way_text(way: Way) -> str:
    """A way to fit in a few words, with one user's tokens a second where estimated (a ceiling: '<=')."""
    if way.single_stream_tokens_per_s is None:
        return way.summary
    return f"{way.summary}: {'<= ' if way.bound else ''}{way.single_stream_tokens_per_s:,.0f} tok/s"


def ways_lines(found: InferencePicks) -> list[str]:
    """Where no GPU holds the job as asked: the first few GPUs' ways to fit, fewest GPUs first."""
    return [f"Ways to fit {row.gpu}: " + "; or ".join(_way_text(way) for way in row.ways) + "." for row in found.ways]


def cheaper_way_lines(found: InferencePicks) -> list[str]:
    """The way to fit that costs less a million tokens than every GPU holding the job as asked, owned and rented."""
    lines = []
    for kind, pair in (("owned", found.cheaper_way_owned), ("rented", found.cheaper_way_rented)):
        if pair is None:
            continue
        row, way = pair
        cost = way.usd_per_million_owned if kind == "owned" else way.usd_per_million_rented
        where = f" on {way.rental}" if kind == "rented" else ""
        lines.append(
            f"Cheapest a million tokens {kind}, the job changed: {row.gpu}{where} with {way.summary}, "
            f"{'at least ' if way.bound else ''}{_money(cost)}."
        )
    return lines


def _speed_text(render):
    return lambda row: "-" if row.speed is None else render(row)


def _delivered(row: InferenceRow) -> str:
    """All output tokens a second at the asked load; at a rate of requests, what the rate delivers (exact where the
    GPU carries it) and the users it keeps in flight (all copies'; a floor where the speed is the hardware's bound)."""
    tokens = f"{row.total_output_tokens_per_s:,.0f}"
    if row.at_rate is None or row.at_rate.users is None:
        return _at_most(row, tokens)
    return f"{tokens} ({_at_least(row, f'{row.at_rate.users * row.replicas:,}')} at once)"


COLUMNS = [
    ("gpu", lambda r: r.gpu),
    ("memory", lambda r: r.memory.verdict),
    ("GB need/engine", lambda r: f"{r.memory.needed_bytes / GB:.1f}/{r.memory.budget_bytes / GB:.1f}"),
    ("longest ctx", lambda r: _longest(r)),
    ("most seqs", lambda r: f"{r.memory.most_sequences:,}"),
    ("TTFT ms", _speed_text(lambda r: _at_least(r, f"{r.speed.time_to_first_token_s * 1e3:,.0f}"))),
    ("TPOT ms", _speed_text(lambda r: _at_least(r, f"{r.speed.time_per_output_token_s * 1e3:,.1f}"))),
    ("1-stream tok/s", lambda r: _single_stream(r)),
    ("all tok/s", _speed_text(lambda r: _delivered(r))),
    ("max tok/s (users)", lambda r: _saturated_text(r)),
    ("$/M owned", lambda r: _cost(r, r.usd_per_million_owned)),
    ("$/M rented", lambda r: _cost(r, r.usd_per_million_rented)),
    ("to fit: fewest GPUs", lambda r: _way_text(r.ways[0]) if r.ways else ""),
]


def table_notes(rows: list[InferenceRow]) -> list[str]:
    """What the table's columns rest on, and why some GPUs have no speed."""
    notes = [
        "memory: weights, the engine's reserve and the users' caches against what the engine takes of the card "
        "(tight: over 95 %); longest ctx at the asked users; most seqs at the asked context.",
        "tok/s: decode from the bytes a step reads and the engine's per-step floor, fitted on published and measured "
        "speeds; the range is its leave-one-GPU-out 90th-percentile error (benchmarks/bench_inference.py); "
        "'(bound)': an engine without measurements, the hardware's limit: its tokens/s are ceilings ('<='), its "
        "times and costs floors ('>='); all tok/s: the asked users' output together, each one's next prompt computed "
        "between the steps (as under maximum load), and the cost of a million tokens from it; TPOT: each user's "
        "time per output token at the asked load, a decode step and the other users' prompts spread over its output.",
        "max tok/s: all output tokens a second under maximum load, with the sequences at once (the engine's batch "
        "limit or what the cache holds): fitted on the engine's published saturated throughputs on the GPU's "
        "platform where it has them (on CUDA for every architecture where its runs span two or more, else for those "
        "its runs are on: `advisor engines`; their held-out error: benchmarks/bench_inference.py), else on CUDA the "
        "hardware's bound ('bound').",
    ]
    shown = [r for r in rows if r.runs]
    if any(r.at_rate is not None for r in shown):
        notes.append(
            "at a rate: each GPU serves the users the rate keeps in flight on it (Little's law: the rate x a "
            "request's time, its prompt and then its output steps, each step stretched by the prompts computed "
            "between them); all tok/s is what the rate delivers; TTFT is unloaded: a request may also wait for a free "
            "slot, which depends on how the arrivals bunch (queueing) and is not predicted."
            + (
                " Where the speed is the hardware's bound (a ceiling), a GPU said to carry the rate may not."
                if any(_bounded(r) and r.at_rate is not None for r in shown)
                else ""
            )
        )
    if any(r.ways for r in shown):
        notes.append(
            "to fit: where the job as asked does not, the fewest GPUs (up to 8, split as the engine splits them; one "
            "for a whole machine) with the most precise formats the engine runs there that hold it, the weights kept "
            "before the cache; --json lists every way, each with more precision than those with fewer GPUs."
        )
    refused = [f"refused on some GPUs: {why}" for why in sorted({r.refused for r in shown if r.refused})]
    if any(r.load_fit_speed for r in shown):
        notes.append(
            "tok/s, TTFT and TPOT where the engines' per-user fit has no runs of the engine on the platform (vLLM): "
            "the engine's fit there under load, whose published runs span a few sequences to hundreds at once; the "
            "range is its worst error with each of its GPUs (or, on one GPU, its models) held out "
            "(benchmarks/bench_inference.py)."
        )
    return notes + decode_only_note(shown) + refused + _not_shown(rows)


def _not_shown(rows: list[InferenceRow]) -> list[str]:
    """The GPUs the engine does not run on, a line a reason: how many, the first few by name, and why."""
    by_reason: dict[str, list[str]] = {}
    for row in rows:
        if not row.runs:
            by_reason.setdefault(str(row.refused), []).append(row.gpu)
    lines = []
    for why, gpus in sorted(by_reason.items()):
        named = ", ".join(gpus[:SHOWN]) + (f" and {len(gpus) - SHOWN} more" if len(gpus) > SHOWN else "")
        lines.append(f"not shown: {len(gpus)} GPU(s) ({named}): {why}")
    return lines


def api_line(found: InferencePicks, api_usd: float | None, versus_api: dict[str, int | None]) -> list[str]:
    """Against an API's price: from how many users renting the cheapest rented GPU costs less."""
    row = found.cheapest_rented
    if api_usd is None or row is None:
        return []
    if row.at_rate is not None and row.usd_per_million_rented is not None:  # the rate's own cost, side by side
        side = "less" if row.usd_per_million_rented <= api_usd else "more"
        return [
            f"Against an API at {_money(api_usd)} a million tokens: renting {row.gpu} at this rate costs "
            f"{_money(row.usd_per_million_rented)} a million tokens: {side}."
        ]
    users = versus_api.get(row.catalog_id)
    if users is None:
        return [
            f"Against an API at {_money(api_usd)} a million tokens: renting {row.gpu} costs more at every load "
            "that fits."
        ]
    return [
        f"Against an API at {_money(api_usd)} a million tokens: renting {row.gpu} costs less from "
        f"{_at_least(row, f'{users:,}', 'at least ')} user(s) at once."
    ]


def inference_text(
    job: InferenceJob,
    rows: list[InferenceRow],
    inputs: CostInputs,
    found: InferencePicks,
    api_usd: float | None = None,
    versus_api: dict[str, int | None] | None = None,
    buying: BuyOrRent | None = None,
) -> str:
    """The header, one line per GPU, and what the columns mean."""
    notes = table_notes(rows)
    table = tables.text_table_of([r for r in rows if r.runs], COLUMNS, left={"gpu", "memory"})
    return "\n".join(
        [
            inference_header(job, inputs),
            "",
            *pick_lines(found),
            *buying_line(buying, inputs),
            *api_line(found, api_usd, versus_api or {}),
            "",
            table,
            "",
            *notes,
        ]
    )


def inference_records(
    rows: list[InferenceRow], versus_api: dict[str, int | None] | None = None
) -> list[dict[str, Any]]:
    """``--json``: one object per GPU."""
    out = []
    for row in rows:
        mem, s, d, a = row.memory, row.speed, row.decode_only, row.at_rate
        out.append(
            {
                "gpu": row.gpu,
                "catalog_id": row.catalog_id,
                "devices": row.devices,
                "attention_data_parallel": row.attention_data_parallel,
                "replicas": row.replicas,
                "fits": mem.verdict,
                "memory_needed_gb": round(mem.needed_bytes / GB, 2),
                "memory_engine_gb": round(mem.budget_bytes / GB, 2),
                "weights_gb": round(mem.weights_bytes / GB, 2),
                "cache_gb": round(mem.cache_bytes / GB, 2),
                "longest_context": mem.longest_context,
                "most_sequences": mem.most_sequences,
                "refused": row.refused,
                "runs": row.runs,  # false: the engine does not run on this GPU's platform
                "time_to_first_token_s": None if s is None else round(s.time_to_first_token_s, 5),
                "time_per_output_token_s": None if s is None else round(s.time_per_output_token_s, 6),
                "single_stream_tokens_per_s": None if s is None else round(s.single_stream_tokens_per_s, 2),
                "prefill_tokens_per_s": None if s is None else round(s.prefill_tokens_per_s, 1),
                "output_tokens_per_s": None if s is None else round(row.total_output_tokens_per_s, 2),
                "saturated_tokens_per_s": None
                if row.saturated_tokens_per_s is None
                else round(row.total_saturated_tokens_per_s, 1),
                "saturated_batch": row.saturated_batch * row.replicas,
                "saturated_fitted": row.saturated_fitted,
                "bound": None if s is None else s.bound,
                "fitted": None if s is None else s.fitted,
                "range_factor": row.range_factor,
                "decode_only_tokens_per_s": None if d is None else round(d.tokens_per_s, 2),
                "decode_only_range_factor": None if d is None else round(d.range_factor, 3),
                "decode_only_extrapolated": None if d is None else d.extrapolated,
                "usd_per_million_owned": row.usd_per_million_owned,
                "usd_per_million_rented": row.usd_per_million_rented,
                "usd_per_million_are_floors": row.costs_are_floors or (s is not None and not s.fitted),
                "rental_provider": row.rental,
                "renting_beats_api_from_users": (versus_api or {}).get(row.catalog_id),
                "requests_per_s": None if a is None else a.requests_per_s * row.replicas,
                "users_at_once": None if a is None or a.users is None else a.users * row.replicas,
                "seconds_per_request": None if a is None else a.seconds_per_request,
                "overloaded": None if a is None else a.overloaded,
                "ways_to_fit": [_way_record(way) for way in row.ways],
            }
        )
    return out


def _way_record(way: Way) -> dict[str, Any]:
    return {
        "devices": way.devices,
        "weights": way.weights,
        "kv_cache": way.kv,
        "changes": list(way.changes),
        "fits": way.memory.verdict,
        "memory_needed_gb": round(way.memory.needed_bytes / GB, 2),
        "memory_engine_gb": round(way.memory.budget_bytes / GB, 2),
        "single_stream_tokens_per_s": None
        if way.single_stream_tokens_per_s is None
        else round(way.single_stream_tokens_per_s, 2),
        "bound": way.bound,
        "usd_per_million_owned": way.usd_per_million_owned,
        "usd_per_million_rented": way.usd_per_million_rented,
        "rental_provider": way.rental,
    }


def pick_lines(found: InferencePicks) -> list[str]:
    """The analysis' picks in words (the app's headline and the CLI's summary)."""
    lines = []
    held = found.fit_without_speed
    if found.fastest is None and held and all(r.at_rate is not None and r.at_rate.overloaded for r in held):
        return [
            f"No GPU of the catalog carries {held[0].at_rate.requests_per_s * held[0].replicas:g} requests a second "
            "at these lengths: fewer requests, more copies (--replicas) or more GPUs each (--devices)."
        ]
    if found.fastest is None and held:
        names = ", ".join(r.gpu for r in held[:4]) + (" ..." if len(held) > 4 else "")
        decoded = sorted((r for r in held if r.decode_only), key=lambda r: -r.decode_only.tokens_per_s)
        if decoded:
            best = decoded[0]
            return [
                f"Holds the job, one user's decode only: {best.gpu} fastest, "
                f"{_ranged(best.decode_only.tokens_per_s, best.decode_only.range_factor)} tokens/s"
                f"{', extrapolated' if best.decode_only.extrapolated else ''} (first token and load not estimated, "
                "costs only their floors: the notes under the table).",
                *floor_lines(found),
            ]
        return [f"Holds the job, speed not estimated: {names} (why: the notes under the table)."]
    if found.fastest is None:
        return [
            "No GPU of the catalog holds this job as asked: fewer users, a shorter context, smaller formats or more "
            "GPUs.",
            *ways_lines(found),
            *cheaper_way_lines(found),
        ]
    fastest, owned, rented = found.fastest, found.cheapest_owned, found.cheapest_rented
    most = "at most " if _bounded(fastest) else ""
    unpublished = " (the hardware's bound: the engine has no published speeds of a few users here)"
    bound = unpublished if _bounded(fastest) else ""
    loaded = "" if fastest.at_rate is not None else most  # a rate's tokens are the rate's, not a ceiling
    lines.append(
        f"Fastest that fits: {fastest.gpu}, {most}{fastest.speed.single_stream_tokens_per_s:,.0f} tokens/s for one "
        f"user, {loaded}{fastest.total_output_tokens_per_s:,.0f} at the asked load{bound}."
    )
    if owned is not None:
        lines.append(
            f"Cheapest a million tokens owned: {owned.gpu}, {_cost(owned, owned.usd_per_million_owned, 'at least ')}."
        )
    if rented is not None:
        lines.append(
            f"Cheapest rented: {rented.gpu} on {rented.rental}, "
            f"{_cost(rented, rented.usd_per_million_rented, 'at least ')} a million tokens."
        )
    return lines + cheaper_way_lines(found) + floor_lines(found)


def buying_line(buying: BuyOrRent | None, inputs: CostInputs) -> list[str]:
    """Owning the cheapest owned GPU against renting the same: after how long owning costs less, or that it never
    does within the owner's years."""
    if buying is None:
        return []
    lead = f"Buying the {buying.gpu} against renting it on {buying.provider}"
    if buying.hours is None:
        return [f"{lead}: renting costs less at every load (its energy alone costs more than the rental)."]
    if buying.hours > buying.lifetime_hours:
        return [
            f"{lead}: renting costs less over {inputs.lifetime_years:g} years at {inputs.hours_per_week:g} h a week "
            f"(owning pays for itself after {buying.hours:,.0f} hours of serving, {buying.weeks:,.0f} weeks)."
        ]
    return [
        f"{lead}: owning pays for itself after {buying.hours:,.0f} hours of serving ({buying.weeks:,.0f} weeks at "
        f"{inputs.hours_per_week:g} h a week, {_millions(buying.million_tokens)} million output tokens at the asked "
        "load)."
    ]


def _millions(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def floor_lines(found: InferencePicks) -> list[str]:
    """A GPU with one user's decode only whose cost's floor is under the cheapest estimated: it may cost less."""
    lines = []
    for kind, row, estimated in (
        ("owned", found.floor_under_owned, found.cheapest_owned),
        ("rented", found.floor_under_rented, found.cheapest_rented),
    ):
        if row is None:
            continue
        cost = row.usd_per_million_owned if kind == "owned" else row.usd_per_million_rented
        where = f" on {row.rental}" if kind == "rented" else ""
        lead = f"Maybe cheaper {kind}" if estimated is not None else f"The lowest floor a million tokens {kind}"
        lines.append(
            f"{lead}: {row.gpu}{where}, at least {_money(cost)} a million tokens (one user's decode only: its first "
            "token and load are not estimated, so it may cost more)."
        )
    return lines


def table_frame(rows: list[InferenceRow]) -> pd.DataFrame:
    """The per-GPU table as the app shows it: the CLI's columns, as text (the GPUs the engine runs on)."""
    return tables.table_frame([r for r in rows if r.runs], COLUMNS)


COST_CHART_GPUS = 12  # the cost chart draws the cheapest few GPUs that fit with a speed and a cost


def cost_speed_chart(rows: list[InferenceRow]) -> dict[str, Any] | None:
    """Output tokens a second at the asked load against the cost of a million of them, owned and rented, one point
    each per GPU that holds the job with a speed and a cost (the few cheapest, owned or rented; a bound's speed a
    ceiling and its cost a floor, said in its tooltip): fast cards for less up and to the left (a Vega-Lite spec;
    None: no such GPU)."""
    points = []
    costed = [
        r
        for r in rows
        if r.runs and r.speed is not None and r.memory.verdict != "does not fit" and _least_cost(r) is not None
    ]
    for row in sorted(costed, key=_least_cost)[:COST_CHART_GPUS]:
        for kind, usd in (("owned", row.usd_per_million_owned), ("rented", row.usd_per_million_rented)):
            if usd is not None:
                points.append(
                    {
                        "gpu": row.gpu,
                        "kind": kind,
                        "usd": usd,
                        "tokens_per_s": row.total_output_tokens_per_s,
                        "figures": "the hardware's bound" if _bounded(row) else Source.ESTIMATED.value,
                    }
                )
    if not points:
        return None
    return charts.chart(
        "Speed at the asked load against the cost of a million output tokens (up and left: faster for less)",
        {"points": pd.DataFrame(points)},
        charts.layer(
            "points",
            {"type": "point", "filled": True, "size": 90},
            x=charts.channel(
                "usd:Q", scale={"type": "log"}, title="USD a million output tokens", axis={"format": "$,.2f"}
            ),
            y=charts.channel("tokens_per_s:Q", scale={"type": "log"}, title="output tokens/s, all users"),
            color=charts.channel("kind:N", title="paid"),
            shape=charts.channel("kind:N", title="paid"),
            tooltip=[
                charts.channel("gpu:N"),
                charts.channel("kind:N", title="paid"),
                charts.channel("usd:Q", title="USD a million tokens", format="$,.2f"),
                charts.channel("tokens_per_s:Q", title="tokens/s", format=",.0f"),
                charts.channel("figures:N"),
            ],
        ),
        charts.layer(
            "points",
            {"type": "text", "align": "left", "dx": 7, "fontSize": 10},
            x=charts.channel("usd:Q", scale={"type": "log"}),
            y=charts.channel("tokens_per_s:Q", scale={"type": "log"}),
            text=charts.channel("gpu:N"),
        ),
    )


def _least_cost(row: InferenceRow) -> float | None:
    """The row's cheaper cost a million tokens, owned or rented (None: neither)."""
    known = [c for c in (row.usd_per_million_owned, row.usd_per_million_rented) if c is not None]
    return min(known) if known else None


def throughput_chart(curves: dict[str, list[tuple[int, float, float]]]) -> dict[str, Any]:
    """Output tokens a second against users at once, one line per GPU (a Vega-Lite spec)."""
    frame = pd.DataFrame(
        [{"gpu": gpu, "users": u, "tokens_per_s": t, "tpot_ms": p * 1e3} for gpu, c in curves.items() for u, t, p in c]
    )
    return charts.chart(
        "Output tokens a second as users grow (up to the most that fit)",
        {"curve": frame},
        charts.layer(
            "curve",
            {"type": "line", "point": True},
            x=charts.channel("users:Q", scale={"type": "log", "base": 2}, title="users at once"),
            y=charts.channel("tokens_per_s:Q", title="output tokens/s, all users"),
            color=charts.channel("gpu:N", title="GPU"),
            tooltip=[
                charts.channel("gpu:N"),
                charts.channel("users:Q"),
                charts.channel("tokens_per_s:Q", format=",.0f"),
                charts.channel("tpot_ms:Q", title="ms a token", format=",.1f"),
            ],
        ),
    )


MIXED_COLUMNS = [
    ("card", lambda s: s.gpu.name),
    ("layers", lambda s: f"{s.layers}" + (" + output" if s.holds_output else "")),
    ("GB need/card", lambda s: f"{s.needed_bytes / GB:.1f}/{s.card_bytes / GB:.1f}"),
    ("memory", lambda s: s.verdict),
]


def mixed_header(job: InferenceJob, found: MixedAnswer) -> list[str]:
    """``--mixed``: the model, engine and load, and how the cards share it."""
    return [
        *model_and_load(job),
        f"Split over {found.names}, layer by layer by each card's memory (llama.cpp's default: "
        f"{LLAMA_CPP_SPLIT_SOURCE}):",
    ]


def mixed_lines(found: MixedAnswer) -> list[str]:
    """``--mixed``: the verdict of the whole and one stream's speed (or why none)."""
    lines = [f"Together: {found.verdict}." + (f" Speed: {found.why}; not estimated." if found.why else "")]
    if found.single_stream_tokens_per_s is not None:
        lines.append(
            f"One user: {_ranged(found.single_stream_tokens_per_s, found.range_factor)} tokens/s, first token in "
            f"{found.time_to_first_token_s * 1e3:,.0f} ms; a token passes the cards in turn, so each card's part of "
            "a step (the single-GPU model's, by the layers it holds) adds up."
        )
    return lines


def mixed_text(job: InferenceJob, found: MixedAnswer) -> str:
    """``--mixed``: the header, each card's share and the verdict and speed of the whole."""
    *head, split = mixed_header(job, found)
    table = tables.text_table_of(list(found.shares), MIXED_COLUMNS, left={"card", "layers", "memory"})
    return "\n".join([*head, "", split, "", table, "", *mixed_lines(found)])


def mixed_frame(found: MixedAnswer) -> pd.DataFrame:
    """Each card's share as the app shows it: the CLI's columns, as text."""
    return tables.table_frame(list(found.shares), MIXED_COLUMNS)


def mixed_record(found: MixedAnswer) -> dict[str, Any]:
    """``--mixed --json``: each card's share and the whole's verdict and speed."""
    return {
        "gpus": [s.gpu.id for s in found.shares],
        "fits": found.verdict,
        "cards": [
            {
                "catalog_id": s.gpu.id,
                "layers": s.layers,
                "holds_output": s.holds_output,
                "memory_needed_gb": round(s.needed_bytes / GB, 2),
                "card_gb": round(s.card_bytes / GB, 2),
                "fits": s.verdict,
            }
            for s in found.shares
        ],
        "single_stream_tokens_per_s": found.single_stream_tokens_per_s,
        "time_to_first_token_s": found.time_to_first_token_s,
        "time_per_output_token_s": found.time_per_output_token_s,
        "range_factor": found.range_factor,
        "speed_not_estimated": found.why,
    }


def _estimated(value: float | None) -> str:
    return f"{value:,.1f}" if value is not None else "-"


# A timed generation beside the estimate of the same job on its GPU (advisor.infer.measured), one line per batch.
MEASURED_COLUMNS = [
    ("measured on", lambda r: r.device),
    ("generation", lambda r: f"{r.model} ({r.dtype}, {r.engine})"),
    ("prompt + output", lambda r: f"{r.prompt:,} + {r.output:,}"),
    ("users", lambda r: str(r.batch)),
    ("decode tok/s", lambda r: f"{r.decode_tokens_per_s:,.1f}"),
    ("est. decode tok/s", lambda r: _estimated(r.estimated_decode_tokens_per_s)),
    ("est. / measured", lambda r: f"{r.decode_ratio:.2f}x" if r.decode_ratio is not None else "-"),
    ("first token", lambda r: fmt_seconds(r.time_to_first_token_s)),
    (
        "est. first token",
        lambda r: fmt_seconds(r.estimated_time_to_first_token_s) if r.estimated_time_to_first_token_s else "-",
    ),
    ("peak memory", lambda r: f"{r.peak_memory_gb:.2f} GB" if r.peak_memory_gb is not None else "-"),
    ("fit saw it", lambda r: "yes" if r.seen_by_fit else "no"),
]


def measured_frame(rows: list[MeasuredGeneration]) -> pd.DataFrame:
    """The measured generations beside their estimates, as the app shows them."""
    return tables.table_frame(rows, MEASURED_COLUMNS)


def measured_notes(rows: list[MeasuredGeneration]) -> list[str]:
    """What the comparison rests on: where no estimate was made and why, and which rows the fit saw (not held out)."""
    notes = []
    for why in dict.fromkeys(r.why for r in rows if r.why):
        shown = sorted({r.device for r in rows if r.why == why})
        notes.append(f"No estimate for {', '.join(shown)}: {why}.")
    seen = [r for r in rows if r.seen_by_fit]
    if seen:
        notes.append(
            f"{len(seen)} of {len(rows)} row(s) are among the measurements the speed model is fitted on: their "
            "estimate is not held out (benchmarks/bench_inference.py leaves one GPU out for that)."
        )
    return notes


def measured_text(rows: list[MeasuredGeneration]) -> str:
    """``measure --inference``'s comparison: each batch's estimate on the GPU, or why there is none."""
    lines = []
    for r in rows:
        if r.decode_ratio is not None:
            lines.append(
                f"users {r.batch}: estimated {r.estimated_decode_tokens_per_s:,.1f} decode tok/s on {r.gpu_id} "
                f"(the advisor's transformers fit), {r.decode_ratio:.2f}x the measured {r.decode_tokens_per_s:,.1f}"
            )
    return "\n".join(lines + measured_notes(rows))
