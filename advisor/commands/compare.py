"""``advisor compare``: every result of one workload against a baseline: speedups and dollars per speedup."""

from __future__ import annotations

import argparse

from advisor.commands import common
from advisor.commands.common import Parents

NAME = "compare"
SUMMARY = (  # the README's command table (advisor.commands.reference)
    "every result of one workload (default: the post's; `--workload ResNet-50` a published one) against a baseline"
    " (default: the slowest float32 result)."
)


def add_parser(commands, parents: Parents) -> None:
    parser = commands.add_parser(
        NAME, parents=[parents.common, parents.estimates], help="every result against a baseline"
    )
    parser.add_argument("--baseline", metavar="ID", help="baseline profile (default: the slowest float32 result)")
    common.add_precision_filter(parser)
    common.add_workload_option(parser, "the workload to compare (default: the post's), e.g. 'ResNet-50'")


def run(args: argparse.Namespace) -> int:
    """Every result of one workload against a baseline: speedups and dollars per speedup."""
    from advisor.render.compare import comparison_text
    from advisor.render.records import comparison_records

    advisor = common.advisor(args)
    key = advisor.workload(name=args.workload) if args.workload else None
    comparison = advisor.compare(baseline=args.baseline, precision=args.precision, workload=key)
    if args.json:
        common.print_json(comparison_records(comparison))
    else:
        print(comparison_text(comparison))
    return 0
