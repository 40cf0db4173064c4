"""``advisor validate``: check profile files or folders (every file read, never the index)."""

from __future__ import annotations

import argparse
import sys

from advisor.commands import common
from advisor.commands.common import Parents

NAME = "validate"
SUMMARY = (  # the README's command table (advisor.commands.reference)
    "checks files or folders (default: the profiles folder); exit 0 when all are valid, else 1 with a line per"
    " problem: `file: field: what is wrong`"
)


def add_parser(commands, parents: Parents) -> None:
    parser = commands.add_parser(
        NAME, parents=[parents.common], help="check profile files (default: the profiles folder)"
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="profile files or folders")


def run(args: argparse.Namespace) -> int:
    """Check profile files (every file read, never the index); exit 1 when one is wrong."""
    from advisor.store import load_profiles, profile_files

    paths = args.paths or [args.profiles]
    files, _ = profile_files(paths)
    profile_set = load_profiles(paths, use_index=False)  # validate reads every file, never the index
    if args.json:
        common.print_json(
            {
                "valid": not profile_set.problems,
                "files": len(files),
                "problems": [vars(p) for p in profile_set.problems],
                "warnings": [vars(p) for p in profile_set.warnings],
            }
        )
    else:
        for problem in profile_set.problems:
            print(problem)
        for warning in profile_set.warnings:
            print(f"warning: {warning}")
        bad = len(profile_set.bad_files)
        print(f"{len(files)} file(s) checked: {len(files) - bad} valid, {bad} invalid", file=sys.stderr)
    return 1 if profile_set.problems else 0
