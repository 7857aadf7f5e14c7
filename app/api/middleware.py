"""ASGI middleware: body size limit, request metrics and logs, trace id, test clock.

Idempotency is its own middleware, inside this one (app/api/idempotency.py).
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
from app.api.idempotency import header, send_json
from app.errors import SecretInIdentifier, error_body
from app.memory.screening import identifier_holds_secret
from app.metrics import REQUEST_LATENCY

log = logging.getLogger("memgate.http")
MAX_BODY_BYTES = 1_000_000
_TRACE_ID = re.compile(r"[A-Za-z0-9_.:@-]{1,128}")
_QUIET_ROUTES = frozenset({"/healthz", "/readyz", "/metrics"})


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
        given = header(scope, b"x-trace-id")
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
        pinned = header(scope, b"x-memgate-now")
        if pinned and clock.test_clock_enabled():
            try:
                token = clock.set_request_now(datetime.fromisoformat(pinned))
            except ValueError:
                token = None
        try:
            if refused:
                await send_json(send_wrapper, SecretInIdentifier.status, error_body(
                    SecretInIdentifier.code, "the X-Trace-Id header holds a secret",
                    {"fields": [{"loc": ["header", "x-trace-id"]}]}), [])
                return
            length = header(scope, b"content-length")
            if length and length.isdigit() and int(length) > MAX_BODY_BYTES:
                await send_json(
                    send_wrapper,
                    413,
                    error_body("payload_too_large", f"body over {MAX_BODY_BYTES} bytes"),
                    [],
                )
                return
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
