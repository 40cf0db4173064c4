"""``advisor estimate``: a workload (the post's LSTM sized by the options, a Keras file, a workload of the profiles,
a language-model job) estimated on every catalog GPU, with its range, its bound and its memory."""

from __future__ import annotations

import argparse
import dataclasses
import math

from advisor.commands import common
from advisor.commands.common import Parents
from advisor.errors import AdvisorError
from advisor.format.units import MOST_DEVICES
from advisor.format.vocabulary import DeviceKind

NAME = "estimate"
SUMMARY_JOB = (  # the README's command table (advisor.commands.reference)
    "a language-model training job on every catalog GPU: fits / tight / does not fit (memory and its range),"
    ' tokens/s, the run\'s time and its cost owned and rented, the cheapest way that fits (see "Language models")'
)
SUMMARY = (  # the README's command table (advisor.commands.reference)
    "the performance model's estimate of the workload (the post's, sized by the options, your model, or a workload of"
    " the profiles by name) on every catalog GPU (or one), with its likely range, its bound and why the range is that"
    " wide."
)
SUMMARY_INFERENCE = (
    "running or serving the model on every catalog GPU (`--devices N`: tensor parallel, or whole layers on each GPU"
    " where the engine splits layers; `--users N` at once or"
    " `--requests-per-second R`): fits / tight / does not fit"
    " with the longest context and the most sequences, time to first token, time per output token, tokens/s (a"
    " fitted engine's with its cross-validated range, else the hardware's bound), the cost of a million output"
    " tokens owned and rented (a floor, `>=`, where only one user's decode is estimated), after how many hours owning"
    " the cheapest owned GPU costs less than renting it, and where it does not fit, the ways that do (smaller"
    " formats, more GPUs). `--json`:"
    " rows of `gpu, catalog_id, devices, fits, memory_needed_gb, longest_context,"
    " most_sequences, single_stream_tokens_per_s, output_tokens_per_s, usd_per_million_owned, ...`"
)


def add_parser(commands, parents: Parents) -> None:
    from advisor.commands.arguments import add_model_arguments, add_workload_size_arguments  # no TensorFlow
    from advisor.commands.job_options import add_job_arguments  # no framework

    parser = commands.add_parser(
        NAME,
        parents=[parents.common],
        help="estimate the workload's training time, or a model's inference (--inference), on the catalog's GPUs",
        description="Estimate the workload's total training time on every catalog GPU (or --gpu), for float32 and "
        "mixed_float16, from the GPUs' specifications, calibrated on every GPU result the model can describe (the "
        "published benchmarks, the post's and your runs). Every estimate has a low..high range (the cross-validated "
        "error of its situation), the bound (arithmetic, memory or per-step) that decides it and its memory.",
    )
    common.add_gpu_option(parser, "only these GPUs", several=True)
    common.add_precision_filter(parser)
    common.add_catalog_option(parser)
    common.add_workload_option(parser, "a workload of the profiles instead of the LSTM, e.g. 'BERT-large'")
    common.add_devices_option(
        parser,
        "also N GPUs in data parallel (the batch per GPU kept), with the scaling fitted on published results; with "
        "--inference, the GPUs one copy of the model is split over (tensor parallel, or whole layers on each where the "
        "engine splits layers: llama.cpp, transformers)",
    )
    parser.add_argument(
        "--machines",
        type=int,
        default=1,
        metavar="M",
        help="also M machines of them, joined by a network of --link-gbps (the network's cost is estimated from "
        "the link's speed: no published multi-machine results check it)",
    )
    parser.add_argument("--link-gbps", type=float, metavar="GBPS", help="the network between the machines, in Gb/s")
    add_workload_size_arguments(parser)
    add_model_arguments(parser)
    add_job_arguments(parser, shared=frozenset({"--optimizer", "--loss"}))  # --model's too: read by the mode
    from advisor.commands.inference_options import add_inference_arguments

    add_inference_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Estimates of a workload (the post's LSTM, a model, a language-model job) on the catalog's GPUs."""
    from advisor.commands.arguments import workload_from_args
    from advisor.decision.analysis import filter_precision, precision_kept
    from advisor.format.schema import workload_key
    from advisor.render.estimate import estimate_records, estimates_text, machine_records

    catalog = common.catalog(args)
    gpu_ids = common.gpu_ids(args.gpu, catalog)
    frame = common.frame(args, empty_ok=True)  # no profiles is fine: the priors alone
    _check_counts(args)
    advisor = common.advisor(args, frame, catalog)
    if args.inference:
        return _inference(args, catalog, gpu_ids)
    if args.model_config:
        return _job(args, advisor, gpu_ids)
    sizes = workload_from_args(args)
    if args.workload:  # a workload of the profiles (a published benchmark): its description, at its stated batch
        key = advisor.workload(name=args.workload)
        spec = frame.loc[frame["workload"] == key, "workload_spec"].iloc[0]
    else:
        spec = _model_workload(args.model, args, sizes) if args.model else sizes.as_dict()
        key = workload_key(spec)
    if args.machines > 1 and not (args.link_gbps and args.link_gbps > 0):
        raise AdvisorError("estimate: --machines needs the network's speed, e.g. --link-gbps 25 (no guess is made)")
    found = advisor.estimate(key, spec, gpu_ids, args.devices, args.machines, args.link_gbps)
    rows = filter_precision(found.rows, args.precision) if not found.rows.empty else found.rows
    missing = [e for e in found.not_estimated if precision_kept(e.precision, args.precision)]
    found = dataclasses.replace(found, not_estimated=missing)  # the GPUs not estimated in the precisions asked
    machines = advisor.machine_estimates(key, spec) if args.model and not args.gpu else []
    if args.json:
        common.print_json(estimate_records(rows) + machine_records(machines))
    else:
        print(estimates_text(rows, found, machines))
    return 0


def _check_counts(args: argparse.Namespace) -> None:
    for option, value in (("--devices", args.devices), ("--machines", args.machines)):
        if not 1 <= value <= MOST_DEVICES:
            raise AdvisorError(f"estimate: {option} must be 1 to {MOST_DEVICES}, got {value}")


def _job(args: argparse.Namespace, advisor, gpu_ids: list[str] | None) -> int:
    """``estimate --model-config``: a language-model training job on every catalog GPU."""
    from advisor.commands.job_options import request_from_args
    from advisor.render.jobs import job_advice_text, memory_only_record, option_record

    advice = advisor.job_advice(request_from_args(args, tuple(gpu_ids) if gpu_ids is not None else None))
    if args.json:  # the estimated GPUs, then those answered for memory only (no time: seconds_estimate null)
        records = [option_record(option) for option in advice.options]
        common.print_json(records + [memory_only_record(answer) for answer in advice.memory_only])
    else:
        print(job_advice_text(advice))
    return 0


def _mixed(args: argparse.Namespace, job, catalog) -> int:
    """``estimate --inference --mixed A,B``: the model split over different GPUs as llama.cpp splits it."""
    from advisor.infer.mixed import mixed_cards
    from advisor.render.inference import mixed_record, mixed_text

    gpus = [catalog.find(name.strip()) for name in args.mixed.split(",") if name.strip()]
    found = mixed_cards(job, gpus, catalog)
    if args.json:
        common.print_json(mixed_record(found))
    else:
        print(mixed_text(job, found))
    return 0


def _model_workload(path: str, args: argparse.Namespace, sizes) -> dict:
    """The workload of a model file (Keras starts here, quietly, on the CPU)."""
    from advisor.measure import backends, model_file

    backends.load("tensorflow").start(DeviceKind.CPU, 1)
    model = model_file.load(path, args.loss, args.optimizer)
    return model_file.workload(model, sizes.train_samples, sizes.batch_size, sizes.epochs)


def _inference(args: argparse.Namespace, catalog, gpu_ids: list[str] | None) -> int:
    """``estimate --model-config NAME --inference``: running the model on every catalog GPU."""
    from advisor.commands.inference_options import DEFAULT_ENGINE
    from advisor.infer.architecture import resolve_inference_model
    from advisor.infer.estimate import CostInputs, break_even_users, buying_pick, inference_rows, picks
    from advisor.infer.job import make_job
    from advisor.render.inference import inference_records, inference_text

    if not args.model_config:
        raise AdvisorError("estimate: --inference needs the model: --model-config NAME|config.json")
    weights, engine = args.weights, args.engine
    if args.model_config.lower().endswith(".gguf"):  # the file's own weights, on the engine that runs GGUF
        from advisor.infer.gguf_file import read_gguf

        model, file_format = read_gguf(args.model_config)
        weights, engine = weights or file_format, engine or "llama.cpp"
    else:
        model = resolve_inference_model(args.model_config)
    job = make_job(
        model,
        engine or DEFAULT_ENGINE,
        weights,
        args.kv_cache,
        prompt=args.prompt,
        output=args.output,
        users=args.users,
        devices=args.devices,
        context=args.context,
        replicas=args.replicas,
        rate=args.requests_per_second,
        attention_data_parallel=args.attention_data_parallel,
    )
    if args.mixed:
        return _mixed(args, job, catalog)
    inputs = CostInputs(args.lifetime_years, args.hours_per_week, args.kwh_price)  # each refused by its flag
    api = args.api_usd_per_million
    if api is not None and not (api > 0 and math.isfinite(api)):
        raise AdvisorError(f"estimate: --api-usd-per-million must be a number more than 0, got {api:g}")
    rows = inference_rows(job, catalog, gpu_ids, inputs)
    versus_api = {r.catalog_id: break_even_users(job, r, catalog, api) for r in rows} if api else {}
    if args.json:
        common.print_json(inference_records(rows, versus_api))
    else:
        found = picks(rows)
        buying = buying_pick(job, found, catalog, inputs)
        print(inference_text(job, rows, inputs, found, api, versus_api, buying))
    return 0
