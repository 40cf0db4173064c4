"""One vocabulary: no precision, goal, source or workload-kind word is written as a literal outside
advisor/format/vocabulary.py.

A word used as a field's name (a subscript, ``.get("estimated")``, a ``Field("estimated", ...)`` row or a dict key
naming a field of a profile) is a name, not the vocabulary; everything else takes the word from its StrEnum.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from advisor.format.vocabulary import Goal, Precision, PrecisionFilter, Source, WorkloadKind
from helpers import ROOT

WORDS = {member.value for kind in (Precision, PrecisionFilter, Goal, Source, WorkloadKind) for member in kind} - {"any"}
FILES = [*sorted((ROOT / "advisor").rglob("*.py")), ROOT / "streamlit_app.py"]
FIELD_NAME_KEYS = {"estimated"}  # a result's boolean field of that name (schema.RESULT), written by measure
# A workload kind's word used as something else, each looked at: (file, the line's text, why it is not the kind).
NOT_THE_WORD = {
    ("advisor/render/catalog.py", '("model", lambda r: r["name"]),'): "the models table's column head",
    ("advisor/render/catalog.py", 'left={"id", "model", "config.json"}'): "that table's column heads",
    ("advisor/llm/config.py", 'Path(file).parent.name or "model"'): "a config's name when it has none",
    ("advisor/measure/model_file.py", '"model": model.get_config(),'): "the Keras config's key, hashed",
    ("advisor/commands/measure_options.py", '    "model",  # the option'): "the measure option's name",
    ("advisor/perf/perfmodel.py", 'workload.get("name", "model")'): "a model workload's name when it has none",
    ("advisor/store/collection.py", '**({"model": described["model"]}'): "a published workload's model field",
    ("advisor/commands/crossval.py", '"tracked": crossval.tracked_errors'): "crossval --json's key",
    ("advisor/commands/arguments.py", 'name = f"lstm{w.units}'): "a sized LSTM workload's name",
    ("advisor/commands/generation_options.py", '"model": "--model is a Keras'): "the measure option's name",
    ("advisor/commands/listing.py", '{"model": tree.generation.model'): "list --json's key: a generation's model",
    ("advisor/measure/inference_profile.py", '"model": record["model_name"]'): "the generation section's field",
}


def stray_words(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            names.add(id(node.slice))
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in ("get", "Field", "pop", "setdefault"):
                names.add(id(node.args[0]))
            if called in ("getattr", "hasattr") and len(node.args) > 1:  # an attribute's name
                names.add(id(node.args[1]))
        if isinstance(node, ast.Call):
            for keyword in node.keywords:  # Field(..., required_if=("estimated", True)): the field's name
                condition = keyword.arg in ("required_if", "only_if", "required_unless")
                if condition and isinstance(keyword.value, ast.Tuple):
                    names.add(id(keyword.value.elts[0]))
        elif isinstance(node, ast.Dict):
            names.update(id(k) for k in node.keys if isinstance(k, ast.Constant) and k.value in FIELD_NAME_KEYS)
    found = []
    lines = path.read_text(encoding="utf-8").splitlines()
    relative = str(path.relative_to(ROOT))
    excused = [text for file, text in NOT_THE_WORD if file == relative]
    for node in ast.walk(tree):
        word = isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in WORDS
        if word and id(node) not in names and not any(text in lines[node.lineno - 1] for text in excused):
            found.append(f"{relative}:{node.lineno}: {node.value!r}")
    return found


def test_no_precision_goal_or_source_literal_outside_the_vocabulary():
    found = [line for path in FILES if path.name != "vocabulary.py" for line in stray_words(path)]
    assert found == [], "use advisor.format.vocabulary instead:\n" + "\n".join(found)


# Rendered text read back: a word or unit cut off or swapped after formatting (issue 50 found these four).
PARSE_BACKS = (
    re.compile(r"""removesuffix\(\s*["'] \("""),  # a name's " (estimated)" or " (published, ...)" cut off
    re.compile(r"""removesuffix\(\s*["'] s["']"""),  # a formatted duration's unit cut off
    re.compile(r"""\.replace\(\s*["']wk["']"""),  # a table's unit swapped for a sentence's
    re.compile(r"""\.replace\(\s*["'] \(published"""),
)


def test_no_rendered_text_is_parsed_back():
    """Words are made once, in render/, from values: nothing formats a figure or a name and then edits the text."""
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in [*sorted((ROOT / "advisor").rglob("*.py")), ROOT / "streamlit_app.py"]
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if any(pattern.search(line) for pattern in PARSE_BACKS)
    ]
    assert found == []
