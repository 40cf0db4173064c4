"""The command line: a thin dispatcher over the library. ``main(argv) -> int``."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from advisor import __version__
from advisor.errors import AdvisorError
from advisor.vocabulary import DeviceKind, Goal, Precision, PrecisionFilter, words

DEFAULT_PROFILES = "profiles"


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of exiting, so main() owns the exit status.

    The message names the command (not the program, which main() already prints once).
    """

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.removeprefix("advisor").strip()
        where = f"{command}: " if command else ""
        raise AdvisorError(f"{where}{message} (see {self.prog} --help)")


def _budget(text: str) -> float:
    from advisor.workload import dollars

    return dollars(text)


def _price(text: str) -> tuple[str, float]:
    """--price GPU=USD: one line of error otherwise."""
    name, sep, usd = text.rpartition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"must be GPU=USD (e.g. rtx-4090=1500), got {text!r}")
    return name.strip(), _budget(usd)


def _add_common(parser: argparse.ArgumentParser, defaults: bool) -> None:
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


def build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    _add_common(common, defaults=False)

    parser = _Parser(
        prog="advisor",
        description="Hardware cost-performance advisor for deep-learning training: "
        "compare measured profiles and pick the upgrade that pays.",
    )
    parser.add_argument("--version", action="version", version=f"advisor {__version__}")
    _add_common(parser, defaults=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    commands.add_parser("list", parents=[common], help="the profiles, one line each").add_argument(
        "--published", action="store_true", help="also each profile of a published collection (one line each)"
    )

    validate = commands.add_parser(
        "validate", parents=[common], help="check profile files (default: the profiles folder)"
    )
    validate.add_argument("paths", nargs="*", metavar="PATH", help="profile files or folders")

    estimates = _Parser(add_help=False)
    estimates.add_argument(
        "--estimates",
        action="store_true",
        help="include the performance model's estimates for the catalog's GPUs (marked estimated, with a range)",
    )
    estimates.add_argument("--catalog", metavar="FILE", help="the GPU catalog (default: the shipped one)")
    estimates.add_argument(
        "--price", action="append", default=[], metavar="GPU=USD", type=_price,
        help="the price you were offered for a GPU (catalog id or name) or a profile (its id); repeatable",
    )  # fmt: skip

    compare = commands.add_parser("compare", parents=[common, estimates], help="every result against a baseline")
    compare.add_argument("--baseline", metavar="ID", help="baseline profile (default: the slowest float32 result)")
    compare.add_argument("--precision", choices=words(PrecisionFilter), default=PrecisionFilter.ANY.value)
    compare.add_argument(
        "--workload", metavar="NAME", help="the workload to compare (default: the post's), e.g. 'ResNet-50'"
    )

    recommend = commands.add_parser(
        "recommend", parents=[common, estimates], help="the best upgrade from your hardware"
    )
    recommend.add_argument("--current", metavar="ID",
                           help="the profile of the hardware you have (required, but with --model-config)")
    recommend.add_argument(
        "--current-precision",
        choices=words(Precision),
        help="the precision you run today (default: float32 where the profile has it, else its only result)",
    )
    recommend.add_argument("--budget", type=_budget, metavar="USD", help="the most you will spend (default: no limit)")
    recommend.add_argument("--precision", choices=words(PrecisionFilter), default=PrecisionFilter.ANY.value)
    from advisor.costs import GOAL_HELP, GOALS, HABIT_OPTIONS, Habits
    from advisor.workload import nonnegative_number

    defaults = Habits()
    habits = recommend.add_argument_group("your habits and prices (what a run really costs)")
    for name, (metavar, meaning) in HABIT_OPTIONS.items():
        default = getattr(defaults, name)
        habits.add_argument(
            f"--{name.replace('_', '-')}",
            type=nonnegative_number,
            metavar=metavar,
            default=default,
            help=f"{meaning} (default {default:g})",
        )
    recommend.add_argument(
        "--goal",
        choices=GOALS,
        default=Goal.VALUE.value,
        help="; ".join(f"{goal}: {text}" for goal, text in GOAL_HELP.items()) + f" (default {Goal.VALUE})",
    )
    from advisor.llm.options import add_job_arguments  # no framework

    recommend.add_argument("--optimizer", metavar="NAME", help="with --model-config: the optimizer (adamw)")
    recommend.add_argument("--devices", type=int, default=1, metavar="N", help="with --model-config: also N GPUs")
    recommend.add_argument("--gpu", metavar="NAME", help="with --model-config: one GPU only")
    add_job_arguments(recommend)

    catalog = commands.add_parser("catalog", parents=[common], help="the GPU catalog: specifications and prices")
    catalog.add_argument("--catalog", metavar="FILE", help="the GPU catalog (default: the shipped one)")

    estimate = commands.add_parser(
        "estimate",
        parents=[common],
        help="estimate the workload's training time on the catalog's GPUs",
        description="Estimate the workload's total training time on every catalog GPU (or --gpu), for float32 and "
        "mixed_float16, from the GPUs' specifications, calibrated on every GPU result the model can describe (the "
        "published benchmarks, the post's and your runs). Every estimate has a low..high range (the cross-validated "
        "error of its situation), the bound (arithmetic, memory or per-step) that decides it and its memory.",
    )
    estimate.add_argument("--gpu", metavar="NAME", help="one GPU (id or name, e.g. rtx-4090 or 'RTX 4090')")
    estimate.add_argument("--precision", choices=words(PrecisionFilter), default=PrecisionFilter.ANY.value)
    estimate.add_argument("--catalog", metavar="FILE", help="the GPU catalog (default: the shipped one)")
    estimate.add_argument(
        "--workload", metavar="NAME", help="a workload of the profiles instead of the LSTM, e.g. 'BERT-large'"
    )
    estimate.add_argument(
        "--devices", type=int, default=1, metavar="N",
        help="also N GPUs in data parallel (the batch per GPU kept), with the scaling fitted on published results",
    )  # fmt: skip
    estimate.add_argument(
        "--machines", type=int, default=1, metavar="M",
        help="also M machines of them, joined by a network of --link-gbps (the network's cost is estimated from "
        "the link's speed: no published multi-machine results check it)",
    )  # fmt: skip
    estimate.add_argument("--link-gbps", type=float, metavar="GBPS", help="the network between the machines, in Gb/s")
    from advisor.llm.options import add_job_arguments  # no framework
    from advisor.workload import add_model_arguments, add_workload_size_arguments  # no TensorFlow

    add_workload_size_arguments(estimate)
    add_model_arguments(estimate)
    add_job_arguments(estimate)

    cross = commands.add_parser(
        "crossval",
        parents=[common],
        help="cross-validate the performance model on the GPU results (how far its estimates are off)",
        description="Hold out GPUs, workloads and single results in turn, predict them from the rest, and report the "
        "median and 90th-percentile errors per experiment, the range width of each situation and the coverage. "
        "--write keeps the widths beside the catalog, where every estimate takes its range from.",
    )
    cross.add_argument("--write", action="store_true", help="write the widths to the catalog folder's crossval.yaml")
    cross.add_argument("--catalog", metavar="FILE", help="the GPU catalog (default: the shipped one)")
    cross.add_argument(
        "--experiments", metavar="NAMES", help="comma-separated subset: " + ", ".join(_experiments())
    )

    fitted = commands.add_parser(
        "calibration",
        parents=[common],
        help="the performance model's fitted terms (what each GPU kind and workload reaches of its specifications)",
    )
    fitted.add_argument("--catalog", metavar="FILE", help="the GPU catalog (default: the shipped one)")

    commands.add_parser(
        "models",
        parents=[common],
        help="the language-model presets of estimate --model-config (each config's numbers and source)",
    )

    examples = commands.add_parser(
        "examples",
        parents=[common],
        help="write the three example Keras models (a small CNN, a GRU text classifier, a Transformer block)",
    )
    examples.add_argument("--out", metavar="DIR", default="examples", help="where to write them (default ./examples)")

    add = commands.add_parser(
        "add",
        parents=[common],
        help="validate profiles from elsewhere and copy the valid ones into the profiles folder",
    )
    add.add_argument("files", nargs="+", metavar="FILE", help="profile files to add")
    add.add_argument("--force", action="store_true", help="replace a profile of the same id")

    commands.add_parser(
        "schema",
        parents=[common],
        help="print the JSON Schema of a profile (for editors)",
        description="Print the JSON Schema (draft 2020-12) of a profile. "
        "--markdown prints the README's field reference instead.",
    ).add_argument("--markdown", action="store_true", help="the field reference as Markdown tables")

    measure = commands.add_parser(
        "measure",
        parents=[common],
        help="time the LSTM training on this device and write a profile",
        description="Time the post's LSTM training on this device (float32 and mixed precision) with a Keras "
        "backend, and write a profile. Progress goes to standard error.",
    )
    from advisor.workload import add_workload_arguments  # no TensorFlow

    add_workload_arguments(measure)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status (0 ok, 1 user error)."""
    try:
        parser = build_parser()
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
        if args.command is None:
            parser.print_help()
            return 0
        return _COMMANDS[args.command](args)
    except AdvisorError as error:
        print(f"advisor: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("advisor: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `advisor catalog | head`: the reader left; say nothing more
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except SystemExit as exit_:  # --help and --version
        return int(exit_.code or 0)


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, allow_nan=False))


def _load(args: argparse.Namespace):
    """Every profile of --profiles (what was wrong with the rest said on stderr)."""
    from advisor.store import load_profiles

    profile_set = load_profiles(args.profiles)
    _say_skipped(args, profile_set.problems, profile_set.warnings, bool(profile_set.profiles))
    return profile_set


def _say_skipped(args: argparse.Namespace, problems: list, warnings: list, found: bool) -> None:
    for problem in problems:
        print(f"advisor: warning: skipped {problem}", file=sys.stderr)
    for warning in warnings:
        print(f"advisor: warning: {warning}", file=sys.stderr)
    if not found:
        raise AdvisorError(f"{args.profiles}: no valid profiles found")


def _frame(args: argparse.Namespace):
    """The results frame of --profiles, through the folder's index (a frame kept there decodes no profile)."""
    from advisor.analysis import load_frame

    loaded = load_frame(args.profiles)
    _say_skipped(args, loaded.problems, loaded.warnings, not loaded.frame.empty)
    return loaded.frame


def cmd_list(args: argparse.Namespace) -> int:
    """List the profiles of --profiles, one line each (a published collection: one line for all of it)."""
    from advisor.analysis import results_frame
    from advisor.report import fmt_seconds_with_source, fmt_usd

    profile_set = _load(args)
    frame = results_frame(profile_set.profiles)
    if args.json:
        _print_json(
            [
                {
                    "id": p.id,
                    "name": p.typed.name,
                    "device": p.typed.device.name,
                    "kind": p.typed.device.kind,
                    "price_usd": p.typed.price.usd,
                    "workload": p.typed.workload.name,
                    "precisions": [r.precision for r in p.typed.results],
                    "source": p.typed.provenance.method,
                    "file": p.origin,
                }
                for p in profile_set.profiles
            ]
        )
        return 0
    by_profile = dict(tuple(frame.groupby("profile", sort=False)))
    collections: dict[str, list] = {}
    for profile in profile_set.profiles:
        if "#" in profile.origin and not args.published:  # a published collection: one line for all of it
            collections.setdefault(profile.origin.split("#")[0], []).append(profile)
            continue
        rows = by_profile[profile.id]
        timings = ", ".join(f"{r['precision']} {fmt_seconds_with_source(r)}" for r in rows.to_dict("records"))
        print(
            f"{profile.id}: {profile.typed.device.name} [{profile.typed.device.kind}], "
            f"{fmt_usd(rows['price_usd'].iloc[0])}, {profile.typed.provenance.method}; {timings}"
        )
    for origin, members in collections.items():
        workloads = len({p.typed.workload.name for p in members})
        print(f"{Path(origin).name}: {len(members):,} published profiles of {workloads} workloads, quoted "
              "(list --published shows them)")  # fmt: skip
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Check profile files (every file read, never the index); exit 1 when one is wrong."""
    from advisor.store import load_profiles, profile_files

    paths = args.paths or [args.profiles]
    files, _ = profile_files(paths)
    profile_set = load_profiles(paths, use_index=False)  # validate reads every file, never the index
    if args.json:
        _print_json(
            {
                "valid": not profile_set.problems,
                "files": len(files),
                "problems": [vars(p) for p in profile_set.problems],
                "warnings": [vars(p) for p in profile_set.warnings],
            }
        )
    else:
        for problem in profile_set.problems:
            print(problem)
        for warning in profile_set.warnings:
            print(f"warning: {warning}")
        bad = len(profile_set.bad_files)
        print(f"{len(files)} file(s) checked: {len(files) - bad} valid, {bad} invalid", file=sys.stderr)
    return 1 if profile_set.problems else 0


def _catalog(args: argparse.Namespace):
    from advisor.catalog import DEFAULT_CATALOG, load_catalog

    return load_catalog(args.catalog or DEFAULT_CATALOG)


def _frame_with_estimates(args: argparse.Namespace, profile_id: str | None, key: tuple | None = None, frame=None):
    """The profiles' results (``frame`` when already loaded), with the catalog's estimates and the user's prices."""
    from advisor.analysis import apply_prices

    frame = _frame(args) if frame is None else frame
    prices = dict(args.price)
    if not args.estimates:
        return apply_prices(frame, prices, _catalog(args) if prices else None)
    from advisor import estimates

    catalog = _catalog(args)
    return apply_prices(estimates.add_to(frame, catalog, profile_id, key), prices, catalog)


def _workload_option(args: argparse.Namespace, frame) -> tuple | None:
    """The workload --workload names (None: the default one)."""
    from advisor.analysis import find_workload

    return find_workload(frame, args.workload) if getattr(args, "workload", None) else None


def cmd_compare(args: argparse.Namespace) -> int:
    """Every result of one workload against a baseline: speedups and dollars per speedup."""
    from advisor.analysis import compare, comparison_records
    from advisor.report import comparison_text

    frame = _frame(args)  # loaded once: the workload option and the comparison read the same results
    key = _workload_option(args, frame)
    frame = _frame_with_estimates(args, args.baseline, key, frame)
    comparison = compare(frame, baseline=args.baseline, precision=args.precision, workload=key)
    if args.json:
        _print_json(comparison_records(comparison))
    else:
        print(comparison_text(comparison))
    return 0


def cmd_recommend(args: argparse.Namespace) -> int:
    """The best option for the goal, renting instead, every option's costs and the upgrade ladder."""
    from advisor.analysis import recommend, recommendation_record
    from advisor.costs import HABIT_OPTIONS, Habits
    from advisor.report import recommendation_text

    if args.model_config:
        return _recommend_job(args)
    if not args.current:
        raise AdvisorError("recommend: --current ID is required (the profile of the hardware you have), or "
                           "--model-config for a language-model job")  # fmt: skip
    habits = Habits(**{name: getattr(args, name) for name in HABIT_OPTIONS})  # every habit option, by its name
    rec = recommend(
        _frame_with_estimates(args, args.current),
        args.current,
        budget=args.budget,
        precision=args.precision,
        current_precision=args.current_precision,
        habits=habits,
        goal=args.goal,
        catalog=_catalog(args),
    )
    if args.json:
        _print_json(recommendation_record(rec))
    else:
        print(recommendation_text(rec))
    return 0


def cmd_catalog(args: argparse.Namespace) -> int:
    """The GPU catalog: specifications, prices and rentals, each with its source."""
    from advisor.catalog import catalog_rows
    from advisor.report import catalog_text

    catalog = _catalog(args)
    if args.json:
        _print_json({"as_of": catalog.as_of, "gpus": catalog_rows(catalog)})
    else:
        print(catalog_text(catalog))
    return 0


def cmd_estimate(args: argparse.Namespace) -> int:
    """Estimates of a workload (the post's LSTM, a model, a language-model job) on the catalog's GPUs."""
    from advisor import estimates
    from advisor.analysis import filter_precision, results_frame
    from advisor.report import estimates_text
    from advisor.schema import workload_key
    from advisor.store import load_profiles
    from advisor.workload import workload_from_args

    catalog = _catalog(args)
    gpu_ids = [catalog.find(args.gpu).id] if args.gpu else None
    loaded = load_profiles(args.profiles)  # no profiles is fine: then the priors alone, said in the basis
    frame = results_frame(loaded.profiles)
    if args.model_config:
        return _estimate_job(args, frame, catalog, gpu_ids)
    sizes = workload_from_args(args)
    if args.workload:  # a workload of the profiles (a published benchmark): its description, at its stated batch
        key = _workload_option(args, frame)
        spec = frame.loc[frame["workload"] == key, "workload_spec"].iloc[0]
    else:
        spec = _model_workload(args.model, args, sizes) if args.model else sizes.as_dict()
        key = workload_key(spec)
    if not 1 <= args.devices <= 1024:
        raise AdvisorError(f"estimate: --devices must be 1 to 1024, got {args.devices}")
    if not 1 <= args.machines <= 1024:
        raise AdvisorError(f"estimate: --machines must be 1 to 1024, got {args.machines}")
    if args.machines > 1 and not (args.link_gbps and args.link_gbps > 0):
        raise AdvisorError("estimate: --machines needs the network's speed, e.g. --link-gbps 25 (no guess is made)")
    found = estimates.estimate_catalog(frame, catalog, key, gpu_ids=gpu_ids, keep_covered=True, spec=spec,
                                       devices=tuple(sorted({1, args.devices})), machines=args.machines,
                                       link_gbps=args.link_gbps)  # fmt: skip
    rows = filter_precision(found.rows, args.precision) if not found.rows.empty else found.rows
    machines = estimates.estimate_machines(frame, key, spec) if args.model and not args.gpu else []
    if args.json:
        _print_json(estimates.estimate_records(rows) + estimates.machine_records(machines))
    else:
        print(estimates_text(rows, found, machines))
    return 0


def _estimate_job(args: argparse.Namespace, frame, catalog, gpu_ids: list[str] | None) -> int:
    """``estimate --model-config``: a language-model training job on every catalog GPU."""
    from advisor.llm.advice import advise, option_record
    from advisor.llm.job import Checkpointing
    from advisor.llm.options import job_from_args
    from advisor.report import job_advice_text

    if not 1 <= args.devices <= 1024:
        raise AdvisorError(f"estimate: --devices must be 1 to 1024, got {args.devices}")
    advice = advise(frame, catalog, job_from_args(args), Checkpointing(args.checkpointing), gpu_ids, args.devices,
                    pure_16bit=args.pure_bf16, sharded=args.fsdp)  # fmt: skip
    if args.json:
        _print_json([option_record(option) for option in advice.options])
    else:
        print(job_advice_text(advice))
    return 0


def _recommend_job(args: argparse.Namespace) -> int:
    """``recommend --model-config``: the option for the goal among the GPUs the job fits, and renting instead."""
    from advisor.analysis import results_frame
    from advisor.llm.advice import advise, choice_lines, choice_record, choose, summary_lines
    from advisor.llm.job import Checkpointing
    from advisor.llm.options import job_from_args
    from advisor.store import load_profiles

    catalog = _catalog(args)
    frame = results_frame(load_profiles(args.profiles).profiles)
    gpu_ids = [catalog.find(args.gpu).id] if args.gpu else None
    advice = advise(frame, catalog, job_from_args(args), Checkpointing(args.checkpointing), gpu_ids,
                    max(1, args.devices), pure_16bit=args.pure_bf16, sharded=args.fsdp)  # fmt: skip
    choice = choose(advice, args.goal, args.budget)
    if args.json:
        _print_json(choice_record(choice))
    else:
        print(f"Training job: {advice.job.describe()}; {advice.job.run_tokens:,.0f} tokens (estimated, not measured)")
        print("\n".join([*choice_lines(choice), *summary_lines(advice)]))
    return 0


def _model_workload(path: str, args: argparse.Namespace, sizes) -> dict:
    """The workload of a model file (Keras starts here, quietly, on the CPU)."""
    from advisor.measure import backends, model_file

    backends.load("tensorflow").start(DeviceKind.CPU, 1)
    model = model_file.load(path, args.loss, args.optimizer)
    return model_file.workload(model, sizes.train_samples, sizes.batch_size, sizes.epochs)


def _experiments() -> tuple[str, ...]:
    from advisor.crossval import EXPERIMENTS

    return EXPERIMENTS


def cmd_crossval(args: argparse.Namespace) -> int:
    """Cross-validate the performance model on the published results (--write: keep the ranges)."""
    from advisor import crossval, estimates, scaling, widths
    from advisor.report import crossval_text

    chosen = tuple(n.strip() for n in args.experiments.split(",")) if args.experiments else _experiments()
    unknown = [n for n in chosen if n not in _experiments()]
    if unknown:
        raise AdvisorError(f"crossval: unknown experiment {unknown[0]!r} (use {', '.join(_experiments())})")
    catalog = _catalog(args)
    frame = _frame(args)
    samples = estimates.calibration_samples(frame, catalog)
    found = crossval.report(samples, chosen, scaling.observations(frame, catalog))
    unmatched = estimates.unmatched_gpus(frame, catalog)
    if args.write:
        written = widths.write(widths.from_report(found), Path(catalog.origin).parent / widths.FILE_NAME)
        print(f"wrote {written}", file=sys.stderr)
    if args.json:
        _print_json({"summary": found.summary, "checks": found.checks(), "coverage": found.coverage,
                     "half_widths": {k: math.exp(v) for k, v in found.half_widths.items()}, "samples": found.samples,
                     "not_in_catalog": unmatched, "data_parallel": found.scaling,
                     "tracked": crossval.tracked_errors(found.summary)})  # fmt: skip
    else:
        print(crossval_text(found))
        if unmatched:
            print(f"Not in the catalog (compared, not calibrated on): {', '.join(unmatched)}")
    return 0


def cmd_calibration(args: argparse.Namespace) -> int:
    """The performance model calibrated on --profiles: its fitted constants and per-GPU, per-workload terms."""
    from advisor import calibration, estimates
    from advisor.report import calibration_text

    frame = _frame(args)
    fit = calibration.fit(estimates.calibration_samples(frame, _catalog(args)))
    if args.json:
        _print_json({"constants": fit.constants(), "terms": {kind: {"/".join(map(str, k)): v for k, v in
                     fit.terms(kind).items()} for kind in ("eta_peak", "eta_segment", "eta_arch", "eta_gpu", "mu_arch",
                                                           "mu_gpu", "c", "m", "tau_w")}})  # fmt: skip
    else:
        print(f"Calibrated on {len(fit.samples):,} single-GPU results (time factors: below 1 is faster than the "
              "specifications alone say).")  # fmt: skip
        names = {estimates.workload_id(k): n for k, n in frame.groupby("workload")["workload_name"].first().items()}
        print(calibration_text(fit, names))
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    """The language-model presets --model-config knows."""
    from advisor.llm.config import load_presets, model_rows
    from advisor.report import models_text

    rows = model_rows(load_presets())
    if args.json:
        _print_json(rows)
    else:
        print(models_text(rows))
    return 0


def cmd_examples(args: argparse.Namespace) -> int:
    """Write the example Keras models that measure --model can time."""
    from advisor.measure import backends
    from advisor.measure.examples import write_examples

    backends.load("tensorflow").start(DeviceKind.CPU, 1)
    for path in write_examples(args.out):
        print(f"wrote {path}")
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    """Copy profile files into the profiles folder, checked, never overwriting without --overwrite."""
    from advisor.store import add_profiles

    report = add_profiles(args.files, args.profiles, overwrite=args.force)
    for problem in report.problems:
        print(problem, file=sys.stderr)
    if args.json:
        _print_json({"added": [str(p) for p in report.added], "problems": [vars(p) for p in report.problems]})
    else:
        for path in report.added:
            print(f"added {path}")
        print(f"{len(report.added)} added, {len(report.refused)} refused", file=sys.stderr)
    return 1 if report.problems else 0


def cmd_schema(args: argparse.Namespace) -> int:
    """The profile format as JSON Schema (--markdown: the field reference the README carries)."""
    from advisor import schema

    if args.markdown:
        print(schema.markdown_reference(), end="")
    else:
        _print_json(schema.json_schema())
    return 0


def cmd_measure(args: argparse.Namespace) -> int:
    """Plan, check the output folder, measure, validate, write, report."""
    from advisor.measure import plan_from_args

    plan = plan_from_args(args)
    if plan.cluster is None:
        return _measure(args, plan)
    # A worker of a cluster ends here, whatever happened: TensorFlow's teardown of the cluster would log C++ errors
    # after our last line (and may wait on a shutdown barrier for workers that are gone).
    try:
        status = _measure(args, plan)
    except AdvisorError as error:
        print(f"advisor: error: {error}", file=sys.stderr)
        status = 1
    except KeyboardInterrupt:
        print("advisor: interrupted; no profile written", file=sys.stderr)
        status = 130
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _measure(args: argparse.Namespace, plan) -> int:
    from advisor import schema, store, typed
    from advisor.measure import InterruptGuard, measure  # the framework starts inside measure()
    from advisor.report import measure_table

    writes = plan.out is not None and (plan.cluster is None or plan.cluster.is_chief)
    if writes:
        store.check_writable_folder(plan.out)  # before minutes of training, not after
    with InterruptGuard().installed() as guard:
        profile = measure(plan, _progress, guard)
        if profile is None:  # a worker other than the chief: the chief writes the profile
            if args.json:
                _print_json({"path": None, "profile": None, "worker": plan.cluster.index})
            else:
                print(f"{plan.cluster.name(plan.cluster.index)}: done; the chief writes the profile")
            return 0
        problems, _ = schema.validate(profile, "(measured profile)")
        if problems:
            raise AdvisorError("the measured profile is invalid (a bug): " + "; ".join(map(str, problems)))
        guard.check()  # a stop asked for during the run: write nothing
        path = store.write_profile(profile, plan.out, overwrite=plan.force) if plan.out is not None else None
    if args.json:
        _print_json({"path": str(path) if path else None, "profile": profile})
    else:
        print(measure_table(profile))
        print(f"\nprofile written to {path}" if path else "\n--dry-run: no profile written")
        if typed.build(profile).price.usd is None:
            print("The price is unknown: add --price-usd (or edit price.usd) so the advisor can recommend it.")
    return 0


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


_COMMANDS = {
    "list": cmd_list,
    "validate": cmd_validate,
    "compare": cmd_compare,
    "recommend": cmd_recommend,
    "measure": cmd_measure,
    "add": cmd_add,
    "catalog": cmd_catalog,
    "estimate": cmd_estimate,
    "examples": cmd_examples,
    "models": cmd_models,
    "crossval": cmd_crossval,
    "calibration": cmd_calibration,
    "schema": cmd_schema,
}


def main_entry() -> None:
    """The ``advisor`` console script."""
    raise SystemExit(main())
