"""The documentation cannot drift from the code: the examples of the README and of docs/reference.md are run and
their output compared."""

from __future__ import annotations

import pytest
from readme_examples import DOCS, README, differences, examples

pytestmark = pytest.mark.slow  # every example run, the cross-validation among them


def test_the_readme_has_examples_of_the_main_commands():
    commands = {arguments.split()[0] for arguments, _, _ in examples(README.read_text(encoding="utf-8"))}
    assert {"list", "compare", "recommend"} <= commands


@pytest.mark.parametrize("path", DOCS, ids=lambda path: path.name)
def test_every_example_prints_what_the_documentation_shows(path):
    found = differences(path.read_text(encoding="utf-8"))
    assert not found, f"{path.name} is stale (python tests/readme_examples.py --update):\n\n" + "\n\n".join(found)


def test_the_readme_is_a_front_page_that_links_every_part_of_the_reference():
    front, reference = (path.read_text(encoding="utf-8") for path in DOCS)
    assert len(front.splitlines()) < 150
    assert "bash scripts/app.sh" in front and "bash scripts/test.sh" in front  # the two commands
    for line in reference.splitlines():
        if line.startswith("## "):
            assert f"]({DOCS[1].relative_to(README.parent).as_posix()}#" in front and f"[{line[3:]}](" in front, line
