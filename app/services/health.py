"""What the health routes ask PostgreSQL: does it answer, and the facts per tenant."""

from __future__ import annotations

import asyncpg

from app.context import AppContext
from app.store import db
from app.store import ops as ops_store


async def ping_postgres(ctx: AppContext) -> None:
    """Raises when no connection answers within 2 s."""
    await db.ping(ctx.pool)


async def fact_counts(ctx: AppContext) -> list[asyncpg.Record]:
    """(tenant_id, status, n, last_day) for every tenant: aggregates only."""
    return await ops_store.fact_counts(ctx.pool)
