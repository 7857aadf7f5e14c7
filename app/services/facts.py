"""Facts: the transactions of the write, read, correct, delete, feedback and audit routes.

Every read of one fact goes through `_load_visible`: a fact that is deleted, of another
user, or beyond what the key may see (scope, sensitivity) is 404, exactly alike.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import asyncpg

from app.auth import Principal, readable_scopes, row_visible, visible_sensitivities
from app.context import AppContext
from app.errors import Forbidden, NotFound
from app.memory.model import Candidate, KeyRights
from app.store import audit
from app.store import facts as facts_store
from app.store.db import tenant_tx
from app.writer import WriteOutcome, correct, delete_fact, guard_user, write


async def _load_visible(
    conn: asyncpg.Connection, who: Principal, user_id: str, fact_id: uuid.UUID
) -> asyncpg.Record:
    """The fact if it exists, is not deleted, and this key may see it; else 404."""
    row = await facts_store.get_fact(conn, who.tenant_id, user_id, fact_id)
    if row is None or not row_visible(who, row):
        raise NotFound("fact not found")
    return row


async def create(
    ctx: AppContext, who: Principal, candidate: Candidate, now: datetime
) -> WriteOutcome:
    """An explicit write, through the gate."""
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        policy = await ctx.policies.get(conn, who.tenant_id)
        return await write(ctx, conn, who.tenant_id, who.rights, candidate, policy, now)


async def list_page(
    ctx: AppContext,
    who: Principal,
    user_id: str,
    after: tuple[datetime, uuid.UUID] | None,
    limit: int,
    *,
    scope: str | None = None,
    type: str | None = None,
    predicate: str | None = None,
    status: str | None = None,
    source_kind: str | None = None,
    as_of: datetime | None = None,
) -> list[asyncpg.Record]:
    """Up to `limit` facts after the cursor, narrowed to what this key may see."""
    flt = facts_store.FactFilter(
        scope=scope,
        type=type,
        predicate=predicate,
        status=status,
        source_kind=source_kind,
        as_of=as_of,
        allowed_scopes=readable_scopes(who),
        sensitivities=visible_sensitivities(who.max_sensitivity),
    )
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        return await facts_store.list_facts(conn, who.tenant_id, user_id, flt, after, limit)


async def get(ctx: AppContext, who: Principal, user_id: str, fact_id: uuid.UUID) -> asyncpg.Record:
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        return await _load_visible(conn, who, user_id, fact_id)


async def history(
    ctx: AppContext, who: Principal, user_id: str, fact_id: uuid.UUID
) -> list[asyncpg.Record]:
    """The fact's version chain, oldest first, deleted versions included (the caller
    leaves out what it may not show)."""
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        await _load_visible(conn, who, user_id, fact_id)
        return await facts_store.chain(conn, who.tenant_id, user_id, fact_id)


async def correct_fact(
    ctx: AppContext,
    who: Principal,
    rights: KeyRights,
    user_id: str,
    fact_id: uuid.UUID,
    changes: dict[str, Any],
    now: datetime,
) -> WriteOutcome:
    """A correction: a new version through the gate."""
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        old = await _load_visible(conn, who, user_id, fact_id)
        policy = await ctx.policies.get(conn, who.tenant_id)
        return await correct(ctx, conn, who.tenant_id, rights, old, changes, policy, now)


async def delete(
    ctx: AppContext, who: Principal, user_id: str, fact_id: uuid.UUID, now: datetime
) -> None:
    """Erase the fact's whole chain: only with a key that may see every version of it."""
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        row = await _load_visible(conn, who, user_id, fact_id)
        versions = await facts_store.chain(conn, who.tenant_id, user_id, fact_id)
        if not all(v["status"] == "deleted" or row_visible(who, v) for v in versions):
            raise Forbidden("this fact has versions this key may not see")
        policy = await ctx.policies.get(conn, who.tenant_id)
        await delete_fact(conn, who.tenant_id, who.rights, row, now, policy_version=policy.version)


async def feedback(
    ctx: AppContext,
    who: Principal,
    user_id: str,
    fact_id: uuid.UUID,
    useful: bool,
    note: str | None,
    now: datetime,
) -> asyncpg.Record:
    """Count the feedback (negative lowers confidence) and audit it; the fact's
    (confidence, feedback_up, feedback_down) after it."""
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        await guard_user(conn, who.tenant_id, user_id, now)  # the forget-me fence
        await _load_visible(conn, who, user_id, fact_id)
        row = await facts_store.apply_feedback(conn, who.tenant_id, fact_id, useful, now)
        if row is None:  # deleted between the read and the update
            raise NotFound("fact not found")
        await audit.record(
            conn,
            who.tenant_id,
            "feedback",
            actor=who.key_id,
            actor_role=who.role.value,
            user_id=user_id,
            fact_id=fact_id,
            detail={"useful": useful, "note": note},
            at=now,
        )
    from app.metrics import FEEDBACK

    FEEDBACK.labels(str(useful).lower()).inc()
    return row


async def audit_page(
    ctx: AppContext, who: Principal, user_id: str, after: int | None, limit: int
) -> list[asyncpg.Record]:
    """The user's audit events after the cursor, as far as this key may read them."""
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        return await audit.list_for_user(
            conn,
            who.tenant_id,
            user_id,
            after,
            limit,
            scopes=readable_scopes(who),
            sensitivities=visible_sensitivities(who.max_sensitivity),
        )
