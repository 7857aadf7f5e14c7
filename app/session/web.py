"""The /me page's one-time login codes and browser sessions in Redis
(docs/isolation.md#the-me-page).

Both are random secrets handed to the browser; Redis keeps only their sha256, with a TTL,
and a value that names the user token they stand for (tenant and token id), nothing else:

    mg:web-login:{sha256(code)}  str  {"t": tenant, "k": token id}; GETDEL: single use
    mg:web-sess:{sha256(sid)}    str  the same; TTL = what the token has left

The tenant is not known before the code or cookie is read, hence no tenant prefix; the
value carries it, and the token's row (looked up in that tenant) is the principal.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, cast

import orjson
from redis.asyncio import Redis


@dataclass(frozen=True)
class TokenRef:
    """Which user token a login code or browser session stands for."""

    tenant_id: uuid.UUID
    token_id: uuid.UUID


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _dump(ref: TokenRef) -> bytes:
    return orjson.dumps({"t": str(ref.tenant_id), "k": str(ref.token_id)})


def _load(raw: Any) -> TokenRef | None:
    if raw is None:
        return None
    try:
        data = orjson.loads(raw)
        return TokenRef(uuid.UUID(data["t"]), uuid.UUID(data["k"]))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


class WebSessionStore:
    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    @staticmethod
    def _code_key(code: str) -> str:
        return f"mg:web-login:{_digest(code)}"

    @staticmethod
    def _sess_key(sid: str) -> str:
        return f"mg:web-sess:{_digest(sid)}"

    async def new_code(self, ref: TokenRef, ttl_s: int) -> str:
        code = secrets.token_urlsafe(32)
        await self.redis.set(self._code_key(code), _dump(ref), ex=max(1, ttl_s))
        return code

    async def peek_code(self, code: str) -> TokenRef | None:
        """The code's token while it is unspent; reading it spends nothing."""
        return _load(await self.redis.get(self._code_key(code)))

    async def take_code(self, code: str) -> TokenRef | None:
        """The code's token, once: GETDEL makes a second use (or a racing one) find nothing."""
        raw = await cast(Awaitable[Any], self.redis.getdel(self._code_key(code)))
        return _load(raw)

    async def new_session(self, ref: TokenRef, ttl_s: int) -> str:
        sid = secrets.token_urlsafe(32)
        await self.redis.set(self._sess_key(sid), _dump(ref), ex=max(1, ttl_s))
        return sid

    async def session(self, sid: str) -> TokenRef | None:
        return _load(await self.redis.get(self._sess_key(sid)))

    async def end_session(self, sid: str) -> None:
        await self.redis.delete(self._sess_key(sid))
