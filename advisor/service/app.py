"""The collection service's HTTP API, on FastAPI (served by uvicorn: ``advisor serve``).

- ``POST /api/v1/results`` (``Authorization: Bearer TOKEN``; ``?private=true`` keeps it out of every listing):
  a profile's YAML, checked by :func:`advisor.service.checks.check_upload` before anything is stored. 201 with its
  id and URL (200: the same content was already stored; the same id). Refusals: 4xx with the rule, the field and
  what to do in one line.
- ``GET /api/v1/results?workload=KEY&device=DEVICE&after=ID&limit=N``: a page of listed results (JSON), ``next``
  the ``after`` of the next page.
- ``GET /api/v1/results/{id}``: one listed result with its profile (held and private ones are not shown).
- ``GET /api/v1/comparable/{id}``: the listed results a result may be put beside (same workload, precision,
  framework major version and device), fastest first.
- ``GET /api/v1/export.tar.gz``: every listed profile as ``profiles/<id>.yaml``, the folder `--profiles` reads.
- ``GET /api/v1/health``: the schema version and the counts.

The service keeps no uploader address (uvicorn's access log is off) and never stops for a bad upload: a failure of
its own is a 500 that says so, and the transaction it was in is rolled back.
"""

from __future__ import annotations

import io
import json
import logging
import tarfile
import time
from dataclasses import dataclass
from typing import Any, Literal

import yaml

# FastAPI at the top: it resolves the handlers' annotations from this module. Only `advisor serve` and the
# service's tests import this module (the `serve` extra); the CLI and the app never do.
from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from advisor.decision.pipeline import Advisor
from advisor.service import checks, openapi, storage
from advisor.service.checks import Refusal
from advisor.store.write import dump_profile

API = "/api/v1"
RATE_WINDOW_SECONDS = 60
LOG = logging.getLogger("advisor.service")


@dataclass(frozen=True)
class Settings:
    """What a service serves: its database's URL, the reference collection (results and catalog) its plausibility
    checks use, and the submits a token may make in a minute."""

    database: str
    reference: Advisor
    submits_per_minute: int = 60


def create_app(settings: Settings, store: storage.Storage | None = None) -> FastAPI:
    """The API over ``store`` (default: the settings' database, opened and migrated)."""
    database = store or storage.open_storage(settings.database)
    app = FastAPI(title="advisor collection", summary="Contributed training profiles, checked before they are kept")
    app.state.storage = database

    @app.exception_handler(Exception)
    async def failure(request: Request, error: Exception) -> JSONResponse:  # the service's own failure, never a crash
        LOG.exception("request failed: %s %s", request.method, request.url.path)
        return JSONResponse(
            {
                "rule": "service",
                "field": "",
                "message": f"the service failed: {type(error).__name__}",
                "detail": "the service failed; the upload was not stored: try again later",
            },
            status_code=500,
        )

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0] if error.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ())[1:])
        refusal = Refusal("request", f"{first.get('msg', 'not of its type')}", where)
        return JSONResponse(refusal.record(), status_code=refusal.status)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        headers = dict(error.headers or {})
        if error.status_code == 405:  # every method of the path, not only those of the first route that matched it
            headers["Allow"] = ", ".join(openapi.allowed_methods(app.routes, request.url.path))
        return JSONResponse({"detail": error.detail}, status_code=error.status_code, headers=headers)

    _submitting(app, settings, database)
    _reading(app, database)
    _reviewing(app, database)
    generate = app.openapi

    def described() -> dict[str, Any]:  # the generated document, completed once (advisor.service.openapi)
        if not getattr(app.state, "described", False):
            openapi.describe(generate())
            app.state.described = True
        return app.openapi_schema

    app.openapi = described  # type: ignore[method-assign]
    return app


def _result_url(request: Request, result_id: str) -> str:
    return f"{str(request.base_url).rstrip('/')}{API}/results/{result_id}"


def _not_listed(result_id: str) -> JSONResponse:
    message = f"no listed result {result_id}"  # held and private results are never shown
    return JSONResponse({"rule": "not_found", "field": "id", "message": message, "detail": message}, status_code=404)


def _submitting(app: FastAPI, settings: Settings, database: storage.Storage) -> None:
    """``POST /results``: the token and its rate, the encoding and the size, then every check, then one
    transaction."""

    def submit(raw: bytes, hashed: str, private: bool) -> tuple[storage.StoredResult, bool, tuple[str, ...]]:
        accepted = checks.check_upload(raw, settings.reference)
        return (*database.add(accepted, dump_profile(accepted.profile), hashed, private), accepted.dropped)

    @app.post(f"{API}/results")
    async def post_result(request: Request, private: bool = False) -> Response:
        try:
            hashed = await run_in_threadpool(
                _authorised, database, request.headers.get("authorization", ""), settings.submits_per_minute
            )
            encoding = request.headers.get("content-encoding", "identity").lower()
            if encoding not in ("", "identity"):
                raise Refusal("encoding", f"Content-Encoding {encoding} is not taken: send the YAML text itself")
            raw = await _body(request)
            stored, new, dropped = await run_in_threadpool(submit, raw, hashed, private)
        except Refusal as error:
            return JSONResponse(error.record(), status_code=error.status)
        body = {
            "id": stored.id,
            "profile_id": stored.profile_id,
            "status": stored.status,
            "reason": stored.reason,
            "url": _result_url(request, stored.id),
            "new": new,
            "dropped": [f"{path}: not a field of the schema; not stored" for path in dropped],
        }
        return JSONResponse(body, status_code=201 if new else 200)


def _reading(app: FastAPI, database: storage.Storage) -> None:
    """The open readers: pages, one result, the comparable ones, the export, the service's health."""

    @app.get(f"{API}/results")
    def list_results(
        request: Request, workload: str | None = None, device: str | None = None, after: str = "", limit: int = 100
    ) -> dict[str, Any]:
        found = database.page(workload, device, after, limit)
        full = len(found) == max(1, min(limit, storage.PAGE_MAX))
        return {
            "results": [{**r.summary(), "url": _result_url(request, r.id)} for r in found],
            "next": found[-1].id if found and full else None,
        }

    @app.get(API + "/results/{result_id}")
    def get_result(request: Request, result_id: str) -> Response:
        found = database.get(result_id)
        if found is None:
            return _not_listed(result_id)
        if found.status != "listed" and not _may_see(database, request.headers.get("authorization", ""), found.id):
            return _not_listed(result_id)  # held, private and rejected results: their contributor and keepers only
        return JSONResponse(
            {
                **found.summary(),
                "status": found.status,
                "reason": found.reason,
                "url": _result_url(request, found.id),
                "profile": yaml.safe_load(found.document),
            }
        )

    @app.get(API + "/comparable/{result_id}")
    def comparable(result_id: str) -> Response:
        found = database.get(result_id)
        if found is None or found.status != "listed":
            return _not_listed(result_id)
        return JSONResponse(
            {
                key: [{"id": i, "precision": p, "seconds": s} for i, p, s in database.comparable(key)]
                for key in database.comparison_keys(found.id)
            }
        )

    @app.get(f"{API}/export.tar.gz")
    def export(workload: str | None = None, device: str | None = None) -> Response:
        return Response(
            _export(database, workload, device),
            media_type="application/gzip",
            headers={"Content-Disposition": 'attachment; filename="advisor-collection.tar.gz"'},
        )

    @app.get(f"{API}/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "schema_version": database.version, "results": database.counts()}


def _reviewing(app: FastAPI, database: storage.Storage) -> None:
    """The keeper's review of held results: the list with why each was held, and a decision on each (once)."""

    @app.get(f"{API}/review")
    def held_results(request: Request) -> Response:
        try:
            _keeper(database, request.headers.get("authorization", ""))
        except Refusal as error:
            return JSONResponse(error.record(), status_code=error.status)
        return JSONResponse(
            {
                "held": [
                    {
                        **r.summary(),
                        "reason": r.reason,
                        "url": _result_url(request, r.id),
                        "profile": yaml.safe_load(r.document),
                    }
                    for r in database.held()
                ]
            }
        )

    @app.post(API + "/review/{result_id}")
    def decide(request: Request, result_id: str, decision: Literal["approve", "reject"]) -> Response:
        try:
            _keeper(database, request.headers.get("authorization", ""))
            decided = database.decide(result_id, decision)
            if decided is None:
                found = database.get(result_id)
                state = "no such result" if found is None else f"it is {found.status}, not held"
                raise Refusal("not_held", f"{result_id}: {state}", "id")
        except Refusal as error:
            return JSONResponse(error.record(), status_code=error.status)
        return JSONResponse({**decided.summary(), "status": decided.status, "url": _result_url(request, decided.id)})


def _bearer_hash(header: str) -> str | None:
    scheme, _, token = header.partition(" ")
    return storage.token_hash(token.strip()) if scheme.lower() == "bearer" and token.strip() else None


def _keeper(database: storage.Storage, header: str) -> str:
    """The keeper token's hash; a refusal for no token, an unknown one or a contributor's."""
    hashed = _bearer_hash(header)
    if hashed is None:
        raise Refusal("token", "no keeper token: send Authorization: Bearer TOKEN")
    role = database.token_role(hashed)
    if role is None:
        raise Refusal("unknown_token", "this token is not known to the service")
    if role != "keeper":
        raise Refusal("keeper", "a contributor's token cannot review: ask the service's keeper")
    return hashed


def _may_see(database: storage.Storage, header: str, result_id: str) -> bool:
    """Whether the request's token sent the result or is a keeper's."""
    hashed = _bearer_hash(header)
    return hashed is not None and (database.token_role(hashed) == "keeper" or database.submitted_by(result_id, hashed))


def _authorised(database: storage.Storage, header: str, per_minute: int) -> str:
    """The token's hash, once it is known and within its rate; a refusal otherwise."""
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Refusal(
            "token", "no contributor token: send Authorization: Bearer TOKEN (advisor submit --token, or ADVISOR_TOKEN)"
        )
    hashed = storage.token_hash(token.strip())
    if not database.token_known(hashed):
        raise Refusal("unknown_token", "this token is not known to the service: ask its keeper for one")
    window = int(time.time() // RATE_WINDOW_SECONDS) * RATE_WINDOW_SECONDS
    if database.count_submit(hashed, window) > per_minute:
        raise Refusal("rate_limit", f"over {per_minute} submits a minute with this token: wait a minute")
    return hashed


async def _body(request: Request) -> bytes:
    """The request's body, read no further than one byte past the size limit."""
    limit = checks.parse.MAX_FILE_BYTES
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise Refusal("size", f"{int(declared):,} bytes; a profile is at most {limit:,}")
    chunks, size = [], 0
    async for chunk in request.stream():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise Refusal("size", f"over {limit:,} bytes; a profile is at most {limit:,}")
    return b"".join(chunks)


def _export(database: storage.Storage, workload: str | None, device: str | None) -> bytes:
    """Every listed profile (of the workload and device, where given) as ``profiles/<id>.yaml`` in a tar.gz."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        after = ""
        while True:
            page = database.page(workload, device, after, storage.PAGE_MAX)
            for result in page:
                data = result.document.encode("utf-8")
                info = tarfile.TarInfo(f"profiles/{result.profile_id}.yaml")
                info.size, info.mtime, info.mode = len(data), 0, 0o644
                archive.addfile(info, io.BytesIO(data))
            if len(page) < storage.PAGE_MAX:
                break
            after = page[-1].id
    return buffer.getvalue()


def settings_record(settings: Settings) -> str:
    """The settings in one line of JSON (logged at start; the database URL's password left out)."""
    url = settings.database.split("@")[-1] if "@" in settings.database else settings.database
    return json.dumps({"database": url, "submits_per_minute": settings.submits_per_minute})
