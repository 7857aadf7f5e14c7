"""A user's own data, asked for with their user token: export everything, forget me.

Forget-me (README "Security model"): the user's lock taken exclusively waits for their
writes in flight, and a write that began before the erasure and comes after is refused
(the fence, app/store/users.py). Redis and the user's state go last, so a session or
state written by a request that got past the fence before the erasure committed goes too.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from app.auth import TOKEN_PREFIX, Principal, readable_scopes, row_visible, visible_sensitivities
from app.context import AppContext
from app.errors import Forbidden
from app.memory import webhooks as hooks
from app.memory.model import Sensitivity
from app.memory.tiers import Tier, tier
from app.session.store import SessionStore
from app.store import audit
from app.store import candidates as cand_store
from app.store import facts as facts_store
from app.store import keys as keys_store
from app.store import users as users_store
from app.store import webhooks as webhooks_store
from app.store.db import tenant_tx


@dataclass(frozen=True)
class Export:
    """What is kept about the user, as far as the token may see (its key's scopes and
    sensitivity ceiling)."""

    facts: list[asyncpg.Record]
    chains: dict[uuid.UUID, list[uuid.UUID]]  # fact id -> the visible ids of its chain
    candidates: list[asyncpg.Record]
    state: asyncpg.Record | None
    state_visible: bool  # the last session's id and hint are of a scope the token reads
    recalls: list[asyncpg.Record]
    events: list[asyncpg.Record]
    sessions: list[dict[str, Any]]


async def export(ctx: AppContext, who: Principal, user_id: str, now: datetime) -> Export:
    """Facts of every status with their version chains, candidates, state, recall log,
    audit trail, and the sessions still in Redis; the export itself is audited."""
    scopes = readable_scopes(who)
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        facts = [
            r
            for r in await users_store.all_facts(conn, who.tenant_id, user_id)
            if row_visible(who, r)
        ]
        chains = users_store.chains(await users_store.version_links(conn, who.tenant_id, user_id))
        candidates = [
            r
            for r in await users_store.all_candidates(conn, who.tenant_id, user_id)
            if row_visible(who, r)
        ]
        state = await users_store.state(conn, who.tenant_id, user_id)
        recalls = [
            r
            for r in await users_store.recalls(conn, who.tenant_id, user_id)
            if scopes is None or (r["scope"] or "global") in scopes
        ]
        events = await audit.list_for_user(
            conn,
            who.tenant_id,
            user_id,
            None,
            10_000,
            scopes=scopes,
            sensitivities=visible_sensitivities(who.max_sensitivity),
        )
        await audit.record(
            conn,
            who.tenant_id,
            "export",
            actor=who.key_id,
            actor_role=who.role.value,
            user_id=user_id,
            detail={"facts": len(facts), "candidates": len(candidates)},
            at=now,
        )
    store = SessionStore(ctx.sessions)
    sessions = []
    for sid in await store.user_sessions(who.tenant_id, user_id):
        s = await store.get(who.tenant_id, sid)
        if s is not None and s.user_id == user_id and (scopes is None or s.scope in scopes):
            sessions.append(s.json())
    state_visible = state is not None and (
        scopes is None or (state["last_session_scope"] or "global") in scopes
    )
    return Export(facts, chains, candidates, state, state_visible, recalls, events, sessions)


@dataclass(frozen=True)
class Overview:
    """What the /me page shows: the active facts and pending candidates the token may see,
    and the freshness tier of each fact and of the user (docs/tiers.md)."""

    facts: list[asyncpg.Record]
    candidates: list[asyncpg.Record]
    fact_tiers: dict[uuid.UUID, Tier]
    user_tier: Tier
    more: bool  # more active facts than the page lists


async def overview(
    ctx: AppContext, who: Principal, user_id: str, now: datetime, limit: int = 200
) -> Overview:
    flt = facts_store.FactFilter(
        status="active",
        allowed_scopes=readable_scopes(who),
        sensitivities=visible_sensitivities(who.max_sensitivity),
    )
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        facts = await facts_store.list_facts(conn, who.tenant_id, user_id, flt, None, limit + 1)
        candidates = [
            r
            for r in await cand_store.list_for_user(
                conn,
                who.tenant_id,
                user_id,
                "pending",
                None,
                limit,
                scopes=readable_scopes(who),
                sensitivities=visible_sensitivities(who.max_sensitivity),
            )
            if row_visible(who, r)
        ]
        state = await users_store.state(conn, who.tenant_id, user_id)
        policy = await ctx.policies.get(conn, who.tenant_id)
    facts = facts[:limit]
    return Overview(
        facts=facts,
        candidates=candidates,
        fact_tiers={r["id"]: tier(r["last_observed_at"], now, policy) for r in facts},
        user_tier=tier(state["last_interaction_at"] if state else None, now, policy),
        more=len(facts) > limit,
    )


def _drop_cached_tokens(ctx: AppContext, tenant_id: uuid.UUID, user_id: str) -> None:
    """Revoked tokens stop working in this process at once (others: within the cache TTL)."""
    for secret, (_, cached) in list(ctx.key_cache.items()):
        if (
            secret.startswith(TOKEN_PREFIX)
            and cached.tenant_id == tenant_id
            and cached.user_id == user_id
        ):
            ctx.key_cache.pop(secret, None)


async def forget(ctx: AppContext, who: Principal, user_id: str, now: datetime) -> dict[str, int]:
    """Everything about the user goes; tombstone hashes and a content-free audit record
    remain; the user's tokens are revoked. Returns what was deleted, per kind."""
    if who.scopes is not None or who.max_sensitivity is not Sensitivity.RESTRICTED:
        # Forgetting erases every scope and every sensitivity; a token may not touch what
        # the key that minted it could not see (README "Security model").
        raise Forbidden(
            "forget-me needs a user token minted by a key with no scope limit and "
            "ceiling restricted"
        )
    if ctx.recall_log is not None:
        await ctx.recall_log.flush()  # recalls still buffered would re-add log rows after us
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        await users_store.lock_user(conn, who.tenant_id, user_id)
        counts = await users_store.forget(conn, who.tenant_id, user_id, now)
        counts["tokens_revoked"] = await keys_store.revoke_user_tokens(conn, who.tenant_id, user_id)
        counts["webhook_deliveries"] = await webhooks_store.forget_user(
            conn, who.tenant_id, user_id
        )
        await audit.record(
            conn,
            who.tenant_id,
            "forget_me",
            actor=who.key_id,
            actor_role=who.role.value,
            user_id=user_id,
            detail={"erased": True, "counts": counts},
            at=now,
        )
        await webhooks_store.emit(conn, who.tenant_id, [hooks.user_forgotten(user_id, counts)], now)
    counts["sessions"] = await SessionStore(ctx.sessions).forget_user(who.tenant_id, user_id)
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        await users_store.forget_state(conn, who.tenant_id, user_id)
    _drop_cached_tokens(ctx, who.tenant_id, user_id)
    return counts
