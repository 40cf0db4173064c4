"""``advisor measure --inference``: the options of a timed generation, checked into a plan before torch starts."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.commands.inference_options import add_length_arguments
from advisor.errors import AdvisorError
from advisor.measure.generation import DTYPES, GenerationPlan

DEFAULT_REPEATS = 5


def add_generation_arguments(parser: argparse.ArgumentParser) -> None:
    """--inference and the generation's choices (the price and the profile's options are measure's own)."""
    group = parser.add_argument_group("timing a generation instead of a training (--inference)")
    group.add_argument(
        "--inference",
        action="store_true",
        help="time transformers' generate of --model-config on this device and write an inference profile",
    )
    group.add_argument(
        "--model-config",
        metavar="NAME|DIR",
        help="a preset (random weights of its shapes: `advisor models` lists them), or a local model folder "
        "(its config.json, and its weights where it has them)",
    )
    add_length_arguments(group)
    group.add_argument(
        "--users", default="1", metavar="N,N", help="sequences generated at once, one result each (%(default)s)"
    )
    group.add_argument("--dtype", choices=DTYPES, default=DTYPES[0], help="the weights' dtype (%(default)s)")
    group.add_argument(
        "--repeats", type=int, default=DEFAULT_REPEATS, metavar="N", help="timed runs of each (%(default)s)"
    )


@dataclass(frozen=True)
class GenerationRun:
    """What ``measure --inference`` does: the plan, and what the profile says of the price and where it goes."""

    plan: GenerationPlan
    price: dict[str, Any]
    name: str | None
    out: Path | None  # None: --dry-run
    force: bool
    command: str


NOT_FOR_INFERENCE = {  # training options a timed generation has no use for, and what they would mean
    "model": "--model is a Keras training model; a generation's model is --model-config",
    "workers": "--workers joins machines for a training",
    "quick": "--quick stops a training early; a generation's runs are --repeats",
}


def generation_run_from_args(args: argparse.Namespace) -> GenerationRun:
    """The checked run of ``measure --inference``: every option checked before torch is imported."""
    from advisor.commands.measure_options import price_date_from_args
    from advisor.llm.config import resolve
    from advisor.measure.profile import GIVEN_BY_MEASURER, price_section

    for option, why in NOT_FOR_INFERENCE.items():
        if getattr(args, option, None):
            raise AdvisorError(f"--inference: {why}")
    if (getattr(args, "devices", 1) or 1) > 1:
        raise AdvisorError("--inference: a generation is timed on one device (--devices 1)")
    if not args.model_config:
        raise AdvisorError("--inference needs --model-config NAME (a preset) or DIR (a local model folder)")
    users = _users(args.users)
    if args.output < 2:
        raise AdvisorError("--output: a generation's decode is timed over 2 output tokens or more")
    if args.repeats < 1:
        raise AdvisorError("--repeats: 1 or more")
    path = Path(args.model_config)
    if path.is_dir() or path.name == "config.json":
        folder = path if path.is_dir() else path.parent
        if not (folder / "config.json").is_file():
            raise AdvisorError(f"{folder}: no config.json in this folder")
        model, model_path = None, folder
    else:
        model, model_path = resolve(args.model_config), None
    price = price_section(
        args.price_usd,
        price_date_from_args(args),
        args.price_note,
        args.price_source,
        args.power_watts,
        args.price_usd_per_hour,
        GIVEN_BY_MEASURER,
    )
    plan = GenerationPlan(
        model=model,
        model_path=model_path,
        dtype=args.dtype,
        prompt_tokens=args.prompt,
        output_tokens=args.output,
        batches=users,
        repeats=args.repeats,
        device=args.device,
        seed=args.seed,
    )
    words = [f"--model-config {args.model_config}", f"--prompt {args.prompt}", f"--output {args.output}"]
    words += [f"--users {args.users}", f"--dtype {args.dtype}", f"--repeats {args.repeats}", f"--device {args.device}"]
    return GenerationRun(
        plan,
        price,
        args.name,
        None if args.dry_run else Path(args.out or args.profiles),
        args.force,
        " ".join(["advisor", "measure", "--inference", *words]),
    )


def _users(text: str) -> tuple[int, ...]:
    """--users as batch sizes: positive whole numbers, comma-separated, each once, in order."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise AdvisorError(f"--users: whole numbers separated by commas, like 1,8, got {text!r}") from None
    if not values or min(values) < 1:
        raise AdvisorError(f"--users: 1 or more sequences each, got {text!r}")
    return tuple(sorted(set(values)))
