"""The arq queue: Redis connection settings and job names shared by API and workers."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, unquote, urlparse

from arq.connections import RedisSettings

from app import clock
from app.store import jobs as jobs_store
from app.store.db import tenant_tx

if TYPE_CHECKING:
    from app.context import AppContext

log = logging.getLogger("memgate.queue")

QUEUE_NAME = "memgate:queue"
JOB_RUN = "run_job"  # runs one row of the jobs table (observe, reembed, cleanup, ...)
# Job kinds (jobs.kind); each has one handler in workers/.
OBSERVE = "observe"
REEMBED = "reembed"
CLEANUP = "cleanup"
ENQUEUE_TIMEOUT_S = 0.5  # the API never waits longer than this for Redis


def redis_settings(url: str) -> RedisSettings:
    """arq settings from a redis:// , rediss:// or unix:// URL."""
    parsed = urlparse(url)
    if parsed.scheme == "unix":
        query = parse_qs(parsed.query)
        return RedisSettings(
            unix_socket_path=unquote(parsed.path),
            database=int(query.get("db", ["0"])[0]),
            password=parsed.password,
        )
    return RedisSettings(
        host=parsed.hostname or "localhost",
        port=parsed.port or 6379,
        database=int((parsed.path or "/0").lstrip("/") or 0),
        username=parsed.username,
        password=unquote(parsed.password) if parsed.password else None,
        ssl=parsed.scheme == "rediss",
    )


async def enqueue(app: AppContext, job_id: uuid.UUID, tenant_id: uuid.UUID) -> bool:
    """Hand one job to arq now (best effort) and mark it enqueued.

    False when Redis is unreachable or slow: the row stays unrelayed and the relay picks
    it up. `_job_id` makes arq ignore a job it already holds, so enqueueing twice is safe.
    """
    return bool(await enqueue_many(app, [(job_id, tenant_id)]))


async def enqueue_many(
    app: AppContext, jobs: list[tuple[uuid.UUID, uuid.UUID]], timeout_s: float = ENQUEUE_TIMEOUT_S
) -> int:
    """Enqueue (job id, tenant id) pairs; marks the ones handed over; returns how many."""
    if app.arq is None or not jobs:
        return 0
    handed: dict[uuid.UUID, list[uuid.UUID]] = {}
    try:
        async with asyncio.timeout(timeout_s):
            for job_id, tenant_id in jobs:
                await app.arq.enqueue_job(
                    JOB_RUN, str(job_id), str(tenant_id),
                    _job_id=str(job_id), _queue_name=QUEUE_NAME,
                )
                handed.setdefault(tenant_id, []).append(job_id)
    except (Exception, TimeoutError) as exc:  # Redis down: the outbox keeps the job
        log.warning("enqueue failed after %d of %d jobs: %s",
                    sum(map(len, handed.values())), len(jobs), type(exc).__name__)
    now = clock.now()
    for tenant_id, ids in handed.items():
        async with tenant_tx(app.pool, tenant_id) as conn:
            await jobs_store.mark_enqueued(conn, tenant_id, ids, now)
    return sum(len(ids) for ids in handed.values())
