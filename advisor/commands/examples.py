"""``advisor examples``: write the three example Keras models that ``measure --model`` can time."""

from __future__ import annotations

import argparse

from advisor.commands.common import Parents
from advisor.format.vocabulary import DeviceKind

NAME = "examples"
SUMMARY = (  # the README's command table (advisor.commands.reference)
    "writes the three example Keras models (a small CNN, a GRU text classifier, a Transformer encoder block)"
)


def add_parser(commands, parents: Parents) -> None:
    parser = commands.add_parser(
        NAME,
        parents=[parents.common],
        help="write the three example Keras models (a small CNN, a GRU text classifier, a Transformer block)",
    )
    parser.add_argument("--out", metavar="DIR", default="examples", help="where to write them (default ./examples)")


def run(args: argparse.Namespace) -> int:
    """Write the example Keras models that measure --model can time."""
    from advisor.measure import backends
    from advisor.measure.examples import write_examples

    backends.load("tensorflow").start(DeviceKind.CPU, 1)
    for path in write_examples(args.out):
        print(f"wrote {path}")
    return 0
