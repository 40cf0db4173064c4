"""``advisor measure``'s options as a checked plan of the run (:class:`advisor.measure.plan.MeasurePlan`): every
value checked before any framework starts."""

from __future__ import annotations

import argparse
import datetime as _dt
from pathlib import Path

from advisor.commands.arguments import parse_precisions, workload_from_args
from advisor.errors import AdvisorError
from advisor.format import schema
from advisor.measure.cluster import DEFAULT_JOIN_TIMEOUT, Cluster, checked_cluster, environment_cluster
from advisor.measure.plan import MeasurePlan, check_backend
from advisor.perf.workload import Workload


def cluster_from_args(args: argparse.Namespace) -> Cluster | None:
    """--workers and --worker-index, else a TF_CONFIG already set, else None (one machine)."""
    timeout = getattr(args, "join_timeout", None)
    timeout = DEFAULT_JOIN_TIMEOUT if timeout is None else timeout
    workers = getattr(args, "workers", None)
    if workers is not None:
        return parse_workers(workers, getattr(args, "worker_index", None), timeout)
    if getattr(args, "worker_index", None) is not None:
        raise AdvisorError("--worker-index goes with --workers HOST:PORT,HOST:PORT,...")
    return environment_cluster(timeout)


def parse_workers(text: str, index: int | None, join_timeout: float = DEFAULT_JOIN_TIMEOUT) -> Cluster:
    """``--workers`` (comma-separated HOST:PORT) and ``--worker-index`` as a checked cluster."""
    listed = tuple(item.strip() for item in text.split(",") if item.strip())
    return checked_cluster(listed, index, join_timeout, "--workers")


def price_date_from_args(args: argparse.Namespace) -> str | None:
    """--price-date checked (today where a price is given without one): the date the profile's price was true."""
    price_date = args.price_date
    if price_date is not None and not schema.is_iso_date(price_date):
        raise AdvisorError(f"--price-date must be a date like 2026-11-30, got {price_date!r}")
    if (args.price_usd is not None or args.price_usd_per_hour is not None) and price_date is None:
        price_date = _dt.date.today().isoformat()
    return price_date


def plan_from_args(args: argparse.Namespace) -> MeasurePlan:
    workload = workload_from_args(args)
    devices = getattr(args, "devices", 1) or 1
    cluster = cluster_from_args(args)
    replicas = devices * (len(cluster.workers) if cluster else 1)
    if replicas > 1 and args.scale_batch:
        workload = Workload(**{**workload.as_dict(), "batch_size": workload.batch_size * replicas})
        workload = Workload(**{**workload.as_dict(), "name": workload.name + f"-x{replicas}batch"})
    price_date = price_date_from_args(args)
    if args.name is not None and not args.name.strip():
        raise AdvisorError("--name must not be empty")
    _check_replicas(args, devices, replicas, cluster)
    check_backend(args.backend)
    model = getattr(args, "model", None)
    if model is not None and not Path(model).is_file():
        raise AdvisorError(f"{model}: no such model file")
    if bool(getattr(args, "loss", None)) != bool(getattr(args, "optimizer", None)):
        raise AdvisorError("--loss and --optimizer go together (for a model saved without a compile configuration)")
    return MeasurePlan(
        workload=workload,
        precisions=parse_precisions(args.precision),
        mixed_policy=args.mixed_policy,
        device=args.device,
        backend=args.backend,
        model=Path(model) if model else None,
        loss=getattr(args, "loss", None),
        optimizer=getattr(args, "optimizer", None),
        devices=devices,
        cluster=cluster,
        scale_batch=args.scale_batch,
        quick=args.quick,
        seed=args.seed,
        matmul_size=args.matmul_size,
        price_usd=args.price_usd,
        price_usd_per_hour=args.price_usd_per_hour,
        price_note=args.price_note,
        price_date=price_date,
        price_source=args.price_source,
        power_watts=args.power_watts,
        name=args.name,
        out=None if args.dry_run else Path(args.out or args.profiles),
        force=args.force,
        command=" ".join(["advisor", "measure", *_command_words(args)]),
    )


def _check_replicas(args: argparse.Namespace, devices: int, replicas: int, cluster: object | None) -> None:
    """Several devices or machines: what TensorFlow's strategies need of the other options."""
    if devices > 1 and args.backend != "tensorflow":
        raise AdvisorError(
            "--devices: several devices are measured with TensorFlow's MirroredStrategy; use --backend tensorflow"
        )
    if args.scale_batch and replicas == 1:
        raise AdvisorError("--scale-batch needs --devices 2 or more (or --workers)")
    if cluster is not None:
        if args.backend != "tensorflow":
            raise AdvisorError(
                "--workers: several machines are measured with TensorFlow's "
                "MultiWorkerMirroredStrategy; use --backend tensorflow"
            )
        if args.quick:
            raise AdvisorError(
                "--workers: --quick stops when one machine's epochs settle, which the workers cannot "
                "agree on; give fewer --epochs instead"
            )


COMMAND_OPTIONS = (  # the options a profile's command line repeats, in this order
    "model",  # the option --model
    "units",
    "timesteps",
    "features",
    "samples",
    "batch_size",
    "epochs",
    "precision",
    "mixed_policy",
    "device",
    "backend",
    "devices",
    "workers",
    "seed",
)


def _command_words(args: argparse.Namespace) -> list[str]:
    words = []
    for key in COMMAND_OPTIONS:
        value = getattr(args, key, None)
        if value is not None:
            words.append(f"--{key.replace('_', '-')} {value}")
    for flag in ("quick", "scale_batch"):
        if getattr(args, flag, False):
            words.append(f"--{flag.replace('_', '-')}")
    return words
