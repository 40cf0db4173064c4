"""Regenerate the bad-profile corpus: ``python tests/bad_profiles/make_corpus.py``.

Each case is a file ``<name>.yaml`` (or .bin) in this folder; ``expected.yaml`` maps it to the
field and the message the advisor must report. The files are committed; this script documents
how each was made.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from helpers import valid_profile  # noqa: E402


def dump(data) -> str:
    return yaml.safe_dump(data, sort_keys=False)


def mutate(name: str, change) -> str:
    data = copy.deepcopy(valid_profile(name))
    change(data)
    return dump(data)


TRACKED = HERE.parent / "fixtures" / "input-bound-mlp.yaml"  # a real profile advisor.track wrote


def mutate_tracked(name: str, change) -> str:
    data = yaml.safe_load(TRACKED.read_text(encoding="utf-8"))
    data["id"] = name
    change(data)
    return dump(data)


def setter(path: str, value):
    def change(data):
        *parents, last = path.split(".")
        target = data
        for key in parents:
            target = target[int(key)] if key.isdigit() else target[key]
        if value is DELETE:
            del target[last]
        elif isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return change


DELETE = object()
NAN = float("nan")

CASES: list[tuple[str, str | bytes | None, str, str]] = []


def case(name: str, content, field: str, message: str) -> None:
    CASES.append((name, content, field, message))


case("not-yaml", "schema_version: 1\nid: [unclosed\n", "", "not valid YAML")
case("empty", "", "", "is empty")
case("top-level-list", "- 1\n- 2\n", "", "a profile must be a YAML mapping, got a list")
case("python-tag", "schema_version: 1\nid: !!python/object/apply:os.system ['echo pwned']\n", "",
     "could not determine a constructor")
case("alias-bomb", "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
     "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n", "",
     "anchors and aliases (*name) are not allowed")
case("deep-nesting", "a: " + "[" * 40 + "]" * 40 + "\n", "", "nested deeper than 20 levels")
case("not-utf8", b"schema_version: 1\nid: \xff\xfe\xfa\n", "", "not UTF-8 text")
case("two-documents", mutate("two-documents", lambda d: None) + "---\nschema_version: 1\n", "",
     "more than one YAML document")
case("duplicate-key", mutate("duplicate-key", lambda d: None) + "id: duplicate-key\n", "", "duplicate key 'id'")
case("no-schema-version", mutate("no-schema-version", setter("schema_version", DELETE)), "schema_version",
     "is missing")
case("newer-schema", mutate("newer-schema", setter("schema_version", 99)), "schema_version",
     "this profile needs a newer advisor")
case("schema-version-string", mutate("schema-version-string", setter("schema_version", "one")), "schema_version",
     "must be an integer")
case("missing-device", mutate("missing-device", setter("device", DELETE)), "device", "is missing")
case("unknown-device-kind", mutate("unknown-device-kind", setter("device.kind", "tpu")), "device.kind",
     "must be one of cpu, gpu; got 'tpu'")
case("negative-seconds", mutate("negative-seconds", setter("results.0.total_seconds", -3)),
     "results[0].total_seconds", "must be greater than 0, got -3")
case("zero-seconds", mutate("zero-seconds", setter("results.0.total_seconds", 0)), "results[0].total_seconds",
     "must be greater than 0, got 0")
case("nan-seconds", mutate("nan-seconds", setter("results.0.total_seconds", NAN)), "results[0].total_seconds",
     "must be a finite number, got nan")
case("infinite-seconds", mutate("infinite-seconds", setter("results.0.total_seconds", float("inf"))),
     "results[0].total_seconds", "must be a finite number, got inf")
case("string-seconds", mutate("string-seconds", setter("results.0.total_seconds", "fast")),
     "results[0].total_seconds", "must be a number, got a string ('fast')")
case("boolean-seconds", mutate("boolean-seconds", setter("results.0.total_seconds", True)),
     "results[0].total_seconds", "must be a number, got a boolean (true)")
case("negative-price", mutate("negative-price", setter("price.usd", -100)), "price.usd", "must be at least 0, got -100")
case("missing-price", mutate("missing-price", setter("price.usd", DELETE)), "price.usd",
     "is missing (write null when the price is unknown)")
case("bad-price-date", mutate("bad-price-date", setter("price.date", "yesterday")), "price.date",
     "must be a date like 2020-12-31")
case("unknown-precision", mutate("unknown-precision", setter("results.0.precision", "float64")),
     "results[0].precision", "must be one of float32, mixed_float16, mixed_bfloat16; got 'float64'")
case("duplicate-precision", mutate("duplicate-precision", lambda d: d["results"].append(copy.deepcopy(d["results"][0]))),
     "results[1].precision", "float32 appears twice")
case("zero-epochs", mutate("zero-epochs", setter("workload.epochs", 0)), "workload.epochs", "must be at least 1, got 0")
case("fractional-units", mutate("fractional-units", setter("workload.units", 10.5)), "workload.units",
     "must be an integer, got a number (10.5)")
case("epochs-run-too-many", mutate("epochs-run-too-many", setter("results.0.epochs_run", 9)),
     "results[0].epochs_run", "9 epochs run but the workload has only 4")
case("too-many-epoch-times", mutate("too-many-epoch-times", setter("results.0.epoch_seconds", [1.0] * 7)),
     "results[0].epoch_seconds", "has 7 epochs but the workload has only 4")
case("total-does-not-match", mutate("total-does-not-match", setter("results.0.total_seconds", 500)),
     "results[0].total_seconds", "does not match the sum of epoch_seconds")
case("id-not-file-name", mutate("someone-else", lambda d: None), "id",
     "'someone-else' does not match the file name ('id-not-file-name' expected)")
case("id-path-traversal", mutate("../../etc/evil", lambda d: None), "id", "must be a slug")
case("empty-results", mutate("empty-results", setter("results", [])), "results", "must be a non-empty list")
case("accuracy-above-one", mutate("accuracy-above-one", setter("results.0.final_accuracy", 1.5)),
     "results[0].final_accuracy", "must be at most 1, got 1.5")
case("estimated-without-method", mutate("estimated-without-method", setter("results.0.estimated", True)),
     "results[0].estimate", "is missing")
case("steady-min-above-max", mutate("steady-min-above-max", setter("results.0.steady", {"min": 9, "max": 1})),
     "results[0].steady", "min (9) is greater than max (1)")
case("control-characters", mutate("control-characters", setter("name", "evil\x1b[31mred")), "name",
     "must not contain control characters")
case("quoted-without-source", mutate("quoted-without-source", setter("provenance", {"method": "quoted"})),
     "provenance.source", "is missing")
case("huge-number", mutate("huge-number", setter("workload.learning_rate", 10**400)), "workload.learning_rate",
     "is implausibly large")
case("device-not-mapping", mutate("device-not-mapping", setter("device", "RTX 4090")), "device",
     "must be a mapping, got a string ('RTX 4090')")
case("tracked-total-not-steps-x-mean", mutate_tracked("tracked-total-not-steps-x-mean",
     setter("results.0.total_seconds", 1.0)), "results[0].total_seconds", "is not workload.steps x step.mean")
case("tracked-without-step", mutate_tracked("tracked-without-step", setter("results.0.step", DELETE)),
     "results[0].step", "is missing (a tracked result says how its steps were timed)")
case("tracked-wait-above-one", mutate_tracked("tracked-wait-above-one", setter("results.0.data_wait.share", 1.5)),
     "results[0].data_wait.share", "must be at most 1, got 1.5")
case("tracked-without-steps", mutate_tracked("tracked-without-steps", setter("workload.steps", DELETE)),
     "workload.steps", "is missing")


# Problems a JSON Schema cannot express: the file is not one YAML document of plain data, or the rule
# spans fields (sums, counts, uniqueness, the file name) or needs a finite-number test. Every other
# case must also fail the shipped JSON Schema (tests/test_schema.py).
BEYOND_JSON_SCHEMA = {
    "not-yaml", "empty", "python-tag", "alias-bomb", "deep-nesting", "not-utf8", "two-documents", "duplicate-key",
    "nan-seconds", "duplicate-precision", "epochs-run-too-many", "too-many-epoch-times", "total-does-not-match",
    "id-not-file-name", "steady-min-above-max", "tracked-total-not-steps-x-mean", "tracked-without-step",
}

# Files that are not regular files cannot all be committed (a FIFO, a socket, a device): the tests make
# them in a temporary copy of this folder with ``helpers.make_special_files`` from these entries.
SPECIAL: list[tuple[str, str, str]] = [
    ("passwd.yaml", "symlink-outside", "is a symbolic link; links in a profiles folder are not followed"),
    ("link-to-profile.yaml", "symlink-inside", "is a symbolic link; links in a profiles folder are not followed"),
    ("pipe.yaml", "fifo", "is a FIFO (named pipe), not a regular file: refused"),
    ("socket.yaml", "socket", "is a socket, not a regular file: refused"),
    ("device.yaml", "device", "is a character device, not a regular file: refused"),
    ("folder.yaml", "folder", "is a folder, not a profile file"),
]


def main() -> None:
    for old in HERE.glob("*.yaml"):
        old.unlink()
    for old in HERE.glob("*.bin"):
        old.unlink()
    expected = []
    for name, content, field, message in CASES:
        path = HERE / f"{name}.yaml"
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        entry = {"file": path.name, "field": field, "message": message}
        if name in BEYOND_JSON_SCHEMA:
            entry["json_schema"] = False
        expected.append(entry)
    for name, make, message in SPECIAL:
        expected.append({"file": name, "field": "", "message": message, "make": make})
    (HERE.parent / "bad_profiles_expected.yaml").write_text(
        "# Each bad profile and the problem the advisor must report (generated by make_corpus.py).\n"
        + yaml.safe_dump(expected, sort_keys=False, width=200),
        encoding="utf-8",
    )
    print(f"{len(CASES)} cases written")


if __name__ == "__main__":
    main()
