"""API keys and user tokens: look up, list, create, revoke, mint.

A key never grants more than its creator holds: the same or fewer scopes, the same or a
lower sensitivity ceiling; a user token carries exactly the rights of the key that
minted it. Both rest only as hashes (app.auth).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import asyncpg

from app.auth import Principal, mint_user_token, new_api_key, visible_sensitivities
from app.context import AppContext
from app.errors import NotFound
from app.memory.model import sensitivity_allowed
from app.store import audit
from app.store import keys as keys_store
from app.store.db import system_conn, tenant_tx


async def lookup(ctx: AppContext, secret: str) -> asyncpg.Record | None:
    """The key or token row of this secret, before its tenant is known."""
    async with system_conn(ctx.pool) as conn:
        return await keys_store.lookup(conn, secret)


def within_rights(who: Principal, scopes: list[str] | None, ceiling: str) -> bool:
    """Are these rights no more than the caller's own (scopes and sensitivity ceiling)?"""
    if who.scopes is not None and (scopes is None or not set(scopes) <= set(who.scopes)):
        return False
    return sensitivity_allowed(ceiling, who.max_sensitivity)


async def list_page(
    ctx: AppContext, who: Principal, after: uuid.UUID | None, limit: int
) -> list[asyncpg.Record]:
    """The tenant's keys within the caller's own rights (its scopes and ceiling)."""
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        return await keys_store.list_keys(
            conn,
            who.tenant_id,
            after,
            limit,
            scopes=list(who.scopes) if who.scopes is not None else None,
            sensitivities=visible_sensitivities(who.max_sensitivity),
        )


async def create(
    ctx: AppContext,
    who: Principal,
    *,
    role: str,
    name: str | None,
    scopes: list[str] | None,
    max_sensitivity: str,
) -> tuple[str, asyncpg.Record]:
    """A new API key (the caller checked it is within its rights): (secret, row)."""
    secret = new_api_key()
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        row = await keys_store.insert_key(
            conn,
            tenant_id=who.tenant_id,
            secret=secret,
            kind="key",
            role=role,
            name=name,
            scopes=scopes,
            max_sensitivity=max_sensitivity,
            created_by=who.key_id,
        )
        await audit.record(
            conn,
            who.tenant_id,
            "key_create",
            actor=who.key_id,
            actor_role=who.role.value,
            detail={"key_id": str(row["id"]), "role": role, "scopes": scopes},
        )
    return secret, row


async def revoke(ctx: AppContext, who: Principal, key_id: uuid.UUID) -> None:
    """Revoke a key within the caller's rights (else 404, as if it did not exist)."""
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        target = await keys_store.get_key(conn, who.tenant_id, key_id)
        if (
            target is None
            or target["kind"] != "key"
            or not within_rights(who, target["scopes"], target["max_sensitivity"])
        ):
            raise NotFound("key not found")
        row = await keys_store.revoke(conn, who.tenant_id, key_id)
        if row is None:
            raise NotFound("key not found")
        await audit.record(
            conn,
            who.tenant_id,
            "key_revoke",
            actor=who.key_id,
            actor_role=who.role.value,
            detail={"key_id": str(key_id)},
        )
    ctx.key_cache.clear()


async def mint_token(
    ctx: AppContext, who: Principal, user_id: str, ttl_seconds: int, now: datetime
) -> tuple[str, datetime]:
    """A user token for `user_id`: (token, expires_at)."""
    expires_at = (now + timedelta(seconds=ttl_seconds)).replace(microsecond=0)
    token_id = uuid.uuid4()
    token = mint_user_token(ctx.secret, who.tenant_id, user_id, token_id, expires_at)
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        # A token never sees more than the key that minted it: the same scopes and the
        # same sensitivity ceiling (an unlimited key with ceiling `restricted` mints a
        # token that sees everything kept about the user).
        row = await keys_store.insert_key(
            conn,
            tenant_id=who.tenant_id,
            secret=token,
            kind="user_token",
            role="user",
            user_id=user_id,
            expires_at=expires_at,
            scopes=list(who.scopes) if who.scopes is not None else None,
            max_sensitivity=who.max_sensitivity.value,
            created_by=who.key_id,
            key_id=token_id,  # the token's `i` claim names its row
        )
        await audit.record(
            conn,
            who.tenant_id,
            "token_mint",
            actor=who.key_id,
            actor_role=who.role.value,
            user_id=user_id,
            detail={"token_id": str(row["id"]), "ttl_seconds": ttl_seconds},
            at=now,
        )
    return token, expires_at
