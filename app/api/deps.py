"""FastAPI dependencies: who is calling, with which rights, inside which tenant.

Handlers receive a `Principal` already checked for role; tenant binding happens in the
services' tenant transactions (app/services), so a handler never sees another tenant's
rows.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from fastapi import Depends, Request

from app import clock
from app.auth import KEY_PREFIX, TOKEN_PREFIX, Principal, verify_user_token
from app.context import AppContext
from app.errors import Forbidden, NotFound, RateLimited, TokenExpired, Unauthorized
from app.memory.model import ROLE_RANK, Role, Sensitivity
from app.ratelimit import take_local
from app.services import keys as keys_service

KEY_CACHE_TTL_S = 5.0  # a key revoked from another process stops working within this


def get_ctx(request: Request) -> AppContext:
    ctx: AppContext = request.app.state.ctx
    return ctx


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise Unauthorized("missing or malformed Authorization header (Bearer <key>)")
    return value.strip()


async def resolve_principal(ctx: AppContext, secret: str) -> Principal:
    """Authenticate a key or user token (cached for a few seconds per process)."""
    if not secret.startswith((KEY_PREFIX, TOKEN_PREFIX)):
        raise Unauthorized("invalid key")
    now_ts = clock.now().timestamp()
    if secret.startswith(TOKEN_PREFIX):
        claims = verify_user_token(ctx.secret, secret)
        if claims is None:
            raise Unauthorized("invalid token")
        if claims.expires_at <= now_ts:
            raise TokenExpired("user token expired")
    hit = ctx.key_cache.get(secret)
    if hit and hit[0] > time.monotonic():
        principal: Principal = hit[1]
        return principal
    row = await keys_service.lookup(ctx, secret)
    if row is None or row["revoked_at"] is not None:
        raise Unauthorized("invalid or revoked key")
    if row["expires_at"] is not None and row["expires_at"].timestamp() <= now_ts:
        raise TokenExpired("key expired")
    principal = Principal(
        key_id=row["id"],
        tenant_id=row["tenant_id"],
        role=Role(row["role"]),
        scopes=tuple(row["scopes"]) if row["scopes"] is not None else None,
        max_sensitivity=Sensitivity(row["max_sensitivity"]),
        user_id=row["user_id"],
    )
    if len(ctx.key_cache) > 10_000:
        ctx.key_cache.clear()
    ctx.key_cache[secret] = (time.monotonic() + KEY_CACHE_TTL_S, principal)
    return principal


async def check_rate(ctx: AppContext, key_id: uuid.UUID) -> None:
    """Token bucket per key (MEMGATE_RATE_LIMIT_RPS, burst MEMGATE_RATE_LIMIT_BURST), shared
    by every API process through Redis (app.ratelimit); this process's own bucket while
    Redis does not answer."""
    rate = ctx.settings.rate_limit_rps
    if rate <= 0:
        return
    burst = float(ctx.settings.rate_limit_burst)
    if ctx.rate_limiter is not None:
        verdict = await ctx.rate_limiter.take(ctx.buckets, key_id, rate, burst)
    else:
        verdict = take_local(ctx.buckets, key_id, rate, burst)
    if not verdict.admitted:
        details = {"retry_after_s": verdict.retry_after_s}
        raise RateLimited("too many requests for this key", details)


async def principal(request: Request) -> Principal:
    cached: Principal | None = getattr(request.state, "principal", None)
    if cached is not None:
        return cached
    ctx = get_ctx(request)
    found = await resolve_principal(ctx, _bearer(request))
    await check_rate(ctx, found.key_id)
    request.state.principal = found
    return found


def require(role: Role) -> Callable[[Request], Awaitable[Principal]]:
    """A dependency admitting keys of `role` or higher; user tokens only reach /v1/me."""

    async def dependency(request: Request) -> Principal:
        who = await principal(request)
        if who.role is Role.USER:
            raise Forbidden("a user token can only use /v1/me")
        if ROLE_RANK[who.role] < ROLE_RANK[role]:
            raise Forbidden(f"this needs a {role.value} key")
        return who

    return dependency


async def user_token(request: Request) -> Principal:
    who = await principal(request)
    if who.role is not Role.USER or who.user_id is None:
        raise Forbidden("this endpoint needs a user token (mgu_…)")
    return who


agent = Depends(require(Role.AGENT))
ops = Depends(require(Role.OPS))
admin = Depends(require(Role.ADMIN))
me = Depends(user_token)


def check_scope_read(who: Principal, scope: str | None) -> None:
    """A scope-limited key always reads `global`; asking for another scope is 403."""
    if scope and scope != "global" and who.scopes is not None and scope not in who.scopes:
        raise Forbidden(f"this key may not use scope {scope!r}", {"scope": scope})


def not_found(what: str = "object") -> NotFound:
    return NotFound(f"{what} not found")


def utcnow() -> datetime:
    return clock.now().astimezone(UTC)
