"""Real TensorFlow training on a tiny workload, through the CLI, on the CPU."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from advisor import store
from advisor.cli import main
from helpers import HAS_GPU, ROOT, needs

pytestmark = [pytest.mark.slow, needs("tensorflow")]  # real TensorFlow, JAX and PyTorch training

TINY = ["--units", "4", "--timesteps", "3", "--samples", "16", "--batch-size", "8", "--matmul-size", "64"]


def measure(capsys, tmp_path: Path, *extra: str) -> tuple[int, str, str]:
    status = main(["measure", *TINY, "--out", str(tmp_path), *extra])
    out, err = capsys.readouterr()
    return status, out, err


def test_measure_writes_a_valid_profile_with_both_precisions(capsys, tmp_path: Path):
    status, out, err = measure(
        capsys, tmp_path, "--epochs", "3", "--name", "Tiny CPU", "--price-usd", "0", "--device", "cpu"
    )
    assert status == 0, err
    path = tmp_path / "tiny-cpu.yaml"
    assert f"profile written to {path}" in out
    assert f"to contribute it: advisor submit {path}" in out  # nothing is sent by measure itself
    profile, warnings = store.load_profile(path)
    assert warnings == []
    data = profile.data
    assert data["device"]["kind"] == "cpu"
    assert data["software"]["keras_backend"] == "tensorflow"
    assert data["workload"]["units"] == 4 and data["workload"]["epochs"] == 3
    assert data["price"]["usd"] == 0
    assert data["provenance"]["method"] == "measured"
    by_precision = {r["precision"]: r for r in data["results"]}
    assert set(by_precision) == {"float32", "mixed_bfloat16"}  # "mixed" means bfloat16 on a CPU
    for result in by_precision.values():
        assert len(result["epoch_seconds"]) == 3
        assert result["first_epoch_seconds"] == result["epoch_seconds"][0]
        assert result["steady"]["count"] == 2
        assert result["estimated"] is False
        assert result["total_seconds"] == pytest.approx(sum(result["epoch_seconds"]), rel=1e-3)
        assert result["throughput"]["matmul_peak_gflops"] > 0
        assert 0 <= result["final_accuracy"] <= 1
        # the peak memory the run used: on a CPU, the peak resident memory above the run's start (Linux)
        assert result["memory"]["peak_gb"] >= 0 and "VmHWM" in result["memory"]["method"]
    assert by_precision["mixed_bfloat16"]["checks"]["lstm_compute_dtype"] == "bfloat16"
    assert by_precision["mixed_bfloat16"]["checks"]["output_dtype"] == "float32"
    assert by_precision["float32"]["checks"]["lstm_compute_dtype"] == "float32"
    assert "epoch 3/3" in err and "elapsed" in err

    # The same name again takes the next free slug; the first file is untouched.
    before = path.read_bytes()
    status, out, err = measure(capsys, tmp_path, "--epochs", "2", "--name", "Tiny CPU", "--precision", "float32")
    assert status == 0, err
    assert (tmp_path / "tiny-cpu-2.yaml").exists() and path.read_bytes() == before


def test_json_output_is_only_the_result(capsys, tmp_path: Path):
    status, out, err = measure(
        capsys, tmp_path, "--epochs", "2", "--precision", "float32", "--json", "--mixed-policy", "mixed_float16"
    )
    assert status == 0, err
    result = json.loads(out)
    assert Path(result["path"]).exists()
    assert result["profile"]["results"][0]["precision"] == "float32"
    assert result["profile"]["price"]["usd"] is None
    assert "epoch 2/2" in err


def test_quick_stops_early_and_marks_the_estimate(capsys, tmp_path: Path):
    status, _, err = measure(capsys, tmp_path, "--epochs", "40", "--precision", "float32", "--quick", "--name", "quick")
    assert status == 0, err
    result = store.load_profile(tmp_path / "quick.yaml")[0].data["results"][0]
    assert result["estimated"] is True
    assert 4 <= result["epochs_run"] <= 4  # 10% of 40 epochs caps the run at 4 (first + 3 steady)
    assert result["estimate"]["method"].startswith("first epoch + 39 x median")
    assert result["total_seconds"] > sum(result["epoch_seconds"])


def test_explicit_mixed_float16_policy(capsys, tmp_path: Path):
    status, out, err = measure(capsys, tmp_path, "--epochs", "2", "--precision", "mixed_float16", "--dry-run")
    assert status == 0, err
    assert "mixed_float16" in out and "no profile written" in out
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        pytest.param(
            ["--device", "gpu"],
            "--device gpu: no GPU is visible to TensorFlow",
            marks=pytest.mark.skipif(HAS_GPU, reason="expects no GPU: this machine has one"),
        ),
        (["--precision", "float64"], "unsupported precision 'float64'"),
        (["--precision", "mixed,mixed_bfloat16"], "listed twice"),
        (["--price-date", "soon"], "--price-date must be a date"),
        (["--epochs", "0"], "must be 1 or more"),
    ],
)
def test_clear_errors(capsys, tmp_path: Path, extra, message):
    status, _, err = measure(capsys, tmp_path, "--epochs", "2", *extra)
    assert status == 1
    assert message in err
    assert err.strip().splitlines()[-1].startswith("advisor: error:")
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_unwritable_output_fails_before_training(capsys, tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    status, _, err = measure(capsys, blocker / "out", "--epochs", "2")
    assert status == 1
    assert "cannot create the output folder" in err
    assert "starting tensorflow" not in err  # refused before the run starts (the run prints "starting tensorflow...")


@pytest.mark.parametrize(
    ("sig", "when"),
    [(signal.SIGINT, "epoch 3/"), (signal.SIGTERM, "epoch 3/"), (signal.SIGINT, "matmul peak")],
    ids=["SIGINT-training", "SIGTERM-training", "SIGINT-matmul"],
)
def test_an_interrupted_run_writes_no_file(tmp_path: Path, sig, when):
    out_dir = tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-m", "advisor", "measure", *TINY, "--epochs", "100000", "--out", str(out_dir)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    seen = []
    deadline = time.monotonic() + 120
    try:
        for line in process.stderr:
            seen.append(line)
            if when in line:
                break
            assert time.monotonic() < deadline, "".join(seen)
        process.send_signal(sig)
        _, rest = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130, "".join(seen) + rest
    assert "interrupted" in rest and "Traceback" not in rest
    assert list(out_dir.iterdir()) == []  # the folder was made up front; nothing written, no temporary file


def test_out_of_memory_is_a_one_line_error(capsys, tmp_path: Path, monkeypatch):
    import tensorflow as tf

    from advisor.measure import train

    def exhausted(workload, policy):
        raise tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor with shape[100,4000]")

    monkeypatch.setattr(train, "build_model", exhausted)
    status, _, err = measure(capsys, tmp_path, "--epochs", "2", "--precision", "float32")
    assert status == 1
    assert "advisor: error: out of memory training float32" in err and "--batch-size" in err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(HAS_GPU, reason="asks for a GPU and expects none: this machine has one")
def test_tensorflow_start_up_lines_are_silenced():
    """A failing run prints the advisor's own lines only, not TensorFlow's start-up log."""
    completed = subprocess.run(
        [sys.executable, "-m", "advisor", "measure", *TINY, "--epochs", "1", "--device", "gpu", "--dry-run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 1
    assert completed.stderr.strip().splitlines() == [
        "starting tensorflow...",
        "advisor: error: --device gpu: no GPU is visible to TensorFlow (check the driver, CUDA_VISIBLE_DEVICES "
        "and that TensorFlow was installed with GPU support, e.g. pip install 'tensorflow[and-cuda]')",
    ]


def run_measure(*argv: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """``python -m advisor measure`` in a fresh process (a Keras backend is chosen once per process)."""
    return subprocess.run(
        [sys.executable, "-m", "advisor", "measure", *TINY, *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={k: v for k, v in os.environ.items() if k not in ("KERAS_BACKEND", "JAX_PLATFORMS")},
    )


def test_the_jax_backend_runs_the_same_model_on_the_cpu(tmp_path: Path):
    pytest.importorskip("jax")
    completed = run_measure("--backend", "jax", "--epochs", "3", "--out", str(tmp_path), "--name", "jax run")
    assert completed.returncode == 0, completed.stderr
    assert "starting jax..." in completed.stderr and "epoch 3/3" in completed.stderr
    data = store.load_profile(tmp_path / "jax-run.yaml")[0].data
    assert data["software"]["framework"] == "jax" and data["software"]["keras_backend"] == "jax"
    assert data["software"]["framework_version"]
    by_precision = {r["precision"]: r for r in data["results"]}
    assert set(by_precision) == {"float32", "mixed_bfloat16"}
    assert by_precision["mixed_bfloat16"]["checks"]["lstm_compute_dtype"] == "bfloat16"
    assert by_precision["float32"]["checks"]["backend"] == "jax"
    assert "cpu" in by_precision["float32"]["checks"]["variables_device"].lower()
    for result in by_precision.values():
        assert len(result["epoch_seconds"]) == 3 and result["throughput"]["matmul_peak_gflops"] > 0


def test_the_torch_backend_runs_the_same_model_on_the_cpu(tmp_path: Path):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed (pip install torch==2.13.0 installs a CPU build on these machines)")
    completed = run_measure("--backend", "torch", "--epochs", "2", "--precision", "float32", "--dry-run", "--json")
    assert completed.returncode == 0, completed.stderr
    profile = json.loads(completed.stdout)["profile"]
    assert profile["software"]["framework"] == "torch" and profile["name"].endswith("(torch)")
    assert profile["results"][0]["checks"]["variables_device"] == "cpu"


def test_two_devices_on_a_cpu_split_in_two(tmp_path: Path):
    completed = run_measure("--devices", "2", "--epochs", "3", "--precision", "float32", "--dry-run", "--json")
    assert completed.returncode == 0, completed.stderr
    profile = json.loads(completed.stdout)["profile"]
    assert profile["device"]["count"] == 2 and profile["name"].startswith("2x ")
    result = profile["results"][0]
    assert result["checks"]["replicas"] == 2
    scaling = result["scaling"]
    assert scaling["devices"] == 2 and scaling["global_batch"] == 8
    assert scaling["speedup"] == pytest.approx(scaling["single_device_seconds"] / result["total_seconds"], rel=1e-3)
    assert scaling["efficiency"] == pytest.approx(scaling["speedup"] / 2, rel=1e-3)
    assert "float32, 1 device: epoch 3/3" in completed.stderr and "float32, 2 devices: epoch 3/3" in completed.stderr


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--backend", "mxnet"], "--backend: unknown backend 'mxnet' (use tensorflow, jax, torch)"),
        (["--devices", "2", "--backend", "jax"], "use --backend tensorflow"),
        (["--scale-batch"], "--scale-batch needs --devices 2 or more"),
    ],
)
def test_backend_and_device_mistakes_are_one_line(capsys, tmp_path: Path, extra, message):
    status, _, err = measure(capsys, tmp_path, "--epochs", "2", *extra)
    assert status == 1 and message in err and err.count("\n") == 1
    assert "starting" not in err  # refused before anything runs


def test_a_missing_backend_package_names_the_extra(capsys, tmp_path: Path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    status, _, err = measure(capsys, tmp_path, "--backend", "torch")
    assert status == 1
    assert "--backend torch: the torch package is not installed: pip install 'advisor[torch]'" in err


def test_a_process_that_runs_keras_on_tensorflow_refuses_another_backend(capsys, tmp_path: Path):
    import keras

    assert keras.backend.backend() == "tensorflow"
    status, _, err = measure(capsys, tmp_path, "--backend", "jax", "--epochs", "2")
    if importlib.util.find_spec("jax") is None:
        assert "pip install 'advisor[jax]'" in err
    else:
        assert "this process already runs Keras on tensorflow; measure --backend jax in a new process" in err
    assert status == 1
