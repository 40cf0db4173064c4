"""The server's checks of an upload, before anything is stored: a table of rules walked by one function
(:func:`check_upload`). Each refusal names its rule, the field and what to do, with the HTTP status that says the
same (4xx: the contributor's mistake). The profile checks are the very ones ``advisor validate`` and the folder
loader make (:mod:`advisor.store.parse`, :mod:`advisor.format.schema`): one code path.

An accepted upload gets its identity from its content (:func:`content_id`: the SHA-256 of the migrated, normalised
profile), so the same profile sent twice is the same result, stored once; the stored profile's id is the
contributor's id and the first characters of that hash, unique in the collection.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from advisor.decision.pipeline import Advisor
from advisor.errors import AdvisorError, ProfileError
from advisor.format import fields as schema_fields
from advisor.format import schema, typed
from advisor.format.schema import SCHEMA_VERSION, SLUG_MAX, workload_key
from advisor.format.vocabulary import Job
from advisor.service import plausibility, privacy
from advisor.store import parse
from advisor.store.catalog import normalise_name

ID_HASH_CHARACTERS = 10  # of the content hash, appended to a stored profile's id


@dataclass(frozen=True)
class Rule:
    """A check: its name (said in every refusal), the HTTP status of a refusal and what it asks of an upload."""

    name: str
    status: int
    asks: str


RULES = {
    rule.name: rule
    for rule in (
        Rule("token", 401, "a contributor token: Authorization: Bearer TOKEN"),
        Rule("unknown_token", 403, "a token the service knows (its keeper makes them: advisor serve --new-token)"),
        Rule("rate_limit", 429, "at most the service's submits a minute per token"),
        Rule("encoding", 415, "the profile's YAML as UTF-8 text, neither compressed nor an archive"),
        Rule("size", 413, f"at most {parse.MAX_FILE_BYTES:,} bytes"),
        Rule(
            "yaml",
            400,
            f"one YAML document, no aliases or tags, at most {parse.MAX_DEPTH} levels and {parse.MAX_NODES:,} values",
        ),
        Rule("schema_version", 400, f"a profile of schema version {SCHEMA_VERSION} or older (older ones are migrated)"),
        Rule("validation", 422, "a valid profile, as `advisor validate` checks it"),
        Rule(
            "privacy",
            422,
            "no host or user names, email addresses, phone numbers, access tokens, home paths, "
            "serial numbers, UUIDs, MAC or IP addresses (advisor submit scrubs them)",
        ),
        Rule(
            "physical_bound",
            422,
            "times no faster than the device's physical bound (its peak and bandwidth in the catalog)",
        ),
        Rule(
            "request", 422, "query parameters of the types the API description gives (a number where it asks for one)"
        ),
        Rule("keeper", 403, "review: a keeper's token (advisor serve --new-token NAME --keeper)"),
        Rule("not_held", 409, "review: a result that is held (a decision is made once)"),
    )
}


def rules_markdown() -> str:
    """The rules as the reference's table (docs/reference.md: a test keeps it the same)."""
    lines = ["| rule | HTTP status | what an upload must be |", "|---|---|---|"]
    return "\n".join(lines + [f"| `{r.name}` | {r.status} | {r.asks} |" for r in RULES.values()])


class Refusal(AdvisorError):
    """An upload refused by one rule: one line for the contributor, and the HTTP status."""

    def __init__(self, rule: str, message: str, field: str = "") -> None:
        self.rule, self.field, self.message = rule, field, message
        self.status = RULES[rule].status
        super().__init__(self.line())

    def line(self) -> str:
        where = f"{self.field}: " if self.field else ""
        return f"refused by rule {self.rule}: {where}{self.message}"

    def record(self) -> dict[str, Any]:
        """The refusal as the service's JSON body."""
        return {"rule": self.rule, "field": self.field, "message": self.message, "detail": self.line()}


@dataclass(frozen=True)
class Upload:
    """An upload as the checks take it further: the bytes, then the parsed data, then the valid profile's data and
    what the plausibility checks found."""

    raw: bytes
    data: Any = None
    profile: dict[str, Any] | None = None
    warnings: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()  # the unknown fields left out (not stored, never served)
    held: str | None = None


@dataclass(frozen=True)
class Accepted:
    """A profile that passed every check: its content id, the profile as stored (its id made unique), the keys that
    say which results it may be compared with, and whether it is held for review (and why)."""

    id: str
    profile: dict[str, Any]
    profile_id: str
    workload: str
    workload_name: str
    device: str
    catalog_id: str | None
    comparisons: tuple[tuple[str, str, float], ...]  # (precision, comparison key, seconds) per result
    held: str | None = None
    warnings: tuple[str, ...] = field(default=())
    dropped: tuple[str, ...] = field(default=())


def _encoding(upload: Upload, reference: Advisor) -> Upload:
    if upload.raw[:2] in (b"PK", b"\x1f\x8b") or upload.raw[:3] == b"BZh" or upload.raw[:6] == b"\xfd7zXZ\x00":
        raise Refusal("encoding", "this is an archive or compressed data: send the profile's YAML text itself")
    return upload


def _size(upload: Upload, reference: Advisor) -> Upload:
    if len(upload.raw) > parse.MAX_FILE_BYTES:
        raise Refusal("size", f"{len(upload.raw):,} bytes; a profile is at most {parse.MAX_FILE_BYTES:,}")
    return upload


def _yaml(upload: Upload, reference: Advisor) -> Upload:
    try:
        return replace(upload, data=parse.parse_yaml(upload.raw, "upload"))
    except ProfileError as error:
        raise Refusal("yaml", _problem_text(error)) from None


def _version(upload: Upload, reference: Advisor) -> Upload:
    problems = schema.check_version(upload.data, "upload")
    if problems:
        raise Refusal("schema_version", problems[0].message, problems[0].field)
    return upload


def _validation(upload: Upload, reference: Advisor) -> Upload:
    try:
        profile, warnings = parse.profile_from_data(upload.data, "upload")
    except ProfileError as error:
        first = error.problems[0]
        more = (
            f" (and {len(error.problems) - 1} more problem(s): advisor validate lists them)"
            if len(error.problems) > 1
            else ""
        )
        raise Refusal("validation", first.message + more, first.field) from None
    # only what the schema describes is stored and served: an unknown field is dropped, and the answer names it
    known, dropped = schema_fields.known_only(profile.data, schema.PROFILE)
    return replace(upload, profile=known, dropped=tuple(dropped), warnings=tuple(str(w) for w in warnings))


def _privacy(upload: Upload, reference: Advisor) -> Upload:
    found = privacy.findings(upload.data)  # what was sent, unknown fields included (validation only warns of them)
    if found:
        first = found[0]
        raise Refusal("privacy", f"holds {first.rule}: remove it (advisor submit scrubs it for you)", first.field)
    return upload


def _physical_bound(upload: Upload, reference: Advisor) -> Upload:
    verdict = plausibility.judge(upload.profile, reference)
    if verdict.refused:
        raise Refusal("physical_bound", verdict.refused, verdict.field)
    return replace(upload, held=verdict.held)


# The checks in order: the cheap ones on bytes first, the profile's own, then the model's.
CHECKS: tuple[tuple[str, Callable[[Upload, Advisor], Upload]], ...] = (
    ("encoding", _encoding),
    ("size", _size),
    ("yaml", _yaml),
    ("schema_version", _version),
    ("validation", _validation),
    ("privacy", _privacy),
    ("physical_bound", _physical_bound),
)


def check_upload(raw: bytes, reference: Advisor) -> Accepted:
    """Every check of :data:`CHECKS` in turn; the first that fails raises its :class:`Refusal`."""
    upload = Upload(raw)
    for _, check in CHECKS:
        upload = check(upload, reference)
    return _accepted(upload, reference)


def content_id(profile: dict[str, Any]) -> str:
    """The SHA-256 of a profile's canonical JSON (keys sorted): the same content, the same id."""
    text = json.dumps(profile, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _timed_job(profile: Any) -> tuple[str, str, list[tuple[str, float]]]:
    """What a profile timed, as the collection keys it: the job's key (JSON), its name, and (precision or batch,
    seconds) per result. A generation's key is its model, dtype, engine and lengths; its seconds a whole generate."""
    if profile.job == Job.INFERENCE:
        g = profile.generation
        key = [Job.INFERENCE.value, g.model, g.dtype, g.engine, int(g.prompt_tokens), int(g.output_tokens)]
        name = f"{Job.INFERENCE.value}: {g.model}, prompt {g.prompt_tokens} + {g.output_tokens}"
        timed = [(f"{g.dtype} x{r.batch}", float(r.generate.median)) for r in profile.generation_results]
        return json.dumps(key), name, timed
    workload = json.dumps(list(workload_key(dict(profile.workload.raw))), default=str)
    timed = [(str(result.precision), float(result.total_seconds)) for result in profile.results]
    return workload, str(profile.workload.name or ""), timed


def _accepted(upload: Upload, reference: Advisor) -> Accepted:
    profile = typed.build(upload.profile)  # the valid profile, read through its typed tree
    digest = content_id(upload.profile)
    unique = f"{profile.id[: SLUG_MAX - ID_HASH_CHARACTERS - 1]}-{digest[:ID_HASH_CHARACTERS]}"
    gpu = reference.catalog.match(str(profile.device.name)) if reference.catalog is not None else None
    device_key = f"{gpu.id if gpu else normalise_name(str(profile.device.name))}:{profile.device.count or 1}x"
    workload, workload_name, timed = _timed_job(profile)
    software = profile.software
    major = str(software.framework_version or "").split(".")[0] or "any"
    comparisons = tuple(
        (label, f"{workload}|{label}|{software.framework} {major}|{device_key}", seconds) for label, seconds in timed
    )
    return Accepted(
        digest,
        {**upload.profile, "id": unique},
        unique,
        workload,
        workload_name,
        device_key,
        gpu.id if gpu else None,
        comparisons,
        upload.held,
        upload.warnings,
        upload.dropped,
    )


def _problem_text(error: ProfileError) -> str:
    return error.problems[0].message if error.problems else str(error)
