"""The README cannot drift from the code: its command-line examples are run and their output compared."""

from __future__ import annotations

import pytest
from readme_examples import README, differences, examples

pytestmark = pytest.mark.slow  # every README example run, the cross-validation among them


def test_the_readme_has_examples_of_the_main_commands():
    commands = {arguments.split()[0] for arguments, _, _ in examples(README.read_text(encoding="utf-8"))}
    assert {"list", "compare", "recommend"} <= commands


def test_every_readme_example_prints_what_the_readme_shows():
    found = differences(README.read_text(encoding="utf-8"))
    assert not found, "README.md is stale (python tests/readme_examples.py --update):\n\n" + "\n\n".join(found)
