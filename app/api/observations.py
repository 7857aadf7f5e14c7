"""Observations, jobs and the candidate pool (docs/extraction.md#the-candidate-pool,
docs/api.md#endpoints, docs/api.md#jobs).

`POST /observations` answers 202 once the (redacted) turns are durably in the jobs
table; extraction happens in a worker. Enqueueing to arq is best effort after the
commit: when Redis is down the relay picks the job up later, so nothing is lost.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from starlette.background import BackgroundTask

from app import clock
from app.api.deps import agent, get_ctx
from app.api.facts import readable_scopes
from app.api.pagination import DEFAULT_LIMIT, Cursor, Limit, decode_time_id_cursor, page
from app.api.schemas.candidates import CandidatePage
from app.api.schemas.common import KEYED, NAMED, QUEUES, WRITE, Queued, Rejected, UserId
from app.api.schemas.facts import WRITE_OUTCOMES, WriteResult
from app.api.schemas.observations import MAX_MESSAGES, Job, ObservationsIn
from app.auth import Principal
from app.errors import Forbidden, NotFound, PayloadTooLarge
from app.memory.detectors import redact
from app.queue import OBSERVE, enqueue
from app.services import candidates as candidates_service
from app.services import observations as observations_service
from app.shapes import candidate_json, job_json

router = APIRouter(prefix="/v1", tags=["observations"], responses=KEYED)

MAX_CONTENT_BYTES = 16 * 1024


def _check_size(body: ObservationsIn) -> None:
    if len(body.messages) > MAX_MESSAGES:
        raise PayloadTooLarge(
            f"at most {MAX_MESSAGES} messages per call", {"max_messages": MAX_MESSAGES}
        )
    size = sum(len(m.content.encode()) for m in body.messages)
    if size > MAX_CONTENT_BYTES:
        raise PayloadTooLarge(
            f"message contents over {MAX_CONTENT_BYTES} bytes", {"max_bytes": MAX_CONTENT_BYTES}
        )


def observe_payload(
    body: ObservationsIn, who: Principal, user_id: str, received_at: datetime
) -> dict[str, Any]:
    """The job payload: turns redacted before they rest anywhere
    (docs/gate.md#secrets-never-rest)."""
    return {
        "user_id": user_id,
        "messages": [
            {"role": m.role, "content": redact(m.content), "turn_id": m.turn_id}
            for m in body.messages
        ],
        "scope": body.scope,
        "trace_id": body.trace_id,
        "session_id": body.session_id,
        "source_kind": body.source_kind,
        "received_at": received_at.isoformat(),
        "rights": {
            "key_id": str(who.key_id),
            "role": who.role.value,
            "scopes": list(who.scopes) if who.scopes is not None else None,
            "max_sensitivity": who.max_sensitivity.value,
        },
    }


@router.post(
    "/users/{user_id}/observations",
    status_code=202,
    response_model=Queued,
    responses={**NAMED, **WRITE, **QUEUES},
)
async def post_observations(
    request: Request, user_id: UserId, body: ObservationsIn, who: Principal = agent
) -> JSONResponse:
    _check_size(body)
    if not who.rights.may_write_scope(body.scope):
        raise Forbidden(f"this key may not write scope {body.scope!r}", {"scope": body.scope})
    ctx = get_ctx(request)
    now = clock.now()
    payload = observe_payload(body, who, user_id, now)
    job_id = await observations_service.observe(ctx, who, user_id, payload, now)
    # After the answer is sent: Redis being slow or down never delays or fails the post.
    return JSONResponse(
        {"job_id": str(job_id)},
        status_code=202,
        background=BackgroundTask(enqueue, ctx, job_id, who.tenant_id),
    )


@router.get(
    "/jobs/{job_id}", response_model=Job, response_model_exclude_unset=True, responses=NAMED
)
async def get_job(request: Request, job_id: uuid.UUID, who: Principal = agent) -> dict[str, Any]:
    row = await observations_service.job(get_ctx(request), who, job_id)
    if row is None or not job_visible(who, row):
        raise NotFound("job not found")
    return job_json(row)


def job_scopes(row: Any) -> set[str] | None:
    """The scopes a job works in: an observation's scope; a cleanup's scope filter, else
    the scopes its key was limited to; None for a job over every scope (re-embed, an
    unlimited cleanup)."""
    payload = row["payload"] or {}
    if row["kind"] == OBSERVE:
        return {str(payload.get("scope") or "global")}
    flt = payload.get("filter") or {}
    if flt.get("scope"):
        return {str(flt["scope"])}
    allowed = flt.get("allowed_scopes")
    return {str(a) for a in allowed} if allowed is not None else None


def job_visible(who: Principal, row: Any) -> bool:
    """Like a fact: a scope-limited key sees only jobs within the scopes it may read (404)."""
    readable = readable_scopes(who)
    if readable is None:
        return True
    scopes = job_scopes(row)
    return scopes is not None and scopes <= set(readable)


@router.get("/users/{user_id}/candidates", response_model=CandidatePage, responses=NAMED)
async def list_candidates(
    request: Request,
    user_id: UserId,
    who: Principal = agent,
    status: Annotated[str | None, Query(pattern="^(pending|promoted|rejected|expired)$")] = None,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
) -> dict[str, Any]:
    rows = await candidates_service.list_page(
        get_ctx(request), who, user_id, status, decode_time_id_cursor(cursor), limit + 1
    )
    return page(rows, limit, lambda r: [r["created_at"].isoformat(), str(r["id"])], candidate_json)


@router.post(
    "/users/{user_id}/candidates/{candidate_id}/confirm",
    response_model=WriteResult,
    responses={**WRITE_OUTCOMES, **NAMED, **WRITE},
)
async def confirm_candidate(
    request: Request, user_id: UserId, candidate_id: uuid.UUID, who: Principal = agent
) -> JSONResponse:
    """The user said yes: promote now, as an explicit instruction, through the gate."""
    outcome, after = await candidates_service.confirm(
        get_ctx(request), who, user_id, candidate_id, clock.now()
    )
    body = outcome.body()
    body["candidate"] = candidate_json(after) if after else {"id": str(candidate_id)}
    return JSONResponse(body, status_code=outcome.status_code)


@router.post(
    "/users/{user_id}/candidates/{candidate_id}/reject",
    response_model=Rejected,
    responses={**NAMED, **WRITE},
)
async def reject(
    request: Request, user_id: UserId, candidate_id: uuid.UUID, who: Principal = agent
) -> dict[str, Any]:
    """The user said no: drop it and tombstone its content so extraction stops offering it."""
    await candidates_service.reject(get_ctx(request), who, user_id, candidate_id, clock.now())
    return {"id": str(candidate_id), "status": "rejected"}  # rejected twice: the same answer
