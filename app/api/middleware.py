"""The pure-ASGI middlewares around the routes, one concern each: trace id with metrics and
the request log line, body size limit, test clock. app/main.py composes them (and says in
which order); idempotency is its own (app/api/idempotency.py), the input guard too
(app/api/guard.py).
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from datetime import datetime

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import clock
from app.api.asgi import header, send_json
from app.errors import SecretInIdentifier, error_body
from app.memory.screening import identifier_holds_secret
from app.metrics import REQUEST_LATENCY

log = logging.getLogger("memgate.http")
MAX_BODY_BYTES = 1_000_000
IMPORT_MAX_BYTES = 50_000_000  # POST /v1/admin/import streams its NDJSON (docs/api.md)
# Paths whose body may be larger than MAX_BODY_BYTES (their route counts as it reads).
_LARGE_BODIES = {"/v1/admin/import": IMPORT_MAX_BYTES}


def body_limit(path: str) -> int:
    """The most a request to `path` may send."""
    return _LARGE_BODIES.get(path.rstrip("/"), MAX_BODY_BYTES)


_TRACE_ID = re.compile(r"[A-Za-z0-9_.:@-]{1,128}")
_QUIET_ROUTES = frozenset({"/healthz", "/readyz", "/metrics"})


class TraceMiddleware:
    """One trace id per request, bound to its log lines and echoed in the answer; the
    request's latency metric and its log line, whatever answered it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status_holder = {"status": 500}
        # The caller's X-Trace-Id, else a new one. One that holds a secret is refused
        # below, and never bound or echoed.
        given = header(scope, b"x-trace-id")
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

        try:
            if refused:
                await send_json(
                    send_wrapper,
                    SecretInIdentifier.status,
                    error_body(
                        SecretInIdentifier.code,
                        "the X-Trace-Id header holds a secret",
                        {"fields": [{"loc": ["header", "x-trace-id"]}]},
                    ),
                    [],
                )
                return
            await self.app(scope, receive, send_wrapper)
        finally:
            route = scope.get("route")
            path = getattr(route, "path", None) or "unmatched"
            elapsed = time.perf_counter() - started
            status = status_holder["status"]
            REQUEST_LATENCY.labels(scope["method"], path, str(status)).observe(elapsed)
            if path not in _QUIET_ROUTES:
                log.info(
                    "%s %s %s %.1fms",
                    scope["method"],
                    path,
                    status,
                    elapsed * 1000,
                    extra={"status": status},
                )
            structlog.contextvars.unbind_contextvars("trace_id")


class BodyLimitMiddleware:
    """413 for a request whose Content-Length is over the limit, before anything reads it.
    A body that streams past the limit without one is cut by whatever reads it (the input
    guard, idempotency)."""

    def __init__(self, app: ASGIApp, max_body: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            length = header(scope, b"content-length")
            limit = max(self.max_body, body_limit(scope["path"]))
            if length and length.isdigit() and int(length) > limit:
                await send_json(
                    send,
                    413,
                    error_body("payload_too_large", f"body over {limit} bytes"),
                    [],
                )
                return
        await self.app(scope, receive, send)


class TestClockMiddleware:
    """X-Memgate-Now pins "now" for one request, when the test clock is enabled
    (MEMGATE_ENV=test); otherwise the header is ignored."""

    __test__ = False  # not a pytest test class

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        pinned = header(scope, b"x-memgate-now") if scope["type"] == "http" else None
        token = None
        if pinned and clock.test_clock_enabled():
            try:
                token = clock.set_request_now(datetime.fromisoformat(pinned))
            except ValueError:
                token = None
        try:
            await self.app(scope, receive, send)
        finally:
            if token is not None:
                clock.reset_request_now(token)
