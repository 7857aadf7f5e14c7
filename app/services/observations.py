"""Observations into the jobs outbox, a job's status, and the backpressure that refuses
observations while more are queued than the workers can do."""

from __future__ import annotations

import time
import uuid
from datetime import datetime
from typing import Any

import asyncpg

from app.auth import Principal
from app.context import AppContext
from app.errors import Overloaded
from app.queue import OBSERVE
from app.store import jobs as jobs_store
from app.store.db import tenant_tx
from app.writer import guard_user

QUEUE_STATE_TTL_S = 1.0  # a scrape or a burst of posts reads the jobs table once a second
OVERLOADED_RETRY_AFTER_S = 5


async def queue_state(ctx: AppContext) -> dict[str, tuple[int, datetime]]:
    """kind → (jobs queued, created_at of the oldest), across tenants, cached briefly."""
    cached = ctx.queue_state
    if cached is not None and cached[0] > time.monotonic():
        return cached[1]
    state = await jobs_store.queue_state(ctx.pool)
    ctx.queue_state = (time.monotonic() + QUEUE_STATE_TTL_S, state)
    return state


async def admit_observation(ctx: AppContext) -> None:
    """Backpressure: with `MEMGATE_QUEUE_MAX_DEPTH` observe jobs queued, refuse new ones
    (503 overloaded, Retry-After) rather than accept work the workers cannot do."""
    depth = (await queue_state(ctx)).get(OBSERVE, (0, None))[0]
    limit = ctx.settings.queue_max_depth
    if depth >= limit:
        raise Overloaded(
            "too many observations are waiting for extraction; nothing was written, retry later",
            {"queued": depth, "max_depth": limit, "retry_after_s": OVERLOADED_RETRY_AFTER_S},
        )


async def observe(
    ctx: AppContext, who: Principal, user_id: str, payload: dict[str, Any], now: datetime
) -> uuid.UUID:
    """The (redacted) turns, durably in the jobs table: the observe job's id. Handing it
    to arq is the caller's, after the answer (app.queue.enqueue). Refused (Overloaded)
    while the queue is full."""
    await admit_observation(ctx)
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        await guard_user(conn, who.tenant_id, user_id, now)
        return await jobs_store.insert(conn, who.tenant_id, OBSERVE, payload, now, user_id=user_id)


async def job(ctx: AppContext, who: Principal, job_id: uuid.UUID) -> asyncpg.Record | None:
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        return await jobs_store.get(conn, who.tenant_id, job_id)
