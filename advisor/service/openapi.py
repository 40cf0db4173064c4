"""The service's API description as it behaves: each route's refusals (their statuses from the rules' table, one JSON
shape), the YAML request body with its size limit, the export's media type and the bearer-token scheme. Applied to
FastAPI's generated document once (:func:`describe`), and the Allow header of a 405 listing every method of the path
(:func:`allowed_methods`). Pure over the app's routes."""

from __future__ import annotations

from typing import Any

from advisor.format.schema import json_schema
from advisor.service.checks import RULES
from advisor.store import parse

REFUSAL = {
    "type": "object",
    "required": ["rule", "field", "message", "detail"],
    "properties": {
        "rule": {"type": "string", "description": "the rule that refused it (the reference's table of rules)"},
        "field": {"type": "string", "description": "the profile's field at fault, or empty"},
        "message": {"type": "string"},
        "detail": {"type": "string", "description": "one line: the rule and what to do"},
    },
}
SUBMIT_RULES = (
    "token",
    "unknown_token",
    "rate_limit",
    "encoding",
    "size",
    "yaml",
    "schema_version",
    "validation",
    "privacy",
    "physical_bound",
)
REVIEW_RULES = ("token", "unknown_token", "keeper")
# The statuses each route answers besides 200, by the rules that give them (not_found: a result not listed)
ROUTE_RULES: dict[tuple[str, str], tuple[str, ...]] = {
    ("post", "/api/v1/results"): SUBMIT_RULES,
    ("get", "/api/v1/results/{result_id}"): ("not_found",),
    ("get", "/api/v1/comparable/{result_id}"): ("not_found",),
    ("get", "/api/v1/review"): REVIEW_RULES,
    ("post", "/api/v1/review/{result_id}"): (*REVIEW_RULES, "not_held"),
}
BEARER = {
    "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "a contributor's or a keeper's token (advisor serve --new-token NAME [--keeper])",
    }
}


def _status(rule: str) -> int:
    return 404 if rule == "not_found" else RULES[rule].status


def _refusals(rules: tuple[str, ...]) -> dict[str, Any]:
    """The responses of these rules: one per status, each rule said in its description."""
    out: dict[str, Any] = {}
    for rule in rules:
        status = str(_status(rule))
        entry = out.setdefault(status, {"description": "", "content": {"application/json": {"schema": REFUSAL}}})
        said = RULES[rule].asks if rule in RULES else "no listed result of this id"
        entry["description"] = "; ".join(filter(None, [entry["description"], f"{rule}: {said}"]))
    return out


def _body_schema() -> dict[str, Any]:
    """The profile's JSON Schema as a request body's (its own $schema and $id left out: the document's dialect)."""
    return {key: value for key, value in json_schema().items() if key not in ("$schema", "$id")}


def describe(document: dict[str, Any]) -> dict[str, Any]:
    """FastAPI's generated document, completed: refusals, the request body, the export's type, the token scheme."""
    paths = document.get("paths", {})
    for operations in paths.values():  # a malformed query parameter: the request rule, in the refusal's shape
        for operation in operations.values():
            if "422" in operation.get("responses", {}):
                operation["responses"].update(_refusals(("request",)))
    for (method, path), rules in ROUTE_RULES.items():
        operation = paths.get(path, {}).get(method)
        if operation is not None:
            operation.setdefault("responses", {}).update(_refusals(rules))
            if "token" in rules:
                operation["security"] = [{"bearer": []}]
    submit = paths.get("/api/v1/results", {}).get("post")
    if submit is not None:
        submit["requestBody"] = {
            "required": True,
            "description": f"one profile's YAML (at most {parse.MAX_FILE_BYTES:,} bytes): the profile format's JSON "
            "Schema, written as YAML",
            "content": {"application/yaml": {"schema": _body_schema()}},
        }
        submit["responses"]["201"] = {
            "description": "stored (200: the same content was stored before)",
            "content": {"application/json": {"schema": {"type": "object"}}},
        }
    export = paths.get("/api/v1/export.tar.gz", {}).get("get")
    if export is not None:
        export["responses"]["200"] = {
            "description": "every listed profile as profiles/<id>.yaml",
            "content": {"application/gzip": {"schema": {"type": "string", "format": "binary"}}},
        }
    document.setdefault("components", {}).setdefault("securitySchemes", {}).update(BEARER)
    return document


def allowed_methods(routes: list[Any], path: str) -> list[str]:
    """Every method the app's routes answer on ``path`` (HEAD with GET), for a 405's Allow header."""
    methods: set[str] = set()
    for route in routes:
        regex = getattr(route, "path_regex", None)
        if regex is not None and regex.match(path) and getattr(route, "methods", None):
            methods |= set(route.methods)
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)
