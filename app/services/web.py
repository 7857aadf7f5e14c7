"""The /me page's sign-in: one-time login links, browser sessions, CSRF tokens
(docs/isolation.md#the-me-page).

A login link's code and a session id are random, rest only as sha256 in Redis
(app/session/web.py) and stand for one user token: a session's principal is exactly that
token's (tenant, user, scopes, ceiling, expiry), read from its row on every request, so a
revoked token (forget-me revokes them all) or an expired one ends the session at once.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime

from app.auth import Principal, verify_user_token
from app.context import AppContext
from app.errors import LoginLinkInvalid
from app.memory.model import Role, Sensitivity
from app.session.web import TokenRef, WebSessionStore
from app.store import audit
from app.store import keys as keys_store
from app.store.db import tenant_tx

LOGIN_CODE_TTL_S = 600  # a link is for clicking now, not for keeping


async def login_link(ctx: AppContext, token: str, now: datetime) -> str:
    """A one-time sign-in path for the page, standing for this (just minted) user token."""
    claims = verify_user_token(ctx.secret, token)
    assert claims is not None  # minted by app.services.keys a moment ago
    ttl = min(LOGIN_CODE_TTL_S, int(claims.expires_at - now.timestamp()))
    code = await WebSessionStore(ctx.redis).new_code(
        TokenRef(claims.tenant_id, claims.token_id), ttl
    )
    return f"/me/login?code={code}"


async def _principal(ctx: AppContext, ref: TokenRef, now: datetime) -> tuple[Principal, int] | None:
    """The token's principal and the seconds it has left, or None when it no longer holds."""
    async with tenant_tx(ctx.pool, ref.tenant_id) as conn:
        row = await keys_store.get_user_token(conn, ref.tenant_id, ref.token_id)
    if row is None or row["revoked_at"] is not None or row["user_id"] is None:
        return None
    left = int(row["expires_at"].timestamp() - now.timestamp()) if row["expires_at"] else 0
    if left <= 0:
        return None
    who = Principal(
        key_id=row["id"],
        tenant_id=row["tenant_id"],
        role=Role.USER,
        scopes=tuple(row["scopes"]) if row["scopes"] is not None else None,
        max_sensitivity=Sensitivity(row["max_sensitivity"]),
        user_id=row["user_id"],
    )
    return who, left


async def check_code(ctx: AppContext, code: str, now: datetime) -> str:
    """The user a login code would sign in as (the landing page names them, so nobody
    presses "Sign in" on a link that someone else minted for their own user); raises
    unless the code is well formed, unspent and its token still holds. Spends nothing."""
    ref = await WebSessionStore(ctx.redis).peek_code(code) if 16 <= len(code) <= 128 else None
    found = await _principal(ctx, ref, now) if ref is not None else None
    if found is None or found[0].user_id is None:
        raise LoginLinkInvalid("this sign-in link is unknown, used or expired: ask for a new one")
    return found[0].user_id


async def sign_in(ctx: AppContext, code: str, now: datetime) -> tuple[str, int]:
    """Trade a login code for a session: (session id, seconds it lasts). The code is
    spent whatever happens next."""
    store = WebSessionStore(ctx.redis)
    ref = await store.take_code(code) if 16 <= len(code) <= 128 else None
    found = await _principal(ctx, ref, now) if ref is not None else None
    if ref is None or found is None:
        raise LoginLinkInvalid("this sign-in link is unknown, used or expired: ask for a new one")
    who, left = found
    sid = await store.new_session(ref, left)
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        await audit.record(
            conn,
            who.tenant_id,
            "web_sign_in",
            actor=who.key_id,
            actor_role=who.role.value,
            user_id=who.user_id,
            at=now,
        )
    return sid, left


async def session_principal(ctx: AppContext, sid: str, now: datetime) -> Principal | None:
    """Who this browser session is, or None (unknown, ended, token revoked or expired)."""
    if not 16 <= len(sid) <= 128:
        return None
    ref = await WebSessionStore(ctx.redis).session(sid)
    found = await _principal(ctx, ref, now) if ref is not None else None
    return found[0] if found is not None else None


async def sign_out(ctx: AppContext, sid: str) -> None:
    await WebSessionStore(ctx.redis).end_session(sid)


def csrf_token(secret: bytes, sid: str) -> str:
    """The session's CSRF token: an HMAC of its id, so nothing more needs storing."""
    return hmac.new(secret, b"csrf:" + sid.encode(), hashlib.sha256).hexdigest()


def csrf_valid(secret: bytes, sid: str, given: str) -> bool:
    return hmac.compare_digest(csrf_token(secret, sid), given)
