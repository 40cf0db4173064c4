"""Published collections: many quoted results of one source in one file, loaded as ordinary profiles.

A collection (``profiles/published-*.yaml``, marked by ``collection_version``) holds a source's
systems, its workloads described for the performance model, and one compact row per published
throughput. ``expand`` turns it into one profile per system and workload (a result per
precision), which then go through the same validation as any profile file. A throughput is
compared as a time: the workload's stated amount of work (``samples``, e.g. one ImageNet epoch)
divided by the throughput. Pure functions over parsed YAML; no I/O here.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from advisor.errors import Problem
from advisor.format import fields as F
from advisor.format.fields import Field
from advisor.format.schema import PHASE, PRECISIONS, SCHEMA_VERSION, SLUG_MAX
from advisor.format.vocabulary import DeviceKind, ModelFamily, Source, WorkloadKind, words

COLLECTION_VERSION = 1
MARKER = "collection_version"  # the top-level key that tells a collection from a profile

SOURCE = (
    Field("what", "string", "what the source is", required=True),
    Field("publisher", "string", "who published it (named beside each system)", required=True),
    Field("repo", "string", "the repository it comes from"),
    Field("path", "string", "the files in that repository"),
    Field("framework", "string", "the framework that trained (pytorch, tensorflow...)", required=True),
    Field("units", "mapping", "what each workload's throughput counts, as the source says"),
    Field("notes", "text", "how to read the source"),
)
DESCRIPTION = (
    Field("name", "string", "the workload's name, shown in the app's picker", required=True),
    Field("unit", "string", "what one sample is (images, sequences, tokens...)", required=True),
    Field(
        "samples",
        "integer",
        "the stated amount of work: a result's time is samples / throughput",
        required=True,
        minimum=1,
        maximum=10**9,
    ),
    Field("work", "string", "what that amount of work is (one epoch of ...)", required=True),
    Field("optimizer", "string", "the optimizer", required=True),
    Field("parameters", "integer", "the model's weights", required=True, minimum=0),
    Field("phases", "sections", "its work by kind, per sample", required=True, fields=PHASE),
    Field("source", "string", "where the description comes from", required=True),
    Field("family", "string", "the family whose fitted terms it shares (transformer)"),
    Field(
        "model_family",
        "choice",
        "the kind of model it trains (held out together by `advisor crossval --families`)",
        choices=words(ModelFamily),
    ),
    Field("model", "string", "the language model a job of the transformer family trains (a preset's id)"),
    Field(
        "units_per_item",
        "number",
        "samples (in its unit) one item of a batch holds, where the batch counts "
        "other items than the throughput (an utterance of mel frames, a sequence of tokens)",
        positive=True,
    ),
    Field(
        "operations_per_step",
        "integer",
        "the kernels one iteration of a GPU's batch launches, less its phases' "
        "own counted steps (counted on a real step: advisor.llm.operations, scripts/count_published_operations.py)",
        minimum=1,
        maximum=10**9,
    ),
)
SYSTEM = (
    Field("name", "string", "the system's name as published", required=True),
    Field("gpu", "string", "its GPU, as the catalog's normaliser matches it", required=True),
    Field("gpus", "integer", "GPUs in the system (data parallel)", required=True, minimum=1, maximum=1024),
    Field("host", "string", "who hosted it (a cloud, a server maker), when the name says"),
    Field("link", "string", "the GPUs' link, when the name says (NVLink)"),
    Field("price_usd", "number", "the source's price of the system", minimum=0, unit="USD"),
    Field("watts", "number", "the source's power figure", positive=True, unit="W"),
    Field("date", "date", "when the source published it", required=True),
    Field("source", "string", "the file and commit of the rows", required=True),
)
ROW = (
    Field("system", "string", "a key of systems", required=True),
    Field("workload", "string", "a key of workloads", required=True),
    Field("precision", "choice", "the precision", required=True, choices=PRECISIONS),
    Field("throughput", "number", "samples per second of the whole system", required=True, positive=True),
    Field("batch_per_gpu", "integer", "the batch per GPU", required=True, minimum=1, maximum=10**9),
)
COLLECTION = (
    Field(
        MARKER,
        "integer",
        f"the collection format's version ({COLLECTION_VERSION})",
        required=True,
        minimum=1,
        maximum=COLLECTION_VERSION,
    ),
    Field(
        "id",
        "string",
        "the collection's slug: its profiles' ids start with it",
        required=True,
        pattern=r"^[a-z0-9][a-z0-9-]{0,30}$",
        pattern_hint="a slug of at most 31 characters",
    ),
    Field("source", "section", "where the results come from", required=True, fields=SOURCE),
    Field("workloads", "mapping", "the workloads, by key, described for the performance model", required=True),
    Field("systems", "mapping", "the systems, by key", required=True),
    Field("results", "sections", "one row per published throughput", required=True, fields=ROW),
)


def is_collection(data: Any) -> bool:
    return isinstance(data, dict) and MARKER in data


def validate(data: dict[str, Any], file: str) -> list[Problem]:
    """The collection's own problems (its rows, systems and workloads); each profile it expands to is then
    validated as a profile."""
    c = F.Checker(file)
    F.check_section(c, data, COLLECTION)
    for table, fields in (("workloads", DESCRIPTION), ("systems", SYSTEM)):
        F.check_mapping_of(c, data.get(table), fields, table)
    if not c.problems:
        for index, row in enumerate(data["results"]):
            for table in ("system", "workload"):
                if row[table] not in data[table + "s"]:
                    c.problem(f"results[{index}].{table}", f"unknown {table} {row[table]!r}")
    return c.problems


def expand(data: dict[str, Any]) -> list[dict[str, Any]]:
    """One profile (as parsed YAML) per system and workload of a valid collection, in the rows' order."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in data["results"]:
        grouped.setdefault((row["system"], row["workload"]), []).append(row)
    source = data["source"]
    return [
        _profile(data["id"], key, data["systems"][key[0]], data["workloads"][key[1]], rows, source)
        for key, rows in grouped.items()
    ]


def _profile(prefix: str, key: tuple[str, str], system: dict, described: dict, rows: list, source: dict) -> dict:
    system_key, workload_key = key
    batch = rows[0]["batch_per_gpu"]
    origin = f"{system['source']} ({source['repo']})" if source.get("repo") else system["source"]
    workload = {
        "name": described["name"],
        "kind": WorkloadKind.PUBLISHED,
        "unit": described["unit"],
        "train_samples": described["samples"],
        "batch_size": batch,
        "epochs": 1,
        "optimizer": described["optimizer"],
        "parameters": described["parameters"],
        "flops_per_sample": sum(p.get("flops_per_sample") or 0.0 for p in described["phases"]),
        "phases": described["phases"],
        "source": described["source"],
        **({"family": described["family"]} if described.get("family") else {}),
        **({"model_family": described["model_family"]} if described.get("model_family") else {}),
        **({"model": described["model"]} if described.get("model") else {}),
        **({"units_per_item": described["units_per_item"]} if described.get("units_per_item") else {}),
        **({"operations_per_step": described["operations_per_step"]} if described.get("operations_per_step") else {}),
        "note": f"the time for {described['work']}: {described['samples']:,} {described['unit']} / the throughput",
    }
    price = {
        "usd": system.get("price_usd"),
        "date": system["date"],
        "includes": "the whole system",
        "source": f"{source['what']}: the system's price as listed beside the results",
    }
    if system.get("watts"):
        price["power_watts"] = system["watts"]
    return {
        "schema_version": SCHEMA_VERSION,
        "id": _slug(f"{prefix}-{system_key}-{workload_key}"),
        "name": f"{system['name']} ({source['publisher']}, {system['date'][:7]})",
        "device": {"kind": DeviceKind.GPU.value, "name": system["gpu"], "count": system["gpus"]},
        "software": {"framework": source["framework"]},
        "price": price,
        "workload": workload,
        "results": [_result(row, described, batch) for row in rows],
        "provenance": {"method": Source.QUOTED.value, "source": origin, "date": system["date"]},
        "notes": [
            n
            for n in (
                system.get("host") and f"hosted by {system['host']}",
                system.get("link") and f"GPUs linked by {system['link']}",
            )
            if n
        ],
    }


def _result(row: dict, described: dict, batch: int) -> dict:
    result = {
        "precision": row["precision"],
        "total_seconds": described["samples"] / row["throughput"],
        "note": f"{row['throughput']:,.6g} {described['unit']}/s as published, batch {row['batch_per_gpu']} per GPU",
    }
    if row["batch_per_gpu"] != batch:
        result["batch_size"] = row["batch_per_gpu"]
    return result


def _slug(text: str) -> str:
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]+", "-", text.lower())).strip("-")[:SLUG_MAX].rstrip("-")


class _Dumper(yaml.SafeDumper):
    """Block style, except one flow mapping per result row and per phase (one line each)."""


def _represent_dict(dumper: yaml.SafeDumper, data: dict) -> yaml.Node:
    flow = set(data) <= {f.name for f in ROW} or set(data) <= {f.name for f in PHASE}
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=flow)


_Dumper.add_representer(dict, _represent_dict)


def dump(data: dict[str, Any]) -> str:
    """The collection as YAML: readable, one line per published result."""
    head = (
        "# A published collection: see 'Published results' in docs/reference.md. Written by "
        "scripts/import_published.py.\n"
    )
    return head + yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)
