"""Liveness, readiness and metrics, at the root and without a key (docs/api.md#endpoints)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from app import clock
from app.api.deps import get_ctx
from app.api.schemas.common import errors
from app.api.schemas.health import Alive, Ready
from app.errors import error_body
from app.faults import RETRY_AFTER_S
from app.metrics import CONTENT_TYPE, render
from app.queue import OBSERVE, QUEUE_NAME
from app.services import health as health_service

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Alive)
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    response_model=Ready,
    responses={503: {**errors(503)[503], "description": "not ready: details name who is down"}},
)
async def readyz(request: Request) -> JSONResponse:
    # 200 when PostgreSQL and Redis both answer; else 503 naming the one that does not
    # (`details: {postgres, redis}`, each "ok" or "error: <what failed>").
    ctx = get_ctx(request)

    async def pg() -> str:
        await health_service.ping_postgres(ctx)
        return "ok"

    async def redis() -> str:
        await ctx.redis.ping()
        if ctx.session_cluster is not None:  # sessions' cluster: part of "redis"
            await ctx.session_cluster.ping()
        return "ok"

    async def probe(check: Callable[[], Awaitable[str]]) -> str:
        try:
            return await asyncio.wait_for(check(), timeout=2.5)
        except Exception as exc:  # any failure means not ready
            return f"error: {type(exc).__name__}"

    # both at once: a dead PostgreSQL must not delay the news about Redis
    results = await asyncio.gather(probe(pg), probe(redis))
    details = dict(zip(("postgres", "redis"), results, strict=True))
    if all(v == "ok" for v in details.values()):
        return JSONResponse({"status": "ok", **details})
    down = [name for name, v in details.items() if v != "ok"]
    body = error_body("unavailable", f"not ready: {', '.join(down)} unavailable", details)
    return JSONResponse(body, status_code=503, headers={"Retry-After": str(RETRY_AFTER_S)})


# The Prometheus text format: declared as text, while its errors stay JSON (a plain
# `Response` class leaves the error envelope's media type application/json).
@router.get(
    "/metrics",
    response_class=Response,
    response_model=None,
    responses={
        200: {
            "description": "Prometheus text format",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    },
)
async def metrics(request: Request) -> Response:
    ctx = get_ctx(request)
    gauges: dict[str, tuple[str, list[tuple[dict[str, str], float]]]] = {}
    try:
        depth = await ctx.redis.zcard(QUEUE_NAME)
        gauges["memgate_queue_depth"] = ("Jobs waiting in the arq queue", [({}, float(depth))])
    except Exception:  # Redis down: the scrape still answers
        pass
    try:
        queued = await health_service.queue_state(ctx)
        now = clock.now()
        gauges["memgate_jobs_queued"] = (
            "Jobs queued in PostgreSQL (the outbox), by kind",
            [({"kind": k}, float(n)) for k, (n, _) in sorted(queued.items())]
            or [({"kind": OBSERVE}, 0.0)],
        )
        gauges["memgate_jobs_oldest_queued_age_seconds"] = (
            "Age of the oldest queued job, by kind (0: none queued)",
            [
                ({"kind": k}, max(0.0, (now - oldest).total_seconds()))
                for k, (_, oldest) in sorted(queued.items())
            ]
            or [({"kind": OBSERVE}, 0.0)],
        )
    except Exception:  # PostgreSQL down: the scrape still answers
        pass
    try:
        rows = await health_service.fact_counts(ctx)
        gauges["memgate_facts"] = (
            "Facts per tenant and status",
            [({"tenant": str(r["tenant_id"]), "status": r["status"]}, float(r["n"])) for r in rows],
        )
        gauges["memgate_facts_created_last_day"] = (
            "Facts created in the last 24 hours, per tenant and status",
            [
                ({"tenant": str(r["tenant_id"]), "status": r["status"]}, float(r["last_day"]))
                for r in rows
            ],
        )
    except Exception:
        pass
    return Response(await render(ctx.redis, gauges), media_type=CONTENT_TYPE)
