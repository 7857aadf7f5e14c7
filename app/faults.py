"""Dependency outages: which errors mean "PostgreSQL or Redis is away", and the API's answer.

One predicate serves the API (503 `unavailable` with Retry-After, never 500) and the
workers (a job that lost its database is retried, never failed). An outage is a lost or
refused connection, a server shutting down or starting up, or a server out of connection
slots; a bad statement or a constraint violation is not an outage.
"""

from __future__ import annotations

import logging

import asyncpg
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from redis import exceptions as redis_errors
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.errors import error_body

log = logging.getLogger("memgate.faults")

RETRY_AFTER_S = 2  # PostgreSQL restarts in ~1-3 s under the supervisor, Redis faster

OUTAGE_ERRORS: tuple[type[Exception], ...] = (
    asyncpg.PostgresConnectionError,  # SQLSTATE 08: connection lost / refused
    asyncpg.CannotConnectNowError,  # 57P03: starting up or shutting down
    asyncpg.AdminShutdownError,  # 57P01: terminated by a (fast) shutdown
    asyncpg.CrashShutdownError,  # 57P02: another backend crashed (postmaster reset)
    asyncpg.TooManyConnectionsError,  # 53300
    asyncpg.InterfaceError,  # only "connection is closed" counts (see is_outage)
    redis_errors.ConnectionError,  # also BusyLoadingError (AOF replay after a restart)
    redis_errors.TimeoutError,
    ConnectionError,  # refused / reset (a subclass of OSError)
    OSError,  # the unix socket is gone while the server restarts
)


def is_outage(exc: BaseException) -> bool:
    """True when `exc` (or an exception it was raised from) is a dependency outage."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, TimeoutError):
            pass  # an OSError too, but a slow step is not an outage (its cause may be)
        elif isinstance(current, asyncpg.InterfaceError):
            if "closed" in str(current):
                return True
        elif isinstance(current, OUTAGE_ERRORS):
            return True
        current = current.__cause__ or current.__context__
    return False


def unavailable_response() -> JSONResponse:
    return JSONResponse(
        error_body("unavailable", "a dependency (PostgreSQL or Redis) is unavailable; retry"),
        status_code=503,
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )


class OutageGuard:
    """Outermost ASGI layer: an outage raised outside the routes (in another middleware,
    e.g. an idempotency claim) is answered 503 too, when no answer was started yet."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            if started or not is_outage(exc):
                raise
            log.warning("answered 503: %s", type(exc).__name__)
            await unavailable_response()(scope, receive, send)


def install_outage_handling(app: FastAPI) -> None:
    """503 `unavailable` + Retry-After for every outage error, in routes and middleware."""

    async def handler(_: Request, exc: Exception) -> JSONResponse:
        if not is_outage(exc):
            raise exc  # not an outage: the generic handler answers it
        log.warning("answered 503: %s", type(exc).__name__)
        return unavailable_response()

    for exc_type in OUTAGE_ERRORS:
        app.add_exception_handler(exc_type, handler)
    app.add_middleware(OutageGuard)
