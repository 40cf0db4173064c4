"""App speed at any size: a restart and a widget re-run with N profiles, side by side with another checkout.

Targets (issue: fast at any size): 10,000 profiles: restart under 1.5 s, re-run under 0.3 s; 100,000 profiles:
restart under 10 s, re-run under 1 s, memory under 2 GB.

Generates N profiles (measured-style, with 100 epoch times each) in a temporary folder, opens the app with
Streamlit's AppTest, and times the first run and re-runs after widget changes (budget, precision, current hardware).
Each size is opened twice, each time in a fresh process: the first builds the folder's persistent index (no index),
the second is a restart with the index present. The memory is the process's peak resident size.

AppTest compiles the script again at every run (0.17 s here) where the server compiles it once: each process keeps
one script cache, as the server does, so that the figures are the app's own. For the same reason Streamlit's scan
of the installed packages for components, which a server makes once as it starts and AppTest at its first run, is
timed apart ("+ components"): the first run as the app's figure, the restart of a server the two together.

``--before DIR``: the same runs with the code of another checkout (``git worktree add DIR COMMIT``), on a copy of
the same files (each code keeps its own index), in the same run.

Each process keeps the bytecode of what it imports, as Python does by default, where a server restarts: in a
temporary folder (PYTHONPYCACHEPREFIX), warmed by a first run of each code on the shipped profiles (not a figure).
Machines that say PYTHONDONTWRITEBYTECODE=1 (these do) would otherwise compile advisor's modules at every restart,
0.2 s that no user's server spends. ``--no-bytecode`` keeps the machine's setting.

``--restarts K``: K restarts of each size with each code, the codes taking turns, each in a fresh process; the row
is the restart whose first run plus Streamlit's scan is the median, and every restart's sum is listed below the
table (this host's speed changes by 1.5x from one minute to the next: one restart a code is one draw of it).

Usage: python benchmarks/bench_app.py [N ...] [--before DIR] [--no-bytecode] [--restarts K]
       (default 1000 10000; 0: the shipped profiles alone)
"""

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ONE = sys.argv[1:2] == ["--one"]  # a child process: one app session with one code, its timings printed as JSON


def time_app(folder: Path, app_root: Path) -> dict:
    os.environ["ADVISOR_PROFILES"] = str(folder)
    from streamlit.runtime.scriptrunner import script_cache
    from streamlit.testing.v1 import app_test, local_script_runner
    from streamlit.testing.v1.app_test import AppTest

    shared = script_cache.ScriptCache()  # one per process, as the server keeps one
    app_test.ScriptCache = local_script_runner.ScriptCache = lambda: shared
    at = AppTest.from_file(str(app_root / "streamlit_app.py"), default_timeout=900)
    discovery = _discover_components(at)
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
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # Linux: kilobytes
    return {"cold": cold, "discovery": discovery, "reruns": reruns, "peak_gb": peak_gb}


def _discover_components(at) -> float:
    """Streamlit's scan of the installed packages for components, timed apart: a server makes it once as it starts
    (``Runtime.start``), before any page; AppTest makes it at its first run (0.5 s here, with 175 packages
    installed). Returns its seconds, 0 where this Streamlit has no such scan."""
    try:
        from streamlit.components.v2.component_manager import BidiComponentManager
    except ImportError:
        return 0.0
    if not hasattr(at, "_bidi_component_manager"):  # AppTest's own attribute: it then skips its scan
        return 0.0
    start = time.perf_counter()
    manager = BidiComponentManager()
    manager.discover_and_register_components(start_file_watching=False)
    at._bidi_component_manager = manager
    return time.perf_counter() - start


if ONE:
    app_root = Path(sys.argv[3])
    sys.path.insert(0, str(app_root))  # that checkout's advisor
    print(json.dumps(time_app(Path(sys.argv[2]), app_root)))
    raise SystemExit(0)

from _profiles import ROOT, generate  # noqa: E402

args = sys.argv[1:]
child_env = dict(os.environ)
if "--no-bytecode" in args:
    args.remove("--no-bytecode")
else:
    child_env.pop("PYTHONDONTWRITEBYTECODE", None)
    child_env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="bench-app-pycache-")
before_root = None
if "--before" in args:
    before_root = Path(args[args.index("--before") + 1]).resolve()
    del args[args.index("--before") : args.index("--before") + 2]
restart_count = 1
if "--restarts" in args:
    restart_count = int(args[args.index("--restarts") + 1])
    del args[args.index("--restarts") : args.index("--restarts") + 2]
sizes = [int(arg) for arg in args if int(arg) > 0] if args else [1000, 10000]
codes = [("this code", ROOT)] + ([("before", before_root)] if before_root else [])


def fresh_process(folder: Path, app_root: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--one", str(folder), str(app_root)],
        capture_output=True,
        text=True,
        check=True,
        cwd=app_root,
        env=child_env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


rows = []
spans: list[str] = []
for label, root in codes:
    fresh_process(root / "profiles", root)  # warms the bytecode (and the index) of this code: not a figure
    rows.append((label, "shipped (restart)", fresh_process(root / "profiles", root)))
for size in sizes:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        (Path(tmp) / "profiles").mkdir()
        generate(Path(tmp) / "profiles", size)
        print(f"generated {size:,} profiles in {time.perf_counter() - started:.1f} s", flush=True)
        folders = {}
        for label, root in codes:
            folder = Path(tmp) / "profiles"
            if label == "before":  # its own copy: each code's index is its own
                folder = Path(tmp) / "before"
                shutil.copytree(Path(tmp) / "profiles", folder, ignore=shutil.ignore_patterns(".*"))
            folders[label] = folder
            rows.append((label, f"{size:,} (no index)", fresh_process(folder, root)))
            print(f"  {label}: index built", flush=True)
        restarts: dict[str, list[dict]] = {label: [] for label, _ in codes}
        for _ in range(restart_count):  # the codes take turns: a slower minute of the host falls on both
            for label, root in codes:
                restarts[label].append(fresh_process(folders[label], root))
        for label, _ in codes:
            found = restarts[label]
            if len(found) == 1:
                rows.append((label, f"{size:,} (restart)", found[0]))
                continue
            whole = [f["cold"] + f["discovery"] for f in found]  # each restart's page and Streamlit's scan
            middle = found[sorted(range(len(found)), key=lambda i: whole[i])[len(found) // 2]]
            rows.append((label, f"{size:,} (restart, median)", middle))
            spans.append(
                f"{label:>10}  {size:,} restarts, first run + components: "
                + ", ".join(f"{w:.2f}" for w in whole)
                + " s"
            )

print(
    f"{'code':>10}  {'profiles':>20}  {'first run':>10}  {'+ components':>12}  {'re-run median':>14}  {'max':>7}"
    f"  {'peak memory':>11}"
)
for label, what, found in rows:
    reruns = found["reruns"]
    print(
        f"{label:>10}  {what:>20}  {found['cold']:>8.2f} s  {found['discovery']:>10.2f} s"
        f"  {statistics.median(reruns):>12.3f} s  {max(reruns):>5.2f} s  {found['peak_gb']:>8.2f} GB"
    )
for line in spans:
    print(line)
