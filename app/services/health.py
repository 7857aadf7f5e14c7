"""What the health routes ask PostgreSQL: does it answer, and the facts per tenant."""

from __future__ import annotations

from datetime import datetime

import asyncpg

from app.context import AppContext
from app.services import observations
from app.store import db
from app.store import ops as ops_store


async def ping_postgres(ctx: AppContext) -> None:
    """Raises when no connection answers within 2 s."""
    await db.ping(ctx.pool)


async def fact_counts(ctx: AppContext) -> list[asyncpg.Record]:
    """(tenant_id, status, n, last_day) for every tenant: aggregates only."""
    return await ops_store.fact_counts(ctx.pool)


async def queue_state(ctx: AppContext) -> dict[str, tuple[int, datetime]]:
    """kind → (jobs queued, created_at of the oldest), across tenants (cached a second)."""
    return await observations.queue_state(ctx)
