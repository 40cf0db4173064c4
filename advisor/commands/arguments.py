"""The command line's words for the training job and the run: the sized LSTM (``--units`` ...), a Keras model file
(``--model``), ``advisor measure``'s options, and the parsers of whole numbers, dollars, token counts and precisions
the options take. Parsing lives here, in ``commands/``; what it builds (``Workload``) lives below."""

from __future__ import annotations

import argparse
import math

from advisor.errors import AdvisorError
from advisor.format.formatting import read_number
from advisor.format.vocabulary import MIXED_WORD, DeviceKind, Precision, words
from advisor.measure.plan import MIXED_POLICIES
from advisor.perf.workload import Workload


def positive_int(text: str) -> int:
    """An option's whole number, 1 or more: one line of error otherwise."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def nonnegative_number(text: str, what: str = "a number") -> float:
    """An option's number, 0 or more ('$1,599' is 1599): one line of error otherwise (format.formatting.read_number
    reads it, for the app's typed prices too)."""
    value = read_number(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"must be {what}, 0 or more; got {text!r}")
    return value


def parse_tokens(text: str) -> float:
    """'10000x2048', '20M', '1.5e9' or '3,000,000' tokens."""
    cleaned = text.replace(",", "").replace("_", "").strip().lower()
    try:
        if "x" in cleaned:
            return float(math.prod(float(part) for part in cleaned.split("x")))
        scale = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}.get(cleaned[-1:], 1.0)
        return float(cleaned[:-1] if scale != 1.0 else cleaned) * scale
    except ValueError:
        raise AdvisorError(
            f"--tokens: {text!r} is not a number of tokens (e.g. 20M, 1.5e9, or 10000x2048x3 for "
            "examples x length x epochs)"
        ) from None


def parse_precisions(text: str) -> list[str]:
    """``measure --precision``: comma-separated float32, mixed, mixed_float16, mixed_bfloat16, each once."""
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


def dollars(text: str) -> float:
    """A sum of dollars ('$2,500'), 0 or more."""
    return nonnegative_number(text, "a number of dollars")


def add_workload_size_arguments(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """--units, --timesteps, --features, --samples, --batch-size, --epochs (default: the post's job)."""
    default = Workload()
    job = parser.add_argument_group("the training job (default: the post's)")
    job.add_argument("--units", type=positive_int, default=default.units, help="LSTM units (1000)")
    job.add_argument("--timesteps", type=positive_int, default=default.timesteps, help="steps per series (100)")
    job.add_argument("--features", type=positive_int, default=default.features, help="features per step (1)")
    job.add_argument("--samples", type=positive_int, default=default.train_samples, help="training samples (937)")
    job.add_argument("--batch-size", type=positive_int, default=default.batch_size, help="batch size (100)")
    job.add_argument("--epochs", type=positive_int, default=default.epochs, help="epochs (100)")
    return job


def workload_from_args(args: argparse.Namespace) -> Workload:
    """The workload the size options describe; a size other than the post's gets a name that says it."""
    workload = Workload(
        units=args.units,
        timesteps=args.timesteps,
        features=args.features,
        train_samples=args.samples,
        batch_size=args.batch_size,
        epochs=args.epochs,
    )
    if workload.is_default():
        return workload
    w = workload
    name = f"lstm{w.units}-t{w.timesteps}-f{w.features}-n{w.train_samples}-b{w.batch_size}-e{w.epochs}"
    return Workload(**{**workload.as_dict(), "name": name})


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """--model FILE.keras (with --loss and --optimizer for a model saved without a compile configuration)."""
    own = parser.add_argument_group("your own model instead of the LSTM")
    own.add_argument("--model", metavar="FILE.keras", help="a Keras 3 model file (loaded with safe_mode on)")
    own.add_argument(
        "--loss",
        metavar="NAME",
        help="its loss, when the file has no compile configuration (with "
        "--model-config: how the loss holds the logits, fp32-logits, 16bit-logits, chunked or fused; "
        "the stack's)",
    )
    own.add_argument("--optimizer", metavar="NAME", help="its optimizer, when the file has no compile configuration")


def add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``advisor measure``."""
    job = add_workload_size_arguments(parser)
    job.add_argument("--seed", type=int, default=0, help="seed of the generated data and weights (0)")
    add_model_arguments(parser)
    run = _add_run_arguments(parser)
    _add_cluster_arguments(parser)
    run.add_argument(
        "--quick",
        action="store_true",
        help="stop once the steady epoch median is known within 2%% (95%% confidence) and estimate the total",
    )
    run.add_argument(
        "--matmul-size", type=positive_int, default=2048, help="matrix size of the matmul peak test (2048)"
    )
    _add_price_arguments(parser)
    out = parser.add_argument_group("the profile")
    out.add_argument("--name", help="profile name (default: the device's name); the file slug comes from it")
    out.add_argument("--out", metavar="DIR", help="output folder (default: the --profiles folder)")
    out.add_argument("--force", action="store_true", help="overwrite an existing profile of the same slug")
    out.add_argument("--dry-run", action="store_true", help="measure and print, but write no file")


def _add_run_arguments(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """How ``measure`` runs: precisions, device, backend, data parallel (the group, for the options after it)."""
    run = parser.add_argument_group("the run")
    run.add_argument(
        "--precision",
        default="float32,mixed",
        help="comma-separated: float32, mixed, mixed_float16, mixed_bfloat16 (default: float32,mixed)",
    )
    run.add_argument(
        "--mixed-policy",
        choices=(Precision.MIXED_FLOAT16.value, Precision.MIXED_BFLOAT16.value),
        help="the policy 'mixed' means (default: mixed_float16 on a GPU, mixed_bfloat16 on a CPU)",
    )
    run.add_argument("--device", choices=("auto", *words(DeviceKind)), default="auto", help="cpu hides the GPUs")
    run.add_argument(
        "--backend",
        default="tensorflow",
        metavar="NAME",
        help="the Keras backend: tensorflow (default), jax or torch (extras advisor[jax], advisor[torch])",
    )
    run.add_argument(
        "--devices",
        type=positive_int,
        default=1,
        metavar="N",
        help="train on N devices with tf.distribute.MirroredStrategy (GPUs, or the CPU split in N); "
        "one device is measured in the same run for the scaling efficiency (with --workers: the GPUs of each worker)",
    )
    run.add_argument(
        "--scale-batch",
        action="store_true",
        help="with --devices or --workers: keep the batch per device (global batch x the devices in all)",
    )
    return run


def _add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """``measure`` on several machines."""
    cluster = parser.add_argument_group(
        "several machines (tf.distribute.MultiWorkerMirroredStrategy; every worker runs the same command)"
    )
    cluster.add_argument(
        "--workers",
        metavar="HOST:PORT,...",
        help="every worker's address, the chief (worker 0) first; or set TF_CONFIG instead. The chief times one "
        "device, then all train together; the chief writes the profile",
    )
    cluster.add_argument("--worker-index", type=int, metavar="I", help="which of --workers this machine is (0: chief)")
    cluster.add_argument(
        "--join-timeout",
        type=float,
        metavar="SECONDS",
        help="how long a worker waits for the others to start (120); then it says who is missing and stops",
    )


def _add_price_arguments(parser: argparse.ArgumentParser) -> None:
    """What the hardware cost, for ``measure``."""
    price = parser.add_argument_group("the price (what the hardware cost)")
    price.add_argument("--price-usd", type=nonnegative_number, metavar="USD", help="price in US dollars")
    price.add_argument(
        "--price-usd-per-hour", type=nonnegative_number, metavar="USD", help="a rented machine's price per hour"
    )
    price.add_argument("--price-note", metavar="TEXT", help='what the price includes, e.g. "GPU plus a 650 W PSU"')
    price.add_argument("--price-date", metavar="YYYY-MM-DD", help="when the price was true (default: today)")
    price.add_argument("--price-source", metavar="TEXT", help="where the price comes from (a shop, a receipt)")
    price.add_argument("--power-watts", type=nonnegative_number, metavar="W", help="power draw under load")
