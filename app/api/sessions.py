"""Session memory (docs/api.md#endpoints, docs/sessions.md, docs/sessions.md#turns-and-slots):
turns, slots, read, close.

A session lives in Redis under its tenant's prefix, so another tenant's session id simply
does not exist for the caller (404). User turns are also handed to extraction through
the observations outbox, and count as the user's last interaction.
"""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Body, Request
from fastapi.responses import JSONResponse
from starlette.background import BackgroundTask

from app import clock
from app.api.deps import agent, get_ctx
from app.api.observations import observe_payload
from app.api.schemas.common import KEYED, NAMED, QUEUES, WRITE
from app.api.schemas.observations import MessageIn, ObservationsIn
from app.api.schemas.sessions import (
    Closed,
    Session,
    SessionId,
    Slots,
    TurnAppended,
    TurnIn,
    TurnRetried,
)
from app.api.screened import refuse_secret_keys
from app.auth import Principal
from app.errors import Conflict, Forbidden, InvalidRequest, NotFound, PayloadTooLarge
from app.memory.detectors import redact
from app.queue import enqueue
from app.services import sessions as sessions_service
from app.session.closing import SessionBusy, close_session
from app.session.store import SessionStore, SlotsTooLarge

router = APIRouter(prefix="/v1/sessions", tags=["sessions"], responses={**KEYED, **NAMED})

MAX_CONTENT_BYTES = 16 * 1024
MAX_SLOTS_BYTES = 16 * 1024  # one PUT
MAX_SESSION_SLOTS_BYTES = 4 * MAX_SLOTS_BYTES  # all of a session's slots


def _redact_value(value: Any) -> Any:
    """Slots are user data too: secrets in them never rest in Redis
    (docs/gate.md#secrets-never-rest)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redact_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _redact_value(v) for k, v in value.items()}
    return value


def _check_scope(who: Principal, scope: str) -> None:
    if not who.rights.may_write_scope(scope):
        raise Forbidden(f"this key may not use scope {scope!r}", {"scope": scope})


async def _visible_session(request: Request, who: Principal, sid: str) -> Any:
    # A scope-limited key sees only sessions of scopes it may use (like facts: 404).
    s = await sessions_service.visible_session(get_ctx(request), who, sid)
    request.state.subject_user = s.user_id  # an idempotency record of it is the user's
    return s


@router.post(
    "/{sid}/turns",
    status_code=201,
    response_model=TurnAppended,
    responses={
        200: {
            "model": TurnAppended | TurnRetried,
            "description": "a turn to an existing session, or a retried turn",
        },
        **WRITE,
        **QUEUES,
    },
)
async def post_turn(
    request: Request, sid: SessionId, body: TurnIn, who: Principal = agent
) -> JSONResponse:
    if len(body.content.encode()) > MAX_CONTENT_BYTES:
        raise PayloadTooLarge(
            f"content over {MAX_CONTENT_BYTES} bytes", {"max_bytes": MAX_CONTENT_BYTES}
        )
    ctx = get_ctx(request)
    store = SessionStore(ctx.sessions)
    now = clock.now()
    scope = body.scope or "global"
    _check_scope(who, scope)
    if body.role == "user":
        await sessions_service.admit_user_turn(ctx)
    opened = await store.open(who.tenant_id, sid, body.user_id, scope, now)
    if opened.user_id != body.user_id:
        raise Conflict("this session belongs to another user", {"session_id": sid})
    request.state.subject_user = opened.user_id
    if body.scope is not None and body.scope != opened.scope:
        raise Conflict(
            "the session's scope was fixed by its first turn",
            {"session_id": sid, "scope": opened.scope},
        )
    _check_scope(who, opened.scope)
    if body.turn_id is not None and await store.has_turn(
        who.tenant_id, opened.user_id, sid, body.turn_id
    ):
        # a retried turn: already appended and handed over once
        return JSONResponse(
            {
                "session_id": sid,
                "user_id": opened.user_id,
                "turn_id": body.turn_id,
                "duplicate": True,
                "created": False,
            },
            status_code=200,
        )
    turn_id = body.turn_id
    if turn_id is None:
        turn_id = f"{sid}#{await store.next_turn_number(who.tenant_id, opened.user_id, sid)}"
    # before Redis: secrets never rest (docs/gate.md#secrets-never-rest)
    content = redact(body.content)
    turn = {
        "turn_id": turn_id,
        "role": body.role,
        "content": content,
        "at": now.isoformat(),
        "trace_id": body.trace_id,
    }
    observe = None
    if body.role == "user":  # handed to extraction, through the observations outbox
        observe = _observe_payload(who, opened.user_id, opened.scope, sid, turn, body.trace_id, now)
    count, job_id = await sessions_service.add_turn(ctx, who, sid, opened, turn, observe, now)
    out: dict[str, Any] = {
        "session_id": sid,
        "user_id": opened.user_id,
        "scope": opened.scope,
        "turn_id": turn_id,
        "turns": count,
        "created": opened.created,
        "job_id": str(job_id) if job_id else None,
    }
    background = BackgroundTask(enqueue, ctx, job_id, who.tenant_id) if job_id else None
    return JSONResponse(out, status_code=201 if opened.created else 200, background=background)


def _observe_payload(
    who: Principal,
    user_id: str,
    scope: str,
    sid: str,
    turn: dict[str, Any],
    trace_id: str | None,
    now: Any,
) -> dict[str, Any]:
    """The user turn as an observe job's payload: the same outbox as POST /observations."""
    obs = ObservationsIn(
        messages=[MessageIn(role="user", content=turn["content"], turn_id=turn["turn_id"])],
        trace_id=trace_id,
        scope=scope,
        session_id=sid,
    )
    return observe_payload(obs, who, user_id, now)


@router.put("/{sid}/slots", response_model=Slots, responses=WRITE)
async def put_slots(
    request: Request,
    sid: SessionId,
    body: Annotated[dict[str, Any], Body()],
    who: Principal = agent,
) -> dict[str, Any]:
    """Merge slots: `{"slots": {...}}` (or the bare object); a null value removes a slot."""
    patch = body.get("slots", body) if set(body) <= {"slots"} else body
    if not isinstance(patch, dict):
        raise InvalidRequest("slots must be a JSON object")
    refuse_secret_keys(patch, "slots")  # slot names rest in Redis and audit, unredacted
    if len(orjson.dumps(patch)) > MAX_SLOTS_BYTES:
        raise PayloadTooLarge(f"slots over {MAX_SLOTS_BYTES} bytes")
    ctx = get_ctx(request)
    now = clock.now()
    s = await _visible_session(request, who, sid)
    # Fenced like every write about the user: forget-me clears Redis only after this
    # commits, and a request that began before a forget-me writes nothing.
    try:
        s, merged = await sessions_service.merge_slots(
            ctx,
            who,
            sid,
            s.user_id,
            _redact_value(patch),
            sorted(patch),
            MAX_SESSION_SLOTS_BYTES,
            now,
        )
    except SlotsTooLarge as exc:
        raise PayloadTooLarge(
            f"the session's slots would grow over {MAX_SESSION_SLOTS_BYTES} bytes",
            {"max_bytes": MAX_SESSION_SLOTS_BYTES},
        ) from exc
    request.state.subject_user = s.user_id
    return {"id": sid, "user_id": s.user_id, "slots": merged}


@router.get("/{sid}", response_model=Session)
async def get_session(request: Request, sid: SessionId, who: Principal = agent) -> dict[str, Any]:
    s = await _visible_session(request, who, sid)
    out: dict[str, Any] = s.json()
    return out


@router.post("/{sid}/close", response_model=Closed, responses=WRITE)
async def close(request: Request, sid: SessionId, who: Principal = agent) -> dict[str, Any]:
    """Summary + resume hint as an episodic fact; closing twice writes once."""
    ctx = get_ctx(request)
    await _visible_session(request, who, sid)
    try:
        result = await close_session(
            ctx, who.tenant_id, sid, who.rights, clock.now(), trigger="api"
        )
    except SessionBusy as exc:
        raise Conflict("the session is being closed; retry shortly") from exc
    if result is None:
        raise NotFound("session not found")
    return result.json()
