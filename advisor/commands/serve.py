"""``advisor serve``: the collection service over a database (SQLite by default, PostgreSQL by URL); with
--new-token, a contributor token instead."""

from __future__ import annotations

import argparse
import sys

from advisor.commands import common
from advisor.commands.common import Parents
from advisor.errors import AdvisorError

NAME = "serve"
SUMMARY = (  # the README's command table (advisor.commands.reference)
    "the collection service: an HTTP API over SQLite (default) or PostgreSQL that checks every upload before storing"
    " it (validation, size, privacy, the device's physical bound) and serves pages, single results and an export"
    " ([how](docs/reference.md#the-collection-service-advisor-serve))"
)
DEFAULT_DATABASE = "advisor-collection.sqlite"
DEFAULT_PORT = 8600


def add_parser(commands, parents: Parents) -> None:
    parser = commands.add_parser(
        NAME,
        parents=[parents.common],
        help="serve a collection that `advisor submit` feeds",
        description="Serve a collection of contributed profiles over HTTP: every upload is checked (validation, "
        "size, privacy, the device's physical bound) before it is stored; the profiles of --profiles and the catalog "
        "are the reference the plausibility checks use.",
    )
    parser.add_argument(
        "--database",
        default=DEFAULT_DATABASE,
        metavar="URL",
        help=f"an SQLite file (default ./{DEFAULT_DATABASE}) or postgresql://user@host:port/db",
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"the port (default {DEFAULT_PORT})")
    common.add_catalog_option(parser)
    parser.add_argument(
        "--submits-per-minute",
        type=int,
        default=60,
        metavar="N",
        help="the most submits a token may make in a minute (default 60)",
    )
    parser.add_argument(
        "--new-token",
        metavar="NAME",
        help="make a contributor token for NAME, print it once (only its hash is kept) and stop",
    )
    parser.add_argument(
        "--keeper",
        action="store_true",
        help="with --new-token: a keeper's token, which reviews the held results (GET /api/v1/review, "
        "POST /api/v1/review/ID?decision=approve|reject)",
    )


def run(args: argparse.Namespace) -> int:
    """Serve the collection (or make a token)."""
    from advisor.service import storage

    database = storage.open_storage(args.database)
    if args.new_token:
        try:
            token = database.add_token(args.new_token, "keeper" if args.keeper else "contributor")
        finally:
            database.close()
        if args.json:
            common.print_json({"name": args.new_token, "token": token, "keeper": args.keeper})
        else:
            print(token)
            kind = "keeper" if args.keeper else "contributor"
            print(f"the {kind} token of {args.new_token}: shown once, only its hash is kept", file=sys.stderr)
        return 0
    return _serve(args, database)


def _serve(args: argparse.Namespace, database) -> int:
    from advisor.decision.pipeline import Advisor

    try:  # FastAPI and uvicorn are imported here: only the service needs them (the `serve` extra)
        import uvicorn

        from advisor.service.app import Settings, create_app, settings_record
    except ImportError as error:
        database.close()
        raise AdvisorError(
            f"serve: {error.name or 'a package'} is missing: install the service's extra, pip install 'advisor[serve]'"
        ) from None
    if args.submits_per_minute < 1:
        raise AdvisorError(f"serve: --submits-per-minute must be 1 or more, got {args.submits_per_minute}")
    reference = common.frame(args, empty_ok=True)  # no reference profiles: the priors alone
    settings = Settings(args.database, Advisor(reference, common.catalog(args)), args.submits_per_minute)
    print(f"advisor serve: {settings_record(settings)} on http://{args.host}:{args.port}", file=sys.stderr)
    try:
        uvicorn.run(
            create_app(settings, database), host=args.host, port=args.port, access_log=False, log_level="warning"
        )  # no access log: the service keeps no uploader address
    finally:
        database.close()
    return 0
