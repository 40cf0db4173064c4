"""``advisor add``: validate profiles from elsewhere and copy the valid ones into the profiles folder, atomically."""

from __future__ import annotations

import argparse
import sys

from advisor.commands import common
from advisor.commands.common import Parents

NAME = "add"
SUMMARY = (  # the README's command table (advisor.commands.reference)
    "validates profiles from elsewhere and copies the valid ones into the profiles folder as `<id>.yaml`, atomically;"
    " an id already there is refused unless `--force`"
)


def add_parser(commands, parents: Parents) -> None:
    parser = commands.add_parser(
        NAME,
        parents=[parents.common],
        help="validate profiles from elsewhere and copy the valid ones into the profiles folder",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="profile files to add")
    parser.add_argument("--force", action="store_true", help="replace a profile of the same id")


def run(args: argparse.Namespace) -> int:
    """Copy profile files into the profiles folder, checked, never overwriting without --force."""
    from advisor.store import add_profiles

    report = add_profiles(args.files, args.profiles, overwrite=args.force)
    for problem in report.problems:
        print(problem, file=sys.stderr)
    if args.json:
        common.print_json({"added": [str(p) for p in report.added], "problems": [vars(p) for p in report.problems]})
    else:
        for path in report.added:
            print(f"added {path}")
        print(f"{len(report.added)} added, {len(report.refused)} refused", file=sys.stderr)
    return 1 if report.problems else 0
