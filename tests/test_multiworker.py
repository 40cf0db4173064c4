"""Several machines, for real: two and three worker processes on localhost ports, CPU devices, a tiny workload.

Every failure a user can meet ends with one line on every surviving worker and no profile: a worker that never
joins, a port in use, workloads that differ, a worker that dies, Ctrl-C of the chief.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from advisor.format import schema
from helpers import ROOT, Output, free_ports, needs, start_workers, worker_env

pytestmark = [pytest.mark.slow, needs("tensorflow")]  # real TensorFlow processes joining over gRPC

TINY = [
    "--units",
    "4",
    "--timesteps",
    "3",
    "--samples",
    "32",
    "--batch-size",
    "8",
    "--matmul-size",
    "64",
    "--device",
    "cpu",
]
LONG = [
    "--units",
    "32",
    "--timesteps",
    "20",
    "--samples",
    "1024",
    "--batch-size",
    "32",
    "--matmul-size",
    "64",
    "--device",
    "cpu",
    "--epochs",
    "60",
    "--precision",
    "float32",
]


def finish_all(outputs: list[Output], timeout: float = 120) -> list[tuple[int, str, str]]:
    try:
        return [output.finish(timeout) for output in outputs]
    finally:
        for output in outputs:
            output.process.kill()


def last_line(err: str) -> str:
    return err.strip().splitlines()[-1]


def test_two_workers_train_together_and_the_chief_writes_the_profile(tmp_path: Path):
    outputs = [Output(p) for p in start_workers([*TINY, "--epochs", "3", "--out", str(tmp_path)], 2)]
    (chief, _, chief_err), (other, other_out, other_err) = finish_all(outputs)
    assert chief == 0, chief_err
    assert other == 0, other_err
    assert "Traceback" not in chief_err + other_err
    assert "done; the chief writes the profile" in other_out
    files = list(tmp_path.iterdir())
    assert len(files) == 1, files  # the chief alone writes
    profile = yaml.safe_load(files[0].read_text())
    problems, _ = schema.validate(profile, files[0].name, expected_id=files[0].stem)
    assert problems == []
    assert profile["cluster"]["workers"] == 2 and profile["cluster"]["devices_per_worker"] == 1
    assert profile["cluster"]["collective"] == "RING"
    assert profile["cluster"]["link"].startswith("loopback")
    assert profile["device"]["count"] == 2
    for result in profile["results"]:
        scaling = result["scaling"]
        assert scaling["workers"] == 2 and scaling["devices"] == 2
        assert scaling["speedup"] == pytest.approx(scaling["single_device_seconds"] / result["total_seconds"], rel=1e-3)
        assert result["checks"]["replicas"] == 2
        assert result["checks"]["training_step"] == "custom (strategy.run)"
        assert len(result["epoch_seconds"]) == 3
    # one model trained across both: every epoch's loss is the same on both workers
    chief_losses = [line.split("loss ")[1] for line in chief_err.splitlines() if "2 workers: epoch" in line]
    other_losses = [line.split("loss ")[1] for line in other_err.splitlines() if "2 workers: epoch" in line]
    assert chief_losses == other_losses and len(chief_losses) == 6  # two precisions x three epochs


def test_three_workers(tmp_path: Path):
    outputs = [
        Output(p) for p in start_workers([*TINY, "--epochs", "2", "--precision", "float32", "--out", str(tmp_path)], 3)
    ]
    results = finish_all(outputs)
    assert [status for status, _, _ in results] == [0, 0, 0], results[0][2]
    profile = yaml.safe_load(next(tmp_path.iterdir()).read_text())
    assert profile["results"][0]["scaling"]["workers"] == 3
    assert profile["results"][0]["checks"]["replicas"] == 3


def test_a_worker_that_never_joins_is_named(tmp_path: Path):
    first, second = free_ports(2)
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "advisor",
            "measure",
            *TINY,
            "--epochs",
            "2",
            "--out",
            str(tmp_path),
            "--workers",
            f"localhost:{first},localhost:{second}",
            "--worker-index",
            "0",
            "--join-timeout",
            "5",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=worker_env(),
    )
    assert completed.returncode == 1, completed.stderr
    assert last_line(completed.stderr) == (
        f"advisor: error: worker 1 (localhost:{second}) did not join within 5 s (nothing listens there); "
        "no profile written"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_port_in_use_is_one_line_on_every_worker(tmp_path: Path):
    outputs_ports = free_ports(2)
    with socket.socket() as squatter:
        squatter.bind(("", outputs_ports[1]))
        squatter.listen()
        addresses = f"localhost:{outputs_ports[0]},localhost:{outputs_ports[1]}"
        command = [
            sys.executable,
            "-m",
            "advisor",
            "measure",
            *TINY,
            "--epochs",
            "2",
            "--out",
            str(tmp_path),
            "--workers",
            addresses,
            "--join-timeout",
            "5",
            "--worker-index",
        ]
        pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, "env": worker_env()}
        processes = [subprocess.Popen([*command, str(index)], cwd=ROOT, **pipes) for index in (0, 1)]
        results = finish_all([Output(p) for p in processes])
    (chief, _, chief_err), (other, _, other_err) = results
    assert other == 1 and last_line(other_err) == (
        f"advisor: error: worker 1 (localhost:{outputs_ports[1]}): port {outputs_ports[1]} is in use by another "
        "program (Address already in use); free it or give this worker another port"
    )
    assert chief == 1 and "join within 5 s; no profile written" in last_line(chief_err)
    assert "Traceback" not in chief_err + other_err
    assert list(tmp_path.iterdir()) == []


def test_workers_measuring_different_workloads_say_so(tmp_path: Path):
    outputs = [
        Output(p)
        for p in start_workers([*TINY, "--epochs", "2", "--out", str(tmp_path)], 2, extra={1: ["--units", "6"]})
    ]
    results = finish_all(outputs)
    for status, _, err in results:
        assert status == 1, err
        assert "measures a different workload than the chief: workload.units 6 there, 4 on the chief" in last_line(err)
        assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_a_worker_that_dies_stops_the_others(tmp_path: Path):
    outputs = [Output(p) for p in start_workers([*LONG, "--out", str(tmp_path)], 2)]
    try:
        outputs[1].wait_for("2 workers: epoch 3/")
        outputs[1].process.kill()
        status, _, err = outputs[0].finish(timeout=60)
    finally:
        for output in outputs:
            output.process.kill()
    assert status == 1, err
    assert "worker 1 (localhost:" in last_line(err) and "stopped answering while training float32" in last_line(err)
    assert last_line(err).endswith("no profile written") and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_of_the_chief_stops_every_worker_and_writes_nothing(tmp_path: Path):
    outputs = [Output(p) for p in start_workers([*LONG, "--out", str(tmp_path)], 2)]
    try:
        outputs[0].wait_for("2 workers: epoch 3/")
        outputs[0].process.send_signal(signal.SIGINT)
        started = time.monotonic()
        (chief, _, chief_err), (other, _, other_err) = [output.finish(timeout=60) for output in outputs]
        stopped_within = time.monotonic() - started
    finally:
        for output in outputs:
            output.process.kill()
    assert chief == 130 and "interrupted" in last_line(chief_err), chief_err
    assert other == 1 and "the chief (worker 0, localhost:" in last_line(other_err), other_err
    assert "stopped answering" in last_line(other_err)
    assert "Traceback" not in chief_err + other_err
    assert stopped_within < 60
    assert list(tmp_path.iterdir()) == []
