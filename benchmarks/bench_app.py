"""App speed with many profiles: a widget change re-runs the page in under 0.5 s with 1,000 profiles.

Generates N profiles (measured-style, with 100 epoch times each) in a temporary folder, opens the app
with Streamlit's AppTest, and times the cold first run (loading, cached afterwards) and re-runs after
widget changes (budget, precision, current hardware). Side by side with the 3 shipped profiles.

Each size is opened twice, each time in a fresh process: the first run builds the folder's persistent index, the
second is a restart with the index present.

Usage: python benchmarks/bench_app.py [N ...]   (default 1000 10000; 0: the shipped profiles alone)
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _profiles import ROOT, generate
from streamlit.testing.v1 import AppTest

ONE = sys.argv[1:2] == ["--one"]  # a child process: one app session, its timings printed as JSON
sizes = [] if ONE else [int(arg) for arg in sys.argv[1:] if int(arg) > 0] if sys.argv[1:] else [1000, 10000]


def time_app(folder: Path) -> tuple[float, list[float]]:
    os.environ["ADVISOR_PROFILES"] = str(folder)
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=600)
    start = time.perf_counter()
    at.run()
    cold = time.perf_counter() - start
    assert not at.exception, at.exception
    reruns = []
    current = at.sidebar.selectbox(key="current")
    choices = [current.options[1], current.options[-1]]
    actions = [
        lambda: at.sidebar.number_input(key="budget").set_value(1500),
        lambda: at.sidebar.radio(key="precision").set_value("float32"),
        lambda: at.sidebar.selectbox(key="current").set_value(choices[0]),
        lambda: at.sidebar.number_input(key="budget").set_value(4000),
        lambda: at.sidebar.radio(key="precision").set_value("Best of both"),
        lambda: at.sidebar.selectbox(key="current").set_value(choices[-1]),
    ]
    for action in actions:
        action()
        start = time.perf_counter()
        at.run()
        reruns.append(time.perf_counter() - start)
        assert not at.exception, at.exception
    return cold, reruns


if ONE:
    cold, reruns = time_app(Path(sys.argv[2]))
    print(json.dumps({"cold": cold, "reruns": reruns}))
    raise SystemExit(0)


def fresh_process(folder: Path) -> tuple[float, list[float]]:
    out = subprocess.run([sys.executable, __file__, "--one", str(folder)], capture_output=True, text=True, check=True)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    return found["cold"], found["reruns"]


rows = []
base_cold, base_reruns = time_app(ROOT / "profiles")
rows.append(("shipped", base_cold, base_reruns))
for size in sizes:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        generate(Path(tmp), size)
        print(f"generated {size} profiles in {time.perf_counter() - started:.1f} s", flush=True)
        cold, reruns = fresh_process(Path(tmp))
        rows.append((f"{size:,} (no index)", cold, reruns))
        cold, reruns = fresh_process(Path(tmp))
        rows.append((f"{size:,} (restart)", cold, reruns))

base = statistics.median(base_reruns)
print(f"{'profiles':>20}  {'first run':>10}  {'widget re-run median':>20}  {'max':>6}  {'vs shipped':>10}")
for label, cold, reruns in rows:
    median = statistics.median(reruns)
    print(f"{label:>20}  {cold:>8.2f} s  {median:>18.3f} s  {max(reruns):>4.2f} s  {median / base:>9.2f}x")
