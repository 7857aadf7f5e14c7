"""Operators (SPEC §8, §11, §12 "Deletion"): batch cleanup by filter and health figures.

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
from app.api.facts import readable_scopes, visible_sensitivities
from app.api.schemas.common import KEYED, WRITE
from app.api.schemas.ops import (
    CleanupFilterIn,
    CleanupIn,
    CleanupQueued,
    CleanupResult,
    Stats,
)
from app.auth import Principal
from app.cleanup import job_payload, run_cleanup
from app.errors import Forbidden
from app.queue import CLEANUP, enqueue
from app.session.store import SessionStore
from app.store import audit
from app.store import jobs as jobs_store
from app.store import ops as ops_store
from app.store.db import tenant_tx

router = APIRouter(prefix="/v1/ops", tags=["ops"], responses=KEYED)

LARGE_RUN = 5000


def _filter(body: CleanupFilterIn, who: Principal) -> ops_store.CleanupFilter:
    """The operator's filter, narrowed to what this key may see (its scopes and ceiling):
    a cleanup never touches a fact its key could not read."""
    check_scope_read(who, body.scope)
    return ops_store.CleanupFilter(
        source_kind=body.source_kind.value if body.source_kind else None,
        status=body.status,
        type=body.type.value if body.type else None,
        created_before=body.created_before,
        created_after=body.created_after,
        max_confidence=body.max_confidence,
        user_id=body.user_id,
        scope=body.scope,
        candidate=body.candidate,
        allowed_scopes=readable_scopes(who),
        sensitivities=visible_sensitivities(who.max_sensitivity),
    )


@router.post(
    "/cleanup", response_model=CleanupResult,
    responses={202: {"model": CleanupQueued, "description": "a large run: queued as a job"},
               **WRITE},
)
async def cleanup(request: Request, body: CleanupIn, who: Principal = ops) -> JSONResponse:
    ctx = get_ctx(request)
    now = clock.now()
    flt = _filter(body.filter, who)
    archive = body.action == "archive"
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        policy = await ctx.policies.get(conn, who.tenant_id)
        by_user = await ops_store.count_matches(conn, who.tenant_id, flt, archive)
        total = sum(by_user.values())
        job_id = None
        if body.dry_run:
            await audit.record(
                conn, who.tenant_id, "cleanup_dry_run", actor=who.key_id,
                actor_role=who.role.value, decision=body.action, policy_version=policy.version,
                detail={"filter": body.filter.model_dump(mode="json", exclude_none=True),
                        "total": total},
                at=now,
            )
        elif total > LARGE_RUN:
            job_id = await jobs_store.insert(
                conn, who.tenant_id, CLEANUP,
                job_payload(flt, body.action, who.key_id, who.role.value, policy.version), now,
            )
    if body.dry_run:
        return JSONResponse({"dry_run": True, "action": body.action, "total": total,
                             "by_user": by_user})
    if job_id is not None:
        return JSONResponse(
            {"dry_run": False, "action": body.action, "job_id": str(job_id), "total": total,
             "by_user": by_user},
            status_code=202,
            background=BackgroundTask(enqueue, ctx, job_id, who.tenant_id),
        )
    done = await run_cleanup(
        ctx, who.tenant_id, flt, body.action, now, actor=who.key_id,
        actor_role=who.role.value, policy_version=policy.version,
    )
    return JSONResponse({"dry_run": False, "action": body.action, **done})


@router.get("/stats", response_model=Stats)
async def stats(request: Request, who: Principal = ops) -> dict[str, Any]:
    """Tenant-wide figures: they count every scope, so only a key not limited to scopes."""
    if who.scopes is not None:
        raise Forbidden("stats count every scope: this needs a key not limited to scopes")
    ctx = get_ctx(request)
    now = clock.now()
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        out = await ops_store.stats(conn, who.tenant_id, now)
    out["sessions"] = {"open": await SessionStore(ctx.redis).count_open(who.tenant_id)}
    out["tenant_id"] = str(who.tenant_id)
    out["at"] = now.isoformat()
    return out
