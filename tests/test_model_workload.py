"""Your own model as the workload: measured from a .keras file, described by its layers' FLOPs, estimated on the
catalog. Real Keras (TensorFlow backend), tiny sizes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from advisor import store
from advisor.cli import main
from advisor.decision import analysis
from advisor.measure import flops, model_file
from advisor.measure.examples import EXAMPLES, write_examples
from advisor.measure.train import build_model
from advisor.perf import estimates
from advisor.perf.workload import Workload
from advisor.store import results
from helpers import ROOT, SHIPPED, needs

SIZES = ["--samples", "16", "--batch-size", "8", "--matmul-size", "64"]
pytestmark = [pytest.mark.slow, needs("tensorflow")]  # real Keras models built and trained
keras = None  # Keras (and TensorFlow) imported when this file's tests run, not when it is collected


@pytest.fixture(autouse=True, scope="module")
def _keras():
    global keras
    import keras as module

    keras = module


@pytest.fixture(scope="module")
def examples(tmp_path_factory) -> Path:
    return write_examples(tmp_path_factory.mktemp("examples"))[0].parent


def test_the_flop_counter_matches_the_readme_lstm_formula():
    workload = Workload()
    counted = flops.count(build_model(workload, "float32"))
    assert counted.not_counted == []
    # 3 x timesteps x 8 x units x (features + units) + 6 x units per sample; the counter adds the head's bias (3).
    assert counted.training_flops == pytest.approx(
        workload.training_flops_per_epoch() / workload.train_samples, rel=1e-8
    )
    assert counted.layers[0].sequential_steps == 100


def test_the_flop_counter_on_known_layers():
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(4, 3, padding="same")(inputs)  # 2 x 9 x 3 x 4 per output pixel, 64 pixels, + bias
    x = keras.layers.Flatten()(x)
    outputs = keras.layers.Dense(5)(x)  # 2 x 256 x 5 + bias
    counted = flops.count(keras.Model(inputs, outputs))
    by_type = {layer.type: layer for layer in counted.layers}
    assert by_type["Conv2D"].forward_flops == 2 * 9 * 3 * 4 * 64 + 4 * 64
    assert by_type["Dense"].forward_flops == 2 * 256 * 5 + 5
    assert (
        by_type["Flatten"].forward_flops == 0
        and by_type["Conv2D"].training_flops == 3 * by_type["Conv2D"].forward_flops
    )
    sequence = keras.Input((64, 128))
    attention = keras.layers.MultiHeadAttention(num_heads=4, key_dim=32)(sequence, sequence)
    mha = flops.count(keras.Model(sequence, attention)).layers[-1]
    s, d, h, k = 64, 128, 4, 32
    expected = 3 * 2 * s * d * h * k + 2 * h * s * s * k + 3 * h * s * s + 2 * h * s * s * k + 2 * s * h * k * d
    assert mha.forward_flops == expected


def test_resnet50_is_about_4_billion_multiply_adds():
    counted = flops.count(keras.applications.ResNet50(weights=None))
    macs = sum(layer.forward_flops for layer in counted.layers if layer.type in ("Conv2D", "Dense")) / 2
    assert 3.8e9 < macs < 4.2e9  # the published figure: about 4 GMACs per 224 x 224 image forward
    assert counted.not_counted == []


def test_an_unknown_layer_is_named_not_guessed():
    inputs = keras.Input((10,))
    outputs = keras.layers.UnitNormalization()(keras.layers.Dense(4)(inputs))
    counted = flops.count(keras.Model(inputs, outputs))
    assert counted.not_counted == ["unit_normalization (UnitNormalization)"]


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_each_example_is_measured_through_the_real_code_path(capsys, examples: Path, tmp_path: Path, name):
    status = main(
        [
            "measure",
            "--model",
            str(examples / f"{name}.keras"),
            *SIZES,
            "--epochs",
            "2",
            "--out",
            str(tmp_path),
            "--name",
            name,
        ]
    )
    _out, err = capsys.readouterr()
    assert status == 0, err
    profile, warnings = store.load_profile(tmp_path / f"{name}.yaml")
    assert warnings == []
    workload = profile.data["workload"]
    assert workload["kind"] == "model" and workload["train_samples"] == 16 and workload["epochs"] == 2
    assert len(workload["model_hash"]) == 16 and workload["parameters"] > 0 and workload["flops_per_sample"] > 0
    assert sum(layer["flops_per_sample"] for layer in workload["layers"]) == pytest.approx(workload["flops_per_sample"])
    by_precision = {r["precision"]: r for r in profile.data["results"]}
    assert set(by_precision) == {"float32", "mixed_bfloat16"}
    assert "bfloat16" in by_precision["mixed_bfloat16"]["checks"]["layer_compute_dtypes"]
    assert by_precision["mixed_bfloat16"]["checks"]["output_dtype"] == "float32"
    assert len(by_precision["float32"]["epoch_seconds"]) == 2


def test_the_same_model_compares_and_different_models_never_do(examples: Path):
    cnn = model_file.load(examples / "small-cnn.keras")
    again = model_file.load(examples / "small-cnn.keras")
    gru = model_file.load(examples / "gru-text.keras")
    assert model_file.identity(cnn) == model_file.identity(again) != model_file.identity(gru)
    a = model_file.workload(cnn, 16, 8, 2)
    assert analysis.workload_key(a) == analysis.workload_key(model_file.workload(again, 16, 8, 2))
    assert analysis.workload_key(a) != analysis.workload_key(model_file.workload(cnn, 16, 8, 3))


def test_generated_data_follows_the_model(examples: Path):
    gru = model_file.load(examples / "gru-text.keras")
    x, y = model_file.make_data(gru, 32, seed=0)
    assert x.dtype.kind == "i" and x.min() >= 0 and x.max() < 5000 and x.shape == (32, 100)
    assert set(y.ravel()) <= {0.0, 1.0}
    cnn = model_file.load(examples / "small-cnn.keras")
    x, y = model_file.make_data(cnn, 32, seed=0)
    assert x.shape == (32, 32, 32, 3) and y.dtype.kind == "i" and y.max() < 10  # sparse labels of 10 classes


CUSTOM_LAYER = """
import keras

@keras.saving.register_keras_serializable(package="elsewhere")
class Twice(keras.layers.Layer):
    def call(self, x):
        return x * 2

model = keras.Sequential([keras.Input((4,)), Twice(), keras.layers.Dense(1)])
model.compile(loss="mse", optimizer="adam")
model.save({path!r})
"""


def _rewrite(source: Path, target: Path, change) -> Path:
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for item in old.infolist():
            new.writestr(item, change(item.filename, old.read(item.filename)))
    return target


def bad_model_files(examples: Path, folder: Path) -> dict[str, tuple[Path, str]]:
    cnn = examples / "small-cnn.keras"
    not_zip = folder / "not-zip.keras"
    not_zip.write_text("hello")
    truncated = folder / "truncated.keras"
    truncated.write_bytes(cnn.read_bytes()[: cnn.stat().st_size // 2])

    def newer(name: str, data: bytes) -> bytes:
        if name != "metadata.json":
            return data
        return json.dumps({**json.loads(data), "keras_version": "99.0.0"}).encode()

    lambda_model = keras.Sequential([keras.Input((4,)), keras.layers.Lambda(lambda x: x * 2), keras.layers.Dense(1)])
    lambda_model.compile(loss="mse", optimizer="adam")
    lambda_model.save(folder / "lambda.keras")

    # A custom layer registered only in the process that saved it: this process cannot (and must not) rebuild it.
    subprocess.run(
        [sys.executable, "-c", CUSTOM_LAYER.format(path=str(folder / "custom.keras"))],
        check=True,
        capture_output=True,
        env={**os.environ, "KERAS_BACKEND": "tensorflow"},
    )
    unbuilt = keras.Sequential([keras.layers.Dense(1)])
    unbuilt.save(folder / "no-inputs.keras")

    # A zip bomb: a real model plus 80 MB of zeros that pack into about 80 KB.
    bomb = _rewrite(cnn, folder / "bomb.keras", lambda name, data: data)
    with zipfile.ZipFile(bomb, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("assets/padding.bin", bytes(80 * 1024**2))

    def three_billion_units(name: str, data: bytes) -> bytes:
        return data.replace(b'"units": 10', b'"units": 3000000000') if name == "config.json" else data

    return {
        "not-zip": (not_zip, "not a Keras 3 model file"),
        "truncated": (truncated, "truncated or damaged"),
        "newer": (_rewrite(cnn, folder / "newer.keras", newer), "was saved by Keras 99.0.0, newer than this Keras"),
        "lambda": (folder / "lambda.keras", "needs unsafe deserialization"),
        "custom": (folder / "custom.keras", "uses a custom object"),
        "no-inputs": (folder / "no-inputs.keras", "has no inputs"),
        "bomb": (bomb, "refused as a zip bomb"),
        "wide": (_rewrite(cnn, folder / "wide.keras", three_billion_units), "asks for units=3,000,000,000"),
    }


def test_bad_model_files_are_one_line_and_write_nothing(capsys, examples: Path, tmp_path: Path):
    out = tmp_path / "out"
    for name, (path, message) in bad_model_files(examples, tmp_path).items():
        status = main(["measure", "--model", str(path), *SIZES, "--epochs", "2", "--out", str(out)])
        err = capsys.readouterr().err
        assert status == 1, name
        assert message in err.strip().splitlines()[-1], (name, err)
        assert "Traceback" not in err
        # the folder is made and proved writable before a long run (measure checks it first); nothing is in it
        assert out.is_dir() and list(out.iterdir()) == [], name


def test_a_model_saved_without_compile_needs_loss_and_optimizer(capsys, tmp_path: Path):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.save(tmp_path / "plain.keras")
    status = main(["measure", "--model", str(tmp_path / "plain.keras"), *SIZES, "--epochs", "2", "--dry-run"])
    assert status == 1
    assert "saved without a compile configuration: give --loss and --optimizer" in capsys.readouterr().err
    status = main(
        [
            "measure",
            "--model",
            str(tmp_path / "plain.keras"),
            *SIZES,
            "--epochs",
            "2",
            "--dry-run",
            "--loss",
            "mse",
            "--optimizer",
            "sgd",
            "--precision",
            "float32",
        ]
    )
    assert status == 0, capsys.readouterr().err


def test_estimate_a_model_on_the_catalog_and_on_the_measured_machine(capsys, examples: Path, tmp_path: Path):
    folder = tmp_path / "profiles"
    folder.mkdir()
    for path in SHIPPED.glob("*.yaml"):
        (folder / path.name).write_bytes(path.read_bytes())
    assert (
        main(
            [
                "measure",
                "--model",
                str(examples / "gru-text.keras"),
                *SIZES,
                "--epochs",
                "2",
                "--out",
                str(folder),
                "--name",
                "my gru",
            ]
        )
        == 0
    )
    capsys.readouterr()
    argv = [
        "estimate",
        "--model",
        str(examples / "gru-text.keras"),
        "--samples",
        "16",
        "--batch-size",
        "8",
        "--epochs",
        "2",
        "--profiles",
        str(folder),
        "--json",
    ]
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)
    gpus = [r for r in rows if r["gpu"]]
    machines = [r for r in rows if r.get("machine")]
    assert len(gpus) > 40 and all(r["source"] == "estimated" for r in rows)
    # From the post's LSTM to a GRU on an H100: the range is wide, and says why.
    h100 = next(r for r in gpus if r["catalog_id"] == "h100-sxm" and r["precision"] == "float32")
    assert h100["high"] / h100["low"] > 8
    assert "no GPU result of this workload: its description at face value" in h100["basis"]
    assert machines and all("my gru" in r["basis"] for r in machines)  # its own run calibrates the CPU


def test_a_model_profile_gets_catalog_estimates_in_the_analysis(capsys, examples: Path, tmp_path: Path):
    from advisor.store.catalog import load_catalog

    assert (
        main(
            [
                "measure",
                "--model",
                str(examples / "small-cnn.keras"),
                *SIZES,
                "--epochs",
                "2",
                "--out",
                str(tmp_path),
                "--name",
                "cnn",
            ]
        )
        == 0
    )
    frame = results.results_frame(
        [*store.load_profiles(SHIPPED).profiles, store.load_profile(tmp_path / "cnn.yaml")[0]]
    )
    key = frame.loc[frame["profile"] == "cnn", "workload"].iloc[0]
    found = estimates.estimate_catalog(frame, load_catalog(), key)
    assert len(found.rows) > 40 and set(found.rows["workload"]) == {key}
    rec = analysis.recommend(estimates.append_rows(frame, found.rows), "cnn")
    estimated = rec.options[rec.options["source"] == "estimated"]
    assert len(estimated) > 40 and (estimated["low"] < estimated["seconds"]).all()
    # Which option wins depends on this machine's timings (its own faster precision, free, or an estimated GPU); that
    # it is the lowest dollars per speedup of the faster options that fit does not.
    # (a run this tiny may be faster here than any GPU's start-up: then nothing is eligible, and nothing is best).
    ranked = rec.options[rec.options["rank"].notna()]
    assert (rec.best is None) == ranked.empty
    if rec.best is not None:
        assert rec.best.seconds < rec.current.seconds and rec.best.fits is not False
        assert rec.best.dollars_per_speedup_vs_current == ranked["dollars_per_speedup_vs_current"].min()


def test_stacked_lstms_keep_every_step_and_are_not_said_to_fit_a_small_card():
    """4 x LSTM(1024) over 512 steps at batch 256 keeps about 13 GB of gates and states (float32) for the backward
    pass: never said to fit an 8 GB card (counting the layers' outputs alone said 4 GB, and "fits")."""
    from advisor.perf import memory

    layers = [keras.layers.LSTM(1024, return_sequences=True) for _ in range(3)] + [keras.layers.LSTM(1024)]
    model = keras.Sequential([keras.Input((512, 1)), *layers, keras.layers.Dense(1, activation="sigmoid")])
    model.compile(loss="binary_crossentropy", optimizer="adam")
    spec = model_file.workload(model, 937, 256, 1)
    kept = sum(layer["activations_per_sample"] for layer in spec["layers"]) * 256 * 4 / 1e9
    assert kept == pytest.approx(4 * 512 * 6 * 1024 * 256 * 4 / 1e9, rel=0.01)  # gates, cell and hidden per step
    footprint = memory.predict(spec, "float32", "gpu")
    assert footprint.total_gb > 8 * memory.USABLE
    assert memory.largest_batch(spec, "float32", 8.0) < 256


def test_a_softmax_over_every_step_is_counted_at_the_loss_in_both_precisions():
    """Embedding(8000, 1024), 4 x LSTM(1024, return_sequences=True), Dense(8000, softmax) over 512 steps at batch
    256: its output (2.1 G values) is held in float32 at the loss with the loss's float32 copy and the gradient,
    12 bytes a value; in no precision is it said to fit an 8 GB card (mixed_float16 once said 7.5 GB, "fits")."""
    from advisor.perf import memory

    lstms = [keras.layers.LSTM(1024, return_sequences=True) for _ in range(4)]
    model = keras.Sequential(
        [
            keras.Input((512,), dtype="int32"),
            keras.layers.Embedding(8000, 1024),
            *lstms,
            keras.layers.Dense(8000, activation="softmax"),
        ]
    )
    model.compile(loss="sparse_categorical_crossentropy", optimizer="adam")
    spec = model_file.workload(model, 10_000, 256, 1)
    assert memory.output_values_per_sample(spec) == 512 * 8000
    for precision in ("float32", "mixed_float16"):
        footprint = memory.predict(spec, precision, "gpu")
        assert footprint.activation_gb >= 512 * 8000 * 256 * memory.OUTPUT_BYTES / 1e9  # the loss's share alone
        assert footprint.total_gb > 8 * memory.USABLE, precision
        assert memory.largest_batch(spec, precision, 8.0) < 256


CPU_MEMORY_ERROR = 1.5  # how far this run's measured peak may sit from its least-squares prediction either way (it
# read 0.91-0.99x here); bench_memory.py's smaller runs are further off (up to 2.2x over: the allocator's arenas)


def test_a_measured_lstm_peak_on_the_cpu_is_within_its_prediction(tmp_path: Path):
    """A stacked LSTM trained for real on the CPU by ``measure`` in a process of its own, as a user runs it: its
    measured peak (resident memory above the run's start) is within the CPU prediction's error, and the counted parts
    are most of it. The CPU's constants are a least-squares fit (benchmarks/bench_memory.py: a central figure, not a
    bound), so a peak may sit on either side of it: 0.736-0.804 GB here against 0.731 predicted. Measured inside the
    test process instead, it read 0.46-0.74 GB as earlier tests left the process's memory (the allocator reuses what
    they freed), which failed two clean clones' runs ('never above' once, 'within 1.5x' once)."""
    from advisor.perf import memory

    layers = [keras.layers.LSTM(256, return_sequences=True), keras.layers.LSTM(256)]
    model = keras.Sequential([keras.Input((128, 1)), *layers, keras.layers.Dense(1, activation="sigmoid")])
    model.compile(loss="binary_crossentropy", optimizer="adam")
    path = tmp_path / "lstm.keras"
    model.save(path)
    sizes = ["--samples", "512", "--batch-size", "256", "--epochs", "2", "--precision", "float32", "--device", "cpu"]
    out = ["--matmul-size", "64", "--out", str(tmp_path), "--name", "lstm-peak"]
    subprocess.run(
        [sys.executable, "-m", "advisor", "measure", "--model", str(path), *sizes, *out],
        check=True,
        capture_output=True,
        cwd=ROOT,
        timeout=600,
    )
    profile, _ = store.load_profile(tmp_path / "lstm-peak.yaml")
    measured = profile.data["results"][0]["memory"]["peak_gb"]
    predicted = memory.predict(profile.data["workload"], "float32", "cpu")
    assert measured > 0 and 1 / CPU_MEMORY_ERROR <= predicted.total_gb / measured <= CPU_MEMORY_ERROR
    assert predicted.static_gb + predicted.activation_gb >= 0.5 * measured
