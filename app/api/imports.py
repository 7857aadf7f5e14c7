"""Bulk writes and imports (docs/api.md#bulk-import): `POST /v1/users/{u}/facts:batch`
(up to 500 of one user's facts, decided in order) and `POST /v1/admin/import` (many
users' facts as NDJSON, generic or mem0's, run as a job)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from starlette.background import BackgroundTask

from app import clock
from app.api.deps import admin, agent, get_ctx
from app.api.facts import MAX_STATEMENT, MAX_VALUE_BYTES, candidate_from, check_source_kind
from app.api.import_lines import ItemReader
from app.api.middleware import IMPORT_MAX_BYTES
from app.api.schemas.common import KEYED, NAMED, WRITE, UserId
from app.api.schemas.imports import (
    MAX_BATCH_ITEMS,
    FactBatchIn,
    FactBatchOut,
    ImportQueued,
)
from app.auth import Principal
from app.errors import PayloadTooLarge
from app.importer import IMPORT_MAX_ITEMS, ImportItem, queue_import, screen_batch, write_batch
from app.memory.imports import counts
from app.queue import enqueue

router = APIRouter(prefix="/v1", tags=["import"], responses=KEYED)


def _check_batch_sizes(body: FactBatchIn) -> None:
    """The size limits of a single write, per item (413, the item's index in `loc`)."""
    if len(body.items) > MAX_BATCH_ITEMS:
        raise PayloadTooLarge(
            f"at most {MAX_BATCH_ITEMS} items per batch", {"max_items": MAX_BATCH_ITEMS}
        )
    for n, item in enumerate(body.items):
        if len(item.statement) > MAX_STATEMENT:
            raise PayloadTooLarge(
                f"item {n}: statement over {MAX_STATEMENT} characters",
                {"fields": [{"loc": ["body", "items", n, "statement"]}]},
            )
        if len(orjson.dumps(item.value)) > MAX_VALUE_BYTES:
            raise PayloadTooLarge(
                f"item {n}: value over {MAX_VALUE_BYTES} bytes as JSON",
                {"fields": [{"loc": ["body", "items", n, "value"]}]},
            )


@router.post(
    "/users/{user_id}/facts:batch",
    response_model=FactBatchOut,
    response_model_exclude_unset=True,
    responses={**NAMED, **WRITE},
)
async def write_facts_batch(
    request: Request, user_id: UserId, body: FactBatchIn, who: Principal = agent
) -> dict[str, Any]:
    """Every item through the gate and the conflict rules, in order (item 2 sees item 1's
    fact), in one transaction; an item's refusal refuses that item only."""
    _check_batch_sizes(body)
    for item in body.items:
        check_source_kind(who, item.source.kind if item.source else None)
    cs = [candidate_from(item, user_id) for item in body.items]
    ctx = get_ctx(request)
    now = clock.now()
    if body.dry_run:
        answers = [s.body() for s in await screen_batch(ctx, who, cs, now)]
    else:
        answers = [o.body() for o in await write_batch(ctx, who, cs, now)]
    items = [{"index": n, **answer} for n, answer in enumerate(answers)]
    return {
        "items": items,
        "summary": counts([i["decision"] for i in items], ("pass",) if body.dry_run else ()),
        "dry_run": body.dry_run,
    }


# ------------------------------------------------------------------------------ import

_NDJSON_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "One item per line (UTF-8 JSON, blank lines skipped): a generic line "
        "(`format=jsonl`: a fact's body with `user_id` and an optional `id`) or a mem0 memory "
        '(`format=mem0`); a line may also be a whole mem0 export (`{"results": [...]}` or a '
        f"list). At most {IMPORT_MAX_BYTES} bytes and {IMPORT_MAX_ITEMS} items.",
        "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
    }
}


class _Lines:
    """The body's lines as (line number, bytes), counted against the import's limits."""

    def __init__(self, request: Request, whole: bool = False) -> None:
        self.request = request
        self.whole = whole  # a JSON document (Content-Type application/json): one "line"
        self.size = 0

    async def __aiter__(self) -> AsyncIterator[tuple[int, bytes]]:
        pending = b""
        number = 0
        async for chunk in self.request.stream():
            self.size += len(chunk)
            if self.size > IMPORT_MAX_BYTES:
                raise PayloadTooLarge(
                    f"import body over {IMPORT_MAX_BYTES} bytes", {"max_bytes": IMPORT_MAX_BYTES}
                )
            pending += chunk
            if self.whole:
                continue
            *lines, pending = pending.split(b"\n")
            for line in lines:
                number += 1
                yield number, line
        if pending:
            yield number + 1, pending


def _whole_document(request: Request) -> bool:
    """A body sent as application/json is one document (e.g. mem0's get_all() answer as
    it is); anything else is read as NDJSON."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return kind == "application/json"


async def read_items(request: Request, fmt: str) -> list[ImportItem]:
    """Every item of the upload, validated line by line as it streams in; malformed lines
    are 422 with their line numbers, and nothing is queued."""
    reader = ItemReader(fmt)
    async for number, raw in _Lines(request, _whole_document(request)):
        reader.add(number, raw)
    return reader.items()


@router.post(
    "/admin/import",
    status_code=202,
    response_model=ImportQueued,
    responses=WRITE,
    openapi_extra=_NDJSON_BODY,
)
async def post_import(
    request: Request,
    who: Principal = admin,
    format: Annotated[Literal["jsonl", "mem0"], Query()] = "jsonl",
    dry_run: Annotated[bool, Query()] = False,
) -> JSONResponse:
    """Many users' facts from another store, as a job: `GET /v1/jobs/{id}` shows
    `result.done` of `result.total` and, at the end, one decision per item."""
    items = await read_items(request, format)
    ctx = get_ctx(request)
    job_id = await queue_import(ctx, who.tenant_id, who.rights, items, format, dry_run, clock.now())
    return JSONResponse(
        {"job_id": str(job_id), "total": len(items), "format": format, "dry_run": dry_run},
        status_code=202,
        background=BackgroundTask(enqueue, ctx, job_id, who.tenant_id),
    )
