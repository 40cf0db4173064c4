"""One schema, written once: the JSON Schema, the README's field reference and the key order all come
from the field tables in advisor/format/schema.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from readme_examples import docs_text

from advisor import store
from advisor.cli import main
from advisor.format import schema
from advisor.store import collection
from helpers import SHIPPED, load_yaml, valid_profile

jsonschema = pytest.importorskip("jsonschema")

HERE = Path(__file__).resolve().parent
EXPECTED = load_yaml((HERE / "bad_profiles_expected.yaml").read_text(encoding="utf-8"))
SCHEMA_FILE = SHIPPED / "profile.schema.json"


def validator():
    return jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def test_the_schema_command_prints_the_shipped_file(capsys):
    assert main(["schema"]) == 0
    printed = capsys.readouterr().out
    assert json.loads(printed) == json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(json.loads(printed))


def test_every_shipped_profile_validates_against_the_json_schema():
    checker = validator()
    files = sorted(SHIPPED.glob("*.yaml"))
    assert files
    for path in files:
        data = load_yaml(path.read_text(encoding="utf-8"))
        profiles = collection.expand(data) if collection.is_collection(data) else [data]  # a published collection
        for profile in profiles:
            errors = [e.message for e in checker.iter_errors(profile)]
            assert errors == [], f"{path.name} {profile['id']}: {errors}"


def test_a_valid_profile_and_its_optional_nulls_pass():
    data = valid_profile()
    data["host"] = {"cpu": None, "cores": None}
    data["price"]["usd"] = None
    assert list(validator().iter_errors(data)) == []


@pytest.mark.parametrize(
    "case", [c for c in EXPECTED if c.get("json_schema", True) and "make" not in c], ids=lambda c: c["file"]
)
def test_each_bad_profile_the_json_schema_can_express_fails_it(case):
    data = load_yaml((HERE / "bad_profiles" / case["file"]).read_text(encoding="utf-8"))
    assert list(validator().iter_errors(data)), f"{case['file']} passes the JSON Schema"


def test_the_cases_beyond_json_schema_are_few_and_named():
    beyond = [c["file"] for c in EXPECTED if c.get("json_schema") is False]
    assert 0 < len(beyond) < len(EXPECTED) / 2


def test_the_readme_field_reference_is_derived_from_the_tables():
    reference = schema.markdown_reference()
    stale = "docs/reference.md: the field reference is stale (python -m advisor schema --markdown)"
    assert reference in docs_text(), stale
    for field in ("total_seconds", "power_watts", "advisor_version", "steady_epochs_timed"):
        assert f"`{field}`" in reference


def test_canonical_order_follows_the_table():
    data = valid_profile()
    shuffled = dict(reversed(list(data.items())))
    shuffled["results"] = [dict(reversed(list(r.items()))) for r in data["results"]]
    ordered = schema.canonical(shuffled)
    assert list(ordered) == [f.name for f in schema.PROFILE if f.name in data]
    assert list(ordered["results"][0]) == [f.name for f in schema.RESULT if f.name in data["results"][0]]


def test_the_readme_example_profile_is_valid(tmp_path: Path):
    readme = docs_text()
    block = readme.split("```yaml\n# yaml-language-server: $schema=", 1)[1].split("```", 1)[0]
    text = "# yaml-language-server: $schema=" + block
    data = load_yaml(text)
    path = tmp_path / f"{data['id']}.yaml"
    path.write_text(text, encoding="utf-8")
    profile, warnings = store.load_profile(path)
    assert warnings == []
    assert list(validator().iter_errors(data)) == []
    assert profile.data["results"][0]["total_seconds"] > 0
