"""A timed generation (:func:`advisor.measure.generation.measure_generation`'s record) as an inference profile
(``job: inference``): the device, the host, the software, the price, the generation and its results per batch."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from advisor import __version__
from advisor.format import schema
from advisor.format.vocabulary import Job, Source

GENERATION_KEYS = ("parameters", "weights", "dtype", "prompt_tokens", "output_tokens", "repeats")
RESULT_KEYS = tuple(field.name for field in schema.G.GENERATION_RESULT)


def default_name(record: dict[str, Any]) -> str:
    """A profile's name when none is given: the device, the model and the engine ("NVIDIA H200, Llama 3.1 8B,
    transformers")."""
    return f"{record['device'].get('name', 'CPU')}, {record['model_name']}, {record['software']['engine']}"


def generation_profile(
    record: dict[str, Any],
    profile_id: str,
    name: str,
    price: dict[str, Any],
    command: str,
    host: dict[str, Any] | None = None,
    date: str | None = None,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """The inference profile of a generation's record, in the schema's order, measured by this advisor (on
    ``date``, today by default) with ``command``."""
    software = record["software"]
    generation = {
        "model": record["model_name"],
        **{key: record[key] for key in GENERATION_KEYS if record.get(key) is not None},
        "engine": software["engine"],
        "engine_version": software.get("engine_version"),
        "attention": software.get("attention"),
    }
    if record.get("config"):
        generation["config"] = record["config"]
    profile: dict[str, Any] = {
        "schema_version": schema.SCHEMA_VERSION,
        "id": profile_id,
        "name": name,
        "job": Job.INFERENCE.value,
        "device": {"count": 1, **record["device"]},
        **({"host": host} if host else {}),
        "software": {
            "framework": "torch",
            "framework_version": software.get("torch"),
            **({"cuda": software["cuda"]} if software.get("cuda") else {}),
            "libraries": [f"{software['engine']} {software.get('engine_version', '')}".strip()],
        },
        "price": price,
        "generation": {key: value for key, value in generation.items() if value is not None},
        "generation_results": [
            {key: result[key] for key in RESULT_KEYS if result.get(key) is not None} for result in record["results"]
        ],
        "provenance": {
            "method": Source.MEASURED.value,
            "advisor_version": __version__,
            "date": date or _dt.date.today().isoformat(),
            "command": command,
        },
    }
    if notes:
        profile["notes"] = notes
    return schema.canonical(profile)
