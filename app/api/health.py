"""Liveness, readiness and metrics, at the root and without a key (SPEC §8)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse

from app.api.deps import get_ctx
from app.errors import error_body
from app.metrics import CONTENT_TYPE, render
from app.queue import QUEUE_NAME

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(request: Request) -> JSONResponse:
    ctx = get_ctx(request)

    async def pg() -> str:
        async with ctx.pool.acquire(timeout=2) as conn:
            await conn.fetchval("SELECT 1")
        return "ok"

    async def redis() -> str:
        await ctx.redis.ping()
        return "ok"

    details: dict[str, str] = {}
    for name, check in (("postgres", pg), ("redis", redis)):
        try:
            details[name] = await asyncio.wait_for(check(), timeout=2.5)
        except Exception as exc:  # any failure means not ready
            details[name] = f"error: {type(exc).__name__}"
    if all(v == "ok" for v in details.values()):
        return JSONResponse({"status": "ok", **details})
    body = error_body("unavailable", "a dependency is not ready", details)
    return JSONResponse(body, status_code=503)


@router.get("/metrics", response_class=PlainTextResponse)
async def metrics(request: Request) -> Response:
    ctx = get_ctx(request)
    gauges: dict[str, tuple[str, list[tuple[dict[str, str], float]]]] = {}
    try:
        depth = await ctx.redis.zcard(QUEUE_NAME)
        gauges["memgate_queue_depth"] = ("Jobs waiting in the arq queue", [({}, float(depth))])
    except Exception:  # Redis down: the scrape still answers
        pass
    try:
        async with ctx.pool.acquire(timeout=2) as conn:
            rows = await conn.fetch("SELECT * FROM memgate_fact_counts()")
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
