"""The PostgreSQL pool and the tenant transaction: every query runs inside one.

Connections run as role `memgate_app` (row-level security applies to it), and each
transaction pins `app.tenant_id`, so a query that forgets its tenant filter still sees
only its own tenant's rows.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import orjson
from pgvector.asyncpg import register_vector

APP_ROLE = "memgate_app"


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.execute(f"SET ROLE {APP_ROLE}")
    await conn.set_type_codec("jsonb", encoder=_dumps, decoder=orjson.loads, schema="pg_catalog")
    await conn.set_type_codec("json", encoder=_dumps, decoder=orjson.loads, schema="pg_catalog")
    await register_vector(conn)


async def _reset_connection(conn: asyncpg.Connection) -> None:
    """Replaces asyncpg's RESET ALL on release: every statement here runs in a tenant
    transaction (SET LOCAL, advisory *xact* locks), so no session state
    outlives a request. Skipping the reset saves a round trip per request and keeps the
    settings made in `_init_connection`."""
    if conn.is_in_transaction():  # never expected: the transaction blocks always close
        await conn.execute("ROLLBACK")


async def create_pool(dsn: str, *, min_size: int = 2, max_size: int = 10) -> asyncpg.Pool:
    pool = await asyncpg.create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        init=_init_connection,
        reset=_reset_connection,
        command_timeout=60,
        # asyncpg's statement cache stays on: the hot path reuses a few statements.
    )
    assert pool is not None
    return pool


async def set_tenant(conn: asyncpg.Connection, tenant_id: uuid.UUID) -> None:
    """Pin the RLS tenant for the current transaction only.

    A `SET LOCAL` statement, not `set_config(..., true)`: on Citus the coordinator repeats
    SET LOCAL on every worker connection of the transaction (citus.propagate_set_commands,
    docs/scaling.md), so RLS on the shards sees the same tenant; a function call would stay
    on the coordinator. SET takes no bind parameter: the value is a `uuid.UUID` rendered
    by Python (hex digits and dashes only), never caller text.
    """
    literal = str(uuid.UUID(str(tenant_id)))
    await conn.execute(f"SET LOCAL app.tenant_id = '{literal}'")


@asynccontextmanager
async def tenant_tx(pool: asyncpg.Pool, tenant_id: uuid.UUID) -> AsyncIterator[asyncpg.Connection]:
    """A transaction bound to one tenant (RLS key set for this transaction only).

    `BEGIN` and the `SET LOCAL` of `set_tenant` go in one simple query, one round trip
    instead of two (every write, delete and job pays it). The transaction is therefore
    not asyncpg's `conn.transaction()`: it commits on a normal exit and rolls back on
    any exception, cancellation included. Code inside must not open `conn.transaction()`
    (asyncpg refuses one inside a manual transaction); nothing here needs a savepoint.
    """
    literal = str(uuid.UUID(str(tenant_id)))  # hex digits and dashes only (set_tenant)
    async with pool.acquire() as conn:
        await conn.execute(f"BEGIN; SET LOCAL app.tenant_id = '{literal}'")
        try:
            yield conn
        except BaseException:
            if not conn.is_closed() and conn.is_in_transaction():
                await conn.execute("ROLLBACK")
            raise
        await conn.execute("COMMIT")


@asynccontextmanager
async def system_conn(pool: asyncpg.Pool) -> AsyncIterator[asyncpg.Connection]:
    """A connection with no tenant: only the SECURITY DEFINER lookups answer here."""
    async with pool.acquire() as conn:
        yield conn


async def ping(pool: asyncpg.Pool) -> None:
    """Readiness: a connection within 2 s, and it answers."""
    async with pool.acquire(timeout=2) as conn:
        await conn.fetchval("SELECT 1")


async def tenant_ids(pool: asyncpg.Pool) -> list[uuid.UUID]:
    async with system_conn(pool) as conn:
        rows = await conn.fetch("SELECT memgate_tenant_ids() AS id")
    return [r["id"] for r in rows]
