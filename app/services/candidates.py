"""The candidate pool as its user or agent sees it: list, confirm (promote), reject.

Confirm and reject take the forget-me fence before the candidate's row lock, the order
forget-me takes them (app/store/users.py), so the two cannot deadlock.
"""

from __future__ import annotations

import uuid
from datetime import datetime

import asyncpg

from app.auth import Principal, readable_scopes, row_visible, visible_sensitivities
from app.context import AppContext
from app.errors import Conflict, NotFound
from app.store import candidates as cand_store
from app.store.db import tenant_tx
from app.writer import WriteOutcome, guard_user, promote, reject_candidate


async def list_page(
    ctx: AppContext,
    who: Principal,
    user_id: str,
    status: str | None,
    after: tuple[datetime, uuid.UUID] | None,
    limit: int,
) -> list[asyncpg.Record]:
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        return await cand_store.list_for_user(
            conn,
            who.tenant_id,
            user_id,
            status,
            after,
            limit,
            scopes=readable_scopes(who),
            sensitivities=visible_sensitivities(who.max_sensitivity),
        )


async def _lock(
    conn: asyncpg.Connection,
    who: Principal,
    user_id: str,
    candidate_id: uuid.UUID,
    now: datetime,
) -> asyncpg.Record:
    """The user's candidate, locked, if this key may see it; else 404."""
    await guard_user(conn, who.tenant_id, user_id, now)
    row = await cand_store.lock(conn, who.tenant_id, candidate_id)
    if (
        row is None
        or row["user_id"] != user_id
        or row["status"] == "deleted"
        or not row_visible(who, row)
    ):
        raise NotFound("candidate not found")
    return row


def _pending(row: asyncpg.Record) -> None:
    if row["status"] != "pending":
        raise Conflict(f"candidate is {row['status']}", {"status": row["status"]})


async def confirm(
    ctx: AppContext, who: Principal, user_id: str, candidate_id: uuid.UUID, now: datetime
) -> tuple[WriteOutcome, asyncpg.Record | None]:
    """The user said yes: promoted now as their explicit instruction, through the gate.
    Returns the outcome and the candidate as it is afterwards."""
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        row = await _lock(conn, who, user_id, candidate_id, now)
        _pending(row)
        policy = await ctx.policies.get(conn, who.tenant_id)
        outcome = await promote(
            ctx, conn, who.tenant_id, who.rights, row, policy, now, confirmed_by_user=True
        )
        after = await cand_store.get(conn, who.tenant_id, user_id, candidate_id)
    return outcome, after


async def reject(
    ctx: AppContext, who: Principal, user_id: str, candidate_id: uuid.UUID, now: datetime
) -> None:
    """The user said no: dropped and tombstoned, so extraction stops offering it. Rejecting
    twice answers the same."""
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        row = await _lock(conn, who, user_id, candidate_id, now)
        if row["status"] == "rejected":
            return
        _pending(row)
        policy = await ctx.policies.get(conn, who.tenant_id)
        await reject_candidate(conn, who.tenant_id, who.rights, row, now, policy.version)
