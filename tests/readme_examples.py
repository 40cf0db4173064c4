"""The documentation's command-line examples (README.md and docs/reference.md): run them, compare their output,
or rewrite it.

A ``console`` code block holds ``$ python -m advisor ...`` lines, each followed by its output. A line ``...`` ends
an output early (the rest is not compared).

    python tests/readme_examples.py            # check (exit 1 on a difference)
    python tests/readme_examples.py --update   # rewrite the outputs from real runs, and the generated
                                               # sections (the field reference, the definitions)
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = (README, ROOT / "docs" / "reference.md")  # the front page and the reference: both tested
BLOCK = re.compile(r"```console\n(.*?)```", re.S)
PROMPT = "$ python -m advisor "


def examples(text: str) -> list[tuple[str, list[str], bool]]:
    """(command arguments, expected output lines, truncated) for every example in the text."""
    found = []
    for block in BLOCK.findall(text):
        current: tuple[str, list[str]] | None = None
        for line in block.splitlines():
            if line.startswith("$ "):
                if current is not None:
                    found.append(_finish(*current))
                current = (line, []) if line.startswith(PROMPT) else None
            elif current is not None:
                current[1].append(line)
        if current is not None:
            found.append(_finish(*current))
    return found


def _finish(command: str, lines: list[str]) -> tuple[str, list[str], bool]:
    while lines and not lines[-1].strip():
        lines.pop()
    truncated = bool(lines) and lines[-1].strip() == "..."
    if truncated:
        lines = lines[:-1]
    return command.removeprefix(PROMPT), [line.rstrip() for line in lines], truncated


_WORKDIR: list[Path] = []


def workdir() -> Path:
    """Where the examples run: a folder with a copy of the shipped profiles as ``profiles`` (the examples' default
    folder), made once; nothing is written into the checkout (loading a folder writes its index beside it)."""
    if not _WORKDIR:
        folder = Path(tempfile.mkdtemp(prefix="advisor-readme-"))
        shutil.copytree(ROOT / "profiles", folder / "profiles", ignore=shutil.ignore_patterns(".*"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _WORKDIR.append(folder)
    return _WORKDIR[0]


def run(arguments: str) -> list[str]:
    """Standard output of ``python -m advisor ARGUMENTS``, run in-process in :func:`workdir`."""
    sys.path.insert(0, str(ROOT))
    from advisor.cli import main

    out = io.StringIO()
    previous = Path.cwd()
    os.chdir(workdir())
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            main(shlex.split(arguments))
    finally:
        os.chdir(previous)
    lines = [line.rstrip() for line in out.getvalue().splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def differences(text: str) -> list[str]:
    problems = []
    for arguments, expected, truncated in examples(text):
        actual = run(arguments)
        shown = actual[: len(expected)] if truncated else actual
        if shown != expected:
            problems.append(
                f"$ python -m advisor {arguments}\n--- README\n"
                + "\n".join(expected)
                + "\n--- actual\n"
                + "\n".join(shown)
            )
    return problems


def updated(text: str) -> str:
    """The README with every example's output replaced by a real run (keeping each '...' cut)."""

    def block(match: re.Match) -> str:
        out = []
        lines = match.group(1).splitlines()
        index = 0
        while index < len(lines):
            line = lines[index]
            index += 1
            if not line.startswith(PROMPT):
                out.append(line)
                continue
            body = []
            while index < len(lines) and not lines[index].startswith("$ "):
                body.append(lines[index])
                index += 1
            _, expected, truncated = _finish(line, list(body))
            actual = run(line.removeprefix(PROMPT))
            out += [line, *([*actual[: max(len(expected), 1)], "..."] if truncated else actual)]
            if index < len(lines):
                out.append("")
        return "```console\n" + "\n".join(out) + "\n```"

    return BLOCK.sub(block, text)


def docs_text() -> str:
    """The front page and the reference together, for tests that look a fact up wherever it is written."""
    return "\n\n".join(path.read_text(encoding="utf-8") for path in DOCS)


def generated_sections(text: str) -> str:
    """The text with its generated sections (where it has them) rewritten from the code (tests check they match)."""
    sys.path.insert(0, str(ROOT))
    from advisor.format import metrics, schema
    from advisor.llm import stack

    for name, body in (
        ("field-reference", schema.markdown_reference()),
        ("metric-definitions", metrics.markdown_definitions()),
        ("training-stacks", stack.markdown_reference()),
    ):
        start, end = f"<!-- {name}:start -->\n", f"<!-- {name}:end -->"
        if start not in text:
            continue
        before, rest = text.split(start, 1)
        text = before + start + body + end + rest.split(end, 1)[1]
    return text


if __name__ == "__main__":
    stale = 0
    for path in DOCS:
        name, content = path.relative_to(ROOT), path.read_text(encoding="utf-8")
        if "--update" in sys.argv:
            path.write_text(updated(generated_sections(content)), encoding="utf-8")
            print(f"{name} examples updated")
        else:
            found = differences(content)
            stale += len(found)
            print("\n\n".join(f"{name}: {f}" for f in found) or f"{name} examples match")
    raise SystemExit(1 if stale else 0)
