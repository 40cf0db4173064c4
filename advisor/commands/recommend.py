"""``advisor recommend``: the best option for the goal from your hardware, renting instead, every option's costs and
the upgrade ladder; with --model-config, the GPU for a language-model job."""

from __future__ import annotations

import argparse

from advisor.commands import common
from advisor.commands.common import Parents
from advisor.errors import AdvisorError
from advisor.format.vocabulary import Goal, Precision, words

NAME = "recommend"
SUMMARY_JOB = (  # the README's command table (advisor.commands.reference)
    "the GPU to buy (or the rental) for a language-model job among those it fits: the cheapest to buy within the"
    " budget (`value`), the fastest (`speed`) or the cheapest rented run (`cost`), with what renting costs a run and"
    " after how many runs buying pays"
)
SUMMARY = (  # the README's command table (advisor.commands.reference)
    "the best option for your goal in one sentence, whether renting would be cheaper, every option with its costs,"
    " and the upgrade ladder."
)


def add_parser(commands, parents: Parents) -> None:
    from advisor.commands.arguments import nonnegative_number
    from advisor.commands.job_options import add_job_arguments  # no framework
    from advisor.decision.costs import GOAL_HELP, GOALS, HABIT_OPTIONS, Habits

    parser = commands.add_parser(
        NAME, parents=[parents.common, parents.estimates], help="the best upgrade from your hardware"
    )
    parser.add_argument(
        "--current", metavar="ID", help="the profile of the hardware you have (required, but with --model-config)"
    )
    parser.add_argument(
        "--current-precision",
        choices=words(Precision),
        help="the precision you run today (default: float32 where the profile has it, else its only result)",
    )
    parser.add_argument(
        "--budget", type=common.budget, metavar="USD", help="the most you will spend (default: no limit)"
    )
    common.add_precision_filter(parser)
    defaults = Habits()
    habits = parser.add_argument_group("your habits and prices (what a run really costs)")
    for name, (metavar, meaning) in HABIT_OPTIONS.items():  # the options, their help and defaults: the table's
        default = getattr(defaults, name)
        habits.add_argument(
            f"--{name.replace('_', '-')}",
            type=nonnegative_number,
            metavar=metavar,
            default=default,
            help=f"{meaning} (default {default:g})",
        )
    parser.add_argument(
        "--goal",
        choices=GOALS,
        default=Goal.VALUE.value,
        help="; ".join(f"{goal}: {text}" for goal, text in GOAL_HELP.items()) + f" (default {Goal.VALUE})",
    )
    parser.add_argument("--optimizer", metavar="NAME", help="with --model-config: the optimizer (adamw)")
    common.add_devices_option(parser, "with --model-config: also N GPUs")
    common.add_gpu_option(parser, "with --model-config: one GPU only")
    add_job_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """The best option for the goal, renting instead, every option's costs and the upgrade ladder."""
    from advisor.render.compare import recommendation_text
    from advisor.render.records import recommendation_record

    if args.model_config:
        return _job(args)
    if not args.current:
        raise AdvisorError(
            "recommend: --current ID is required (the profile of the hardware you have), or "
            "--model-config for a language-model job"
        )
    rec = common.advisor(args, catalog_needed=True).recommend(
        args.current,
        budget=args.budget,
        precision=args.precision,
        current_precision=args.current_precision,
        goal=args.goal,
    )
    if args.json:
        common.print_json(recommendation_record(rec))
    else:
        print(recommendation_text(rec))
    return 0


def _job(args: argparse.Namespace) -> int:
    """``recommend --model-config``: the option for the goal among the GPUs the job fits, and renting instead."""
    from advisor.commands.job_options import request_from_args
    from advisor.render.jobs import choice_lines, choice_record, summary_lines

    advisor = common.advisor(args, common.frame(args, empty_ok=True), catalog_needed=True)  # the priors alone too
    request = request_from_args(args, (advisor.catalog.find(args.gpu).id,) if args.gpu else None)
    advice = advisor.job_advice(request)
    choice = advisor.job_choice(request, args.goal, args.budget)  # the advice above, kept: not worked out again
    if args.json:
        common.print_json(choice_record(choice))
    else:
        print(f"Training job: {advice.job.describe()}; {advice.job.run_tokens:,.0f} tokens (estimated, not measured)")
        print("\n".join([*choice_lines(choice), *summary_lines(advice)]))
    return 0
