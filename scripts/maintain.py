"""The maintainers' commands: refit what the advisor ships and print the checks (not for users: `advisor` is theirs).

    python scripts/maintain.py command-table            # the README's command table, from the CLI's parsers
    python scripts/maintain.py llm-crossval [--write]   # language-model speed held out; --write: the file
    python scripts/maintain.py memory-fit [--write]     # memory on the published peaks; --write: constants
    python scripts/maintain.py fp8-fit                  # the tuned FP8 stack's fit and the MLPerf check

Each writes its file whole (a temporary file renamed over it), never half.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "advisor" / "data"


def write_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in its folder: a reader sees the old file or the new."""
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, encoding="utf-8", suffix=".tmp") as out:
        out.write(text)
    os.replace(out.name, path)
    print(f"written: {path.relative_to(ROOT)}")


def command_table(args: argparse.Namespace) -> None:
    from advisor.cli import build_parser
    from advisor.commands.reference import markdown_table

    print(markdown_table(build_parser()))


def llm_crossval(args: argparse.Namespace) -> None:
    from advisor.llm import throughput_crossval as crossval
    from advisor.perf.estimates import calibration_samples
    from advisor.render.fits import llm_crossval_text
    from advisor.store import load_profiles
    from advisor.store.catalog import DEFAULT_CATALOG, load_catalog
    from advisor.store.results import results_frame

    frame = results_frame(load_profiles(ROOT / "profiles").profiles)
    summary = crossval.run(calibration_samples(frame, load_catalog(DEFAULT_CATALOG))).summary()
    print(llm_crossval_text(summary))
    if args.write:
        head = (
            "# Written by python scripts/maintain.py llm-crossval --write (see advisor/llm/throughput_crossval.py). "
            "Do not edit.\n"
        )
        write_whole(DATA / crossval.FILE, head + yaml.safe_dump(crossval.widths_document(summary), sort_keys=False))


def memory_fit(args: argparse.Namespace) -> None:
    from advisor.llm import job_memory as memory
    from advisor.llm import validation
    from advisor.render.fits import memory_fit_text

    report = validation.cross_validate()
    if args.write:
        write_whole(DATA / memory.FIT_FILE, validation.fit_file_text(report))
        memory.load_fit.cache_clear()
    print(memory_fit_text(report))


def fp8_fit(args: argparse.Namespace) -> None:
    from advisor.render.fits import fp8_fit_text
    from advisor.store.catalog import DEFAULT_CATALOG, load_catalog

    print(fp8_fit_text(load_catalog(DEFAULT_CATALOG)))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="maintain.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, run in (
        ("command-table", command_table),
        ("llm-crossval", llm_crossval),
        ("memory-fit", memory_fit),
        ("fp8-fit", fp8_fit),
    ):
        sub = commands.add_parser(name, help=run.__name__.replace("_", " "))
        if name in ("llm-crossval", "memory-fit"):
            sub.add_argument("--write", action="store_true", help="write the shipped file too")
        sub.set_defaults(run=run)
    args = parser.parse_args(argv)
    args.run(args)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
