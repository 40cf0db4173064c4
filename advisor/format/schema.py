"""The profile format (schema version 2): its fields as a table, validation, migration, key order.

The fields are described once, below, as tables of :class:`advisor.format.fields.Field`; the validation,
the canonical key order, the field reference of docs/reference.md and the JSON Schema
(``python -m advisor schema``) are all derived from them. Pure functions over plain dicts (as
parsed from YAML); no I/O here.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable
from typing import Any

from advisor.errors import Problem
from advisor.format import fields as F
from advisor.format import generation as G
from advisor.format.fields import Field, describe, is_iso_date
from advisor.format.vocabulary import DeviceKind, Job, ModelFamily, Platform, Precision, Source, WorkloadKind, words

__all__ = ["is_iso_date"]

SCHEMA_VERSION = 4
WORKLOAD_KINDS = words(WorkloadKind)
PHASE_KINDS = ("matmul", "attention", "recurrent", "elementwise")
PRECISIONS = words(Precision)
DEVICE_KINDS = words(DeviceKind)
JOBS = words(Job)
INFERENCE = Job.INFERENCE.value
PROVENANCE_METHODS = (Source.MEASURED.value, Source.QUOTED.value)
MAX_EPOCHS = 100_000
SLUG_MAX = 80  # characters of a profile's id (its file name)
SLUG_PATTERN = rf"^[a-z0-9][a-z0-9-]{{0,{SLUG_MAX - 1}}}$"
SLUG_HINT = f"a slug (lower-case letters, digits and '-', at most {SLUG_MAX})"
JSON_SCHEMA_ID = "https://advisor.invalid/profile.schema.json"

# The post's training job: the default workload.
DEFAULT_WORKLOAD: dict[str, Any] = {
    "name": "lstm1000-post",
    "kind": WorkloadKind.LSTM,
    "units": 1000,
    "timesteps": 100,
    "features": 1,
    "train_samples": 937,
    "batch_size": 100,
    "epochs": 100,
    "optimizer": "adam",
    "learning_rate": 0.001,
}

# --------------------------------------------------------------------------- the fields


NOT_LSTM = (WorkloadKind.MODEL, WorkloadKind.PUBLISHED, WorkloadKind.TRACKED)
DESCRIBED_BY_PHASES = (WorkloadKind.PUBLISHED, WorkloadKind.TRACKED)  # workloads whose work is a list of phases


def _size(name: str, doc: str, lstm_only: bool = False) -> Field:
    if lstm_only:
        return Field(name, "integer", doc, required_unless=("kind", NOT_LSTM), minimum=1, maximum=10**9)
    return Field(name, "integer", doc, required=True, minimum=1, maximum=10**9)


DEVICE = (
    Field("kind", "choice", "what trained: the CPU or a GPU", required=True, choices=DEVICE_KINDS),
    Field("name", "string", "the device's name, as the driver reports it", required=True),
    Field("count", "integer", "devices used by the training, across all machines (default 1)", minimum=1, maximum=1024),
    Field("memory_gb", "number", "memory of one device", positive=True, unit="GB"),
    Field("compute_capability", "string", "CUDA compute capability (GPUs), e.g. '8.9'"),
    Field("driver", "string", "driver version"),
    Field("platform", "choice", "the GPU's software platform", choices=words(Platform)),
    Field(
        "architecture", "string", "the architecture the platform reports: ROCm's LLVM target (gfx942), Apple's M1-M4"
    ),
    Field("reported_name", "string", "the platform's own name, where the advisor named the device from its facts"),
    Field("identity_note", "string", "how the device was named, or why it could not be (a ROCm device's facts)"),
    Field(
        "allocatable_gb",
        "number",
        "unified memory: what the GPU may allocate of it (Apple's recommendedMaxWorkingSetSize)",
        positive=True,
        unit="GB",
    ),
)
HOST = (
    Field("cpu", "string", "CPU model"),
    Field("cpu_features", "strings", "instruction-set features that matter for training (avx512_bf16, amx...)"),
    Field("cores", "integer", "physical cores", minimum=1),
    Field("logical_cpus", "integer", "logical CPUs", minimum=1),
    Field("memory_gb", "number", "host memory", positive=True, unit="GiB"),
    Field("os", "string", "operating system"),
    Field("machine", "string", "machine architecture (x86_64, arm64)"),
)
SOFTWARE = (
    Field("framework", "string", "the framework that ran the training (tensorflow, jax, torch)", required=True),
    Field("framework_version", "string", "its version (versions are strings: quote numbers like '2.4')"),
    Field("keras_version", "string", "Keras version"),
    Field("keras_backend", "string", "the Keras backend"),
    Field("python", "string", "Python version"),
    Field("cuda", "string", "CUDA version the framework was built with"),
    Field("cudnn", "string", "cuDNN version the framework was built with"),
    Field("hip", "string", "ROCm's HIP version the framework was built with"),
    Field(
        "libraries",
        "strings",
        "the training libraries over the framework, with their versions (lightning 2.6.6, transformers 5.23.0)",
    ),
)
PRICE = (
    Field(
        "usd",
        "number",
        "what the hardware cost; null when unknown (then it is compared by speed only, never recommended)",
        required=True,
        null_allowed=True,
        missing_hint="write null when the price is unknown",
        minimum=0,
        unit="USD",
    ),
    Field("date", "date", "when the price was true"),
    Field("includes", "string", "what the price includes"),
    Field("source", "string", "where the price comes from"),
    Field("power_watts", "number", "power draw under load (board power)", positive=True, unit="W"),
    Field(
        "usd_per_hour",
        "number",
        "what renting this machine costs an hour (a cloud machine)",
        positive=True,
        unit="USD/h",
    ),
)
MODEL_LAYER = (
    Field("name", "string", "the layer's name", required=True),
    Field("type", "string", "the layer's class (Dense, Conv2D, LSTM...)", required=True),
    Field("flops_per_sample", "number", "training FLOPs per sample (forward and backward)", required=True, minimum=0),
    Field("parameters", "integer", "its weights", required=True, minimum=0),
    Field("sequential_steps", "integer", "dependent steps per batch (an RNN's timesteps; 1 otherwise)", minimum=1),
    Field("activations_per_sample", "number", "values it outputs per sample", minimum=0),
)
PHASE = (
    Field(
        "kind",
        "choice",
        "what bounds it: matmul (dense and convolution layers) and attention are arithmetic, "
        "recurrent adds dependent steps, elementwise (normalisation, activations) is memory-bound",
        required=True,
        choices=PHASE_KINDS,
    ),
    Field("flops_per_sample", "number", "training FLOPs per sample (forward and backward)", minimum=0),
    Field(
        "activations_per_sample",
        "number",
        "values written per sample (memory traffic: read and written forward and backward)",
        minimum=0,
    ),
    Field("sequential_steps", "integer", "dependent steps per batch (recurrent: the longest sequence)", minimum=1),
    Field(
        "operations_per_step",
        "integer",
        "operations one of its dependent steps launches (a recurrent decoder's "
        "step), counted on a real step: each step takes at least their launches",
        minimum=1,
        maximum=10**9,
    ),
    Field("note", "string", "how the figure was derived"),
)
WORKLOAD = (
    Field(
        "name",
        "string",
        "the workload's name (two results share a workload when all but the name agree; "
        "published workloads are named apart)",
        required=True,
    ),
    Field(
        "kind",
        "choice",
        "lstm: the post's LSTM job, sized by the fields below; model: a Keras model file "
        "(measure --model); published: a published benchmark described by its phases; tracked: your own training "
        "timed where it runs (advisor.track), described by the phases its step counted",
        choices=WORKLOAD_KINDS,
    ),
    _size("units", "LSTM units (kind lstm)", lstm_only=True),
    _size("timesteps", "steps per series (kind lstm)", lstm_only=True),
    _size("features", "features per step (kind lstm)", lstm_only=True),
    _size(
        "train_samples",
        "training samples per epoch (published: the stated amount of work, in its unit; "
        "tracked: the samples of an epoch, or of the whole run when epochs is 1 and steps says its length)",
    ),
    _size(
        "batch_size",
        "batch size (published: per device; a result may give its own; tracked: the samples of "
        "one optimizer step, gradient accumulation included)",
    ),
    Field("epochs", "integer", "epochs of the run", required=True, minimum=1, maximum=MAX_EPOCHS),
    Field("optimizer", "string", "the optimizer", required=True),
    Field(
        "learning_rate", "number", "the optimizer's learning rate", required_unless=("kind", NOT_LSTM), positive=True
    ),
    Field(
        "model_hash",
        "string",
        "kind model or tracked: a hash of the architecture, compile configuration and "
        "input shapes (two different models never share a workload)",
        required_if=("kind", (WorkloadKind.MODEL, WorkloadKind.TRACKED)),
        pattern=r"^[0-9a-f]{12,64}$",
        pattern_hint="12 to 64 hex digits",
    ),
    Field(
        "inputs",
        "strings",
        "kind model: the inputs' dtypes and shapes, e.g. float32[32, 32, 3]",
        required_if=("kind", WorkloadKind.MODEL),
    ),
    Field("outputs", "strings", "kind model: the outputs' dtypes and shapes"),
    Field("loss", "string", "kind model: the loss", required_if=("kind", WorkloadKind.MODEL)),
    Field(
        "parameters",
        "integer",
        "kind model, published or tracked: the model's weights",
        required_if=("kind", (WorkloadKind.MODEL, WorkloadKind.TRACKED)),
        minimum=0,
    ),
    Field(
        "trainable_parameters",
        "integer",
        "kind tracked: the weights the optimizer updates (all but the frozen ones)",
        required_if=("kind", WorkloadKind.TRACKED),
        minimum=0,
    ),
    Field(
        "flops_per_sample",
        "number",
        "kind model: training FLOPs per sample (forward and backward)",
        required_if=("kind", WorkloadKind.MODEL),
        minimum=0,
    ),
    Field(
        "layers",
        "sections",
        "kind model: each layer's work (for the performance model)",
        fields=MODEL_LAYER,
        required_if=("kind", WorkloadKind.MODEL),
    ),
    Field("not_counted", "strings", "kind model or tracked: layers the FLOP counter does not know (counted as 0)"),
    Field(
        "unit",
        "string",
        "kind published: what one sample is (images, sequences, tokens...)",
        required_if=("kind", WorkloadKind.PUBLISHED),
    ),
    Field(
        "units_per_item",
        "number",
        "kind published: samples (in its unit) one item of a batch holds, where the "
        "batch counts other items than the throughput (Tacotron 2: an utterance of about 565 mel frames); 1 "
        "otherwise",
        positive=True,
    ),
    Field(
        "phases",
        "sections",
        "kind published or tracked: its work by kind, per sample (for the performance model)",
        fields=PHASE,
        required_if=("kind", DESCRIBED_BY_PHASES),
    ),
    Field(
        "steps",
        "integer",
        "kind tracked: optimizer steps of the whole run (the run's planned length)",
        required_if=("kind", WorkloadKind.TRACKED),
        minimum=1,
        maximum=10**12,
    ),
    Field("gradient_accumulation", "integer", "kind tracked: micro-batches per optimizer step", minimum=1),
    Field(
        "tokens_per_sample", "number", "kind tracked: tokens per sample, where the inputs have a length", positive=True
    ),
    Field(
        "activation_bytes_per_sample",
        "number",
        "kind tracked: bytes of the tensors the forward pass kept for "
        "the backward pass, per sample (counted on a real step)",
        minimum=0,
        unit="B",
    ),
    Field(
        "output_values_per_sample",
        "number",
        "kind tracked: values the model outputs per sample (its logits or "
        "softmax over every step: held at the loss with their gradient)",
        minimum=0,
    ),
    Field(
        "operations_per_step",
        "integer",
        "kind tracked or published: operations of one step (a tracked job's "
        "optimizer step, a published job's iteration of batch_size items, less its phases' own counted steps) that "
        "launch a kernel (views and allocations left out), counted on a real step: a GPU step takes at least their "
        "launches",
        minimum=1,
        maximum=10**9,
    ),
    Field(
        "counted_precision",
        "choice",
        "kind tracked: the precision of the step its FLOPs and activations were counted on",
        choices=PRECISIONS,
    ),
    Field("model_class", "string", "kind tracked: the model's class"),
    Field("flops_method", "string", "kind tracked: how the step's FLOPs were counted"),
    Field("source", "string", "kind published: where the description comes from"),
    Field(
        "model_family",
        "choice",
        "kind published or tracked: the kind of model it trains (held out together by `advisor crossval "
        "--families`; the post's LSTM is recurrent, a language-model job language)",
        choices=words(ModelFamily),
    ),
    Field(
        "family",
        "string",
        "kind published: the family whose fitted terms it shares (transformer: a "
        "language-model training job, whose every size and method the calibration learns as one)",
    ),
    Field(
        "model",
        "string",
        "kind published: the language model a job of the transformer family trains (a "
        "preset's id: the model a cross-validation holds out with its rows)",
    ),
    Field("note", "string", "anything a reader should know about the workload"),
)
# The fields that define a workload: two results share a workload when these are equal.
WORKLOAD_KEY_FIELDS = (
    "units",
    "timesteps",
    "features",
    "train_samples",
    "batch_size",
    "epochs",
    "optimizer",
    "learning_rate",
)
MODEL_KEY_FIELDS = ("model_hash", "train_samples", "batch_size", "epochs")
TRACKED_KEY_FIELDS = ("batch_size", "steps")

ESTIMATE = (
    Field("method", "string", "how the total was estimated", required=True),
    Field("error_seconds", "number", "the estimate's error at the stated confidence", minimum=0, unit="s"),
    Field("confidence", "number", "the confidence of that error", positive=True, maximum=1),
    Field("steady_epochs_timed", "integer", "steady epochs the estimate rests on", minimum=1),
)
STEADY = (
    Field("count", "integer", "steady epochs (all but the first)", minimum=1),
    Field("median", "number", "median steady epoch", positive=True, unit="s"),
    Field("mean", "number", "mean steady epoch", positive=True, unit="s"),
    Field("min", "number", "fastest steady epoch", positive=True, unit="s"),
    Field("max", "number", "slowest steady epoch", positive=True, unit="s"),
    Field("stdev", "number", "standard deviation of the steady epochs", minimum=0, unit="s"),
)
THROUGHPUT = (
    Field("flops_per_epoch", "number", "training FLOPs of one epoch (forward and backward)", positive=True),
    Field("achieved_gflops", "number", "flops_per_epoch / steady median", positive=True, unit="GFLOP/s"),
    Field("matmul_peak_gflops", "number", "the device's measured dense matmul peak", positive=True, unit="GFLOP/s"),
    Field("matmul_dtype", "string", "the dtype of that matmul test"),
    Field("efficiency", "number", "achieved_gflops / matmul_peak_gflops", minimum=0),
)
POWER = (
    Field(
        "average_watts",
        "number",
        "average power drawn during the timed training",
        required=True,
        positive=True,
        unit="W",
    ),
    Field("samples", "integer", "readings the average rests on", minimum=1),
    Field("method", "string", "how it was read (nvidia-smi power.draw, RAPL)", required=True),
)
MEMORY = (
    Field(
        "peak_gb",
        "number",
        "the peak memory the training used (a GPU's framework counter; a CPU: peak resident "
        "memory above the run's start)",
        required=True,
        minimum=0,
        unit="GB",
    ),
    Field("method", "string", "how it was read", required=True),
)
SCALING = (
    Field(
        "workers",
        "integer",
        "machines the result trained on (tf.distribute.MultiWorkerMirroredStrategy); absent: one",
        minimum=2,
    ),
    Field(
        "devices",
        "integer",
        "devices the result trained on, across all machines (tf.distribute strategies)",
        required=True,
        minimum=2,
    ),
    Field(
        "single_device_seconds",
        "number",
        "the same training on one device, measured in the same run",
        required=True,
        positive=True,
        unit="s",
    ),
    Field("speedup", "number", "single_device_seconds / total_seconds", required=True, positive=True),
    Field("efficiency", "number", "speedup / devices (1: perfect scaling)", required=True, positive=True),
    Field("global_batch", "integer", "the batch across all devices", minimum=1),
)
CLUSTER = (
    Field(
        "workers",
        "integer",
        "machines (worker processes) that trained together",
        required=True,
        minimum=2,
        maximum=1024,
    ),
    Field("devices_per_worker", "integer", "devices each machine trained on", required=True, minimum=1, maximum=1024),
    Field("collective", "string", "the all-reduce implementation (RING, NCCL)"),
    Field("link", "string", "the link between the machines, where it could be read (loopback, a network interface)"),
    Field("link_gbps", "number", "the link's speed as its interface reports it", positive=True, unit="Gb/s"),
)
STEP = (
    Field(
        "count",
        "integer",
        "steady optimizer steps timed (the warm-up steps and those next to an evaluation, a "
        "checkpoint or an epoch's end left out)",
        required=True,
        minimum=1,
    ),
    Field(
        "warmup",
        "integer",
        "warm-up steps timed apart (compilation, autotuning, the allocator's first growth)",
        minimum=0,
    ),
    Field("median", "number", "median steady step (data wait included)", required=True, positive=True, unit="s"),
    Field("mean", "number", "mean steady step", required=True, positive=True, unit="s"),
    Field("min", "number", "fastest steady step", positive=True, unit="s"),
    Field("max", "number", "slowest steady step", positive=True, unit="s"),
    Field("stdev", "number", "standard deviation of the steady steps", minimum=0, unit="s"),
    Field("samples_per_second", "number", "samples of a step / mean steady step", positive=True, unit="1/s"),
    Field(
        "tokens_per_second",
        "number",
        "tokens of a step / mean steady step, where the inputs have a length",
        positive=True,
        unit="1/s",
    ),
    Field("flops_per_step", "number", "training FLOPs of one optimizer step, counted on a real step", minimum=0),
    Field("achieved_tflops", "number", "flops_per_step / mean steady step", minimum=0, unit="TFLOP/s"),
    Field(
        "share_of_peak",
        "number",
        "achieved_tflops of one device over the GPU catalog's peak at the run's precision; never over 1 (then absent)",
        minimum=0,
        maximum=1,
    ),
    Field("peak_basis", "string", "the peak share_of_peak is taken of, or why there is none (an unknown device)"),
)
DATA_WAIT = (
    Field(
        "share",
        "number",
        "the share of a steady step spent waiting for the next batch (the rest computes)",
        required=True,
        minimum=0,
        maximum=1,
    ),
    Field(
        "seconds_per_step", "number", "mean wait for the batches of one steady step", required=True, minimum=0, unit="s"
    ),
    Field("method", "string", "how the wait was timed", required=True),
)
RESULT = (
    Field("precision", "choice", "the Keras dtype policy of the run", required=True, choices=PRECISIONS),
    Field(
        "total_seconds",
        "number",
        "wall time of all the workload's epochs (the first included; tracked: the "
        "planned steps x the mean steady step)",
        required=True,
        positive=True,
        unit="s",
    ),
    Field("estimated", "boolean", "true when total_seconds is estimated (--quick); then estimate says how"),
    Field(
        "estimate",
        "section",
        "how the total was estimated",
        fields=ESTIMATE,
        required_if=("estimated", True),
        only_if=("estimated", True),
    ),
    Field("approximate", "boolean", "true for a rounded quoted figure"),
    Field("epochs_run", "integer", "epochs actually run (an estimated total)", minimum=1),
    Field("first_epoch_seconds", "number", "the first (warm-up) epoch", positive=True, unit="s"),
    Field("steady", "section", "statistics of the steady epochs (2..N)", fields=STEADY),
    Field("epoch_seconds", "numbers", "every epoch's wall time, in order", positive=True, unit="s"),
    Field("final_loss", "number", "training loss after the last epoch", minimum=0),
    Field("final_accuracy", "number", "training accuracy after the last epoch", minimum=0, maximum=1),
    Field("throughput", "section", "achieved and peak arithmetic throughput", fields=THROUGHPUT),
    Field("power", "section", "the power measure read during the run (where it could)", fields=POWER),
    Field("memory", "section", "the peak memory measure read during the run (where it could)", fields=MEMORY),
    Field("scaling", "section", "several devices: the speedup over one device", fields=SCALING),
    Field(
        "step",
        "section",
        "a tracked run (advisor.track): its optimizer steps; total_seconds is the run's planned "
        "steps x the mean steady step",
        fields=STEP,
    ),
    Field(
        "data_wait",
        "section",
        "a tracked run: the time its steps waited for data (a faster GPU does not shorten it)",
        fields=DATA_WAIT,
    ),
    Field("checks", "mapping", "what the run's self-checks saw (compute dtype, variable device)"),
    Field("warnings", "strings", "what the run's self-checks noticed"),
    Field(
        "batch_size",
        "integer",
        "the batch per device of this result when it differs from the workload's "
        "(published results: each GPU ran the batch that fit)",
        minimum=1,
        maximum=10**9,
    ),
    Field("note", "string", "anything a reader should know about this result"),
)
PROVENANCE = (
    Field(
        "method",
        "choice",
        "measured (by advisor measure) or quoted (from a source)",
        required=True,
        choices=PROVENANCE_METHODS,
    ),
    Field("source", "string", "where a quoted result comes from", required_if=("method", Source.QUOTED)),
    Field("advisor_version", "string", "the advisor that measured", required_if=("method", Source.MEASURED)),
    Field("date", "date", "when it was measured or quoted"),
    Field("command", "string", "the command that measured (tracked: the script that trained)"),
    Field(
        "interrupted",
        "boolean",
        "true when the tracked run was stopped (Ctrl-C) before its end: the profile holds the steps done",
    ),
)
PROFILE = (
    Field(
        "schema_version",
        "integer",
        f"the format's version ({SCHEMA_VERSION}); older versions are migrated",
        required=True,
        minimum=0,
        maximum=SCHEMA_VERSION,
    ),
    Field(
        "id",
        "string",
        "the profile's slug; equals the file name",
        required=True,
        pattern=SLUG_PATTERN,
        pattern_hint=SLUG_HINT,
    ),
    Field("name", "string", "shown in the app (default: the device's name)"),
    Field("job", "choice", "what was timed: training (the default) or inference (a generation)", choices=JOBS),
    Field("device", "section", "the device that trained", required=True, fields=DEVICE),
    Field("host", "section", "best-effort facts about the machine; unknown ones are left out", fields=HOST),
    Field("software", "section", "the software that trained", required=True, fields=SOFTWARE),
    Field("price", "section", "what the hardware cost", required=True, fields=PRICE),
    Field(
        "workload", "section", "the training job that was timed", required_unless=("job", INFERENCE), fields=WORKLOAD
    ),
    Field("results", "sections", "one result per precision", required_unless=("job", INFERENCE), fields=RESULT),
    Field(
        "generation",
        "section",
        "job inference: the generation that was timed",
        required_if=("job", INFERENCE),
        only_if=("job", INFERENCE),
        fields=G.GENERATION,
    ),
    Field(
        "generation_results",
        "sections",
        "job inference: one result per batch (sequences at once)",
        required_if=("job", INFERENCE),
        only_if=("job", INFERENCE),
        fields=G.GENERATION_RESULT,
    ),
    Field("cluster", "section", "several machines (measure --workers): how they were joined", fields=CLUSTER),
    Field("provenance", "section", "where the results come from", required=True, fields=PROVENANCE),
    Field("notes", "text", "anything a reader should know: a string or a list of strings"),
)


# --------------------------------------------------------------------------- migration


def _migrate_0_to_1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 0 (the draft format) kept ``price_usd`` at the top level and ``seconds`` per result."""
    migrated = dict(data)
    if "price_usd" in migrated and "price" not in migrated:
        migrated["price"] = {"usd": migrated.pop("price_usd")}
    results = migrated.get("results")
    if isinstance(results, list):
        new_results = []
        for result in results:
            if isinstance(result, dict) and "seconds" in result and "total_seconds" not in result:
                result = dict(result)
                result["total_seconds"] = result.pop("seconds")
            new_results.append(result)
        migrated["results"] = new_results
    migrated["schema_version"] = 1
    return migrated


def _migrate_1_to_2(data: dict[str, Any]) -> dict[str, Any]:
    """Version 2 added model workloads (``workload.kind``); every version 1 workload is the LSTM job."""
    migrated = dict(data)
    if isinstance(migrated.get("workload"), dict) and "kind" not in migrated["workload"]:
        migrated["workload"] = {**migrated["workload"], "kind": WorkloadKind.LSTM}
    migrated["schema_version"] = 2
    return migrated


def _migrate_2_to_3(data: dict[str, Any]) -> dict[str, Any]:
    """Version 3 added tracked workloads (advisor.track: ``workload.kind`` tracked, ``results[].step`` and
    ``results[].data_wait``); a version 2 profile reads the same."""
    return {**data, "schema_version": 3}


def _migrate_3_to_4(data: dict[str, Any]) -> dict[str, Any]:
    """Version 4 added inference profiles (``job: inference``, ``generation`` and ``generation_results``); a version
    3 profile is a training one and reads the same."""
    return {**data, "schema_version": 4}


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    0: _migrate_0_to_1,
    1: _migrate_1_to_2,
    2: _migrate_2_to_3,
    3: _migrate_3_to_4,
}


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Bring an older (already version-checked) profile up to SCHEMA_VERSION."""
    version = data.get("schema_version")
    while isinstance(version, int) and version < SCHEMA_VERSION and version in MIGRATIONS:
        data = MIGRATIONS[version](data)
        version = data.get("schema_version")
    return data


# --------------------------------------------------------------------------- validation


def check_version(data: Any, file: str) -> list[Problem]:
    """Problems with the top-level shape and ``schema_version`` (checked before migration)."""
    if not isinstance(data, dict):
        # The type only: a file that is not a profile (a link to /etc/passwd, say) is never quoted.
        kind = describe(data).split(" (")[0]
        return [Problem(file, "", f"a profile must be a YAML mapping, got {kind}")]
    if "schema_version" not in data:
        return [Problem(file, "schema_version", "is missing")]
    version = data["schema_version"]
    if isinstance(version, bool) or not isinstance(version, int):
        return [Problem(file, "schema_version", f"must be an integer, got {describe(version)}")]
    if version > SCHEMA_VERSION:
        return [
            Problem(
                file,
                "schema_version",
                f"this profile needs a newer advisor (schema_version {version}; "
                f"this advisor reads up to {SCHEMA_VERSION}): upgrade advisor",
            )
        ]
    if version < 0 or (version < SCHEMA_VERSION and version not in MIGRATIONS):
        return [Problem(file, "schema_version", f"unknown schema_version {version}")]
    return []


def validate(data: Any, file: str = "", expected_id: str | None = None) -> tuple[list[Problem], list[Problem]]:
    """Validate a migrated profile. Returns (problems, warnings); valid when problems is empty."""
    version_problems = check_version(data, file)
    if version_problems:
        return version_problems, []
    c = F.Checker(file)
    values = F.check_section(c, data, PROFILE)
    profile_id = values.get("id")
    if profile_id is not None and expected_id is not None and profile_id != expected_id:
        c.problem("id", f"{profile_id!r} does not match the file name ({expected_id!r} expected)")
    if data.get("job") == INFERENCE:
        for name in ("workload", "results", "cluster"):
            if data.get(name) is not None:
                c.problem(name, "is given but job is inference (a generation's figures are in generation_results)")
        G.check_results(c, data.get("generation"), data.get("generation_results"))
        return c.problems, c.warnings
    workload = data.get("workload") if isinstance(data.get("workload"), dict) else {}
    epochs = F.valid_number(workload.get("epochs"), integer=True)
    results = data.get("results")
    if isinstance(results, list):
        _check_results(c, results, epochs)
        if workload.get("kind") == WorkloadKind.TRACKED:
            _check_tracked(c, results, F.valid_number(workload.get("steps"), integer=True))
    return c.problems, c.warnings


def _check_tracked(c: F.Checker, results: list, steps: float | None) -> None:
    """A tracked result's total is its run's steps times its mean steady step; a tracked result has its steps."""
    for index, result in enumerate(results):
        if not isinstance(result, dict):
            continue
        step = result.get("step")
        if not isinstance(step, dict):
            c.problem(f"results[{index}].step", "is missing (a tracked result says how its steps were timed)")
            continue
        low, high, median = (F.valid_number(step.get(k)) for k in ("min", "max", "median"))
        if low is not None and high is not None and median is not None and not low <= median <= high:
            c.problem(f"results[{index}].step.median", f"{median} lies outside min..max ({low}..{high})")
        mean, total = F.valid_number(step.get("mean")), F.valid_number(result.get("total_seconds"))
        if steps is not None and mean is not None and total is not None and total > 0:
            expected = steps * mean
            if abs(expected - total) > 0.01 * total + 1e-6:
                c.problem(
                    f"results[{index}].total_seconds",
                    f"{total:g} is not workload.steps x step.mean ({steps:g} x {mean:g} = {expected:.6g})",
                )


def _check_results(c: F.Checker, results: list, epochs: float | None) -> None:
    """The checks that span fields: one result per precision, and epochs that add up."""
    seen: set[str] = set()
    for index, result in enumerate(results):
        if not isinstance(result, dict):
            continue
        path = f"results[{index}]"
        precision = result.get("precision")
        if isinstance(precision, str) and precision in PRECISIONS:
            if precision in seen:
                c.problem(f"{path}.precision", f"{precision} appears twice; one result per precision")
            seen.add(precision)
        epochs_run = F.valid_number(result.get("epochs_run"), integer=True)
        if epochs_run is not None and epochs is not None and epochs_run > epochs:
            c.problem(f"{path}.epochs_run", f"{epochs_run} epochs run but the workload has only {epochs}")
        steady = result.get("steady")
        if isinstance(steady, dict):
            _check_steady(c, steady, path)
        _check_epoch_seconds(c, result, path, epochs, epochs_run)


def _check_steady(c: F.Checker, steady: dict, path: str) -> None:
    low, high, median = (F.valid_number(steady.get(k)) for k in ("min", "max", "median"))
    if low is None or high is None:
        return
    if low > high:
        c.problem(f"{path}.steady", f"min ({low}) is greater than max ({high})")
    elif median is not None and not low <= median <= high:
        c.problem(f"{path}.steady.median", f"{median} lies outside min..max ({low}..{high})")


def _check_epoch_seconds(c: F.Checker, result: dict, path: str, epochs: float | None, epochs_run: float | None) -> None:
    series = result.get("epoch_seconds")
    if not isinstance(series, list) or not series or any(F.valid_number(v) is None or v <= 0 for v in series):
        return  # the field's own check reported it
    field = f"{path}.epoch_seconds"
    estimated = result.get("estimated") is True
    total = F.valid_number(result.get("total_seconds"))
    if epochs is not None and len(series) > epochs:
        c.problem(field, f"has {len(series)} epochs but the workload has only {epochs}")
    elif epochs_run is not None and len(series) != epochs_run:
        c.problem(field, f"has {len(series)} epochs but epochs_run says {epochs_run}")
    elif not estimated and epochs is not None and len(series) != epochs:
        c.problem(field, f"has {len(series)} epochs but the workload has {epochs} and the total is not estimated")
    elif not estimated and total is not None and total > 0:
        summed = math.fsum(series)
        if abs(summed - total) > 0.05 * total + 0.01:
            c.problem(
                f"{path}.total_seconds",
                f"{total:g} does not match the sum of epoch_seconds ({summed:.6g}): "
                "the result does not belong to this workload",
            )


# --------------------------------------------------------------------------- normalisation


def normalise(data: dict[str, Any]) -> dict[str, Any]:
    """A validated profile with defaults filled in and dates as strings (for analysis and writing)."""
    out = dict(data)
    device = dict(out["device"])
    if device.get("count") is None:
        device["count"] = 1
    out["device"] = device
    # An explicit null in an optional field means the same as leaving it out.
    if out.get("job") == INFERENCE:
        out["generation_results"] = [{k: v for k, v in r.items() if v is not None} for r in out["generation_results"]]
    else:
        out["results"] = [{k: v for k, v in result.items() if v is not None} for result in out["results"]]
    for section in ("price", "provenance"):
        mapping = dict(out[section])
        for key, value in mapping.items():
            if isinstance(value, (_dt.date, _dt.datetime)):
                mapping[key] = value.isoformat()
        out[section] = mapping
    if out.get("name") is None:
        out["name"] = device["name"]
    if out.get("job") != INFERENCE:
        out["workload"] = {"kind": WorkloadKind.LSTM, **{k: v for k, v in out["workload"].items() if v is not None}}
    return out


def is_inference(data: dict[str, Any]) -> bool:
    """Whether a (validated) profile timed a generation rather than a training."""
    return data.get("job") == INFERENCE


def workload_key(workload: dict[str, Any]) -> tuple:
    """The identity of a workload, whatever its name: ("lstm", its sizes...) or ("model", its hash, samples...)."""
    if workload.get("kind") == WorkloadKind.MODEL:
        return (WorkloadKind.MODEL, str(workload["model_hash"]), *(int(workload[k]) for k in MODEL_KEY_FIELDS[1:]))
    if workload.get("kind") == WorkloadKind.PUBLISHED:  # each GPU ran the batch that fit: the batch is not part of it
        return (WorkloadKind.PUBLISHED, str(workload["name"]))
    if workload.get("kind") == WorkloadKind.TRACKED:  # the same model at the same batch and length, whatever ran it
        return (WorkloadKind.TRACKED, str(workload["model_hash"]), *(int(workload[k]) for k in TRACKED_KEY_FIELDS))
    return (
        WorkloadKind.LSTM,
        *(
            float(workload[k])
            if k == "learning_rate"
            else str(workload[k]).lower()
            if k == "optimizer"
            else int(workload[k])
            for k in WORKLOAD_KEY_FIELDS
        ),
    )


def canonical(data: dict[str, Any]) -> dict[str, Any]:
    """The profile with keys in the table's order (known keys first, others sorted after)."""
    return F.ordered(data, PROFILE)


# --------------------------------------------------------------------------- derived documents


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a profile, for editors (VS Code's YAML extension) and other tools."""
    schema = F.section_schema(PROFILE)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": JSON_SCHEMA_ID,
        "title": "advisor profile",
        "description": f"A measured or quoted training-time (or, job inference, generation) profile (schema version "
        f"{SCHEMA_VERSION}). "
        "Checks the advisor cannot express here (epoch times adding up to the total, one result per "
        "precision, the id matching the file name) are made by `python -m advisor validate`.",
        **schema,
    }


def markdown_reference() -> str:
    """The field reference of docs/reference.md, derived from the tables."""
    return "\n".join(F.markdown_reference(PROFILE)) + "\n"
