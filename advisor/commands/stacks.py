"""``advisor stacks``: the training stacks of --stack, each one's choices and where each default is written."""

from __future__ import annotations

import argparse

from advisor.commands import common
from advisor.commands.common import Parents

NAME = "stacks"
SUMMARY = (  # the README's command table (advisor.commands.reference)
    "the training stacks of `--stack`: each one's memory and time choices, the default, and where each is written"
)


def add_parser(commands, parents: Parents) -> None:
    commands.add_parser(
        NAME,
        parents=[parents.common],
        help="the training stacks of estimate --stack (each one's choices and their sources)",
    )


def run(args: argparse.Namespace) -> int:
    """The training stacks --stack knows (and the past versions the memory check reads)."""
    from advisor.llm import stack

    if args.json:
        common.print_json(stack.stack_rows())
    else:
        print(stack.markdown_reference(), end="")
    return 0
