"""From command-line arguments to a checked plan of the run (no framework is imported here)."""

from __future__ import annotations

import argparse
import datetime as _dt
from dataclasses import dataclass
from pathlib import Path

from advisor.errors import AdvisorError
from advisor.format import schema
from advisor.format.vocabulary import MIXED_WORD, Precision
from advisor.measure.cluster import DEFAULT_JOIN_TIMEOUT, Cluster, environment_cluster, parse_workers
from advisor.perf.workload import Workload, workload_from_args

MIXED_POLICIES = (Precision.MIXED_FLOAT16.value, Precision.MIXED_BFLOAT16.value)
BACKENDS = ("tensorflow", "jax", "torch")
# The extra that installs each backend (pip install 'advisor[EXTRA]').
BACKEND_EXTRAS = {"tensorflow": "measure", "jax": "jax", "torch": "torch"}


@dataclass
class MeasurePlan:
    """Everything a run needs, checked before any framework starts."""

    workload: Workload
    precisions: list[str]  # "float32", "mixed" or an explicit mixed policy
    mixed_policy: str | None
    device: str  # auto | cpu | gpu
    backend: str = "tensorflow"
    devices: int = 1  # > 1: tf.distribute.MirroredStrategy over this many devices (with a cluster: per worker)
    cluster: Cluster | None = None  # several machines: tf.distribute.MultiWorkerMirroredStrategy
    scale_batch: bool = False  # with devices > 1: keep the batch per device (global batch = batch x devices)
    quick: bool = False
    seed: int = 0
    matmul_size: int = 2048
    model: Path | None = None  # a Keras model file to time instead of the LSTM
    loss: str | None = None  # for a model saved without a compile configuration
    optimizer: str | None = None
    price_usd: float | None = None
    price_usd_per_hour: float | None = None
    price_note: str | None = None
    price_date: str | None = None
    price_source: str | None = None
    power_watts: float | None = None
    name: str | None = None
    out: Path | None = None
    force: bool = False
    command: str = "advisor measure"


def parse_precisions(text: str) -> list[str]:
    allowed = (Precision.FLOAT32.value, MIXED_WORD, *MIXED_POLICIES)
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise AdvisorError("--precision: give at least one of float32, mixed, mixed_float16, mixed_bfloat16")
    for item in items:
        if item not in allowed:
            raise AdvisorError(
                f"--precision: unsupported precision {item!r} (use float32, mixed, mixed_float16 or mixed_bfloat16)"
            )
    if len(set(items)) != len(items):
        raise AdvisorError("--precision: a precision is listed twice")
    return items


def check_backend(backend: str) -> None:
    """One line naming the extra to install when the backend is unknown or missing (before anything runs)."""
    if backend not in BACKENDS:
        raise AdvisorError(f"--backend: unknown backend {backend!r} (use {', '.join(BACKENDS)})")
    import importlib.util

    if importlib.util.find_spec(backend) is None or importlib.util.find_spec("keras") is None:
        extra = BACKEND_EXTRAS[backend]
        raise AdvisorError(
            f"--backend {backend}: the {backend} package is not installed: pip install 'advisor[{extra}]'"
        )


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


def plan_from_args(args: argparse.Namespace) -> MeasurePlan:
    workload = workload_from_args(args)
    devices = getattr(args, "devices", 1) or 1
    cluster = cluster_from_args(args)
    replicas = devices * (len(cluster.workers) if cluster else 1)
    if replicas > 1 and args.scale_batch:
        workload = Workload(**{**workload.as_dict(), "batch_size": workload.batch_size * replicas})
        workload = Workload(**{**workload.as_dict(), "name": workload.name + f"-x{replicas}batch"})
    price_date = args.price_date
    if price_date is not None and not schema.is_iso_date(price_date):
        raise AdvisorError(f"--price-date must be a date like 2026-11-30, got {price_date!r}")
    if (args.price_usd is not None or args.price_usd_per_hour is not None) and price_date is None:
        price_date = _dt.date.today().isoformat()
    if args.name is not None and not args.name.strip():
        raise AdvisorError("--name must not be empty")
    if devices > 1 and args.backend != "tensorflow":
        raise AdvisorError("--devices: several devices are measured with TensorFlow's MirroredStrategy; "
                           "use --backend tensorflow")  # fmt: skip
    if args.scale_batch and replicas == 1:
        raise AdvisorError("--scale-batch needs --devices 2 or more (or --workers)")
    if cluster is not None:
        if args.backend != "tensorflow":
            raise AdvisorError("--workers: several machines are measured with TensorFlow's "
                               "MultiWorkerMirroredStrategy; use --backend tensorflow")  # fmt: skip
        if args.quick:
            raise AdvisorError("--workers: --quick stops when one machine's epochs settle, which the workers cannot "
                               "agree on; give fewer --epochs instead")  # fmt: skip
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


def _command_words(args: argparse.Namespace) -> list[str]:
    words = []
    for key in ("model", "units", "timesteps", "features", "samples", "batch_size", "epochs", "precision",
                "mixed_policy", "device", "backend", "devices", "workers", "seed"):  # fmt: skip
        value = getattr(args, key, None)
        if value is not None:
            words.append(f"--{key.replace('_', '-')} {value}")
    for flag in ("quick", "scale_batch"):
        if getattr(args, flag, False):
            words.append(f"--{flag.replace('_', '-')}")
    return words
