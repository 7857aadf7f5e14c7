"""Operators (docs/api.md#endpoints, docs/architecture.md#observability,
docs/lifecycle.md#deletion): batch cleanup by filter, health figures, a purge now.

Cleanup is a dry run unless `dry_run: false`; the real run touches exactly what the dry
run counted (one filter, app.store.ops). Small runs answer at once; a run over
LARGE_RUN matches answers 202 with a job_id and runs in a worker, in batches.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.background import BackgroundTask

from app import clock
from app.api.deps import check_scope_read, get_ctx, ops
from app.api.schemas.common import KEYED, WRITE, Queued
from app.api.schemas.ops import (
    CleanupFilterIn,
    CleanupIn,
    CleanupQueued,
    CleanupResult,
    Stats,
)
from app.auth import Principal
from app.errors import Forbidden
from app.queue import enqueue
from app.services import ops as ops_service

router = APIRouter(prefix="/v1/ops", tags=["ops"], responses=KEYED)

LARGE_RUN = 5000


def _filter(body: CleanupFilterIn, who: Principal) -> ops_service.CleanupFilter:
    """The operator's filter, narrowed to what this key may see (its scopes and ceiling):
    a cleanup never touches a fact its key could not read."""
    check_scope_read(who, body.scope)
    return ops_service.cleanup_filter(
        who,
        source_kind=body.source_kind.value if body.source_kind else None,
        status=body.status,
        type=body.type.value if body.type else None,
        created_before=body.created_before,
        created_after=body.created_after,
        max_confidence=body.max_confidence,
        user_id=body.user_id,
        scope=body.scope,
        candidate=body.candidate,
    )


@router.post(
    "/cleanup",
    response_model=CleanupResult,
    responses={
        202: {"model": CleanupQueued, "description": "a large run: queued as a job"},
        **WRITE,
    },
)
async def cleanup(request: Request, body: CleanupIn, who: Principal = ops) -> JSONResponse:
    ctx = get_ctx(request)
    now = clock.now()
    flt = _filter(body.filter, who)
    run = await ops_service.cleanup(
        ctx,
        who,
        flt,
        body.action,
        dry_run=body.dry_run,
        filter_detail=body.filter.model_dump(mode="json", exclude_none=True),
        now=now,
        large_run=LARGE_RUN,
    )
    if body.dry_run:
        return JSONResponse(
            {"dry_run": True, "action": body.action, "total": run.total, "by_user": run.by_user}
        )
    if run.job_id is not None:
        return JSONResponse(
            {
                "dry_run": False,
                "action": body.action,
                "job_id": str(run.job_id),
                "total": run.total,
                "by_user": run.by_user,
            },
            status_code=202,
            background=BackgroundTask(enqueue, ctx, run.job_id, who.tenant_id),
        )
    assert run.done is not None
    return JSONResponse({"dry_run": False, "action": body.action, **run.done})


@router.get("/stats", response_model=Stats)
async def stats(request: Request, who: Principal = ops) -> dict[str, Any]:
    """Tenant-wide figures: they count every scope, so only a key not limited to scopes."""
    if who.scopes is not None:
        raise Forbidden("stats count every scope: this needs a key not limited to scopes")
    now = clock.now()
    out = await ops_service.stats(get_ctx(request), who, now)
    out["tenant_id"] = str(who.tenant_id)
    out["at"] = now.isoformat()
    return out


@router.post("/purge", status_code=202, response_model=Queued, responses=WRITE)
async def purge(request: Request, who: Principal = ops) -> JSONResponse:
    """Queue a purge of the tenant's deleted facts now (docs/lifecycle.md#purge): the
    sweep's work without waiting for its minute; `GET /v1/jobs/{id}` shows `{total, done}`."""
    ctx = get_ctx(request)
    job_id = await ops_service.queue_purge(ctx, who, clock.now())
    return JSONResponse(
        {"job_id": str(job_id)},
        status_code=202,
        background=BackgroundTask(enqueue, ctx, job_id, who.tenant_id),
    )
