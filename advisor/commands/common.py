"""What the commands share: the parent parsers' options, the parsed values' types, loading --profiles and the
catalog, printing JSON."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import Any

from advisor.errors import AdvisorError, InputError

DEFAULT_PROFILES = "profiles"


@dataclass(frozen=True)
class Parents:
    """The parent parsers a command's parser takes options from: ``common`` (--profiles, --json, accepted before or
    after the command) and ``estimates`` (--estimates, --catalog, --price)."""

    common: argparse.ArgumentParser
    estimates: argparse.ArgumentParser


def budget(text: str) -> float:
    """A number of dollars (--budget, a --price's value)."""
    from advisor.commands.arguments import dollars

    return dollars(text)


def price(text: str) -> tuple[str, float]:
    """--price GPU=USD: one line of error otherwise."""
    name, sep, usd = text.rpartition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"must be GPU=USD (e.g. rtx-4090=1500), got {text!r}")
    return name.strip(), budget(usd)


def add_common(parser: argparse.ArgumentParser, defaults: bool) -> None:
    """--profiles and --json, accepted before or after the command.

    The subcommands' copies default to SUPPRESS so that a value given before the command survives.
    """
    parser.add_argument(
        "--profiles",
        default=DEFAULT_PROFILES if defaults else argparse.SUPPRESS,
        metavar="DIR",
        help="the profiles folder (default: ./profiles)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=False if defaults else argparse.SUPPRESS,
        help="print machine-readable JSON",
    )
    parser.add_argument(
        "--collection",
        default=None if defaults else argparse.SUPPRESS,
        metavar="URL",
        help="read a collection service's profiles instead of --profiles (kept in a cache on disk: offline, the "
        "last copy is read and its age said)",
    )


# Commands that write into the profiles folder or serve one: --collection (a cached copy) is not for them.
WRITING_COMMANDS = ("add", "measure", "serve", "submit")


def use_collection(args: argparse.Namespace) -> None:
    """--collection URL: the service's profiles, fetched into the cache (or the cached copy, offline, its age said
    on stderr), become the folder the command reads."""
    if not getattr(args, "collection", None):
        return
    if args.command in WRITING_COMMANDS:
        raise AdvisorError(f"{args.command}: --collection is for the commands that read profiles; use --profiles DIR")
    from advisor.service import client  # the standard library's HTTP: nothing heavy

    cached = client.cached_collection(client.parse_url(args.collection))
    if cached.offline:
        print(
            f"advisor: warning: {args.collection}: {cached.offline}; reading the copy taken {cached.age_text()} ago",
            file=sys.stderr,
        )
    args.profiles = str(cached.folder)


def add_estimate_options(parser: argparse.ArgumentParser) -> None:
    """--estimates, --catalog and --price: the catalog's estimates and the prices a user was offered."""
    parser.add_argument(
        "--estimates",
        action="store_true",
        help="include the performance model's estimates for the catalog's GPUs (marked estimated, with a range)",
    )
    add_catalog_option(parser)
    parser.add_argument(
        "--price",
        action="append",
        default=[],
        metavar="GPU=USD",
        type=price,
        help="the price you were offered for a GPU (catalog id or name) or a profile (its id); repeatable",
    )


def add_precision_filter(parser: argparse.ArgumentParser) -> None:
    """``--precision``: which results a comparison keeps (the best of both, float32 alone, mixed alone)."""
    from advisor.format.vocabulary import PrecisionFilter, words

    parser.add_argument(
        "--precision",
        choices=words(PrecisionFilter),
        default=PrecisionFilter.ANY.value,
        help="the results kept: the best of both precisions, or one alone (default: %(default)s)",
    )


def add_workload_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--workload NAME``: a workload of the profiles by any part of its name (``what``: what it is for here)."""
    parser.add_argument(
        "--workload",
        metavar="NAME",
        help=f"{what}: any part of its name, in any case or spelling (`advisor list --workloads` lists them)",
    )


def add_gpu_option(parser: argparse.ArgumentParser, what: str = "one GPU", several: bool = False) -> None:
    """``--gpu NAME``: a catalog GPU by id or name (``what``: when it applies here); ``several``: the option may be
    repeated or take a comma-separated list (read with :func:`gpu_ids`), else the one GPU."""
    if several:
        parser.add_argument(
            "--gpu",
            metavar="NAME",
            action="append",
            help=f"{what} (id or name, e.g. rtx-4090 or 'RTX 4090'; repeat it or separate by commas for several: "
            "--gpu rtx-4090,rtx-3090)",
        )
    else:
        parser.add_argument(
            "--gpu", metavar="NAME", action=_OneGpu, help=f"{what} (id or name, e.g. rtx-4090 or 'RTX 4090')"
        )


class _OneGpu(argparse.Action):
    """``--gpu`` where one GPU is answered: a second one is the user's error, never silently the last."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        if getattr(namespace, self.dest, None) is not None or "," in str(values):
            parser.error(f"{option_string} names one GPU here (got another: {values}); estimate --gpu takes several")
        setattr(namespace, self.dest, values)


def gpu_ids(names: list[str] | None, catalog) -> list[str] | None:
    """The catalog ids of a repeated, comma-separated ``--gpu`` (None: every GPU), each once, in the asked order; a
    name the catalog lacks is the user's error with the closest names (:meth:`Catalog.find`)."""
    if not names:
        return None
    found = [catalog.find(name.strip()).id for value in names for name in value.split(",") if name.strip()]
    return list(dict.fromkeys(found)) or None


def add_devices_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--devices N``: several GPUs in data parallel (``what``: what they do here)."""
    from advisor.commands.arguments import positive_int

    parser.add_argument("--devices", type=positive_int, default=1, metavar="N", help=f"{what} (%(default)s)")


def add_catalog_option(parser: argparse.ArgumentParser) -> None:
    """--catalog FILE: another GPU catalog than the shipped one (read by :func:`catalog`)."""
    parser.add_argument("--catalog", metavar="FILE", help="the GPU catalog (default: the shipped one)")


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, allow_nan=False))


def load(args: argparse.Namespace):
    """Every profile of --profiles (what was wrong with the rest said on stderr)."""
    from advisor.store import load_profiles

    profile_set = load_profiles(args.profiles)
    say_skipped(args, profile_set.problems, profile_set.warnings, bool(profile_set.profiles))
    return profile_set


def say_skipped(args: argparse.Namespace, problems: list, warnings: list, found: bool) -> None:
    """The files left out and the warnings on standard error; no valid profile at all is a user error."""
    for problem in problems:
        print(f"advisor: warning: skipped {problem}", file=sys.stderr)
    for warning in warnings:
        print(f"advisor: warning: {warning}", file=sys.stderr)
    if not found:
        raise AdvisorError(f"{args.profiles}: no valid profiles found")


def frame(args: argparse.Namespace, empty_ok: bool = False):
    """The results frame of --profiles, through the folder's index (a frame kept there decodes no profile); no
    valid profile is a user error unless ``empty_ok`` (the performance model's priors alone)."""
    from advisor.store.results import load_frame

    loaded = load_frame(args.profiles)
    say_skipped(args, loaded.problems, loaded.warnings, empty_ok or not loaded.frame.empty)
    return loaded.frame


def catalog(args: argparse.Namespace):
    """The GPU catalog of --catalog (default: the shipped one)."""
    from advisor.store.catalog import DEFAULT_CATALOG, load_catalog

    return load_catalog(args.catalog or DEFAULT_CATALOG)


def advisor(args: argparse.Namespace, loaded=None, gpus=None, catalog_needed: bool = False):
    """The pipeline over --profiles' results (``loaded`` when already read) with the options' choices: the
    catalog's estimates (--estimates), the prices offered (--price), the habits (their options, where the command
    has them). The catalog (``gpus`` when already read) is read where the choices or the command need it
    (``catalog_needed``)."""
    from advisor.decision.costs import HABIT_OPTIONS, Habits
    from advisor.decision.pipeline import Advisor

    results = frame(args) if loaded is None else loaded
    prices = dict(getattr(args, "price", None) or [])
    wanted = catalog_needed or bool(prices) or getattr(args, "estimates", False)
    habits = {name: getattr(args, name) for name in HABIT_OPTIONS if hasattr(args, name)}  # every habit option
    if gpus is None and wanted:
        gpus = catalog(args)
    return Advisor(results, gpus, prices, Habits(**habits), include_estimates=bool(getattr(args, "estimates", False)))


def error_words(error: AdvisorError) -> str:
    """An error as the command line says it: a refused value by its option (the library names the field:
    ``--lifetime-years: must be ...``), any other as the library wrote it."""
    if isinstance(error, InputError):
        key = f" {error.key}" if error.key else ""
        return f"{error.flag}{key}: {error.message}"
    return str(error)
