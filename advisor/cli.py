"""The command line: the parser built from the command modules (:mod:`advisor.commands`) and the dispatcher.
``main(argv) -> int``: 0 ok, 1 a user error (one line on standard error, never a traceback)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence

from advisor import __version__
from advisor.commands import COMMANDS
from advisor.commands.common import Parents, add_common, add_estimate_options, error_words, use_collection
from advisor.errors import AdvisorError


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of exiting, so main() owns the exit status.

    The message names the command (not the program, which main() already prints once).
    """

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.removeprefix("advisor").strip()
        where = f"{command}: " if command else ""
        raise AdvisorError(f"{where}{message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: the program's options, then each command's parser as its module adds it."""
    common = _Parser(add_help=False)
    add_common(common, defaults=False)
    estimates = _Parser(add_help=False)
    add_estimate_options(estimates)

    parser = _Parser(
        prog="advisor",
        description="Hardware cost-performance advisor for deep learning, training and running models: "
        "compare measured profiles, estimate every catalog GPU and pick the upgrade (or rental) that pays.",
    )
    parser.add_argument("--version", action="version", version=f"advisor {__version__}")
    add_common(parser, defaults=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for command in COMMANDS:
        command.add_parser(commands, Parents(common, estimates))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status (0 ok, 1 user error)."""
    try:
        parser = build_parser()
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
        if args.command is None:
            parser.print_help()
            return 0
        use_collection(args)
        return {command.NAME: command for command in COMMANDS}[args.command].run(args)
    except AdvisorError as error:
        print(f"advisor: error: {error_words(error)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("advisor: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `advisor catalog | head`: the reader left; say nothing more
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except SystemExit as exit_:  # --help and --version
        return int(exit_.code or 0)


def main_entry() -> None:
    """The ``advisor`` console script."""
    raise SystemExit(main())
