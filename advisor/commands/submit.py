"""``advisor submit``: send profiles to a collection service, after showing exactly what will be sent (scrubbed of
host and user names, home paths, serial numbers and addresses) and asking."""

from __future__ import annotations

import argparse
import os
import sys

from advisor.commands import common
from advisor.commands.common import Parents
from advisor.errors import AdvisorError

NAME = "submit"
SUMMARY = (  # the README's command table (advisor.commands.reference)
    "sends profiles to a collection service: checked as `validate` does, scrubbed of host and user names, home paths,"
    " serials and addresses, shown and asked before anything is sent; prints each result's id and URL"
    " ([how](docs/reference.md#contributing-a-profile))"
)


def add_parser(commands, parents: Parents) -> None:
    from advisor.service import client

    parser = commands.add_parser(NAME, parents=[parents.common], help="send profiles to a collection service")
    parser.add_argument("files", nargs="+", metavar="FILE", help="profile files to send")
    parser.add_argument(
        "--to",
        metavar="URL",
        type=client.parse_url,
        help=f"the service (default ${client.URL_VARIABLE}, else {client.DEFAULT_URL})",
    )
    parser.add_argument("--token", metavar="TOKEN", help=f"your contributor token (default ${client.TOKEN_VARIABLE})")
    parser.add_argument("--yes", action="store_true", help="send without asking (after showing what is sent)")
    parser.add_argument(
        "--private", action="store_true", help="keep the results out of every listing and export (stored, never shown)"
    )


def run(args: argparse.Namespace) -> int:
    """Show what will be sent, ask, send, and say each result's id and URL."""
    from advisor.service import client

    url = args.to or client.parse_url(os.environ.get(client.URL_VARIABLE) or client.DEFAULT_URL)
    token = args.token or os.environ.get(client.TOKEN_VARIABLE)
    if not token:
        raise AdvisorError(
            f"submit: a contributor token is needed: --token TOKEN or ${client.TOKEN_VARIABLE} (the "
            "service's keeper makes them with advisor serve --new-token NAME)"
        )
    prepared = [client.prepare(path) for path in args.files]  # every file checked before anything is sent
    if not args.json:
        for item in prepared:
            print(f"--- {item.path}: what will be sent to {url}" + (" (private)" if args.private else ""))
            for finding in item.scrubbed:
                print(f"scrubbed {finding.field}: {finding.rule}")
            print(item.text, end="")
    if not args.yes and not _confirmed(len(prepared), url):
        print("nothing was sent", file=sys.stderr)
        return 1
    answers = [(item, client.send(item, url, token, args.private)) for item in prepared]
    if args.json:
        common.print_json([{"file": str(item.path), **answer} for item, answer in answers])
    else:
        for item, answer in answers:
            state = answer["status"] + (f" ({answer['reason']})" if answer.get("reason") else "")
            again = "" if answer.get("new", True) else ", already there"
            for dropped in answer.get("dropped", []):  # fields the schema does not know: the service keeps none
                print(f"{item.path}: {dropped}")
            print(f"{item.path}: {answer['id']} {state}{again}: {answer['url']}")
    return 0


def _confirmed(count: int, url: str) -> bool:
    if not sys.stdin.isatty():
        raise AdvisorError("submit: no one to ask (standard input is not a terminal): add --yes to send")
    reply = input(f"Send {count} profile(s) to {url}? [y/N] ")
    return reply.strip().lower() in ("y", "yes")
