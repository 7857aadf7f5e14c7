"""The job framework: one arq function runs one row of the jobs table
(docs/extraction.md#observations, docs/api.md#jobs).

`run_job` loads the row in its tenant, skips it when already finished, marks it running,
dispatches to the handler of its `kind` (the map in workers/settings.py, which the
worker's startup puts in arq's `ctx["handlers"]`), and records the outcome. A handler
does its writes inside `run.finishing()`: the same transaction marks the job done, and it
starts by locking the job row, so a job retried after a crash (or delivered twice) either
committed everything once or nothing at all.

Retries: an exception with `retryable=False` fails the job at once; any other exception
(timeouts, provider errors) puts it back to `queued` and asks arq to run it again after a
backoff, until `job_max_tries` attempts are spent. An outage (PostgreSQL or Redis away,
`app.faults.is_outage`) is never a failure: arq runs the job again within seconds, and the
attempt still counts, so a job whose every run dies is failed by the next run's check.
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import asyncpg
from arq import Retry

from app import clock
from app.context import AppContext
from app.faults import is_outage
from app.memory.detectors import redact
from app.metrics import worker_incr
from app.store import jobs as jobs_store
from app.store.db import tenant_tx

log = logging.getLogger("memgate.jobs")

MAX_ERROR_CHARS = 500
RETRY_BACKOFF_CAP_S = 300.0
# arq's own try counter must never stop a job before run_job has recorded it as failed.
ARQ_EXTRA_TRIES = 3
OUTAGE_RETRY_CAP_S = 5.0


class JobAlreadyDone(Exception):
    """Another run finished this job first: this run commits nothing."""


@dataclass
class JobResult:
    """What a handler decided; stored on the job row when it is marked done."""

    decisions: list[dict[str, Any]] = field(default_factory=list)
    result: Any = None
    payload: dict[str, Any] | None = None  # replaces the stored payload (e.g. drop the turns)


@dataclass
class JobRun:
    """One attempt at one job, as a handler sees it."""

    app: AppContext
    id: uuid.UUID
    tenant_id: uuid.UUID
    user_id: str | None
    kind: str
    payload: dict[str, Any]
    attempt: int
    now: datetime
    completed: bool = False

    @asynccontextmanager
    async def finishing(self, outcome: JobResult) -> AsyncIterator[asyncpg.Connection]:
        """A tenant transaction that ends by marking the job done with `outcome`.

        The job row is locked first: if another run already finished the job, this raises
        `JobAlreadyDone` before anything is written. Fill `outcome` inside the block.
        """
        async with tenant_tx(self.app.pool, self.tenant_id) as conn:
            row = await jobs_store.get(conn, self.tenant_id, self.id, lock=True)
            if row is None or row["state"] in ("done", "failed"):
                raise JobAlreadyDone(str(self.id))
            yield conn
            await jobs_store.mark_done(
                conn,
                self.tenant_id,
                self.id,
                clock.now(),
                outcome.decisions,
                outcome.result,
                outcome.payload,
            )
        self.completed = True


Handler = Callable[[JobRun], Awaitable[JobResult]]


def retry_backoff_s(attempt: int, base_s: float) -> float:
    """Exponential backoff with jitter, so retries of many jobs do not arrive together."""
    delay: float = min(RETRY_BACKOFF_CAP_S, base_s * 2 ** max(0, attempt - 1))
    return delay * (0.75 + random.random() / 2)


def _error_text(exc: BaseException) -> str:
    # Exceptions can quote data (a driver error echoing a value): redact before it rests.
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return redact(text)[:MAX_ERROR_CHARS]


def outage_backoff_s(arq_try: int) -> float:
    """Delay before a run cut short by an outage is tried again: short, the outage is."""
    delay: float = min(OUTAGE_RETRY_CAP_S, 0.5 * 2 ** max(0, arq_try - 1))
    return delay * (0.75 + random.random() / 2)


async def run_job(ctx: dict[str, Any], job_id: str, tenant_id: str) -> str:
    """The arq function: run one job row to completion, retry or failure.

    PostgreSQL or Redis going away is never a failure: whatever step it interrupts (even
    the bookkeeping of the run before the handler, or of a failure), arq is asked to run
    the job again shortly. Letting the exception reach arq would make arq drop the job
    while its row still says running.
    """
    try:
        return await _run_job(ctx, job_id, tenant_id)
    except Retry:
        raise
    except Exception as exc:
        if not is_outage(exc):
            raise
        defer = outage_backoff_s(int(ctx.get("job_try") or 1))
        log.warning(
            "job %s interrupted by an outage (%s), retry in %.1fs",
            job_id,
            type(exc).__name__,
            defer,
        )
        raise Retry(defer=defer) from exc


async def _run_job(ctx: dict[str, Any], job_id: str, tenant_id: str) -> str:
    app: AppContext = ctx["app"]
    handlers: Mapping[str, Handler] = ctx.get("handlers") or {}
    settings = app.settings
    jid, tid = uuid.UUID(job_id), uuid.UUID(tenant_id)
    max_tries = settings.job_max_tries
    async with tenant_tx(app.pool, tid) as conn:
        row = await jobs_store.get(conn, tid, jid, lock=True)
        if row is None:
            log.warning("job %s not found in tenant %s", jid, tid)
            return "missing"
        if row["state"] in ("done", "failed"):
            return "skipped"  # a duplicate delivery or a re-enqueue after success
        if row["attempts"] >= max_tries:
            # every attempt was spent by runs that died mid-job (killed workers)
            error = row["error"] or "worker lost during the job"
            await jobs_store.mark_failed(
                conn,
                tid,
                jid,
                clock.now(),
                f"retries exhausted: {error}"[:MAX_ERROR_CHARS],
                code="retries_exhausted",
            )
            kind = row["kind"]
            failed_early = True
        else:
            row = await jobs_store.mark_running(conn, tid, jid, clock.now())
            kind = row["kind"]
            failed_early = False
    if failed_early:
        await worker_incr(app.redis, "memgate_jobs_total", kind=kind, outcome="failed")
        return "failed"

    handler = handlers.get(kind)
    if handler is None:
        async with tenant_tx(app.pool, tid) as conn:
            await jobs_store.mark_failed(
                conn, tid, jid, clock.now(), f"unknown job kind {kind!r}", code="unknown_kind"
            )
        await worker_incr(app.redis, "memgate_jobs_total", kind=kind, outcome="failed")
        return "failed"

    run = JobRun(
        app=app,
        id=jid,
        tenant_id=tid,
        user_id=row["user_id"],
        kind=kind,
        payload=row["payload"] or {},
        attempt=int(row["attempts"]),
        now=clock.now(),
    )
    # Stop a little before arq's job_timeout: a timeout arq sees is a failure it never
    # retries, one we see is an ordinary retryable error.
    deadline = max(1.0, settings.job_timeout_s * 0.9)
    try:
        async with asyncio.timeout(deadline):
            outcome = await handler(run)
            if not run.completed:
                async with run.finishing(outcome):
                    pass
    except JobAlreadyDone:
        await worker_incr(app.redis, "memgate_jobs_total", kind=kind, outcome="skipped")
        return "skipped"
    except Exception as exc:
        error = _error_text(exc)
        await worker_incr(app.redis, "memgate_job_failures_total", kind=kind)
        if is_outage(exc):
            raise  # run_job asks arq for a retry; the row may not be writable now
        retryable = bool(getattr(exc, "retryable", True))
        if retryable and run.attempt < max_tries:
            async with tenant_tx(app.pool, tid) as conn:
                await jobs_store.mark_retry(conn, tid, jid, clock.now(), error)
            defer = retry_backoff_s(run.attempt, settings.job_retry_base_s)
            log.warning(
                "job %s (%s) attempt %d failed, retry in %.1fs: %s",
                jid,
                kind,
                run.attempt,
                defer,
                error,
            )
            await worker_incr(app.redis, "memgate_jobs_total", kind=kind, outcome="retry")
            raise Retry(defer=defer) from exc
        code = "retries_exhausted" if retryable else f"error_{type(exc).__name__}"
        async with tenant_tx(app.pool, tid) as conn:
            await jobs_store.mark_failed(conn, tid, jid, clock.now(), error, code=code)
        log.error("job %s (%s) failed after %d attempts: %s", jid, kind, run.attempt, error)
        await worker_incr(app.redis, "memgate_jobs_total", kind=kind, outcome="failed")
        return "failed"
    await worker_incr(app.redis, "memgate_jobs_total", kind=kind, outcome="done")
    return "done"
