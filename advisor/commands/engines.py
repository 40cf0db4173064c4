"""``advisor engines``: the inference engines of --engine, where each runs, what it runs and the source of each."""

from __future__ import annotations

import argparse

from advisor.commands import common
from advisor.commands.common import Parents

NAME = "engines"
SUMMARY = (  # the README's command table (advisor.commands.reference)
    "the inference engines of `--engine`: where each runs (platforms, architectures), the weight and cache formats it "
    "runs, how it splits a model over GPUs, each with its source, and the published runs its speeds are fitted on"
)


def add_parser(commands, parents: Parents) -> None:
    commands.add_parser(
        NAME,
        parents=[parents.common],
        help="the inference engines of estimate --inference --engine (where each runs, its formats, their sources)",
    )


def run(args: argparse.Namespace) -> int:
    """The inference engines --engine knows."""
    from advisor.infer.engines import engine_data, engine_rows
    from advisor.infer.evidence import engine_evidence
    from advisor.render.catalog import engines_text
    from advisor.store.catalog import load_catalog

    catalog = load_catalog()
    platforms: dict[str, set[str]] = {}
    for gpu in catalog.gpus:
        platforms.setdefault(gpu.platform, set()).add(gpu.architecture)
    evidence = engine_evidence(catalog)
    rows = [
        {**row, "fitted": [e.as_dict() for e in evidence.get(row["id"], [])]}
        for row in engine_rows(engine_data(), platforms)
    ]
    if args.json:
        common.print_json(rows)
    else:
        print(engines_text(rows))
    return 0
