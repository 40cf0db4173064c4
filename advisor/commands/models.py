"""``advisor models``: the language-model presets of --model-config, each config's numbers and its source."""

from __future__ import annotations

import argparse

from advisor.commands import common
from advisor.commands.common import Parents

NAME = "models"
SUMMARY = (  # the README's command table (advisor.commands.reference)
    "the language-model presets, each config's numbers and where they come from"
)


def add_parser(commands, parents: Parents) -> None:
    commands.add_parser(
        NAME,
        parents=[parents.common],
        help="the language-model presets of estimate --model-config (each config's numbers and source)",
    )


def run(args: argparse.Namespace) -> int:
    """The language-model presets --model-config knows."""
    from advisor.llm.config import load_presets, model_rows
    from advisor.render.catalog import models_text

    rows = model_rows(load_presets())
    if args.json:
        common.print_json(rows)
    else:
        print(models_text(rows))
    return 0
