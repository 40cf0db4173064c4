"""Words and tables for an inference job (``estimate --model-config NAME --inference``)."""

from __future__ import annotations

from typing import Any

from advisor.infer.estimate import CostInputs, InferenceRow
from advisor.infer.job import InferenceJob
from advisor.render.tables import text_table_of

GB = 1e9


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}" if value < 100 else f"${value:,.0f}"


def _ranged(value: float, factor: float | None) -> str:
    if factor is None:
        return f"<= {value:,.0f} (bound)"
    return f"{value:,.0f} ({value / factor:,.0f}-{value * factor:,.0f})"


def inference_header(job: InferenceJob, inputs: CostInputs) -> str:
    m = job.model
    kinds = ", ".join(f"{n} {kind}" for kind, n in m.kinds.items())
    moe = f"; {m.experts} experts, {m.experts_per_token} a token" if m.experts else ""
    return "\n".join(
        [
            f"Model: {m.name}: {m.parameters / 1e9:.3g} B weights "
            f"({m.active_parameters / 1e9:.3g} B read a token{moe}); layers: {kinds}",
            f"Engine: {job.engine.name} ({job.engine.version}); weights {job.weights.id} "
            f"({job.weights.bits:g} bits), cache {job.kv.id}",
            f"Load: {job.users} user(s) at once, {job.prompt:,} prompt + {job.output:,} output tokens "
            f"(context {job.sequence_tokens:,}); {job.devices} GPU(s) each (tensor parallel)",
            f"Costs: owned over {inputs.lifetime_years:g} years serving {inputs.hours_per_week:g} h a week, energy at "
            f"${inputs.kwh_usd:g}/kWh; rented at the catalog's cheapest on-demand price",
        ]
    )


def _speed_text(render):
    return lambda row: "-" if row.speed is None else render(row)


COLUMNS = [
    ("gpu", lambda r: r.gpu),
    ("memory", lambda r: r.memory.verdict),
    ("GB need/engine", lambda r: f"{r.memory.needed_bytes / GB:.1f}/{r.memory.budget_bytes / GB:.1f}"),
    ("longest ctx", lambda r: f"{r.memory.longest_context:,}"),
    ("most seqs", lambda r: f"{r.memory.most_sequences:,}"),
    ("TTFT ms", _speed_text(lambda r: f"{r.speed.time_to_first_token_s * 1e3:,.0f}")),
    ("TPOT ms", _speed_text(lambda r: f"{r.speed.time_per_output_token_s * 1e3:,.1f}")),
    ("1-stream tok/s", _speed_text(lambda r: _ranged(r.speed.single_stream_tokens_per_s, r.range_factor))),
    ("all tok/s", _speed_text(lambda r: f"{r.speed.output_tokens_per_s:,.0f}")),
    ("$/M owned", lambda r: _money(r.usd_per_million_owned)),
    ("$/M rented", lambda r: _money(r.usd_per_million_rented)),
]


def inference_text(job: InferenceJob, rows: list[InferenceRow], inputs: CostInputs) -> str:
    """The header, one line per GPU, and what the columns mean."""
    notes = [
        "memory: weights, the engine's reserve and the users' caches against what the engine takes of the card "
        "(tight: over 95 %); longest ctx at the asked users; most seqs at the asked context.",
        "tok/s: decode from the bytes a step reads and the engine's per-step floor, fitted on published and measured "
        "speeds; the range is its leave-one-GPU-out 90th-percentile error (benchmarks/bench_inference.py).",
    ]
    notes += [f"refused on some GPUs: {why}" for why in sorted({r.refused for r in rows if r.refused})]
    table = text_table_of(rows, COLUMNS, left={"gpu", "memory"})
    return "\n".join([inference_header(job, inputs), "", table, "", *notes])


def inference_records(rows: list[InferenceRow]) -> list[dict[str, Any]]:
    """``--json``: one object per GPU."""
    out = []
    for row in rows:
        mem, s = row.memory, row.speed
        out.append(
            {
                "gpu": row.gpu,
                "catalog_id": row.catalog_id,
                "devices": row.devices,
                "fits": mem.verdict,
                "memory_needed_gb": round(mem.needed_bytes / GB, 2),
                "memory_engine_gb": round(mem.budget_bytes / GB, 2),
                "weights_gb": round(mem.weights_bytes / GB, 2),
                "cache_gb": round(mem.cache_bytes / GB, 2),
                "longest_context": mem.longest_context,
                "most_sequences": mem.most_sequences,
                "refused": row.refused,
                "time_to_first_token_s": None if s is None else round(s.time_to_first_token_s, 5),
                "time_per_output_token_s": None if s is None else round(s.time_per_output_token_s, 6),
                "single_stream_tokens_per_s": None if s is None else round(s.single_stream_tokens_per_s, 2),
                "prefill_tokens_per_s": None if s is None else round(s.prefill_tokens_per_s, 1),
                "output_tokens_per_s": None if s is None else round(s.output_tokens_per_s, 2),
                "bound": None if s is None else s.bound,
                "fitted": None if s is None else s.fitted,
                "range_factor": row.range_factor,
                "usd_per_million_owned": row.usd_per_million_owned,
                "usd_per_million_rented": row.usd_per_million_rented,
                "rental_provider": row.rental,
            }
        )
    return out
