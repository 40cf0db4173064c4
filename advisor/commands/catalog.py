"""``advisor catalog``: the GPU catalog: specifications, prices and rentals, each dated and sourced."""

from __future__ import annotations

import argparse

from advisor.commands import common
from advisor.commands.common import Parents

NAME = "catalog"
SUMMARY = (  # the README's command table (advisor.commands.reference)
    "the GPU catalog: specifications, the purchase price used and the cheapest rental, all dated and sourced"
)


def add_parser(commands, parents: Parents) -> None:
    parser = commands.add_parser(NAME, parents=[parents.common], help="the GPU catalog: specifications and prices")
    common.add_catalog_option(parser)


def run(args: argparse.Namespace) -> int:
    """The GPU catalog: specifications, prices and rentals, each with its source."""
    from advisor.render.catalog import catalog_text
    from advisor.store.catalog import catalog_rows

    catalog = common.catalog(args)
    if args.json:
        common.print_json({"as_of": catalog.as_of, "gpus": catalog_rows(catalog)})
    else:
        print(catalog_text(catalog))
    return 0
