"""Idempotency-Key (docs/api.md#idempotency) as ASGI middleware: a retried write returns the first
answer.

The rules (README "Security model"):
- A record belongs to the principal that made it: (tenant, key id or user-token id,
  sha256 of the header, method, path). Another principal sending the same header gets no
  replay: its request runs on its own, through its own authorization.
- Only successful answers (2xx, which includes a gate's 200 `rejected`) of writes are
  stored (a recall, a read that answers POST, simply runs again). An
  error (401/403/404/409/422/429/5xx) frees the key, so one caller's failure is never
  replayed to anyone and a retry runs for real.
- An answer that carries a secret (a new API key, a user token) is never stored: a retry
  with the same key and body answers 409 `idempotency_conflict` with the non-secret part
  of the first answer in `details.first` (the id, to revoke it), and mints nothing.
- A record of a request about a user (`/v1/users/{u}/…`, `/v1/me/…`, a session's user)
  carries the user's id, so forget-me deletes it.
- While the first request runs, its claim holds a lease of a few seconds that it renews;
  a retry waits for the answer, and takes over a claim whose request died once the lease
  has run out.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import time
import uuid
from datetime import timedelta
from typing import Any

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import clock
from app.api.asgi import header, send_json
from app.api.deps import resolve_principal
from app.api.middleware import body_limit
from app.auth import Principal
from app.context import AppContext
from app.errors import MemgateError, error_body
from app.services import idempotency as records

IDEMPOTENCY_TTL = timedelta(hours=24)
IDEMPOTENT_METHODS = frozenset({"POST", "PATCH", "DELETE"})
MAX_KEY_LENGTH = 255
WAIT_FOR_FIRST_S = 15.0
RENEW_EVERY_S = 2.0
# Routes whose answer is a credential shown once (route templates, as matched).
SECRET_ROUTES = frozenset(
    {
        ("POST", "/v1/admin/keys"),
        ("POST", "/v1/users/{user_id}/tokens"),
        ("POST", "/v1/admin/webhooks"),
        ("POST", "/v1/admin/webhooks/{endpoint_id}/rotate"),
    }
)
SECRET_FIELDS = ("key", "token", "login_url", "secret")
# Reads that answer POST: a retry simply runs again (a recall's answer quotes facts that
# may be deleted meanwhile, and replaying it would bring their text back).
UNSTORED_ROUTES = frozenset({("POST", "/v1/users/{user_id}/recall")})
_USER_PATH = re.compile(r"^/v1/users/([^/]+)/")


class BodyTooLarge(Exception):
    pass


class BodyIncomplete(Exception):
    pass


async def read_body(receive: Receive, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise BodyIncomplete  # never run a request whose body did not fully arrive
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _subject_user(scope: Scope, who: Principal) -> str | None:
    """Whose data the request is about, as far as the path tells before routing."""
    if who.user_id is not None:
        return who.user_id
    found = _USER_PATH.match(scope["path"])
    return found.group(1) if found else None


def _withhold(body: bytes) -> dict[str, Any]:
    """The first answer without its secret: what a retry may be told."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {}
    return {k: v for k, v in doc.items() if k not in SECRET_FIELDS} if isinstance(doc, dict) else {}


class IdempotencyMiddleware:
    def __init__(self, app: ASGIApp, max_body: int) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw_key = header(scope, b"idempotency-key") if scope["type"] == "http" else None
        if not raw_key or scope["method"] not in IDEMPOTENT_METHODS:
            await self.app(scope, receive, send)
            return
        await self._idempotent(scope, receive, send, raw_key)

    async def _idempotent(self, scope: Scope, receive: Receive, send: Send, raw: str) -> None:
        ctx: AppContext = scope["app"].state.ctx
        try:
            body = await read_body(receive, max(self.max_body, body_limit(scope["path"])))
        except BodyTooLarge:
            await send_json(send, 413, error_body("payload_too_large", "body too large"), [])
            return
        except BodyIncomplete:
            return  # the client left: nothing ran, nothing to answer

        async def replay_receive() -> Message:
            return {"type": "http.request", "body": body, "more_body": False}

        if len(raw) > MAX_KEY_LENGTH:
            await send_json(
                send,
                400,
                error_body("invalid_request", f"Idempotency-Key over {MAX_KEY_LENGTH} characters"),
                [],
            )
            return
        auth = header(scope, b"authorization") or ""
        scheme, _, secret = auth.partition(" ")
        try:
            if scheme.lower() != "bearer":
                raise MemgateError("no bearer")
            who = await resolve_principal(ctx, secret.strip())
        except MemgateError:
            await self.app(scope, replay_receive, send)  # the route answers 401 itself
            return
        rk = records.RecordKey(
            tenant_id=who.tenant_id,
            principal_id=who.key_id,
            key=hashlib.sha256(raw.encode("latin-1")).hexdigest(),
            method=scope["method"],
            path=scope["path"],
        )
        body_hash = hashlib.sha256(body).hexdigest()
        claim_id = uuid.uuid4()
        held = await self._claim(ctx, rk, claim_id, body_hash, _subject_user(scope, who))
        if held is not None:
            status, answer, replayed = held
            extra = [(b"idempotent-replayed", b"true")] if replayed else []
            await send_json(send, status, answer, extra)
            return

        captured: dict[str, Any] = {"status": 500, "body": []}

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                captured["status"] = message["status"]
            elif message["type"] == "http.response.body":
                captured["body"].append(message.get("body", b""))
            await send(message)

        renewer = asyncio.create_task(self._renew(ctx, rk, claim_id))
        try:
            await self.app(scope, replay_receive, capture)
        finally:
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
            await self._settle(ctx, rk, claim_id, scope, who, captured)

    async def _claim(
        self,
        ctx: AppContext,
        rk: records.RecordKey,
        claim_id: uuid.UUID,
        body_hash: str,
        user_id: str | None,
    ) -> tuple[int, Any, bool] | None:
        """None when this request owns the key now; else (status, body, replayed)."""
        deadline = time.monotonic() + WAIT_FOR_FIRST_S
        while True:
            now = clock.now()
            held = await records.claim(
                ctx, rk, claim_id, body_hash, user_id, now, now - IDEMPOTENCY_TTL
            )
            if held is None:
                return None
            if held.body_hash != body_hash:
                return (
                    409,
                    error_body(
                        "idempotency_conflict",
                        "this Idempotency-Key was used with a different request body",
                    ),
                    False,
                )
            if held.status_code is not None and held.withheld:
                first = orjson.loads(held.response) if held.response else {}
                return (
                    409,
                    error_body(
                        "idempotency_conflict",
                        "the first request with this Idempotency-Key created a credential, which "
                        "is shown only once; nothing was created now",
                        {"first": first, "first_status": held.status_code},
                    ),
                    False,
                )
            if held.status_code is not None:
                return held.status_code, held.response or "", True
            if time.monotonic() > deadline:
                return (
                    409,
                    error_body(
                        "idempotency_conflict", "a request with this Idempotency-Key is in progress"
                    ),
                    False,
                )
            await asyncio.sleep(0.05)  # the first request is still running (its lease is live)

    async def _renew(self, ctx: AppContext, rk: records.RecordKey, claim_id: uuid.UUID) -> None:
        while True:
            await asyncio.sleep(RENEW_EVERY_S)
            await records.renew(ctx, rk, claim_id)

    async def _settle(
        self,
        ctx: AppContext,
        rk: records.RecordKey,
        claim_id: uuid.UUID,
        scope: Scope,
        who: Principal,
        captured: dict[str, Any],
    ) -> None:
        status = int(captured["status"])
        body = b"".join(captured["body"])
        route = scope.get("route")
        template = getattr(route, "path", None)
        withheld = (scope["method"], template) in SECRET_ROUTES
        user_id = (scope.get("path_params") or {}).get("user_id") or who.user_id
        user_id = user_id or (scope.get("state") or {}).get("subject_user")
        unstored = (scope["method"], template) in UNSTORED_ROUTES
        if not 200 <= status < 300 or unstored:
            await records.release(ctx, rk, claim_id)
            return
        stored = (
            orjson.dumps(_withhold(body)).decode() if withheld else body.decode("utf-8", "replace")
        )
        await records.settle(ctx, rk, claim_id, status, stored, user_id, withheld)
