"""Operators' batch cleanup (docs/api.md#endpoints, docs/lifecycle.md#deletion): archive or delete
by filter.

`run_cleanup` serves both the API (small runs, answered at once) and the "cleanup" job
(workers/cleanup.py; large runs, 202 + job_id). It works in batches of BATCH rows, one
tenant transaction each, so a cleanup of 100k facts never holds locks the API waits on
for long; a run that dies halfway is resumed by the job's retry, because handled rows no
longer match. A job's run reports `{total, done, by_user}` on its row after every batch
(docs/api.md#jobs): `total` counted when the run starts, `done` committed with each batch.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict
from datetime import datetime
from typing import Any

from app import clock
from app.context import AppContext
from app.memory import webhooks as hooks
from app.store import audit
from app.store import jobs as jobs_store
from app.store import ops as ops_store
from app.store import webhooks as webhooks_store
from app.store.db import tenant_tx

BATCH = 500


async def run_cleanup(
    app: AppContext,
    tenant_id: uuid.UUID,
    flt: ops_store.CleanupFilter,
    action: str,
    now: datetime,
    *,
    actor: uuid.UUID | None,
    actor_role: str | None,
    policy_version: str | None = None,
    job_id: uuid.UUID | None = None,
) -> dict[str, Any]:
    """Apply `action` (archive | delete) to every match; returns {total, by_user}. With a
    `job_id`, the progress goes to that job's row after every batch."""
    archive = action == "archive"
    by_user: dict[str, int] = {}
    expected = 0
    if job_id is not None:
        async with tenant_tx(app.pool, tenant_id) as conn:
            expected = sum((await ops_store.count_matches(conn, tenant_id, flt, archive)).values())
            await jobs_store.save_progress(
                conn, tenant_id, job_id, _progress(expected, by_user), clock.now()
            )
    while True:
        async with tenant_tx(app.pool, tenant_id) as conn:
            rows = await ops_store.lock_batch(conn, tenant_id, flt, archive, BATCH)
            if not rows:
                break
            ids = [r["id"] for r in rows]
            if flt.candidate:
                if archive:
                    await ops_store.expire_candidates(conn, tenant_id, ids, now)
                else:
                    await ops_store.delete_candidates(conn, tenant_id, rows, now)
            elif archive:
                await ops_store.archive_facts(conn, tenant_id, ids, now)
            else:
                await ops_store.delete_facts(conn, tenant_id, rows, now)
                await webhooks_store.emit(
                    conn,
                    tenant_id,
                    [
                        hooks.fact_deleted(r["id"], r["user_id"], reason="cleanup", version_ids=[])
                        for r in rows
                    ],
                    now,
                )
            await ops_store.audit_batch(
                conn,
                tenant_id,
                rows,
                action=action,
                candidate=flt.candidate,
                actor=actor,
                actor_role=actor_role,
                now=now,
            )
            for r in rows:
                by_user[r["user_id"]] = by_user.get(r["user_id"], 0) + 1
            if job_id is not None:
                await jobs_store.save_progress(
                    conn, tenant_id, job_id, _progress(expected, by_user), clock.now()
                )
        if len(rows) < BATCH:
            break
    total = sum(by_user.values())
    async with tenant_tx(app.pool, tenant_id) as conn:
        await audit.record(
            conn,
            tenant_id,
            "cleanup",
            actor=actor,
            actor_role=actor_role,
            decision=action,
            policy_version=policy_version,
            detail={
                "filter": _filter_json(flt),
                "total": total,
                "users": len(by_user),
                "job_id": str(job_id) if job_id else None,
            },
            at=now,
        )
    return {"total": total, "by_user": dict(sorted(by_user.items()))}


def _progress(expected: int, by_user: dict[str, int]) -> dict[str, Any]:
    done = sum(by_user.values())
    # rows that came to match since the count are handled too: `total` never trails `done`
    return {"total": max(expected, done), "done": done, "by_user": dict(sorted(by_user.items()))}


def _filter_json(flt: ops_store.CleanupFilter) -> dict[str, Any]:
    return {
        k: (v.isoformat() if isinstance(v, datetime) else v)
        for k, v in asdict(flt).items()
        if v is not None
    }


def filter_from_json(data: dict[str, Any]) -> ops_store.CleanupFilter:
    fields = dict(data)
    for k in ("created_before", "created_after"):
        if fields.get(k):
            fields[k] = datetime.fromisoformat(fields[k])
    return ops_store.CleanupFilter(**fields)


def job_payload(
    flt: ops_store.CleanupFilter,
    action: str,
    actor: uuid.UUID | None,
    actor_role: str,
    policy_version: str,
) -> dict[str, Any]:
    return {
        "filter": _filter_json(flt),
        "action": action,
        "actor": str(actor) if actor else None,
        "actor_role": actor_role,
        "policy_version": policy_version,
    }
