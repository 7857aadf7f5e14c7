"""The arq queue: Redis connection settings and job names shared by API and workers."""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, unquote, urlparse

from arq.connections import ArqRedis, RedisSettings
from arq.constants import job_key_prefix, result_key_prefix

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
IMPORT = "import"
PURGE = "purge"
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
    it up. Enqueueing a job arq already holds is safe (see `enqueue_many`).
    """
    return (await enqueue_many(app, [(job_id, tenant_id)])).in_queue > 0


@dataclass
class HandOver:
    """What one hand-over did: `handed` are now in arq's queue because of it, `held` were
    there already (arq refused the id and will run it), `repaired` (a subset of handed)
    were refused by arq for a stale key of a job it no longer queues."""

    handed: int = 0
    held: int = 0
    repaired: int = 0

    @property
    def in_queue(self) -> int:
        return self.handed + self.held


async def _put(arq: ArqRedis, job_id: uuid.UUID, tenant_id: uuid.UUID) -> str:
    """Put one job in arq's queue: 'handed', 'held' (already queued) or 'repaired'.

    arq answers None (refuses) for an id whose job key or result it still holds. A job
    key in the queue is a job arq will run (waiting, deferred for a retry, or leased by a
    worker; a dead worker's lease expires). Anything else is stale — a result kept by an
    older configuration, a key left by a failure — and is removed, then the job is put
    in again: the jobs table, not Redis, says whether it still has to run."""
    jid = str(job_id)
    if await arq.enqueue_job(JOB_RUN, jid, str(tenant_id), _job_id=jid, _queue_name=QUEUE_NAME):
        return "handed"
    if await arq.zscore(QUEUE_NAME, jid) is not None:
        return "held"
    await arq.delete(job_key_prefix + jid, result_key_prefix + jid)
    if await arq.enqueue_job(JOB_RUN, jid, str(tenant_id), _job_id=jid, _queue_name=QUEUE_NAME):
        log.warning("job %s: arq refused it for a stale key; put in again", jid)
        return "repaired"
    return "held"  # put in by someone else between the two calls


async def enqueue_many(
    app: AppContext, jobs: list[tuple[uuid.UUID, uuid.UUID]], timeout_s: float = ENQUEUE_TIMEOUT_S
) -> HandOver:
    """Make sure arq queues each (job id, tenant id); marks those that are in arq's queue."""
    outcome = HandOver()
    if app.arq is None or not jobs:
        return outcome
    in_queue: dict[uuid.UUID, list[uuid.UUID]] = {}
    try:
        async with asyncio.timeout(timeout_s):
            for job_id, tenant_id in jobs:
                what = await _put(app.arq, job_id, tenant_id)
                if what == "held":
                    outcome.held += 1
                else:
                    outcome.handed += 1
                    outcome.repaired += what == "repaired"
                in_queue.setdefault(tenant_id, []).append(job_id)
    except (Exception, TimeoutError) as exc:  # Redis down: the outbox keeps the job
        log.warning(
            "enqueue failed after %d of %d jobs: %s",
            outcome.in_queue,
            len(jobs),
            type(exc).__name__,
        )
    now = clock.now()
    try:
        for tenant_id, ids in in_queue.items():
            async with tenant_tx(app.pool, tenant_id) as conn:
                await jobs_store.mark_enqueued(conn, tenant_id, ids, now)
    except Exception as exc:  # unmarked jobs are checked again by the next relay pass
        log.warning("marking %d job(s) enqueued failed: %s", outcome.in_queue, type(exc).__name__)
    return outcome
