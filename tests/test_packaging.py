"""A non-editable install works: the wheel holds every module and the catalog, and runs from another folder."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from advisor.store.catalog import load_catalog
from helpers import ROOT, SHIPPED

pytestmark = pytest.mark.slow  # builds a wheel and a virtual environment


def run(*argv: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=600)


def test_the_wheel_installs_and_runs_from_another_folder(tmp_path: Path):
    dist = tmp_path / "dist"
    # built from a copy of the sources: setuptools writes its build/ folder beside what it builds, never the checkout
    source = shutil.copytree(
        ROOT,
        tmp_path / "source",
        ignore=shutil.ignore_patterns(
            ".git", "build", "*.egg-info", "__pycache__", ".*cache", ".hypothesis", "venv", ".venv"
        ),
    )
    built = run(
        sys.executable, "-m", "pip", "wheel", source, "--no-deps", "--no-build-isolation", "-w", dist, cwd=tmp_path
    )
    assert built.returncode == 0, built.stderr
    wheel = next(dist.glob("advisor-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "advisor/measure/backends/tf_backend.py",
        "advisor/measure/peak_memory.py",
        "advisor/data/catalog.yaml",
        "advisor/data/crossval.yaml",
        "advisor/data/catalog.schema.json",
    ):
        assert needed in names, needed

    # A fresh environment that sees none of the machine's packages: the wheel and its declared dependencies (the
    # core's, and the measure extra's TensorFlow) are all it has, as for a user who runs pip install advisor.
    env = tmp_path / "env"
    assert run(sys.executable, "-m", "venv", env, cwd=tmp_path).returncode == 0
    python, advisor = env / "bin" / "python", env / "bin" / "advisor"
    installed = run(
        python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", f"{wheel}[measure]", cwd=tmp_path
    )
    assert installed.returncode == 0, installed.stderr
    isolated = run(
        python, "-c", "import importlib.util; print(importlib.util.find_spec('streamlit') is None)", cwd=tmp_path
    )
    assert isolated.stdout.strip() == "True"  # the app's Streamlit, which this machine's Python has, is not seen
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = run(python, "-c", "import advisor; print(advisor.__file__)", cwd=elsewhere)
    assert str(env) in where.stdout, where.stdout  # the wheel's advisor, not the checkout's

    catalog = run(advisor, "catalog", cwd=elsewhere)
    assert catalog.returncode == 0, catalog.stderr
    shipped = len(load_catalog().gpus)  # the wheel's catalog is the checkout's: every entry and memory option
    assert catalog.stdout.startswith(f"GPU catalog: {shipped} GPUs")
    recommend = run(advisor, "recommend", "--current", "post-cpu-only", "--profiles", SHIPPED, cwd=elsewhere)
    assert recommend.returncode == 0, recommend.stderr
    assert "Recommendation:" in recommend.stdout
    tiny = ["--units", "4", "--timesteps", "3", "--samples", "16", "--batch-size", "8", "--matmul-size", "64"]
    measure = run(advisor, "measure", "--dry-run", "--epochs", "1", *tiny, "--precision", "float32", cwd=elsewhere)
    assert measure.returncode == 0, measure.stderr
    assert "no profile written" in measure.stdout
    assert list(elsewhere.iterdir()) == []  # nothing written where it ran
