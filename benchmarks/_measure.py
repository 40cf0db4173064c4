"""Shared by the benchmarks: one `advisor measure --dry-run --json` run in a fresh process."""

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def measure_result(precision: str, epochs: int | str, *extra: str) -> tuple[dict, float]:
    """The first result of a dry-run measurement, and the process's wall time in seconds."""
    start = time.perf_counter()
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "advisor",
            "measure",
            "--precision",
            precision,
            "--epochs",
            str(epochs),
            "--dry-run",
            "--json",
            "--matmul-size",
            "256",
            *extra,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out)["profile"]["results"][0], time.perf_counter() - start
