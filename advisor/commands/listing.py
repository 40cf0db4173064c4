"""``advisor list``: the profiles, one line each (a published collection in one line, unless --published)."""

from __future__ import annotations

import argparse
from pathlib import Path

from advisor.commands import common
from advisor.commands.common import Parents
from advisor.format.vocabulary import Job

NAME = "list"
SUMMARY = (  # the README's command table (advisor.commands.reference)
    "the profiles, one line each (a published collection in one line, unless `--published`); `--workloads`: the"
    " workloads instead"
)


def add_parser(commands, parents: Parents) -> None:
    parser = commands.add_parser(NAME, parents=[parents.common], help="the profiles, one line each")
    parser.add_argument(
        "--published", action="store_true", help="also each profile of a published collection (one line each)"
    )
    parser.add_argument(
        "--workloads",
        action="store_true",
        help="the workloads instead, one line each with its profiles (the names --workload takes any part of)",
    )


def run(args: argparse.Namespace) -> int:
    """List the profiles of --profiles, one line each (a published collection: one line for all of it)."""
    from advisor.format.formatting import fmt_usd
    from advisor.render.tables import fmt_seconds_with_source
    from advisor.store.results import results_frame

    profile_set = common.load(args)
    if args.workloads:
        return _workloads(args, profile_set.profiles)
    if args.json:
        common.print_json(
            [
                {
                    "id": p.id,
                    "name": p.typed.name,
                    "job": p.typed.job or Job.TRAINING.value,
                    "device": p.typed.device.name,
                    "kind": p.typed.device.kind,
                    "price_usd": p.typed.price.usd,
                    **_what_was_timed(p.typed),
                    "source": p.typed.provenance.method,
                    "file": p.origin,
                }
                for p in profile_set.profiles
            ]
        )
        return 0
    collections: dict[str, list] = {}
    shown, generations = [], []
    for profile in profile_set.profiles:
        if profile.typed.job == Job.INFERENCE:
            generations.append(_generation_line(profile.typed))
        elif "#" in profile.origin and not args.published:  # a published collection: one line for all of it
            collections.setdefault(profile.origin.split("#")[0], []).append(profile)
        else:
            shown.append(profile)
    # The rows of the profiles given a line, and only those: a collection of 1,137 profiles is one line.
    by_profile = dict(tuple(results_frame(shown).groupby("profile", sort=False))) if shown else {}
    for profile in shown:
        rows = by_profile[profile.id]
        timings = ", ".join(f"{r['precision']} {fmt_seconds_with_source(r)}" for r in rows.to_dict("records"))
        print(
            f"{profile.id}: {profile.typed.device.name} [{profile.typed.device.kind}], "
            f"{fmt_usd(rows['price_usd'].iloc[0])}, {profile.typed.provenance.method}; {timings}"
        )
    for origin, members in collections.items():
        workloads = len({p.typed.workload.name for p in members})
        print(
            f"{Path(origin).name}: {len(members):,} published profiles of {workloads} workloads, quoted "
            "(list --published shows them)"
        )
    for line in generations:
        print(line)
    return 0


def _what_was_timed(tree) -> dict:
    """A profile's job in JSON: its workload and precisions, or its generation's model and batches."""
    if tree.job == Job.INFERENCE:
        return {"model": tree.generation.model, "users": [r.batch for r in tree.generation_results]}
    return {"workload": tree.workload.name, "precisions": [r.precision for r in tree.results]}


def _generation_line(tree) -> str:
    """An inference profile's line: its device, price and what its generation reached per batch."""
    from advisor.format.formatting import fmt_usd

    g = tree.generation
    speeds = ", ".join(f"{r.decode_tokens_per_s:,.1f} tok/s at {r.batch}" for r in tree.generation_results)
    return (
        f"{tree.id}: {tree.device.name} [{tree.device.kind}], {fmt_usd(tree.price.usd)}, {tree.provenance.method}; "
        f"inference, {g.model} {g.dtype} with {g.engine}, prompt {g.prompt_tokens} + {g.output_tokens}: {speeds}"
    )


def _workloads(args: argparse.Namespace, profiles: list) -> int:
    """Each workload's name and how many profiles measured or quoted it, by name."""
    counts: dict[str, int] = {}
    for profile in (p for p in profiles if p.typed.job != Job.INFERENCE):
        counts[profile.typed.workload.name] = counts.get(profile.typed.workload.name, 0) + 1
    if args.json:
        common.print_json([{"workload": name, "profiles": n} for name, n in sorted(counts.items())])
        return 0
    for name, n in sorted(counts.items()):
        print(f"{name}: {n:,} profile{'s' if n != 1 else ''}")
    return 0
