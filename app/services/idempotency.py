"""Idempotency records, one tenant transaction per step: claim, renew, release, settle.

The rules of what is stored and to whom it is replayed are the middleware's
(app/api/idempotency.py); the statements are the store's (app/store/idempotency.py).
"""

from __future__ import annotations

import uuid
from datetime import datetime

from app.context import AppContext
from app.store import idempotency as records
from app.store.db import tenant_tx
from app.store.idempotency import Existing, RecordKey

__all__ = ["Existing", "RecordKey", "claim", "release", "renew", "settle"]


async def claim(
    ctx: AppContext,
    rk: RecordKey,
    claim_id: uuid.UUID,
    body_hash: str,
    user_id: str | None,
    now: datetime,
    expired_before: datetime,
) -> Existing | None:
    """None when this request (`claim_id`) owns the key now; else the record holding it."""
    async with tenant_tx(ctx.pool, rk.tenant_id) as conn:
        return await records.claim(conn, rk, claim_id, body_hash, user_id, now, expired_before)


async def renew(ctx: AppContext, rk: RecordKey, claim_id: uuid.UUID) -> None:
    async with tenant_tx(ctx.pool, rk.tenant_id) as conn:
        await records.renew(conn, rk, claim_id)


async def release(ctx: AppContext, rk: RecordKey, claim_id: uuid.UUID) -> None:
    async with tenant_tx(ctx.pool, rk.tenant_id) as conn:
        await records.release(conn, rk, claim_id)


async def settle(
    ctx: AppContext,
    rk: RecordKey,
    claim_id: uuid.UUID,
    status: int,
    response: str,
    user_id: str | None,
    withheld: bool,
) -> None:
    async with tenant_tx(ctx.pool, rk.tenant_id) as conn:
        await records.settle(conn, rk, claim_id, status, response, user_id, withheld)
