"""Recall (docs/recall.md), its traces, and re-embedding (docs/api.md#endpoints `POST
/ops/reembed`)."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.background import BackgroundTask

from app import clock
from app.api.deps import admin, agent, check_scope_read, get_ctx
from app.api.facts import readable_scopes, visible_sensitivities
from app.api.schemas.common import KEYED, NAMED, WRITE, Queued, UserId
from app.api.schemas.recall import (
    RecallRequest,
    RecallResult,
    ReembedRequest,
    Trace,
    TraceId,
)
from app.auth import Principal
from app.errors import Conflict, InvalidRequest
from app.queue import enqueue
from app.recall import recall
from app.services import ops as ops_service
from app.services import traces as traces_service

router = APIRouter(prefix="/v1", tags=["recall"], responses=KEYED)


@router.post("/users/{user_id}/recall", response_model=RecallResult, responses={**NAMED, **WRITE})
async def recall_facts(
    request: Request, user_id: UserId, body: RecallRequest, who: Principal = agent
) -> Response:
    check_scope_read(who, body.scope)
    if body.trace_id is None:  # the request's trace id ties the log lines to the recall
        body = body.model_copy(update={"trace_id": request.state.trace_id})
    out = await recall(get_ctx(request), who, user_id, body, clock.now())
    # The hot path answers its JSON directly: the body is plain str/float/int/None, so
    # FastAPI's generic validation and encoding of the returned dict would add nothing.
    return Response(orjson.dumps(out), media_type="application/json")


def _explain(entry: Any, facts: dict[uuid.UUID, Any], who: Principal) -> dict[str, Any]:
    """One logged recall: its facts with the parts of their scores. A fact this key may not
    read (scope, sensitivity) is left out as if it were not there, exactly as the fact
    routes answer 404 for it; a deleted one keeps its id and score, not its statement."""
    detail = entry["detail"] or {}
    scopes, sensitivities = readable_scopes(who), visible_sensitivities(who.max_sensitivity)

    def hidden(row: Any) -> bool:
        return (
            row is not None
            and row["status"] != "deleted"
            and (
                (scopes is not None and row["scope"] not in scopes)
                or row["sensitivity"] not in sensitivities
            )
        )

    out_facts = []
    for why in detail.get("facts", []):
        row = facts.get(uuid.UUID(why["id"]))
        if hidden(row):
            continue
        visible = row is not None and row["status"] != "deleted"
        out_facts.append(
            {
                **why,
                "statement": row["statement"] if visible and row is not None else None,
                "occurred_at": row["occurred_at"].isoformat()
                if visible and row is not None and row["occurred_at"] is not None
                else None,
                "status": row["status"] if row is not None else None,
            }
        )
    return {
        "user_id": entry["user_id"],
        "scope": entry["scope"],
        "tier": entry["tier"],
        "tokens": entry["tokens"],
        "created_at": entry["created_at"].isoformat(),
        "fact_ids": [str(i) for i in entry["fact_ids"] if not hidden(facts.get(i))],
        "facts": out_facts,
        **{k: detail.get(k) for k in ("lang", "k", "budget_tokens", "min_score", "candidates")},
    }


@router.get("/traces/{trace_id}", response_model=Trace, responses=NAMED)
async def get_trace(request: Request, trace_id: TraceId, who: Principal = agent) -> dict[str, Any]:
    """What the recall(s) under `trace_id` injected and why; the latest at the top level,
    earlier ones (a trace id reused within one agent turn) under `previous`."""
    entries, facts = await traces_service.trace(get_ctx(request), who, trace_id)
    explained = [_explain(e, facts, who) for e in entries]
    return {"trace_id": trace_id, **explained[-1], "previous": explained[:-1]}


@router.post("/ops/reembed", status_code=202, response_model=Queued, responses=WRITE)
async def reembed(
    request: Request, body: ReembedRequest | None = None, who: Principal = admin
) -> JSONResponse:
    """Queue a background re-embed of all the tenant's facts onto the configured model."""
    ctx = get_ctx(request)
    if ctx.embedder is None:
        raise InvalidRequest("no embedder is configured")
    target = ctx.embedder.model
    wanted = body.model if body else None
    if wanted and wanted not in (target, ctx.settings.embedder):
        # Recall embeds queries with the configured model; vectors of any other model
        # would never be compared. Switch the configuration first, then re-embed.
        raise Conflict(
            f"model {wanted!r} is not the configured embedder ({target!r})",
            {"fields": [{"loc": ["body", "model"], "msg": "not the configured embedder"}]},
        )
    job_id = await ops_service.queue_reembed(ctx, who, target, clock.now())
    # After the answer is sent: a slow or absent Redis never delays the request; the
    # outbox relay hands the job over later.
    return JSONResponse(
        {"job_id": str(job_id)},
        status_code=202,
        background=BackgroundTask(enqueue, ctx, job_id, who.tenant_id),
    )
