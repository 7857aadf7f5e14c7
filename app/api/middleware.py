"""ASGI middleware: body size limit, request metrics, test clock, idempotency (SPEC §12).

Idempotency is one mechanism for every POST, PATCH and DELETE: the first request with an
`Idempotency-Key` claims (tenant, key, method, path) in PostgreSQL; its answer is stored;
a retry with the same body gets that answer back and writes nothing; another body is 409.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import time
import uuid
from datetime import datetime, timedelta
from typing import Any

import orjson
import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import clock
from app.api.deps import resolve_principal
from app.context import AppContext
from app.errors import MemgateError, SecretInIdentifier, error_body
from app.memory.screening import identifier_holds_secret
from app.metrics import REQUEST_LATENCY
from app.store.db import tenant_tx

log = logging.getLogger("memgate.http")
MAX_BODY_BYTES = 1_000_000
_TRACE_ID = re.compile(r"[A-Za-z0-9_.:@-]{1,128}")
_QUIET_ROUTES = frozenset({"/healthz", "/readyz", "/metrics"})
IDEMPOTENCY_TTL = timedelta(hours=24)
STALE_CLAIM = timedelta(seconds=120)
IDEMPOTENT_METHODS = frozenset({"POST", "PATCH", "DELETE"})


class _TooLarge(Exception):
    pass


class _Raw(str):
    """A stored response body, sent back as is."""


async def _send_json(send: Send, status: int, body: Any, extra: list[tuple[bytes, bytes]]) -> None:
    data = body.encode() if isinstance(body, _Raw) else orjson.dumps(body)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + extra})
    await send({"type": "http.response.body", "body": data})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return str(value.decode("latin-1"))
    return None


class MemgateMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status_holder = {"status": 500}
        # One trace id per request: the caller's X-Trace-Id, else a new one. It is bound to
        # every log line of the request and echoed in the response.
        given = _header(scope, b"x-trace-id")
        # One that holds a secret is refused below, and never bound or echoed.
        refused = bool(given) and identifier_holds_secret(given or "")
        trace_id = (
            given if given and not refused and _TRACE_ID.fullmatch(given) else uuid.uuid4().hex
        )
        scope.setdefault("state", {})["trace_id"] = trace_id
        structlog.contextvars.bind_contextvars(trace_id=trace_id)

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_holder["status"] = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-trace-id", trace_id.encode())]
            await send(message)

        token = None
        pinned = _header(scope, b"x-memgate-now")
        if pinned and clock.test_clock_enabled():
            try:
                token = clock.set_request_now(datetime.fromisoformat(pinned))
            except ValueError:
                token = None
        try:
            if refused:
                await _send_json(send_wrapper, SecretInIdentifier.status, error_body(
                    SecretInIdentifier.code, "the X-Trace-Id header holds a secret",
                    {"fields": [{"loc": ["header", "x-trace-id"]}]}), [])
                return
            length = _header(scope, b"content-length")
            if length and length.isdigit() and int(length) > MAX_BODY_BYTES:
                await _send_json(
                    send_wrapper,
                    413,
                    error_body("payload_too_large", f"body over {MAX_BODY_BYTES} bytes"),
                    [],
                )
                return
            if scope["method"] in IDEMPOTENT_METHODS and _header(scope, b"idempotency-key"):
                await self._idempotent(scope, receive, send_wrapper)
            else:
                await self.app(scope, receive, send_wrapper)
        finally:
            if token is not None:
                clock.reset_request_now(token)
            route = scope.get("route")
            path = getattr(route, "path", None) or "unmatched"
            elapsed = time.perf_counter() - started
            status = status_holder["status"]
            REQUEST_LATENCY.labels(scope["method"], path, str(status)).observe(elapsed)
            if path not in _QUIET_ROUTES:
                log.info(
                    "%s %s %s %.1fms", scope["method"], path, status, elapsed * 1000,
                    extra={"status": status},
                )
            structlog.contextvars.unbind_contextvars("trace_id")

    async def _read_body(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise _TooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    async def _idempotent(self, scope: Scope, receive: Receive, send: Send) -> None:
        ctx: AppContext = scope["app"].state.ctx
        key = _header(scope, b"idempotency-key") or ""
        try:
            body = await self._read_body(receive)
        except _TooLarge:
            await _send_json(send, 413, error_body("payload_too_large", "body too large"), [])
            return

        async def replay_receive() -> Message:
            return {"type": "http.request", "body": body, "more_body": False}

        auth = _header(scope, b"authorization") or ""
        scheme, _, secret = auth.partition(" ")
        if len(key) > 255 or scheme.lower() != "bearer":
            await self.app(scope, replay_receive, send)
            return
        try:
            who = await resolve_principal(ctx, secret.strip())
        except MemgateError:
            await self.app(scope, replay_receive, send)  # the route answers 401
            return
        body_hash = hashlib.sha256(body).hexdigest()
        method, path = scope["method"], scope["path"]
        claimed = await self._claim(ctx, who.tenant_id, key, method, path, body_hash)
        if claimed is not None:
            status, stored = claimed
            if status == 409:
                await _send_json(send, 409, stored, [])
            else:
                await _send_json(send, status, stored, [(b"idempotent-replayed", b"true")])
            return

        captured: dict[str, Any] = {"status": 500, "body": []}

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                captured["status"] = message["status"]
            elif message["type"] == "http.response.body":
                captured["body"].append(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, replay_receive, capture)
        finally:
            await self._settle(ctx, who.tenant_id, key, method, path, captured)

    async def _claim(
        self, ctx: AppContext, tenant: Any, key: str, method: str, path: str, body_hash: str
    ) -> tuple[int, Any] | None:
        """None when this request owns the key now; else (status, body) to answer with."""
        deadline = time.monotonic() + 15
        while True:
            async with tenant_tx(ctx.pool, tenant) as conn:
                await conn.execute(
                    """DELETE FROM idempotency WHERE tenant_id = $1 AND key = $2 AND method = $3
                       AND path = $4 AND created_at < $5""",
                    tenant,
                    key,
                    method,
                    path,
                    clock.now() - IDEMPOTENCY_TTL,
                )
                inserted = await conn.fetchval(
                    """INSERT INTO idempotency (tenant_id, key, method, path, body_hash, created_at)
                       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING 1""",
                    tenant,
                    key,
                    method,
                    path,
                    body_hash,
                    clock.now(),
                )
                if inserted:
                    return None
                row = await conn.fetchrow(
                    """SELECT body_hash, status_code, response, created_at FROM idempotency
                       WHERE tenant_id = $1 AND key = $2 AND method = $3 AND path = $4""",
                    tenant,
                    key,
                    method,
                    path,
                )
            if row is None:
                continue  # expired and removed between statements: claim again
            if row["body_hash"] != body_hash:
                return 409, error_body(
                    "idempotency_conflict",
                    "this Idempotency-Key was used with a different request body",
                )
            if row["status_code"] is not None:
                return int(row["status_code"]), _Raw(row["response"] or "")
            if row["created_at"] < clock.now() - STALE_CLAIM:
                # the first request died mid-way (nothing committed its answer): retry it
                async with tenant_tx(ctx.pool, tenant) as conn:
                    await conn.execute(
                        """DELETE FROM idempotency WHERE tenant_id = $1 AND key = $2
                           AND method = $3 AND path = $4 AND status_code IS NULL""",
                        tenant,
                        key,
                        method,
                        path,
                    )
                continue
            if time.monotonic() > deadline:
                return 409, error_body(
                    "idempotency_conflict", "a request with this Idempotency-Key is in progress"
                )
            await asyncio.sleep(0.05)  # the first request is still running: wait for it

    async def _settle(
        self,
        ctx: AppContext,
        tenant: Any,
        key: str,
        method: str,
        path: str,
        captured: dict[str, Any],
    ) -> None:
        status = int(captured["status"])
        async with tenant_tx(ctx.pool, tenant) as conn:
            if status >= 500:  # a failure may be retried for real
                await conn.execute(
                    """DELETE FROM idempotency WHERE tenant_id = $1 AND key = $2 AND method = $3
                       AND path = $4""",
                    tenant,
                    key,
                    method,
                    path,
                )
                return
            # stored as the exact text (a JSON string) so a replay is byte-identical;
            # jsonb objects would reorder keys
            stored = b"".join(captured["body"]).decode("utf-8", "replace")
            await conn.execute(
                """UPDATE idempotency SET status_code = $5, response = $6
                   WHERE tenant_id = $1 AND key = $2 AND method = $3 AND path = $4""",
                tenant,
                key,
                method,
                path,
                status,
                stored,
            )
