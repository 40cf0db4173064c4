"""``advisor measure``: time the training (the post's LSTM, or your model) on this device and write a profile."""

from __future__ import annotations

import argparse
import os
import sys

from advisor.commands import common
from advisor.commands.common import Parents
from advisor.errors import AdvisorError

NAME = "measure"
SUMMARY = (  # the README's command table (advisor.commands.reference)
    "times the training (the post's LSTM, or your model) on this device and writes a profile"
    " ([how](docs/reference.md#measuring-a-profile-python--m-advisor-measure)); `--inference`: a model's generation"
    " instead, as an inference profile ([how](docs/reference.md#timing-a-generation-measure---inference))"
)


def add_parser(commands, parents: Parents) -> None:
    from advisor.commands.arguments import add_workload_arguments  # no TensorFlow
    from advisor.commands.generation_options import add_generation_arguments  # no torch

    parser = commands.add_parser(
        NAME,
        parents=[parents.common],
        help="time a training (the post's LSTM or your model), or a generation (--inference), here and write a profile",
        description="Time the post's LSTM training on this device (float32 and mixed precision) with a Keras "
        "backend, and write a profile; or, with --inference, time a model's generation (transformers' generate) "
        "and write an inference profile. Progress goes to standard error.",
    )
    add_workload_arguments(parser)
    add_generation_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Plan, check the output folder, measure, validate, write, report."""
    from advisor.commands.measure_options import plan_from_args

    if args.inference:
        return _measure_generation(args)
    plan = plan_from_args(args)
    if plan.cluster is None:
        return _measure(args, plan)
    # A worker of a cluster ends here, whatever happened: TensorFlow's teardown of the cluster would log C++ errors
    # after our last line (and may wait on a shutdown barrier for workers that are gone).
    try:
        status = _measure(args, plan)
    except AdvisorError as error:
        print(f"advisor: error: {common.error_words(error)}", file=sys.stderr)
        status = 1
    except KeyboardInterrupt:
        print("advisor: interrupted; no profile written", file=sys.stderr)
        status = 130
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _measure(args: argparse.Namespace, plan) -> int:
    from advisor import store
    from advisor.format import typed
    from advisor.measure import InterruptGuard, measure  # the framework starts inside measure()
    from advisor.render.measure import measure_table

    writes = plan.out is not None and (plan.cluster is None or plan.cluster.is_chief)
    if writes:
        store.check_writable_folder(plan.out)  # before minutes of training, not after
    with InterruptGuard().installed() as guard:
        profile = measure(plan, _progress, guard)
        if profile is None:  # a worker other than the chief: the chief writes the profile
            if args.json:
                common.print_json({"path": None, "profile": None, "worker": plan.cluster.index})
            else:
                print(f"{plan.cluster.name(plan.cluster.index)}: done; the chief writes the profile")
            return 0
        _check_measured(profile)
        guard.check()  # a stop asked for during the run: write nothing
        path = store.write_profile(profile, plan.out, overwrite=plan.force) if plan.out is not None else None
    if args.json:
        common.print_json({"path": str(path) if path else None, "profile": profile})
    else:
        print(measure_table(profile))
        _say_where(path)
        if typed.build(profile).price.usd is None:
            print("The price is unknown: add --price-usd (or edit price.usd) so the advisor can recommend it.")
    return 0


def _measure_generation(args: argparse.Namespace) -> int:
    """Plan, check the output folder, time the generation, validate, write, report (as ``_measure`` does)."""
    from advisor import store
    from advisor.commands.generation_options import generation_run_from_args
    from advisor.measure import hardware
    from advisor.measure.generation import measure_generation  # torch starts inside
    from advisor.measure.inference_profile import default_name, generation_profile
    from advisor.measure.profile import profile_id_for
    from advisor.render.measure import generation_table

    run = generation_run_from_args(args)
    if run.out is not None:
        store.check_writable_folder(run.out)  # before minutes of generating, not after
    record = measure_generation(run.plan, _progress)
    name = run.name or default_name(record)
    profile_id = profile_id_for(name, run.out, run.force)
    profile = generation_profile(record, profile_id, name, run.price, run.command, host=hardware.host_facts())
    _check_measured(profile)
    path = store.write_profile(profile, run.out, overwrite=run.force) if run.out is not None else None
    if args.json:
        common.print_json({"path": str(path) if path else None, "profile": profile})
        return 0
    print(generation_table(profile))
    print(_beside_the_estimate(profile))
    _say_where(path)
    return 0


def _check_measured(profile: dict) -> None:
    """A measured profile is valid, or it is a bug: said, never written."""
    from advisor.format import schema

    problems, _ = schema.validate(profile, "(measured profile)")
    if problems:
        raise AdvisorError("the measured profile is invalid (a bug): " + "; ".join(map(str, problems)))


def _say_where(path: os.PathLike | None) -> None:
    """Where the profile went (or that --dry-run wrote none), and how to contribute it."""
    from advisor import store

    print(f"\nprofile written to {path}" if path else "\n--dry-run: no profile written")
    if path:
        print(store.submit_hint(path))


def _beside_the_estimate(profile: dict) -> str:
    """The measured generation beside the estimate of the same job on its GPU (or why there is none)."""
    from advisor.format import typed
    from advisor.infer.measured import compare
    from advisor.render.inference import measured_text
    from advisor.store.catalog import load_catalog

    return measured_text(compare(typed.build(profile), load_catalog()))


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
