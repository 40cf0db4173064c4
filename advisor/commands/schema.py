"""``advisor schema``: the JSON Schema of a profile (--markdown: the field reference of docs/reference.md)."""

from __future__ import annotations

import argparse

from advisor.commands import common
from advisor.commands.common import Parents

NAME = "schema"
SUMMARY = (  # the README's command table (advisor.commands.reference)
    "the JSON Schema of a profile (or the field reference of [the reference](docs/reference.md#field-reference))"
)


def add_parser(commands, parents: Parents) -> None:
    commands.add_parser(
        NAME,
        parents=[parents.common],
        help="print the JSON Schema of a profile (for editors)",
        description="Print the JSON Schema (draft 2020-12) of a profile. "
        "--markdown prints the reference's field tables instead (docs/reference.md).",
    ).add_argument("--markdown", action="store_true", help="the field reference as Markdown tables")


def run(args: argparse.Namespace) -> int:
    """The profile format as JSON Schema (--markdown: the field reference the documentation carries)."""
    from advisor.format import schema

    if args.markdown:
        print(schema.markdown_reference(), end="")
    else:
        common.print_json(schema.json_schema())
    return 0
