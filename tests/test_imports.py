"""TensorFlow, PyTorch, Lightning and transformers are imported only by the measurement and tracking code, when a
run starts."""

from __future__ import annotations

import os
import subprocess
import sys

from helpers import ROOT, SHIPPED

CHECK = """
import sys
{imports}
heavy = sorted(m for m in ("tensorflow", "keras", "torch", "jax", "lightning", "pytorch_lightning", "transformers")
               if m in sys.modules)
print("HEAVY=" + ",".join(heavy))
"""


def modules_after(imports: str) -> str:
    completed = subprocess.run(
        [sys.executable, "-c", CHECK.format(imports=imports)], cwd=SHIPPED.parent, capture_output=True, text=True,
        timeout=120, env={**os.environ, "ADVISOR_PROFILES": str(SHIPPED), "PYTHONPATH": str(ROOT)},
    )  # in the folder of the session's copy of the profiles: the commands' ./profiles, and nothing in the checkout
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.strip().splitlines()[-1].removeprefix("HEAVY=")


def test_library_and_cli_do_not_import_tensorflow():
    imports = "\n".join(
        [
            "import advisor",
            "import advisor.decision.analysis, advisor.store, advisor.format.schema, advisor.render.report",
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
    )
    assert modules_after(imports) == ""


def test_measure_module_imports_tensorflow_only_when_a_run_starts():
    assert modules_after("import advisor.measure") == ""


def test_the_tracking_api_imports_a_framework_only_when_an_adapter_is_made():
    assert modules_after("import advisor.track\nfrom advisor.track import torch, keras, lightning, huggingface") == ""


def test_app_does_not_import_tensorflow():
    imports = (
        "from streamlit.testing.v1 import AppTest\n"
        f"at = AppTest.from_file({str(ROOT / 'streamlit_app.py')!r}, default_timeout=60).run()\n"
        "assert not at.exception, at.exception"
    )
    assert modules_after(imports) == ""
