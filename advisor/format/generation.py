"""An inference profile's own fields (``job: inference``): the generation that was timed and its results per batch.

Written once here as tables of :class:`advisor.format.fields.Field`, walked by the same validation as the rest of
the profile (:mod:`advisor.format.schema` places them at its top level), plus the checks a table cannot say: the
figures of a result follow from its timings. Pure; no I/O.
"""

from __future__ import annotations

from typing import Any

from advisor.format import fields as F
from advisor.format.fields import Field
from advisor.format.vocabulary import DType, words

DTYPES = words(DType)
CONSISTENCY = 0.01  # a derived figure (tokens a second) agrees with its timings within 1 % (they are rounded)

TIMES = (
    Field("count", "integer", "timed runs (the warm-up is not one of them)", required=True, minimum=1),
    Field("median", "number", "median run", required=True, positive=True, unit="s"),
    Field("mean", "number", "mean run", positive=True, unit="s"),
    Field("min", "number", "fastest run", positive=True, unit="s"),
    Field("max", "number", "slowest run", positive=True, unit="s"),
    Field("stdev", "number", "standard deviation of the runs", minimum=0, unit="s"),
)
GENERATION = (
    Field("model", "string", "the model's name (a preset, or a local folder's name)", required=True),
    Field("parameters", "integer", "its weights, counted on the loaded model", required=True, minimum=1),
    Field("weights", "string", "'random (the config's shapes)' or 'as loaded' (a local model's own)"),
    Field("dtype", "choice", "the weights' and activations' dtype", required=True, choices=DTYPES),
    Field("engine", "string", "what generated (transformers' generate)", required=True),
    Field("engine_version", "string", "its version"),
    Field("attention", "string", "the attention kernel (transformers' attn_implementation)"),
    Field("prompt_tokens", "integer", "tokens of each prompt", required=True, minimum=1, maximum=10**7),
    Field("output_tokens", "integer", "tokens generated after it", required=True, minimum=2, maximum=10**7),
    Field("repeats", "integer", "timed runs of each batch", required=True, minimum=1),
    Field("config", "mapping", "the model's config.json keys (its shapes, for the estimate it is compared with)"),
)
GENERATION_RESULT = (
    Field("batch", "integer", "sequences generated at once", required=True, minimum=1, maximum=10**6),
    Field("prefill", "section", "the prompt's pass: generate with one new token", required=True, fields=TIMES),
    Field("generate", "section", "generate with output_tokens new tokens", required=True, fields=TIMES),
    Field("time_to_first_token_s", "number", "prefill's median", required=True, positive=True, unit="s"),
    Field(
        "time_per_output_token_s",
        "number",
        "(generate's median - prefill's median) / (output_tokens - 1)",
        required=True,
        positive=True,
        unit="s",
    ),
    Field("prefill_tokens_per_s", "number", "batch x prompt_tokens / prefill's median", required=True, positive=True),
    Field("decode_tokens_per_s", "number", "batch / time_per_output_token_s", required=True, positive=True),
    Field("peak_memory_gb", "number", "the framework allocator's peak over the runs", positive=True, unit="GB"),
)


def check_results(c: F.Checker, generation: Any, results: Any) -> None:
    """What a result's figures must agree with: min <= median <= max of each timing, one result per batch, and
    the figures worked out from the medians as the measurement does (within CONSISTENCY)."""
    generation = generation if isinstance(generation, dict) else {}
    prompt, output = F.valid_number(generation.get("prompt_tokens")), F.valid_number(generation.get("output_tokens"))
    seen: set[Any] = set()
    for index, result in enumerate(results if isinstance(results, list) else []):
        if not isinstance(result, dict):
            continue
        path = f"generation_results[{index}]"
        batch = F.valid_number(result.get("batch"))
        if batch in seen:
            c.problem(f"{path}.batch", f"batch {batch:g} has another result: one result per batch")
        seen.add(batch)
        medians = {}
        for part in ("prefill", "generate"):
            times = result.get(part) if isinstance(result.get(part), dict) else {}
            low, high, median = (F.valid_number(times.get(k)) for k in ("min", "max", "median"))
            if None not in (low, high, median) and not low <= median <= high:
                c.problem(f"{path}.{part}.median", f"{median} lies outside min..max ({low}..{high})")
            medians[part] = median
        if None in (batch, prompt, output, medians["prefill"], medians["generate"]) or medians["prefill"] <= 0:
            continue  # a missing or non-positive figure is a problem of its own field
        if medians["generate"] <= medians["prefill"]:
            c.problem(f"{path}.generate.median", "is not longer than prefill's: the output's steps took no time")
            continue
        step = (medians["generate"] - medians["prefill"]) / max(output - 1, 1)
        if not step > 0:
            continue
        expected = {
            "time_to_first_token_s": medians["prefill"],
            "time_per_output_token_s": step,
            "prefill_tokens_per_s": batch * prompt / medians["prefill"],
            "decode_tokens_per_s": batch / step,
        }
        for name, value in expected.items():
            given = F.valid_number(result.get(name))
            if given is not None and abs(given - value) > CONSISTENCY * value:
                c.problem(f"{path}.{name}", f"{given:g} does not follow from the timings ({value:.6g} expected)")
