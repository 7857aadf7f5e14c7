"""Operators: batch cleanup by filter, the tenant's figures, re-embedding, purging now.

A cleanup is counted first (a dry run stops there, audited); a real run over
`large_run` matches becomes a "cleanup" job, a smaller one runs now (app.cleanup).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.auth import Principal, readable_scopes, visible_sensitivities
from app.cleanup import job_payload, run_cleanup
from app.context import AppContext
from app.queue import CLEANUP, PURGE, REEMBED
from app.session.store import SessionStore
from app.store import audit
from app.store import jobs as jobs_store
from app.store import ops as ops_store
from app.store.db import tenant_tx
from app.store.ops import CleanupFilter

__all__ = [
    "CleanupFilter",
    "CleanupRun",
    "cleanup",
    "cleanup_filter",
    "queue_purge",
    "queue_reembed",
    "stats",
]


def cleanup_filter(
    who: Principal,
    *,
    source_kind: str | None,
    status: str | None,
    type: str | None,
    created_before: datetime | None,
    created_after: datetime | None,
    max_confidence: float | None,
    user_id: str | None,
    scope: str | None,
    candidate: bool,
) -> CleanupFilter:
    """The operator's filter, narrowed to what this key may see (its scopes and ceiling):
    a cleanup never touches a fact its key could not read."""
    return CleanupFilter(
        source_kind=source_kind,
        status=status,
        type=type,
        created_before=created_before,
        created_after=created_after,
        max_confidence=max_confidence,
        user_id=user_id,
        scope=scope,
        candidate=candidate,
        allowed_scopes=readable_scopes(who),
        sensitivities=visible_sensitivities(who.max_sensitivity),
    )


@dataclass(frozen=True)
class CleanupRun:
    total: int  # the matches counted
    by_user: dict[str, int]
    job_id: uuid.UUID | None = None  # a large run: queued as this job
    done: dict[str, Any] | None = None  # a run made now: its {total, by_user}


async def cleanup(
    ctx: AppContext,
    who: Principal,
    flt: CleanupFilter,
    action: str,
    *,
    dry_run: bool,
    filter_detail: dict[str, Any],
    now: datetime,
    large_run: int,
) -> CleanupRun:
    """Count the matches; then audit a dry run, queue a large run, or run a small one.
    A queued job is in the outbox: handing it to arq is the caller's (app.queue.enqueue)."""
    archive = action == "archive"
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        policy = await ctx.policies.get(conn, who.tenant_id)
        by_user = await ops_store.count_matches(conn, who.tenant_id, flt, archive)
        total = sum(by_user.values())
        if dry_run:
            await audit.record(
                conn,
                who.tenant_id,
                "cleanup_dry_run",
                actor=who.key_id,
                actor_role=who.role.value,
                decision=action,
                policy_version=policy.version,
                detail={"filter": filter_detail, "total": total},
                at=now,
            )
            return CleanupRun(total, by_user)
        if total > large_run:
            job_id = await jobs_store.insert(
                conn,
                who.tenant_id,
                CLEANUP,
                job_payload(flt, action, who.key_id, who.role.value, policy.version),
                now,
            )
            return CleanupRun(total, by_user, job_id=job_id)
    done = await run_cleanup(
        ctx,
        who.tenant_id,
        flt,
        action,
        now,
        actor=who.key_id,
        actor_role=who.role.value,
        policy_version=policy.version,
    )
    return CleanupRun(total, by_user, done=done)


async def stats(ctx: AppContext, who: Principal, now: datetime) -> dict[str, Any]:
    """The tenant's figures (aggregates only) and its open sessions."""
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        out = await ops_store.stats(conn, who.tenant_id, now)
    out["sessions"] = {"open": await SessionStore(ctx.sessions).count_open(who.tenant_id)}
    return out


async def queue_reembed(ctx: AppContext, who: Principal, model: str, now: datetime) -> uuid.UUID:
    """A re-embed job of all the tenant's facts onto `model`, audited. Handing it to arq
    is the caller's, after the answer (app.queue.enqueue)."""
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        job_id = await jobs_store.insert(conn, who.tenant_id, REEMBED, {"model": model}, now)
        await audit.record(
            conn,
            who.tenant_id,
            "reembed",
            actor=who.key_id,
            actor_role=who.role.value,
            detail={"job_id": str(job_id), "model": model},
            at=now,
        )
    return job_id


async def queue_purge(ctx: AppContext, who: Principal, now: datetime) -> uuid.UUID:
    """A purge job of the tenant's deleted facts now (the sweep's work, without waiting for
    its minute), audited. Handing it to arq is the caller's (app.queue.enqueue)."""
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        job_id = await jobs_store.insert(conn, who.tenant_id, PURGE, {}, now)
        await audit.record(
            conn,
            who.tenant_id,
            "purge",
            actor=who.key_id,
            actor_role=who.role.value,
            detail={"job_id": str(job_id)},
            at=now,
        )
    return job_id
