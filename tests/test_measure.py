"""Real TensorFlow training on a tiny workload, through the CLI, on the CPU."""

from __future__ import annotations

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
from helpers import ROOT

pytest.importorskip("tensorflow")

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
        (["--device", "gpu"], "--device gpu: no GPU is visible to TensorFlow"),
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
    assert "starting TensorFlow" not in err  # refused before the run starts


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

    from advisor import measure as measure_module

    def exhausted(workload, policy):
        raise tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor with shape[100,4000]")

    monkeypatch.setattr(measure_module, "build_model", exhausted)
    status, _, err = measure(capsys, tmp_path, "--epochs", "2", "--precision", "float32")
    assert status == 1
    assert "advisor: error: out of memory training float32" in err and "--batch-size" in err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


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
        "starting TensorFlow...",
        "advisor: error: --device gpu: no GPU is visible to TensorFlow (check the driver, CUDA_VISIBLE_DEVICES "
        "and that TensorFlow was installed with GPU support, e.g. pip install 'tensorflow[and-cuda]')",
    ]
