"""Facts: explicit writes, reads, corrections, deletion, history, feedback, audit
(docs/api.md#endpoints)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from app import clock
from app.api.deps import agent, check_scope_read, get_ctx, ops
from app.api.pagination import (
    DEFAULT_LIMIT,
    Cursor,
    Limit,
    decode_int_cursor,
    decode_time_id_cursor,
    page,
)
from app.api.schemas.common import KEYED, NAMED, PREDICATE, SCOPE, WRITE, Deleted, UserId
from app.api.schemas.facts import (
    CORRECTABLE,
    WRITE_OUTCOMES,
    AuditPage,
    Fact,
    FactIn,
    FactPage,
    FactPatch,
    FeedbackIn,
    FeedbackOut,
    WriteResult,
)
from app.api.validation import DateTime
from app.auth import Principal, row_visible
from app.auth import readable_scopes as readable_scopes  # re-exported: routers import it here
from app.auth import visible_sensitivities as visible_sensitivities  # likewise
from app.errors import Forbidden, InvalidRequest, PayloadTooLarge
from app.memory.model import (
    Candidate,
    FactType,
    KeyRights,
    Origin,
    Role,
    SourceKind,
)
from app.services import facts as facts_service
from app.shapes import audit_json, fact_json
from app.writer import WriteOutcome

router = APIRouter(prefix="/v1", tags=["facts"], responses=KEYED)

MAX_STATEMENT = 500
MAX_VALUE_BYTES = 4096


def check_sizes(statement: str | None, value: Any, has_value: bool) -> None:
    if statement is not None and len(statement) > MAX_STATEMENT:
        raise PayloadTooLarge(
            f"statement over {MAX_STATEMENT} characters",
            {"fields": [{"loc": ["body", "statement"]}]},
        )
    if has_value and len(orjson.dumps(value)) > MAX_VALUE_BYTES:
        raise PayloadTooLarge(
            f"value over {MAX_VALUE_BYTES} bytes as JSON", {"fields": [{"loc": ["body", "value"]}]}
        )


def check_source_kind(who: Principal, kind: SourceKind | None) -> None:
    if kind is SourceKind.ADMIN_POLICY and who.role is not Role.ADMIN:
        raise Forbidden("source kind admin_policy needs an admin key")


def candidate_from(body: FactIn, user_id: str, origin: Origin = Origin.EXPLICIT) -> Candidate:
    src = body.source
    return Candidate(
        user_id=user_id,
        type=body.type,
        statement=body.statement.strip(),
        value=body.value,
        predicate=body.predicate,
        scope=body.scope,
        source_kind=src.kind if src else None,
        trace_id=src.trace_id if src else None,
        turn_id=src.turn_id if src else None,
        evidence=src.evidence if src else None,
        confidence=body.confidence,
        sensitivity=body.sensitivity,
        valid_from=body.valid_from,
        valid_to=body.valid_to,
        ttl_days=body.ttl_days,
        consent=body.consent,
        origin=origin,
        occurred_at=body.occurred_at,
        keys=tuple(k.strip() for k in body.keys if k.strip()),
    )


@router.post(
    "/users/{user_id}/facts",
    status_code=201,
    response_model=WriteResult,
    responses={**WRITE_OUTCOMES, **NAMED, **WRITE},
)
async def create_fact(
    request: Request, user_id: UserId, body: FactIn, who: Principal = agent
) -> JSONResponse:
    check_sizes(body.statement, body.value, True)
    check_source_kind(who, body.source.kind if body.source else None)
    outcome = await facts_service.create(
        get_ctx(request), who, candidate_from(body, user_id), clock.now()
    )
    return JSONResponse(outcome.body(), status_code=outcome.status_code)


@router.get("/users/{user_id}/facts", response_model=FactPage, responses=NAMED)
async def list_facts(
    request: Request,
    user_id: UserId,
    who: Principal = agent,
    scope: Annotated[str | None, Query(pattern=SCOPE)] = None,
    type: FactType | None = None,
    predicate: Annotated[str | None, Query(pattern=PREDICATE)] = None,
    status: Annotated[str | None, Query(pattern="^(active|superseded|archived)$")] = None,
    source_kind: SourceKind | None = None,
    as_of: DateTime | None = None,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
) -> dict[str, Any]:
    check_scope_read(who, scope)
    rows = await facts_service.list_page(
        get_ctx(request),
        who,
        user_id,
        decode_time_id_cursor(cursor),
        limit + 1,
        scope=scope,
        type=type.value if type else None,
        predicate=predicate,
        status=status,
        source_kind=source_kind.value if source_kind else None,
        as_of=as_of,
    )
    return page(rows, limit, lambda r: [r["created_at"].isoformat(), str(r["id"])], fact_json)


@router.get("/users/{user_id}/facts/{fact_id}", response_model=Fact, responses=NAMED)
async def get_fact(
    request: Request, user_id: UserId, fact_id: uuid.UUID, who: Principal = agent
) -> dict[str, Any]:
    return fact_json(await facts_service.get(get_ctx(request), who, user_id, fact_id))


@router.get("/users/{user_id}/facts/{fact_id}/history", response_model=FactPage, responses=NAMED)
async def fact_history(
    request: Request, user_id: UserId, fact_id: uuid.UUID, who: Principal = agent
) -> dict[str, Any]:
    versions = await facts_service.history(get_ctx(request), who, user_id, fact_id)
    items = [
        fact_json(v)
        for v in versions
        if v["status"] != "deleted" and row_visible(who, v)  # a version above the ceiling
    ]
    return {"items": items, "next_cursor": None}


async def apply_patch(
    request: Request,
    who: Principal,
    rights: KeyRights,
    user_id: str,
    fact_id: uuid.UUID,
    body: FactPatch,
) -> JSONResponse:
    outcome = await patch_outcome(request, who, rights, user_id, fact_id, body)
    return JSONResponse(outcome.body(), status_code=outcome.status_code)


async def patch_outcome(
    request: Request,
    who: Principal,
    rights: KeyRights,
    user_id: str,
    fact_id: uuid.UUID,
    body: FactPatch,
) -> WriteOutcome:
    """A correction through the gate (also the /me page's, app/api/web.py)."""
    has_value = "value" in body.model_fields_set
    check_sizes(body.statement, body.value, has_value)
    check_source_kind(who, body.source.kind if body.source else None)
    if not has_value and all(getattr(body, k) is None for k in CORRECTABLE):
        raise InvalidRequest("nothing to correct: give statement, value or validity")
    changes: dict[str, Any] = {
        k: getattr(body, k)
        for k in ("statement", "confidence", "sensitivity", "valid_from", "valid_to", "consent")
        if k in body.model_fields_set and getattr(body, k) is not None
    }
    if has_value:
        changes["value"] = body.value
    if body.source is not None and who.role is not Role.USER:
        changes.update(
            source_kind=body.source.kind,
            trace_id=body.source.trace_id,
            turn_id=body.source.turn_id,
            evidence=body.source.evidence,
        )
    return await facts_service.correct_fact(
        get_ctx(request), who, rights, user_id, fact_id, changes, clock.now()
    )


@router.patch(
    "/users/{user_id}/facts/{fact_id}",
    response_model=WriteResult,
    responses={**WRITE_OUTCOMES, **NAMED, **WRITE},
)
async def patch_fact(
    request: Request, user_id: UserId, fact_id: uuid.UUID, body: FactPatch, who: Principal = agent
) -> JSONResponse:
    return await apply_patch(request, who, who.rights, user_id, fact_id, body)


async def remove_fact(
    request: Request, who: Principal, user_id: str, fact_id: uuid.UUID
) -> dict[str, Any]:
    await facts_service.delete(get_ctx(request), who, user_id, fact_id, clock.now())
    return {"id": str(fact_id), "status": "deleted"}


@router.delete(
    "/users/{user_id}/facts/{fact_id}", response_model=Deleted, responses={**NAMED, **WRITE}
)
async def delete_fact_route(
    request: Request, user_id: UserId, fact_id: uuid.UUID, who: Principal = agent
) -> dict[str, Any]:
    return await remove_fact(request, who, user_id, fact_id)


@router.post(
    "/users/{user_id}/facts/{fact_id}/feedback",
    response_model=FeedbackOut,
    responses={**NAMED, **WRITE},
)
async def feedback(
    request: Request, user_id: UserId, fact_id: uuid.UUID, body: FeedbackIn, who: Principal = agent
) -> dict[str, Any]:
    """Negative feedback lowers confidence (x0.8): corrections are the signal that a memory
    hurts (docs/architecture.md#evaluation); both directions are counted for stats."""
    row = await facts_service.feedback(
        get_ctx(request), who, user_id, fact_id, body.useful, body.note, clock.now()
    )
    return {
        "id": str(fact_id),
        "confidence": round(float(row["confidence"]), 4),
        "feedback": {"useful": row["feedback_up"], "not_useful": row["feedback_down"]},
    }


@router.get("/users/{user_id}/audit", response_model=AuditPage, responses=NAMED)
async def user_audit(
    request: Request,
    user_id: UserId,
    who: Principal = ops,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
) -> dict[str, Any]:
    rows = await facts_service.audit_page(
        get_ctx(request), who, user_id, decode_int_cursor(cursor), limit + 1
    )
    return page(rows, limit, lambda r: r["id"], audit_json)
