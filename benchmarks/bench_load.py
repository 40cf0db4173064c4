"""Loading a profiles folder at scale, side by side in one run.

Targets (issue: the profile collection; issue: fast at any size):
- a cold load costs at most 4x what PyYAML's C parser (CSafeLoader) alone takes on the same files,
  with every limit and check kept; a folder's first load (no index: every file parsed, checked and indexed) within
  2.5x, for the profiles (``store.load_profiles``) and for the app's results frame (``results.load_frame``);
- after adding one profile to N, the reload costs about one profile.
Also times the pure-Python fallback and, when a git checkout of the code before this change is
given (``--before DIR``), that code's cold load of the same files.

Usage: python benchmarks/bench_load.py [N ...] [--before DIR]   (default 1000 10000)
"""

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from _profiles import generate

from advisor import store
from advisor.store import index, results

args = sys.argv[1:]
before_root = None
if "--before" in args:
    before_root = Path(args[args.index("--before") + 1])
    del args[args.index("--before") : args.index("--before") + 2]
sizes = [int(arg) for arg in args] or [1000, 10000]


def before_cold(folder: Path) -> str:
    """The first load of another checkout's advisor (run in its own process, with its own code)."""
    if before_root is None:
        return "-"
    with tempfile.TemporaryDirectory() as tmp:  # a copy without this code's index: its first load, as this code's
        copy = Path(tmp) / "profiles"
        shutil.copytree(folder, copy, ignore=shutil.ignore_patterns(".*"))
        return _before_cold(copy)


def _before_cold(folder: Path) -> str:
    snippet = (
        "import sys, time; from advisor import store; start = time.perf_counter(); "
        f"loaded = store.load_profiles({str(folder)!r}); print(time.perf_counter() - start, len(loaded.profiles))"
    )
    out = subprocess.run([sys.executable, "-c", snippet], cwd=before_root, capture_output=True, text=True, check=True)
    seconds, _ = out.stdout.split()
    return f"{float(seconds):.2f} s"


def best_of(runs: int, function) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def c_parser_alone(folder: Path) -> None:
    for path in sorted(folder.glob("*.yaml")):
        yaml.load(path.read_bytes(), Loader=yaml.CSafeLoader)  # the baseline: C parser, safe constructor


def first_load(folder: Path, load) -> None:
    """A folder's first load: no index yet (and a new cache, as a new process has)."""
    (folder / index.INDEX_NAME).unlink(missing_ok=True)
    load(folder, store.ProfileCache())


def main() -> None:
    print(
        f"{'profiles':>9}  {'CSafeLoader':>11}  {'first load':>10}  {'ratio':>6}  {'frame, first':>12}  "
        f"{'ratio':>6}  {'indexed':>8}  {'ratio':>6}  {'pure Python':>11}  "
        f"{'before':>8}  {'reload, none changed':>20}  {'reload, +1 file':>15}  {'per file (cold)':>15}"
    )
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            generate(folder, size)
            c_alone = best_of(3, lambda folder=folder: c_parser_alone(folder))
            first = best_of(3, lambda folder=folder: first_load(folder, store.load_profiles))
            frame_first = best_of(3, lambda folder=folder: first_load(folder, results.load_frame))
            cold = best_of(3, lambda folder=folder: store.load_profiles(folder, store.ProfileCache()))
            assert len(store.load_profiles(folder).profiles) == size
            pure = "-"
            if size <= 1000:
                parser = store.parse  # the module that holds the YAML loaders
                original = parser._SAFE_LOADER
                parser._SAFE_LOADER, parser._StrictLoader = yaml.SafeLoader, parser._StrictPureLoader
                try:
                    pure = f"{best_of(1, lambda folder=folder: store.load_profiles(folder)):.2f} s"
                finally:
                    parser._SAFE_LOADER = original
                    parser._StrictLoader = type("_StrictLoader", (parser._StrictKeys, original), {})
            old = before_cold(folder)
            cache = store.ProfileCache()
            store.load_profiles(folder, cache)
            unchanged = statistics.median(
                [best_of(1, lambda folder=folder, cache=cache: store.load_profiles(folder, cache)) for _ in range(3)]
            )
            generate(folder, 1, start=size)  # one more profile
            reads = cache.reads
            plus_one = best_of(1, lambda folder=folder, cache=cache: store.load_profiles(folder, cache))
            assert cache.reads == reads + 1
            print(
                f"{size:>9,}  {c_alone:>9.2f} s  {first:>8.2f} s  {first / c_alone:>5.2f}x  {frame_first:>10.2f} s  "
                f"{frame_first / c_alone:>5.2f}x  {cold:>6.2f} s  {cold / c_alone:>5.2f}x  {pure:>11}  {old:>8}  "
                f"{unchanged:>18.3f} s  {plus_one:>13.3f} s  {1000 * cold / size:>12.2f} ms"
            )


main()
