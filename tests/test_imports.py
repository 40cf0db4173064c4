"""TensorFlow, PyTorch, Lightning and transformers are imported only by the measurement and tracking code, when a
run starts.

One fresh interpreter takes every step in turn and says which heavy modules each step brought in: a heavy import
is charged to the step that made it, and the four interpreters this took before cost 3-4 s of the fast tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import ROOT, SHIPPED

HEAVY = ("tensorflow", "keras", "torch", "jax", "lightning", "pytorch_lightning", "transformers")

STEPS = {
    "measure": "import advisor.measure",
    "tracking": "import advisor.track\nfrom advisor.track import torch, keras, lightning, huggingface",
    "library and cli": "\n".join(
        [
            "import advisor",
            "import advisor.decision.analysis, advisor.store, advisor.format.schema",
            "import advisor.render.compare, advisor.render.estimate",
            "import advisor.render.charts",
            "import advisor.measure.hardware, advisor.measure.timing, advisor.perf.workload, advisor.cli",
            "from advisor.cli import main",
            f"main(['list', '--profiles', {str(SHIPPED)!r}])",
            f"main(['recommend', '--current', 'post-cpu-only', '--profiles', {str(SHIPPED)!r}])",
            "main(['measure', '--help'])",
            "main(['estimate', '--gpu', 'rtx-4090'])",
            "main(['catalog'])",
            "import advisor.store.catalog, advisor.perf.perfmodel, advisor.perf.estimates, advisor.decision.costs",
            "import advisor.format.metrics",
            "import advisor.track, advisor.track.session",
            "main(['estimate', '--workload', 'ResNet-50'])",
        ]
    ),
    "service": "import advisor.service.app, advisor.service.checks, advisor.service.client, advisor.service.storage",
    "app": (
        "from streamlit.testing.v1 import AppTest\n"
        f"at = AppTest.from_file({str(ROOT / 'streamlit_app.py')!r}, default_timeout=60).run()\n"
        "assert not at.exception, at.exception"
    ),
}

CHECK = """
import contextlib, io, json, sys
heavy = {heavy!r}
steps = json.loads({steps!r})
found = {{}}
for name, code in steps.items():
    with contextlib.redirect_stdout(io.StringIO()):  # the commands' output is not the report
        exec(compile(code, name, "exec"), {{}})
    found[name] = sorted(m for m in heavy if m in sys.modules and not any(m in f for f in found.values()))
print("HEAVY=" + json.dumps(found))
"""


@pytest.fixture(scope="module")
def heavy_by_step() -> dict[str, list[str]]:
    completed = subprocess.run(
        [sys.executable, "-c", CHECK.format(heavy=HEAVY, steps=json.dumps(STEPS))],
        cwd=SHIPPED.parent,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "ADVISOR_PROFILES": str(SHIPPED), "PYTHONPATH": str(ROOT)},
    )  # in the folder of the session's copy of the profiles: its ./profiles, nothing in the checkout
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1].removeprefix("HEAVY="))


def test_measure_module_imports_tensorflow_only_when_a_run_starts(heavy_by_step):
    assert heavy_by_step["measure"] == []


def test_the_tracking_api_imports_a_framework_only_when_an_adapter_is_made(heavy_by_step):
    assert heavy_by_step["tracking"] == []


def test_library_and_cli_do_not_import_tensorflow(heavy_by_step):
    assert heavy_by_step["library and cli"] == []


def test_the_collection_service_imports_no_framework(heavy_by_step):
    assert heavy_by_step["service"] == []


def test_app_does_not_import_tensorflow(heavy_by_step):
    assert heavy_by_step["app"] == []


def test_the_check_sees_a_heavy_import():
    """The check itself: a step that imports a heavy module is charged with it (json stands in for tensorflow)."""
    code = CHECK.format(heavy=("json", "csv"), steps=json.dumps({"first": "pass", "second": "import csv"}))
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    found = json.loads(completed.stdout.strip().splitlines()[-1].removeprefix("HEAVY="))
    assert found == {"first": ["json"], "second": ["csv"]}
