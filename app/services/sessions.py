"""Session writes that touch PostgreSQL too: a turn (extraction outbox, last interaction,
audit) and a slots merge (audit), each fenced like every write about the user.

Forget-me clears Redis only after its erasure commits, and a request that began before a
forget-me writes nothing: so the Redis write comes last, inside the transaction.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from app.auth import Principal
from app.context import AppContext
from app.errors import Conflict, NotFound
from app.queue import OBSERVE
from app.services import observations
from app.session.store import Opened, Session, SessionStore
from app.store import audit
from app.store import jobs as jobs_store
from app.store.db import tenant_tx
from app.writer import guard_user, record_interaction


async def admit_user_turn(ctx: AppContext) -> None:
    """A user turn goes to extraction: refused (Overloaded) while the queue is full, before
    the session is opened or anything is written."""
    await observations.admit_observation(ctx)


async def add_turn(
    ctx: AppContext,
    who: Principal,
    sid: str,
    opened: Opened,
    turn: dict[str, Any],
    observe: dict[str, Any] | None,
    now: datetime,
) -> tuple[int, uuid.UUID | None]:
    """Append a (redacted) turn to an opened session: (turns now, observe job id). A user
    turn comes with its observe job payload (`observe`) and counts as an interaction."""
    store = SessionStore(ctx.sessions)
    try:
        async with tenant_tx(ctx.pool, who.tenant_id) as conn:
            await guard_user(conn, who.tenant_id, opened.user_id, now)
            policy = await ctx.policies.get(conn, who.tenant_id)
            job_id = None
            if observe is not None:
                job_id = await jobs_store.insert(
                    conn, who.tenant_id, OBSERVE, observe, now, user_id=opened.user_id
                )
                await record_interaction(conn, who.tenant_id, opened.user_id, now)
            if opened.created:
                await audit.record(
                    conn,
                    who.tenant_id,
                    "session_open",
                    actor=who.key_id,
                    actor_role=who.role.value,
                    user_id=opened.user_id,
                    trace_id=turn["trace_id"],
                    detail={"session_id": sid, "scope": opened.scope},
                    at=now,
                )
            # Last: a failure above leaves no turn in Redis (a retry would duplicate it),
            # and a failure here rolls the job and audit rows back.
            count = await store.append_turn(
                who.tenant_id, sid, opened.user_id, turn, now, policy.session.max_turns
            )
    except Conflict as exc:
        if exc.details.get("reason") == "user_forgotten":
            # the user was forgotten while this turn was on its way: what it put in
            # Redis goes too
            await store.forget_user(who.tenant_id, opened.user_id)
        raise
    return count, job_id


async def visible_session(ctx: AppContext, who: Principal, sid: str) -> Session:
    """The session, if this key may use its scope; else 404 (like a fact of that scope)."""
    s = await SessionStore(ctx.sessions).get(who.tenant_id, sid)
    if s is None or not who.rights.may_write_scope(s.scope):
        raise NotFound("session not found")
    return s


async def merge_slots(
    ctx: AppContext,
    who: Principal,
    sid: str,
    user_id: str,
    patch: dict[str, Any],
    slot_names: list[str],
    max_bytes: int,
    now: datetime,
) -> tuple[Session, dict[str, Any]]:
    """Merge redacted slots into the session of `user_id`, audited by slot name: (the
    session, its slots now). Raises SlotsTooLarge past `max_bytes` (nothing is written)."""
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        await guard_user(conn, who.tenant_id, user_id, now)
        s = await visible_session(ctx, who, sid)  # still there, under the fence
        merged = await SessionStore(ctx.sessions).merge_slots(
            who.tenant_id, s.user_id, sid, patch, max_bytes
        )
        await audit.record(
            conn,
            who.tenant_id,
            "session_slots",
            actor=who.key_id,
            actor_role=who.role.value,
            user_id=s.user_id,
            detail={"session_id": sid, "slots": slot_names},
            scope=s.scope,
            at=now,
        )
    return s, merged
