"""A user's own Keras model as the workload: load it safely, generate data that fits it, describe it.

``load`` opens a Keras 3 ``.keras`` file with ``safe_mode`` on (a file from elsewhere must not run
code); ``workload`` describes it for a profile (a hash that identifies it, its inputs, loss,
parameters and each layer's training FLOPs); ``job`` trains it in any precision on generated data
of its own shapes. Keras is imported inside the functions, once a run starts.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from advisor.errors import AdvisorError, InputError
from advisor.format.vocabulary import DType, WorkloadKind
from advisor.measure import flops
from advisor.measure.train import Job

# A .keras file is a zip: what its entries may expand to before anything is read. Weights barely compress (a ratio
# of 1-2), a zip bomb compresses a thousandfold: 1.5 MB that expands to 1.5 GB is refused before it is opened.
MAX_EXPANDED_BYTES = 4 * 1024**3  # the most a model file may expand to (a 1-billion-parameter float32 model)
MAX_RATIO = 100  # beyond this expansion ratio, and past RATIO_FLOOR_BYTES, an archive is a bomb
RATIO_FLOOR_BYTES = 64 * 1024**2
MAX_LAYER_WIDTH = 2**20  # units, filters, dimensions a layer may ask for: wider is refused before it is built
WIDTH_KEYS = ("units", "filters", "output_dim", "input_dim", "embed_dim", "key_dim", "num_heads", "intermediate_dim")

SPARSE_LOSSES = ("sparse_categorical_crossentropy",)
CATEGORICAL_LOSSES = ("categorical_crossentropy", "categorical_focal_crossentropy", "kl_divergence")
BINARY_LOSSES = ("binary_crossentropy", "binary_focal_crossentropy", "hinge", "squared_hinge")


def _fail(path: Path, message: str) -> AdvisorError:
    return AdvisorError(f"{path}: {message}")


def check_file(path: str | Path) -> Path:
    """Refuse, in one line, what is not a readable Keras 3 file saved by this Keras or an older one."""
    import keras

    path = Path(path)
    if not path.is_file():
        raise _fail(path, "no such model file")
    if not zipfile.is_zipfile(path):
        with path.open("rb") as handle:
            starts_like_a_zip = handle.read(4) == b"PK\x03\x04"
        if starts_like_a_zip:
            raise _fail(path, "is truncated or damaged (a zip archive without its end)")
        raise _fail(path, "not a Keras 3 model file (a .keras file is a zip archive; save with model.save('x.keras'))")
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            if "config.json" not in names:
                raise _fail(path, "not a Keras 3 model file (no config.json inside)")
            _check_expansion(path, archive)
            metadata = json.loads(archive.read("metadata.json")) if "metadata.json" in names else {}
            _check_widths(path, json.loads(archive.read("config.json")))
            bad = archive.testzip()
            if bad is not None:
                raise _fail(path, f"is damaged ({bad} fails its checksum)")
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, KeyError) as error:
        raise _fail(path, f"is truncated or damaged ({error})") from None
    saved = str(metadata.get("keras_version", ""))
    if saved and _version(saved) > _version(keras.__version__):
        raise _fail(path, f"was saved by Keras {saved}, newer than this Keras {keras.__version__}: upgrade Keras")
    return path


def _check_expansion(path: Path, archive: zipfile.ZipFile) -> None:
    """Refuse an archive whose entries (as their headers declare: reading stops there) expand beyond the limits."""
    expanded = sum(info.file_size for info in archive.infolist())
    if expanded > MAX_EXPANDED_BYTES:
        raise _fail(
            path,
            f"expands to {expanded / 1e9:.1f} GB, beyond the {MAX_EXPANDED_BYTES / 1e9:.1f} GB the "
            "advisor opens: refused",
        )
    for info in archive.infolist():
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > RATIO_FLOOR_BYTES and ratio > MAX_RATIO:
            sizes = f"{info.compress_size / 1e6:.1f} MB to {info.file_size / 1e6:,.0f} MB"
            raise _fail(
                path,
                f"{info.filename} expands {ratio:,.0f}-fold ({sizes}): a model's weights do not "
                f"compress beyond {MAX_RATIO}x; refused as a zip bomb",
            )


def _check_widths(path: Path, config: Any) -> None:
    """Refuse, before anything is built, a layer that asks for more than MAX_LAYER_WIDTH units (or filters...)."""
    stack = [config]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if (
                    key in WIDTH_KEYS
                    and isinstance(value, int)
                    and not isinstance(value, bool)
                    and (value > MAX_LAYER_WIDTH or value < 0)
                ):
                    name = item.get("name", "a layer")
                    raise _fail(
                        path,
                        f"{name} asks for {key}={value:,}, beyond the {MAX_LAYER_WIDTH:,} the advisor "
                        "builds: refused before allocating it",
                    )
                stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def load(path: str | Path, loss: str | None = None, optimizer: str | None = None):
    """The model, loaded with safe_mode on and compiled (with --loss and --optimizer where it was saved without)."""
    import keras

    path = check_file(path)
    try:
        with warnings.catch_warnings():  # Keras warns about the optimizer's slots it restores lazily
            warnings.simplefilter("ignore")
            model = keras.saving.load_model(path, safe_mode=True, compile=True)
    except Exception as error:  # every loading failure is the file's, said in one line
        raise _fail(path, _load_failure(error)) from None
    if not getattr(model, "inputs", None):
        raise _fail(path, "has no inputs (a model saved before it was built, or a subclassed model): refused")
    if loss or optimizer:
        if not (loss and optimizer):
            raise InputError("loss", "goes with an optimizer: give both, or neither")
        model.compile(loss=loss, optimizer=optimizer)
    elif getattr(model, "loss", None) is None or getattr(model, "optimizer", None) is None:
        raise _fail(path, "was saved without a compile configuration: give --loss and --optimizer")
    return model


def _load_failure(error: Exception) -> str:
    text = str(error)
    if "safe_mode" in text or "lambda" in text.lower():
        return "needs unsafe deserialization (a Lambda layer or other code), and the advisor loads with safe_mode on"
    if "Could not locate" in text or "custom" in text.lower():
        found = re.search(r"class '?([\w.]+)'?", text)
        name = f" ({found.group(1)})" if found else ""
        return f"uses a custom object{name} the advisor cannot load safely: refused"
    return "cannot be loaded: " + (text.strip().splitlines() or ["unknown error"])[0][:200]


# --------------------------------------------------------------------------- describing it


def _loss_name(model) -> str:
    config = model.get_compile_config() or {}
    loss = config.get("loss", model.loss)
    if isinstance(loss, dict):
        loss = loss.get("config", {}).get("name") or loss.get("class_name", "")
    name = getattr(loss, "name", None) or getattr(loss, "__name__", None) or str(loss)
    return re.sub(r"(?<!^)(?=[A-Z])", "_", str(name)).lower().replace("__", "_")


def _optimizer(model) -> tuple[str, float | None]:
    optimizer = model.optimizer
    rate = getattr(optimizer, "learning_rate", None)
    try:
        rate = float(np.asarray(rate))
    except (TypeError, ValueError):
        rate = None  # a schedule
    return type(optimizer).__name__.lower(), rate


def _spec(tensor) -> str:
    return f"{tensor.dtype}[{', '.join(str(d) for d in tuple(tensor.shape)[1:])}]"


def identity(model) -> str:
    """A short hash of the architecture, the compile configuration and the input shapes."""
    config = {
        "model": model.get_config(),
        "compile": model.get_compile_config(),
        "inputs": [_spec(t) for t in model.inputs],
    }
    text = json.dumps(config, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def workload(model, samples: int, batch_size: int, epochs: int) -> dict[str, Any]:
    """The profile's ``workload`` for this model (kind model): what identifies it and each layer's work."""
    work = flops.count(model)
    optimizer, rate = _optimizer(model)
    spec: dict[str, Any] = {
        "name": model.name,
        "kind": WorkloadKind.MODEL,
        "train_samples": samples,
        "batch_size": batch_size,
        "epochs": epochs,
        "optimizer": optimizer,
        "learning_rate": rate,
        "model_hash": identity(model),
        "inputs": [_spec(t) for t in model.inputs],
        "outputs": [_spec(t) for t in model.outputs],
        "loss": _loss_name(model),
        "parameters": int(model.count_params()),
        "flops_per_sample": float(work.training_flops),
        "layers": [layer.as_dict() for layer in work.layers],
    }
    if work.not_counted:
        spec["not_counted"] = work.not_counted
    return {k: v for k, v in spec.items() if v is not None}


# --------------------------------------------------------------------------- data and training


def _vocabulary(model) -> int:
    """The range integer inputs may take: the smallest Embedding vocabulary of the model (2 without one)."""
    sizes = [layer.input_dim for layer in _all_layers(model) if type(layer).__name__ == "Embedding"]
    return min(sizes) if sizes else 2


def _all_layers(model) -> list:
    out = []
    for layer in model.layers:
        out.append(layer)
        if hasattr(layer, "layers"):
            out += _all_layers(layer)
    return out


def make_data(model, samples: int, seed: int) -> tuple[Any, Any]:
    """Seeded inputs of the model's own shapes (floats from a normal, integers within its vocabulary) and targets
    that fit its loss (classes for a classification loss, normal values otherwise)."""
    rng = np.random.default_rng(seed)
    inputs = []
    for tensor in model.inputs:
        shape = tuple(tensor.shape)[1:]
        if any(d is None for d in shape):
            raise AdvisorError(
                f"input {tensor.name} has an unknown dimension {shape}: save the model with fixed shapes"
            )
        if "int" in str(tensor.dtype):
            inputs.append(rng.integers(0, _vocabulary(model), size=(samples, *shape)).astype(str(tensor.dtype)))
        else:
            inputs.append(rng.standard_normal((samples, *shape)).astype(DType.FLOAT32.value))
    loss = _loss_name(model)
    targets = []
    for tensor in model.outputs:
        shape = tuple(tensor.shape)[1:]
        classes = shape[-1] if shape else 1
        if loss in SPARSE_LOSSES:
            targets.append(rng.integers(0, classes, size=(samples, *shape[:-1])).astype("int32"))
        elif loss in CATEGORICAL_LOSSES:
            labels = rng.integers(0, classes, size=(samples, *shape[:-1]))
            targets.append(np.eye(classes, dtype=DType.FLOAT32.value)[labels])
        elif loss in BINARY_LOSSES:
            targets.append(rng.integers(0, 2, size=(samples, *shape)).astype(DType.FLOAT32.value))
        else:
            targets.append(rng.standard_normal((samples, *shape)).astype(DType.FLOAT32.value))
    x = inputs[0] if len(inputs) == 1 else inputs
    y = targets[0] if len(targets) == 1 else targets
    return x, y


def in_precision(model, policy: str):
    """A copy of the model whose layers compute in ``policy`` (its output layers stay float32, as Keras advises
    for mixed precision), with the same weights and compile configuration."""
    import keras

    outputs = {t._keras_history.operation.name for t in model.outputs if hasattr(t, "_keras_history")}

    def clone(layer):
        config = layer.get_config()
        if "dtype" in config and layer.name not in outputs and type(layer).__name__ != "InputLayer":
            config["dtype"] = keras.DTypePolicy(policy)
        return layer.__class__.from_config(config)

    copy = keras.models.clone_model(model, clone_function=clone)
    copy.set_weights(model.get_weights())
    copy.compile_from_config(model.get_compile_config())
    return copy


@dataclass
class ModelJob:
    """A loaded model and the run's sizes, as a training Job."""

    model: Any
    samples: int
    batch_size: int
    epochs: int

    def job(self) -> Job:
        def checks(model) -> dict[str, Any]:
            dtypes = sorted({str(layer.compute_dtype) for layer in _all_layers(model) if layer.weights})
            mixed = [d for d in dtypes if d in (DType.FLOAT16, DType.BFLOAT16)]
            return {
                "layer_compute_dtypes": dtypes,
                "output_dtype": str(model.layers[-1].compute_dtype),
                "compute_dtype": mixed[0] if mixed else (dtypes[0] if dtypes else DType.FLOAT32.value),
            }

        return Job(
            epochs=self.epochs,
            batch_size=self.batch_size,
            steps_per_epoch=math.ceil(self.samples / self.batch_size),
            build=lambda policy: in_precision(self.model, policy),
            data=lambda seed: make_data(self.model, self.samples, seed),
            checks=checks,
        )
