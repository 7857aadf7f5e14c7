"""Observations into the jobs outbox, and a job's status."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import asyncpg

from app.auth import Principal
from app.context import AppContext
from app.queue import OBSERVE
from app.store import jobs as jobs_store
from app.store.db import tenant_tx
from app.writer import guard_user


async def observe(
    ctx: AppContext, who: Principal, user_id: str, payload: dict[str, Any], now: datetime
) -> uuid.UUID:
    """The (redacted) turns, durably in the jobs table: the observe job's id. Handing it
    to arq is the caller's, after the answer (app.queue.enqueue)."""
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        await guard_user(conn, who.tenant_id, user_id, now)
        return await jobs_store.insert(conn, who.tenant_id, OBSERVE, payload, now, user_id=user_id)


async def job(ctx: AppContext, who: Principal, job_id: uuid.UUID) -> asyncpg.Record | None:
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        return await jobs_store.get(conn, who.tenant_id, job_id)
