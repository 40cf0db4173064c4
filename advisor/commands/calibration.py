"""``advisor calibration``: the performance model's fitted terms (what each GPU kind and workload reaches of its
specifications)."""

from __future__ import annotations

import argparse

from advisor.commands import common
from advisor.commands.common import Parents

NAME = "calibration"
SUMMARY = (  # the README's command table (advisor.commands.reference)
    "the performance model's fitted terms: what each peak kind, segment, architecture and workload reaches of its"
    " specifications"
)
TERMS = ("eta_peak", "eta_segment", "eta_arch", "eta_gpu", "mu_arch", "mu_gpu", "c", "m", "tau_w")  # --json's


def add_parser(commands, parents: Parents) -> None:
    parser = commands.add_parser(
        NAME,
        parents=[parents.common],
        help="the performance model's fitted terms (what each GPU kind and workload reaches of its specifications)",
    )
    common.add_catalog_option(parser)


def run(args: argparse.Namespace) -> int:
    """The performance model calibrated on --profiles: its fitted constants and per-GPU, per-workload terms."""
    from advisor.render.estimate import calibration_text

    advisor = common.advisor(args, catalog_needed=True)
    fit = advisor.calibration()
    if args.json:
        terms = {kind: {"/".join(map(str, k)): v for k, v in fit.terms(kind).items()} for kind in TERMS}
        common.print_json({"constants": fit.constants(), "terms": terms})
    else:
        print(
            f"Calibrated on {len(fit.samples):,} single-GPU results (time factors: below 1 is faster than the "
            "specifications alone say)."
        )
        print(calibration_text(fit, advisor.workload_names()))
    return 0
