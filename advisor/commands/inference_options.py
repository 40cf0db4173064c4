"""The command line's words for an inference job (``estimate --model-config NAME --inference``): one place for its
flags, and the job they make."""

from __future__ import annotations

import argparse

from advisor.commands.arguments import positive_int
from advisor.decision.costs import HABIT_OPTIONS
from advisor.format.units import HOURS_PER_WEEK
from advisor.infer.engines import engine_data
from advisor.infer.estimate import CostInputs
from advisor.infer.job import ATTENTION_DATA_PARALLEL

DEFAULT_ENGINE = "vllm"


def add_inference_arguments(parser: argparse.ArgumentParser) -> None:
    """--inference and its job's choices (the model is --model-config's; --devices is the tensor-parallel size)."""
    data = engine_data()
    group = parser.add_argument_group("running or serving the model instead of training it (--inference)")
    group.add_argument(
        "--inference",
        action="store_true",
        help="estimate running the --model-config model: memory, speed and cost per GPU",
    )
    group.add_argument(
        "--engine",
        choices=list(data.engines),
        default=None,
        help=f"the inference engine, whose defaults decide memory ({DEFAULT_ENGINE}; llama.cpp for a GGUF file)",
    )
    group.add_argument(
        "--weights",
        choices=[name for name in data.weight_formats if name != "gguf"],
        default=None,
        help="the weights' format (default: the engine's first, 16-bit; a GGUF file's own)",
    )
    group.add_argument(
        "--kv-cache", choices=list(data.kv_formats), default=None, help="the cache's format (default: 16bit)"
    )
    _add_load_arguments(group)


def add_length_arguments(group: argparse._ArgumentGroup) -> None:
    """--prompt and --output: a sequence's lengths, the same words for an estimate and a timed generation."""
    group.add_argument("--prompt", type=positive_int, default=1024, metavar="N", help="prompt tokens (%(default)s)")
    group.add_argument("--output", type=positive_int, default=256, metavar="N", help="output tokens (%(default)s)")


def _add_load_arguments(group: argparse._ArgumentGroup) -> None:
    """The job's lengths, load and GPUs, and how an owned card is paid for."""
    add_length_arguments(group)
    group.add_argument(
        "--context",
        type=positive_int,
        default=None,
        metavar="N",
        help="the longest sequence to hold (default: prompt + output)",
    )
    group.add_argument(
        "--users", type=positive_int, default=1, metavar="N", help="sequences served at once (%(default)s)"
    )
    group.add_argument(
        "--requests-per-second",
        type=float,
        default=None,
        metavar="R",
        help="instead of --users: requests arriving steadily, each GPU serving the sequences that rate keeps in "
        "flight on it (Little's law), or said to be overloaded",
    )
    group.add_argument(
        "--replicas",
        type=positive_int,
        default=1,
        metavar="N",
        help="copies of the model, each on --devices GPUs, sharing the users (data parallel; %(default)s)",
    )
    group.add_argument(
        "--attention-data-parallel",
        action="store_true",
        help=f"with --devices N, {ATTENTION_DATA_PARALLEL}",
    )
    group.add_argument(
        "--mixed",
        default=None,
        metavar="GPU,GPU",
        help="split the model over these different GPUs, layer by layer as llama.cpp does by default (by each "
        "card's memory): each card's share, whether it fits, the speed",
    )
    _add_cost_arguments(group)


def _add_cost_arguments(group: argparse._ArgumentGroup) -> None:
    """How an owned card is paid for (its hours a week, years and electricity) and an API's price to weigh."""
    group.add_argument(
        "--hours-per-week",
        type=float,
        default=CostInputs.hours_per_week,
        metavar="H",
        help=f"hours a week an owned card serves, at most {HOURS_PER_WEEK:g} (%(default)s)",
    )
    for name in ("lifetime_years", "kwh_price"):  # the training habits' words, the inference job's defaults
        metavar, meaning = HABIT_OPTIONS[name]
        group.add_argument(
            "--" + name.replace("_", "-"),
            type=float,
            default=getattr(CostInputs, name),
            metavar=metavar,
            help=f"{meaning} (%(default)s)",
        )
    group.add_argument(
        "--api-usd-per-million",
        type=float,
        default=None,
        metavar="USD",
        help="an API's price a million output tokens, to say from how many users renting costs less",
    )
