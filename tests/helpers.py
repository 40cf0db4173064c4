"""Test helpers: the shipped profiles, valid profiles to mutate, YAML writing. Imported by the tests."""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import socket
import stat
import tempfile
from pathlib import Path

import pytest
import yaml

from advisor.format.schema import DEFAULT_WORKLOAD
from advisor.store.parse import safe_load as load_yaml  # noqa: F401 (libyaml's parser: 1.5 s to 0.15 s a collection)

ROOT = Path(__file__).resolve().parent.parent
# A machine with an NVIDIA GPU (its driver's device node): tests that expect none skip there, saying so.
HAS_GPU = Path("/dev/nvidia0").exists() or Path("/dev/nvidiactl").exists()
CHECKOUT_PROFILES = ROOT / "profiles"


def _shipped_copy() -> Path:
    """A copy of the shipped profiles for this test session (removed at its end): loading a folder writes its index
    beside the files, and the tests leave nothing in the checkout."""
    folder = Path(tempfile.mkdtemp(prefix="advisor-tests-")) / "profiles"
    shutil.copytree(CHECKOUT_PROFILES, folder, ignore=shutil.ignore_patterns(".*"))
    atexit.register(shutil.rmtree, folder.parent, ignore_errors=True)
    return folder


SHIPPED = _shipped_copy()  # the shipped profiles, read-only by convention (tests that change them copy them)
LARGE_COLLECTION = "published-lambda-pytorch.yaml"


def copy_small_shipped(target: Path) -> Path:
    """Copy the shipped profiles without the large published collection (and no index) to ``target``: a test of the
    files, a collection and edits needs them, not its 1,137 profiles (0.7 s a cold load; this folder: 0.06 s)."""
    shutil.copytree(SHIPPED, target, ignore=shutil.ignore_patterns(".*", LARGE_COLLECTION))
    return target


# The fast part of the suite (``-m "not slow"``) runs each property test on a third of its examples, the whole suite
# (CI) on all of them: Hypothesis's own advice, a "dev" profile and a "ci" one. conftest.pytest_configure sets it,
# before the test files are collected.
QUICK_EXAMPLES_SHARE = 3
quick_examples = False


def examples(count: int) -> int:
    """The number of Hypothesis examples for a property test written for ``count`` (a third in the fast part)."""
    return max(count // QUICK_EXAMPLES_SHARE, 10) if quick_examples else count


def needs(module: str, reason: str | None = None) -> pytest.MarkDecorator:
    """Skip where ``module`` is not installed, found without importing it: collecting a test file then costs
    nothing (importing TensorFlow takes 5-8 s here, PyTorch 3 s), and a run that deselects its tests never pays."""
    return pytest.mark.skipif(importlib.util.find_spec(module) is None, reason=reason or f"{module} is not installed")


def valid_profile(profile_id: str = "test-gpu", seconds: float = 100.0, price: float | None = 500.0) -> dict:
    """A small valid measured profile (schema 2)."""
    epochs = [seconds / 4] * 4
    return {
        "schema_version": 2,
        "id": profile_id,
        "name": f"Test {profile_id}",
        "device": {"kind": "gpu", "name": f"Test GPU {profile_id}", "count": 1},
        "host": {"cpu": "Test CPU", "cores": 2},
        "software": {"framework": "tensorflow", "framework_version": "2.21.0"},
        "price": {"usd": price, "date": "2026-11-30", "includes": "the GPU", "source": "test"},
        "workload": {
            "name": "tiny",
            "kind": "lstm",
            "units": 4,
            "timesteps": 3,
            "features": 1,
            "train_samples": 8,
            "batch_size": 4,
            "epochs": 4,
            "optimizer": "adam",
            "learning_rate": 0.001,
        },
        "results": [
            {
                "precision": "float32",
                "total_seconds": seconds,
                "first_epoch_seconds": epochs[0],
                "steady": {"count": 3, "median": epochs[1], "min": epochs[1], "max": epochs[1], "stdev": 0.0},
                "epoch_seconds": epochs,
            }
        ],
        "provenance": {"method": "measured", "advisor_version": "0.1.0", "date": "2026-11-30"},
    }


def post_workload_profile(profile_id: str, seconds: float, price: float | None) -> dict:
    """A valid profile with one float32 result of the post's workload (comparable with the shipped ones)."""
    profile = valid_profile(profile_id, seconds=seconds, price=price)
    profile["workload"] = dict(DEFAULT_WORKLOAD)
    profile["results"] = [{"precision": "float32", "total_seconds": seconds}]
    return profile


def make_special_files(folder: Path, cases: list[dict]) -> list[dict]:
    """Make the corpus's files that cannot be committed (links, a FIFO, a socket, a device, a folder).

    Returns the cases that could be made here (a device needs the right to create one).
    """
    made = []
    for case in cases:
        path = folder / case["file"]
        make = case["make"]
        if make == "symlink-outside":
            path.symlink_to("/etc/passwd")
        elif make == "symlink-inside":
            write_yaml(folder / "linked-target.yaml", valid_profile("linked-target"))
            path.symlink_to("linked-target.yaml")
        elif make == "fifo":
            os.mkfifo(path)
        elif make == "socket":
            server = socket.socket(socket.AF_UNIX)
            server.bind(str(path))
            server.close()  # the socket file stays
        elif make == "device":
            try:
                os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # like /dev/null
            except OSError:
                continue
        elif make == "folder":
            path.mkdir()
            write_yaml(path / "inside.yaml", valid_profile("inside"))
        made.append(case)
    return made


def write_yaml(path: Path, data: object) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def model_profile(profile_id: str = "my-model", seconds: float = 40.0) -> dict:
    """A valid measured profile of a small Keras model (kind model) on a CPU machine."""
    profile = valid_profile(profile_id, seconds=seconds, price=0)
    profile["device"] = {"kind": "cpu", "name": "Test CPU", "count": 1}
    profile["workload"] = {
        "name": "tiny_cnn",
        "kind": "model",
        "train_samples": 8,
        "batch_size": 4,
        "epochs": 4,
        "optimizer": "adam",
        "learning_rate": 0.001,
        "model_hash": "0123456789abcdef",
        "inputs": ["float32[32, 32, 3]"],
        "outputs": ["float32[10]"],
        "loss": "sparse_categorical_crossentropy",
        "parameters": 545098,
        "flops_per_sample": 2.5e8,
        "layers": [
            {
                "name": "conv2d",
                "type": "Conv2D",
                "flops_per_sample": 1.6e8,
                "parameters": 896,
                "sequential_steps": 1,
                "activations_per_sample": 32768,
            },
            {
                "name": "dense",
                "type": "Dense",
                "flops_per_sample": 0.9e8,
                "parameters": 544202,
                "sequential_steps": 1,
                "activations_per_sample": 138,
            },
        ],
    }
    return profile


_SCRIPT_CACHE = None


def app_test(monkeypatch, folder: Path):
    """An AppTest of the app on ``folder`` (``ADVISOR_PROFILES`` set for the test), run once.

    Every AppTest of this process shares one script cache, as the server keeps one: AppTest compiles the script
    again at each run otherwise (0.12-0.17 s a run here)."""
    global _SCRIPT_CACHE
    from streamlit.runtime.scriptrunner import script_cache
    from streamlit.testing.v1 import app_test as app_test_module
    from streamlit.testing.v1 import local_script_runner

    if _SCRIPT_CACHE is None:
        _SCRIPT_CACHE = script_cache.ScriptCache()
        # Streamlit's own module names; if a release renames them, AppTest still runs, compiling at every run.
        for module in (app_test_module, local_script_runner):
            if hasattr(module, "ScriptCache"):
                module.ScriptCache = lambda: _SCRIPT_CACHE
    monkeypatch.setenv("ADVISOR_PROFILES", str(folder))
    at = app_test_module.AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    return at.run()


def free_ports(count: int) -> list[int]:
    """Ports free on this machine now (bound to port 0, then released; the workers bind them again at once)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def worker_env() -> dict[str, str]:
    """This environment as a user's shell has it: without the variables importing TensorFlow into the test process
    set (TF_CPP_MIN_LOG_LEVEL among them), a cluster or a Keras backend; unbuffered."""
    dropped = ("TF_CONFIG", "KERAS_BACKEND", "TF_CPP_MIN_LOG_LEVEL", "TF2_BEHAVIOR")
    return {**{k: v for k, v in os.environ.items() if k not in dropped}, "PYTHONUNBUFFERED": "1"}


def start_workers(
    argv: list[str], count: int, extra: dict[int, list[str]] | None = None, join_timeout: float = 60
) -> list:
    """``advisor measure`` as ``count`` worker processes on localhost ports (worker 0 the chief), each with
    ``argv`` and its own ``extra`` arguments; stderr is a pipe read line by line."""
    import subprocess
    import sys

    addresses = ",".join(f"localhost:{port}" for port in free_ports(count))
    env = worker_env()
    processes = []
    for index in range(count):
        own = [*(extra or {}).get(index, []), "--worker-index", str(index), "--join-timeout", str(join_timeout)]
        command = [sys.executable, "-m", "advisor", "measure", *argv, "--workers", addresses, *own]
        processes.append(
            subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        )
    return processes


class Output:
    """A process's standard error read on a thread (a full pipe would stall a worker), searchable while it runs."""

    def __init__(self, process) -> None:
        import threading

        self.process = process
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float = 120) -> None:
        import time

        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            assert self.process.poll() is None or self._reader.is_alive(), self.text()
            assert time.monotonic() < deadline, f"{text!r} not seen:\n{self.text()}"
            time.sleep(0.05)

    def finish(self, timeout: float = 120) -> tuple[int, str, str]:
        """Wait for the end: (exit status, standard output, standard error)."""
        out = self.process.stdout.read()
        status = self.process.wait(timeout=timeout)
        self._reader.join(timeout=10)
        return status, out, self.text()

    def text(self) -> str:
        return "\n".join(self.lines)


def typed_row(row_class: type, **values: object) -> object:
    """A typed row (:mod:`advisor.decision.rows`) with ``values`` and NaN in every other field: a test's few facts."""
    return row_class(**{name: values.get(name, float("nan")) for name in row_class.columns()})
