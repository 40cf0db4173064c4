"""``advisor crossval``: the performance model cross-validated on the GPU results (--write: keep the ranges)."""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path

from advisor.commands import common
from advisor.commands.common import Parents
from advisor.errors import AdvisorError

NAME = "crossval"
SUMMARY = (  # the README's command table (advisor.commands.reference)
    "cross-validates the model (new GPU, new architecture, new workload from one or three GPUs, description only,"
    " single results): median and 90th-percentile errors, the range of each situation, the coverage; `--families`"
    " holds out each model family too, `--held-out` predicts the published results no fit sees; `--write` keeps the"
    " ranges beside the catalog"
)


def experiments() -> tuple[str, ...]:
    """The experiments crossval runs (each held-out situation)."""
    from advisor.perf.crossval import EXPERIMENTS

    return EXPERIMENTS


def add_parser(commands, parents: Parents) -> None:
    parser = commands.add_parser(
        NAME,
        parents=[parents.common],
        help="cross-validate the performance model on the GPU results (how far its estimates are off)",
        description="Hold out GPUs, workloads and single results in turn, predict them from the rest, and report the "
        "median and 90th-percentile errors per experiment, the range width of each situation and the coverage. "
        "--write keeps the widths beside the catalog, where every estimate takes its range from.",
    )
    parser.add_argument("--write", action="store_true", help="write the widths to the catalog folder's crossval.yaml")
    common.add_catalog_option(parser)
    parser.add_argument("--experiments", metavar="NAMES", help="comma-separated subset: " + ", ".join(experiments()))
    parser.add_argument(
        "--families",
        action="store_true",
        help="also hold out each model family in turn (recurrent, vision, language, speech, recommendation): "
        "errors of time, of each GPU pair's ratio and of the GPUs' order",
    )
    parser.add_argument(
        "--held-out",
        action="store_true",
        help="also predict the published results that no fit sees (the package's held_out_training.yaml) on the "
        "GPUs no calibration result covers: each new GPU's speed over a covered one, described only, measured on "
        "one covered GPU, measured on all of them",
    )


def run(args: argparse.Namespace) -> int:
    """Cross-validate the performance model on the published results (--write: keep the ranges)."""
    from advisor.perf import crossval
    from advisor.render.estimate import crossval_text
    from advisor.store import crossval_widths as widths

    chosen = tuple(n.strip() for n in args.experiments.split(",")) if args.experiments else experiments()
    unknown = [n for n in chosen if n not in experiments()]
    if unknown:
        raise AdvisorError(f"crossval: unknown experiment {unknown[0]!r} (use {', '.join(experiments())})")
    advisor = common.advisor(args, catalog_needed=True)
    found = advisor.cross_validation(chosen, families=args.families, held_out=args.held_out)
    unmatched = advisor.unmatched_gpus()
    catalog = advisor.catalog
    if args.write:
        written = widths.write(widths.from_report(found), Path(catalog.origin).parent / widths.FILE_NAME)
        print(f"wrote {written}", file=sys.stderr)
    if args.json:
        common.print_json(
            {
                "summary": found.summary,
                "checks": found.checks(),
                "coverage": found.coverage,
                "half_widths": {k: math.exp(v) for k, v in found.half_widths.items()},
                "samples": found.samples,
                "not_in_catalog": unmatched,
                "data_parallel": found.scaling,
                "tracked": crossval.tracked_errors(found.summary),
                **({"families": [dataclasses.asdict(row) for row in found.families]} if args.families else {}),
                **(
                    {
                        "held_out": [dataclasses.asdict(row) for row in found.held_out_errors()],
                        "held_out_pairs": [dataclasses.asdict(pair) | {"error": pair.error} for pair in found.held_out],
                    }
                    if args.held_out
                    else {}
                ),
            }
        )
    else:
        print(crossval_text(found))
        if unmatched:
            print(f"Not in the catalog (compared, not calibrated on): {', '.join(unmatched)}")
    return 0
