"""Jobs (table jobs): the transactional outbox and the state of every background job.

A job row is written by the API in the same transaction as anything else the request
writes; the relay and the API hand it to arq; workers move it queued → running → done
(or back to queued to retry, or failed). State lives here, never only in Redis (docs/api.md#jobs).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import asyncpg

from app.memory import webhooks as hooks
from app.store import webhooks
from app.store.db import system_conn

JOB_COLUMNS = """id, tenant_id, user_id, kind, payload, state, attempts, enqueued_at, decisions,
    result, error, created_at, updated_at"""


async def insert(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    kind: str,
    payload: dict[str, Any],
    now: datetime,
    *,
    user_id: str | None = None,
    job_id: uuid.UUID | None = None,
) -> uuid.UUID:
    """Queue a job (the payload must already be redacted: secrets never rest)."""
    new_id = job_id or uuid.uuid4()
    await conn.execute(
        """INSERT INTO jobs (id, tenant_id, user_id, kind, payload, state, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, 'queued', $6, $6)""",
        new_id,
        tenant_id,
        user_id,
        kind,
        payload,
        now,
    )
    return new_id


async def get(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, job_id: uuid.UUID, *, lock: bool = False
) -> asyncpg.Record | None:
    return await conn.fetchrow(
        f"SELECT {JOB_COLUMNS} FROM jobs WHERE tenant_id = $1 AND id = $2"
        + (" FOR UPDATE" if lock else ""),
        tenant_id,
        job_id,
    )


async def tenant_of(conn: asyncpg.Connection, job_id: uuid.UUID) -> uuid.UUID | None:
    """The tenant of a job, whichever it is (the console's `jobs show ID`, on the owner's
    connection: no RLS); None if there is no such job."""
    found = await conn.fetchval("SELECT tenant_id FROM jobs WHERE id = $1", job_id)
    return uuid.UUID(str(found)) if found is not None else None


async def mark_running(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, job_id: uuid.UUID, now: datetime
) -> asyncpg.Record:
    row = await conn.fetchrow(
        f"""UPDATE jobs SET state = 'running', attempts = attempts + 1, updated_at = $3
            WHERE tenant_id = $1 AND id = $2 RETURNING {JOB_COLUMNS}""",
        tenant_id,
        job_id,
        now,
    )
    assert row is not None
    return row


_MARK_DONE = """UPDATE jobs SET state = 'done', decisions = $3, result = $4, error = NULL,
       payload = coalesce($5, payload), updated_at = $6
   WHERE tenant_id = $1 AND id = $2"""


async def mark_done(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    job_id: uuid.UUID,
    now: datetime,
    decisions: list[dict[str, Any]],
    result: Any,
    payload: dict[str, Any] | None = None,
) -> None:
    """Done, with what was decided; `payload` (if given) replaces the stored one."""
    await conn.execute(_MARK_DONE, tenant_id, job_id, decisions, result, payload, now)


async def mark_done_many(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    now: datetime,
    done: list[tuple[uuid.UUID, list[dict[str, Any]], Any, dict[str, Any] | None]],
) -> None:
    """`mark_done` for several jobs (job id, decisions, result, payload) in one batch."""
    await conn.executemany(
        _MARK_DONE,
        [(tenant_id, job_id, dec, result, payload, now) for job_id, dec, result, payload in done],
    )


async def append_decisions(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    job_id: uuid.UUID,
    decisions: list[dict[str, Any]],
    result: dict[str, Any],
    now: datetime,
) -> None:
    """A running job's progress: more decisions and its result so far (GET /v1/jobs/{id}
    shows both), committed with the writes they count, so a retried job resumes where the
    last commit left it. Progress made, the runs before this one that made none no longer
    count against the job's tries (this run is its first)."""
    await conn.execute(
        """UPDATE jobs SET decisions = coalesce(decisions, '[]'::jsonb) || $3::jsonb,
               result = $4, attempts = least(attempts, 1), updated_at = $5
           WHERE tenant_id = $1 AND id = $2""",
        tenant_id,
        job_id,
        decisions,
        result,
        now,
    )


async def save_progress(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    job_id: uuid.UUID,
    progress: dict[str, Any],
    now: datetime,
) -> None:
    """A running batch job's `result` so far (`{total, done, ...}`, docs/api.md#jobs): one
    write per batch, in the batch's own transaction, so `done` counts only committed work.
    A finished job keeps its final result."""
    await conn.execute(
        """UPDATE jobs SET result = $3, updated_at = $4
           WHERE tenant_id = $1 AND id = $2 AND state NOT IN ('done', 'failed')""",
        tenant_id,
        job_id,
        progress,
        now,
    )


async def lock_states(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, job_ids: list[uuid.UUID]
) -> dict[uuid.UUID, str]:
    """Lock several job rows until commit (in id order: two batches never deadlock on
    them) and answer their states."""
    rows = await conn.fetch(
        """SELECT id, state FROM jobs WHERE tenant_id = $1 AND id = ANY($2::uuid[])
           ORDER BY id FOR UPDATE""",
        tenant_id,
        job_ids,
    )
    return {r["id"]: r["state"] for r in rows}


async def mark_retry(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, job_id: uuid.UUID, now: datetime, error: str
) -> None:
    """Back to queued (waiting to retry); the last error is kept for GET /v1/jobs."""
    await conn.execute(
        """UPDATE jobs SET state = 'queued', error = $3, updated_at = $4
           WHERE tenant_id = $1 AND id = $2 AND state NOT IN ('done', 'failed')""",
        tenant_id,
        job_id,
        error,
        now,
    )


async def mark_failed(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    job_id: uuid.UUID,
    now: datetime,
    error: str,
    *,
    code: str = "failed",
) -> None:
    """Fail the job and announce it (`job.failed`: its id, kind and `code`, never the
    payload or the error text) in the same transaction."""
    row = await conn.fetchrow(
        """UPDATE jobs SET state = 'failed', error = $3, updated_at = $4
           WHERE tenant_id = $1 AND id = $2 AND state <> 'done'
           RETURNING kind, user_id, attempts""",
        tenant_id,
        job_id,
        error,
        now,
    )
    if row is not None:
        event = hooks.job_failed(job_id, row["kind"], row["user_id"], code, row["attempts"])
        await webhooks.emit(conn, tenant_id, [event], now)


async def mark_enqueued(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, job_ids: list[uuid.UUID], now: datetime
) -> None:
    await conn.execute(
        """UPDATE jobs SET enqueued_at = $3
           WHERE tenant_id = $1 AND id = ANY($2::uuid[]) AND state IN ('queued', 'running')""",
        tenant_id,
        job_ids,
        now,
    )


async def to_relay(
    pool: asyncpg.Pool, limit: int, queued_before: datetime, running_before: datetime
) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """(job id, tenant id) of jobs to hand to arq, across tenants (SECURITY DEFINER)."""
    async with system_conn(pool) as conn:
        rows = await conn.fetch(
            "SELECT id, tenant_id FROM memgate_relay_jobs($1, $2, $3)",
            limit,
            queued_before,
            running_before,
        )
    return [(r["id"], r["tenant_id"]) for r in rows]


async def queue_state(pool: asyncpg.Pool) -> dict[str, tuple[int, datetime]]:
    """kind → (jobs queued, created_at of the oldest), across tenants (SECURITY DEFINER)."""
    async with system_conn(pool) as conn:
        rows = await conn.fetch("SELECT kind, depth, oldest FROM memgate_queue_state()")
    return {r["kind"]: (int(r["depth"]), r["oldest"]) for r in rows}
