"""The library's layers: every module has one, and no import runs against them (a lower layer never imports a higher
one). Imports inside functions count too: a lazy import is still a dependency.

The layers, lowest first: the profile format, the store (files, the index, the catalog, the results frame), the
performance model, the decision (costs, the analysis, the pipeline), the renderers (words and charts), the collection
service, the commands. Measuring and tracking sit beside the model: they may use the format, the store and the
workload's definition, and only the commands import them.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import io
import sys
from pathlib import Path

import pytest

from advisor.cli import main
from helpers import ROOT, SHIPPED

FORMAT, STORE, PERF, MEASURE, DECISION, RENDER, SERVICE, COMMANDS, CLI = range(9)
LAYER_NAMES = ("format", "store", "perf", "measure", "decision", "render", "service", "commands", "cli")
# A layer is a package (``format*``: the package and its modules) or a module; a module named alone is placed before
# any package pattern (``llm.advice`` decides, the rest of ``llm`` models). The base modules (the package itself, its
# errors) sit below them all; the command line's parser and dispatcher (``cli``) above the commands it dispatches.
LAYERS = {
    FORMAT: ("advisor", "errors", "format*"),
    STORE: ("store*",),
    PERF: ("perf*", "llm*", "infer*"),
    MEASURE: ("measure*", "track*"),
    DECISION: ("decision*", "llm.advice"),
    RENDER: ("render*",),
    SERVICE: ("service*",),
    COMMANDS: ("commands*",),
    CLI: ("cli", "__main__"),
}
# Imports that run against the layers, each a debt to pay (the test fails when one is paid and still listed, so the
# list only shrinks): none left since the results frame moved into the store (store/results.py).
KNOWN_UPWARD: set[tuple[str, str]] = set()


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT / "advisor").with_suffix("").parts
    name = ".".join(part for part in parts if part != "__init__")
    return name or "advisor"


def layer_of(module: str) -> int:
    for layer, members in LAYERS.items():
        if module in members:
            return layer
    for layer, members in LAYERS.items():
        for member in members:
            if member.endswith("*") and module.split(".")[0] == member[:-1]:
                return layer
    raise AssertionError(f"advisor/{module}: in no layer (add it to LAYERS in {Path(__file__).name})")


def imports_of(path: Path) -> set[str]:
    """The advisor modules a file imports (``from advisor import x``: x, where x is a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "advisor":
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names if alias.name.split(".")[0] == "advisor"]
        for name in names:
            relative = name.removeprefix("advisor").removeprefix(".") or "advisor"
            target = ROOT / "advisor" / relative.replace(".", "/")
            if relative == "advisor" or target.with_suffix(".py").exists() or (target / "__init__.py").exists():
                found.add(relative)
    return found


def upward_imports() -> set[tuple[str, str]]:
    upward = set()
    for path in sorted((ROOT / "advisor").rglob("*.py")):
        module = module_name(path)
        for target in imports_of(path):
            if target != module and target != "advisor" and layer_of(target) > layer_of(module):
                upward.add((module, target))
    return upward


def named_modules(path: Path) -> set[str]:
    """The advisor modules a file names: ``from advisor.pkg import mod`` names ``pkg.mod`` (not the package, which
    Python runs first anyway), ``from advisor.pkg import name`` names ``pkg``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "advisor":
            base = node.module.removeprefix("advisor").removeprefix(".") or "advisor"
            for alias in node.names:
                module = alias.name if base == "advisor" else f"{base}.{alias.name}"
                target = ROOT / "advisor" / module.replace(".", "/")
                is_module = target.with_suffix(".py").exists() or (target / "__init__.py").exists()
                found.add(module if is_module else base)
        elif isinstance(node, ast.Import):
            found.update(
                a.name.removeprefix("advisor").removeprefix(".") or "advisor"
                for a in node.names
                if a.name.split(".")[0] == "advisor"
            )
    return found


def import_circles() -> list[list[str]]:
    """Every group of modules that import one another, directly or through others (lazy imports count)."""
    graph = {module_name(p): named_modules(p) - {"advisor"} for p in sorted((ROOT / "advisor").rglob("*.py"))}
    graph = {module: targets - {module} for module, targets in graph.items()}

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for target in graph.get(todo.pop(), ()):
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        return seen

    reached = {module: reach(module) for module in graph}
    circles = {frozenset(m for m in reached if m in reached[module] and module in reached[m]) for module in graph}
    return sorted(sorted(c) for c in circles if len(c) > 1)


def test_no_modules_import_each_other():
    """No circle of imports, lazy ones included (``perf.estimates`` and ``llm.crossval`` once were one): a module
    that needs another's function takes it from a module both can import."""
    assert import_circles() == []


def test_every_module_is_in_a_layer():
    for path in (ROOT / "advisor").rglob("*.py"):
        layer_of(module_name(path))


def test_no_import_runs_against_the_layers():
    upward = upward_imports()
    described = {
        f"{m} ({LAYER_NAMES[layer_of(m)]}) imports {t} ({LAYER_NAMES[layer_of(t)]})" for m, t in upward - KNOWN_UPWARD
    }
    assert not described, "imports against the layers:\n" + "\n".join(sorted(described))
    paid = KNOWN_UPWARD - upward
    assert not paid, f"no longer imported, take them off KNOWN_UPWARD: {sorted(paid)}"


def test_the_measuring_and_tracking_code_is_imported_by_the_commands_alone():
    for path in (ROOT / "advisor").rglob("*.py"):
        module = module_name(path)
        if layer_of(module) in (MEASURE, COMMANDS, CLI):
            continue
        measuring = {t for t in imports_of(path) if t != "advisor" and layer_of(t) == MEASURE}
        assert not measuring, f"advisor/{module} imports {sorted(measuring)}"


def test_the_command_lines_words_are_read_in_commands_alone():
    """argparse (an option's parser, a Namespace read) is the command line's: no module below ``commands/`` imports
    it, so the library takes typed values and the app and the service call it the same way."""
    readers = []
    for path in sorted((ROOT / "advisor").rglob("*.py")):
        relative = path.relative_to(ROOT / "advisor").as_posix()
        if relative.startswith("commands/") or relative == "cli.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(name == "argparse" or name.startswith("argparse.") for name in names):
                readers.append(relative)
    assert readers == []


MAX_FUNCTION_LINES = 60  # a function a newcomer reads in one screen (issue 37)


def test_no_function_is_longer_than_a_screen():
    sources = [*sorted((ROOT / "advisor").rglob("*.py")), ROOT / "streamlit_app.py"]
    long = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path in sources
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, long


@functools.cache
def _module_of(filename: str) -> str | None:
    try:
        relative = Path(filename).resolve().relative_to(ROOT / "advisor")
    except ValueError:
        return None
    return ".".join(part for part in relative.with_suffix("").parts if part != "__init__") or "advisor"


@pytest.mark.parametrize(
    "args",
    [
        ("recommend", "--current", "post-titan-rtx", "--estimates"),
        ("recommend", "--model-config", "llama-3.1-8b", "--method", "lora", "--goal", "cost"),
    ],
)
def test_recommend_never_climbs_back_to_a_higher_layer(args):
    """Issue 37's target: ``recommend``'s arguments, followed from the command through every call it makes, climb
    back to a higher layer fewer than 8 times. Traced as it runs (a property read, a callback or a sort key count
    as calls; the nearest advisor frame is the caller): a lower layer's code calling a higher layer's, zero times."""
    climbs: set[tuple[str, str]] = set()

    def profile(frame, event, _arg) -> None:
        callee = _module_of(frame.f_code.co_filename) if event == "call" else None
        if callee is None:
            return
        back = frame.f_back
        while back is not None and _module_of(back.f_code.co_filename) is None:
            back = back.f_back
        caller = _module_of(back.f_code.co_filename) if back is not None else None
        if caller is not None and layer_of(caller) < layer_of(callee):
            climbs.add((f"{caller}.{back.f_code.co_name}", f"{callee}.{frame.f_code.co_name}"))

    out = io.StringIO()
    sys.setprofile(profile)
    try:
        with contextlib.redirect_stdout(out):
            status = main(["--profiles", str(SHIPPED), *args])
    finally:
        sys.setprofile(None)
    assert status == 0 and out.getvalue()
    assert climbs == set(), sorted(climbs)


def test_render_takes_types_and_declared_keys_from_the_decision_never_its_functions():
    """Words only in render/: it reads what the decision returns (its types, the keys its records declare) and calls
    none of its functions, so nothing is decided twice or while being worded."""
    import importlib

    called = []
    for path in sorted((ROOT / "advisor" / "render").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("advisor.decision"):
                module = importlib.import_module(node.module)
                for alias in node.names:
                    value = getattr(module, alias.name, None)
                    if not (isinstance(value, type) or alias.name.isupper()):
                        called.append(f"render/{path.name}: {node.module}.{alias.name}")
            elif isinstance(node, ast.Import) and any(a.name.startswith("advisor.decision") for a in node.names):
                called.append(f"render/{path.name}: import {node.names[0].name}")
    assert called == []


def test_the_app_is_a_view_over_the_library():
    """streamlit_app.py lays out what the library decided and render.page worded: under 400 lines, nothing from the
    command line (its parsers, its errors), and no decision module's function called but the pipeline's answers."""
    text = (ROOT / "streamlit_app.py").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 400
    imported = {
        node.module
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("advisor")
    }
    assert not {m for m in imported if m.startswith(("advisor.commands", "advisor.cli"))}
    assert "argparse" not in text


def test_the_library_names_fields_never_flags():
    """Below the command line, a refused value is an InputError naming its field (``lifetime_years``); the command
    line says it as its option (``--lifetime-years``), the app and the service as they name it."""
    flagged = []
    for package in ("decision", "llm", "perf", "infer", "store", "format", "render", "measure", "track", "service"):
        for path in sorted((ROOT / "advisor" / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
                    first = node.exc.args[0]
                    text = first.value if isinstance(first, ast.Constant) else ""
                    if isinstance(first, ast.JoinedStr) and isinstance(first.values[0], ast.Constant):
                        text = first.values[0].value
                    if str(text).startswith("--"):
                        flagged.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert flagged == []
