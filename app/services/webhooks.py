"""Webhook endpoints as an admin manages them (docs/webhooks.md): register, list, remove,
rotate the secret, read the deliveries and replay a dead one.

A secret is shown once (at creation and at rotation) and rests encrypted: AES-GCM under a
key derived from MEMGATE_SECRET, bound to its tenant and endpoint. URLs are checked against
SSRF: https outside test/development, and no loopback/private/link-local address (as
written or as the host resolves) unless MEMGATE_WEBHOOK_ALLOW_PRIVATE allows it; the
dispatcher connects to the very address it checked (no second lookup to rebind).
"""

from __future__ import annotations

import asyncio
import base64
import os
import secrets
import socket
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from urllib.parse import urlsplit

import asyncpg
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from app import clock
from app.auth import Principal
from app.config import Settings
from app.context import AppContext
from app.errors import Conflict, InvalidRequest, NotFound
from app.memory.webhooks import SECRET_PREFIX, address_refused, url_problem
from app.store import audit
from app.store import webhooks as store
from app.store.db import tenant_tx

_NONCE = 12


# ------------------------------------------------------------------------- secrets


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def _key(master: bytes) -> bytes:
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"memgate webhooks v1")
    return hkdf.derive(master)


def _aad(tenant_id: uuid.UUID, endpoint_id: uuid.UUID) -> bytes:
    return tenant_id.bytes + endpoint_id.bytes


def seal(master: bytes, tenant_id: uuid.UUID, endpoint_id: uuid.UUID, secret: str) -> bytes:
    nonce = os.urandom(_NONCE)
    sealed = AESGCM(_key(master)).encrypt(nonce, secret.encode(), _aad(tenant_id, endpoint_id))
    return nonce + sealed


def unseal(master: bytes, tenant_id: uuid.UUID, endpoint_id: uuid.UUID, blob: bytes) -> str:
    """The secret; raises if the blob was made under another key, tenant or endpoint."""
    plain = AESGCM(_key(master)).decrypt(blob[:_NONCE], blob[_NONCE:], _aad(tenant_id, endpoint_id))
    return plain.decode()


# ------------------------------------------------------------------------- URLs


def _bad_url(msg: str) -> InvalidRequest:
    return InvalidRequest("invalid webhook URL", {"fields": [{"loc": ["body", "url"], "msg": msg}]})


Resolver = Callable[[str, int], Awaitable[list[str]]]


async def system_resolve(host: str, port: int) -> list[str]:
    """Every address the host resolves to (the system resolver, off the event loop)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


async def checked_address(
    settings: Settings, host: str, port: int | None, resolve: Resolver = system_resolve
) -> tuple[str | None, str | None]:
    """(the address to connect to, None), or (None, why deliveries there are refused now):
    every address the host resolves to must be public, unless private hosts are allowed.
    The dispatcher connects to the address returned here (`pinned_target`), never to the
    name, so the answer checked is the answer used."""
    try:
        addresses = await resolve(host, port or 443)
    except (OSError, UnicodeError):
        return None, "host does not resolve"
    if not addresses:
        return None, "host does not resolve"
    if not settings.webhook_allow_private and any(address_refused(a) for a in addresses):
        return None, "host is not a public address"
    return addresses[0], None


async def check_url(settings: Settings, url: str) -> None:
    problem = url_problem(url, require_https=settings.env == "production")
    # with private hosts allowed there is no address to refuse: a name that does not
    # resolve yet is registered, and its attempts fail (and retry) until it does
    if problem is None and not settings.webhook_allow_private:
        parts = urlsplit(url)
        _, problem = await checked_address(settings, parts.hostname or "", parts.port)
    if problem is not None:
        raise _bad_url(problem)


# ------------------------------------------------------------------------- endpoints


async def create(
    ctx: AppContext, who: Principal, url: str, events: list[str], description: str | None
) -> tuple[str, asyncpg.Record]:
    """Register an endpoint; (its secret, shown only now; the row)."""
    await check_url(ctx.settings, url)
    endpoint_id = uuid.uuid4()
    secret = new_secret()
    now = _now()
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        row = await store.insert_endpoint(
            conn,
            who.tenant_id,
            endpoint_id,
            url,
            description,
            sorted(set(events)),
            seal(ctx.secret, who.tenant_id, endpoint_id, secret),
            who.key_id,
            now,
        )
        await _audit(conn, who, "webhook_create", endpoint_id, now, {"events": row["events"]})
    return secret, row


async def get(ctx: AppContext, who: Principal, endpoint_id: uuid.UUID) -> asyncpg.Record:
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        row = await store.get_endpoint(conn, who.tenant_id, endpoint_id)
    if row is None:
        raise NotFound("webhook endpoint not found")
    return row


async def list_page(
    ctx: AppContext, who: Principal, after: uuid.UUID | None, limit: int
) -> list[asyncpg.Record]:
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        return await store.list_endpoints(conn, who.tenant_id, after, limit)


async def delete(ctx: AppContext, who: Principal, endpoint_id: uuid.UUID) -> None:
    now = _now()
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        if not await store.delete_endpoint(conn, who.tenant_id, endpoint_id):
            raise NotFound("webhook endpoint not found")
        await _audit(conn, who, "webhook_delete", endpoint_id, now)


async def rotate(
    ctx: AppContext, who: Principal, endpoint_id: uuid.UUID, grace_s: int
) -> tuple[str, asyncpg.Record]:
    """A new secret (shown only now); the old one keeps signing for `grace_s` seconds."""
    secret = new_secret()
    now = _now()
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        row = await store.rotate_secret(
            conn,
            who.tenant_id,
            endpoint_id,
            seal(ctx.secret, who.tenant_id, endpoint_id, secret),
            now + timedelta(seconds=grace_s),
            now,
        )
        if row is None:
            raise NotFound("webhook endpoint not found")
        await _audit(conn, who, "webhook_rotate", endpoint_id, now, {"grace_s": grace_s})
    return secret, row


async def deliveries(
    ctx: AppContext,
    who: Principal,
    endpoint_id: uuid.UUID,
    state: str | None,
    after: uuid.UUID | None,
    limit: int,
) -> list[asyncpg.Record]:
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        if await store.get_endpoint(conn, who.tenant_id, endpoint_id) is None:
            raise NotFound("webhook endpoint not found")
        return await store.list_deliveries(conn, who.tenant_id, endpoint_id, state, after, limit)


async def replay(
    ctx: AppContext, who: Principal, endpoint_id: uuid.UUID, delivery_id: uuid.UUID
) -> asyncpg.Record:
    """A dead delivery is due again (same webhook-id); 404 for an unknown one, 409 for
    one that is not dead."""
    now = _now()
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        row = await store.replay(conn, who.tenant_id, endpoint_id, delivery_id, now)
        if row is None:
            state = await store.delivery_state(conn, who.tenant_id, endpoint_id, delivery_id)
            if state is None:
                raise NotFound("webhook delivery not found")
            raise Conflict("only a dead delivery can be replayed", {"state": state})
        await _audit(conn, who, "webhook_replay", endpoint_id, now, {"delivery": str(delivery_id)})
    return row


async def _audit(
    conn: asyncpg.Connection,
    who: Principal,
    action: str,
    endpoint_id: uuid.UUID,
    now: datetime,
    detail: dict[str, object] | None = None,
) -> None:
    await audit.record(
        conn,
        who.tenant_id,
        action,
        actor=who.key_id,
        actor_role=who.role.value,
        detail={"endpoint_id": str(endpoint_id), **(detail or {})},
        at=now,
    )


def _now() -> datetime:
    return clock.now()
