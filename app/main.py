"""The app factory and lifespan: pools, Redis, queue, embedder. Wiring only."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from app.api import (
    admin,
    explain,
    facts,
    health,
    imports,
    me,
    observations,
    recall,
    sessions,
    web,
)
from app.api import ops as ops_api
from app.api import webhooks as webhooks_api
from app.api.guard import InputGuard
from app.api.idempotency import IdempotencyMiddleware
from app.api.middleware import (
    MAX_BODY_BYTES,
    BodyLimitMiddleware,
    TestClockMiddleware,
    TraceMiddleware,
)
from app.api.responses import ERROR_RESPONSES, method_not_allowed
from app.config import Settings, get_settings
from app.context import build_context, close_context
from app.errors import install_error_handlers
from app.faults import install_outage_handling
from app.logs import configure_logging
from app.recall import RecallLog

log = logging.getLogger("memgate.main")

ROUTERS = [
    health.router,
    admin.router,
    explain.router,
    facts.router,
    imports.router,
    recall.router,
    observations.router,
    sessions.router,
    me.router,
    ops_api.router,
    webhooks_api.router,
]


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        configure_logging(settings.log_level)
        ctx = await build_context(settings)
        app.state.ctx = ctx
        ctx.recall_log = RecallLog(ctx.pool, ctx.redis)
        ctx.recall_log.start()
        log.info("memgate ready")
        try:
            yield
        finally:
            await ctx.recall_log.aclose()  # flush what recalls logged before the pool closes
            await close_context(ctx)

    app = FastAPI(
        title="memgate",
        version="0.1.0",
        summary="A memory service for LLM agents: a write gate, scoped recall, forgetting.",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    # Starlette runs the last added outermost, so from the outside in:
    # - InputGuard: bad input is refused before anything reads it; any other error is a 500
    #   answered without dropping the connection.
    # - OutageGuard: an outage raised in the layers below (an idempotency claim) is a 503.
    # - TraceMiddleware: every answer of the layers below (a 413 of the body limit, an
    #   idempotent replay) carries the trace id, is counted in the latency metric and logged.
    # - BodyLimitMiddleware: an oversized Content-Length is a 413 before a body is read.
    # - TestClockMiddleware: a pinned "now" holds for all that decides, idempotency's
    #   record times included.
    # - IdempotencyMiddleware: innermost, next to the routes: it replays their answers.
    app.add_middleware(IdempotencyMiddleware, max_body=MAX_BODY_BYTES)
    app.add_middleware(TestClockMiddleware)
    app.add_middleware(BodyLimitMiddleware, max_body=MAX_BODY_BYTES)
    app.add_middleware(TraceMiddleware)
    install_outage_handling(app)  # outage errors of routes and middleware answer 503
    app.add_middleware(InputGuard)
    app.add_exception_handler(405, method_not_allowed)
    for router in ROUTERS:
        app.include_router(router, responses=ERROR_RESPONSES)
    app.include_router(web.router)  # the /me page: HTML, not part of the API document
    return app
