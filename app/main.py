"""The app factory and lifespan: pools, Redis, queue, embedder. Wiring only."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from arq import create_pool as create_arq_pool
from fastapi import FastAPI
from redis.asyncio import Redis

from app.api import admin, explain, facts, health, me, observations, recall, sessions
from app.api import ops as ops_api
from app.api.guard import InputGuard
from app.api.idempotency import IdempotencyMiddleware
from app.api.middleware import MAX_BODY_BYTES, MemgateMiddleware
from app.api.responses import ERROR_RESPONSES, method_not_allowed
from app.auth import load_secret
from app.config import Settings, get_settings
from app.context import AppContext, PolicyCache
from app.errors import install_error_handlers
from app.faults import install_outage_handling
from app.logs import configure_logging
from app.providers.embedders import Embedder, build_embedder
from app.providers.extract_llm import LLMExtractor, LLMSummarizer
from app.providers.judge import LLMJudge
from app.queue import redis_settings
from app.recall import RecallLog
from app.store.db import create_pool

log = logging.getLogger("memgate.main")

ROUTERS = [
    health.router, admin.router, explain.router, facts.router, recall.router,
    observations.router,
    sessions.router, me.router, ops_api.router,
]


def embedder_from_settings(settings: Settings) -> Embedder:
    if settings.embedder == "openai":
        if not settings.embed_base_url or not settings.embed_model:
            raise RuntimeError("MEMGATE_EMBEDDER=openai needs MEMGATE_EMBED_BASE_URL and _MODEL")
        return build_embedder(
            "openai",
            base_url=settings.embed_base_url,
            model=settings.embed_model,
            api_key=settings.embed_api_key,
        )
    return build_embedder(settings.embedder)


async def build_context(settings: Settings, *, with_embedder: bool = True) -> AppContext:
    if not settings.database_url or not settings.redis_url:
        raise RuntimeError(
            "DATABASE_URL and REDIS_URL must be set (make run starts the embedded stack for you)"
        )
    pool = await create_pool(
        settings.database_url, min_size=settings.db_pool_min, max_size=settings.db_pool_max
    )
    redis = Redis.from_url(settings.redis_url)
    ctx = AppContext(
        settings=settings,
        pool=pool,
        redis=redis,
        secret=load_secret(settings.secret, settings.data_dir),
        policies=PolicyCache(settings),
    )
    ctx.arq = await create_arq_pool(redis_settings(settings.redis_url))
    if settings.llm_base_url:
        ctx.summarizer = LLMSummarizer(
            LLMExtractor(
                base_url=settings.llm_base_url,
                api_key=settings.llm_api_key,
                model=settings.llm_model,
                timeout_s=settings.llm_timeout_s,
                concurrency=settings.llm_concurrency,
                max_retries=1,  # a close waits for it: fail fast to the extractive summary
            )
        )
        ctx.judge = LLMJudge(  # a write waits for it: one attempt, the policy's timeout
            LLMExtractor(
                base_url=settings.llm_base_url,
                api_key=settings.llm_api_key,
                model=settings.llm_model,
                timeout_s=settings.llm_timeout_s,
                concurrency=settings.llm_concurrency,
                max_retries=0,
            )
        )
    if with_embedder:
        ctx.embedder = embedder_from_settings(settings)
        await ctx.embedder.warmup()
    return ctx


async def close_context(ctx: AppContext) -> None:
    if ctx.arq is not None:
        await ctx.arq.aclose()
    if ctx.embedder is not None:
        await ctx.embedder.aclose()
    if ctx.summarizer is not None:
        await ctx.summarizer.aclose()
    if ctx.judge is not None:
        await ctx.judge.aclose()
    await ctx.redis.aclose()
    await ctx.pool.close()


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        configure_logging(settings.log_level)
        ctx = await build_context(settings)
        app.state.ctx = ctx
        ctx.recall_log = RecallLog(ctx.pool)
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
    # Starlette runs the last added outermost: the input guard, limits, trace and clock,
    # then idempotency.
    app.add_middleware(IdempotencyMiddleware, max_body=MAX_BODY_BYTES)
    app.add_middleware(MemgateMiddleware)
    install_outage_handling(app)  # outage errors of routes and middleware answer 503
    # outermost of all: bad input never reaches the rest, and any other error is a 500
    # answered without dropping the connection
    app.add_middleware(InputGuard)
    app.add_exception_handler(405, method_not_allowed)
    for router in ROUTERS:
        app.include_router(router, responses=ERROR_RESPONSES)
    return app
