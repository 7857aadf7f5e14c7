"""The "reembed" job: move every fact of a tenant onto the configured embedding model.

Batches of 64, each in its own short transaction, so writes and recall carry on while it
runs: recall compares only same-model vectors, and facts not yet migrated are still
found by the structured, keyword and recency channels. Idempotent: facts already on the
target model are skipped, so a retried or repeated job only finishes the rest.

A job works for a time slice below the framework's job timeout; a tenant too large for
one slice is finished by a continuation job, named in the result as `next_job_id`.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

from app import clock
from app.context import AppContext
from app.providers.embedders import Embedder
from app.queue import REEMBED, enqueue
from app.store import jobs as jobs_store
from app.store import reembed as store
from app.store.db import tenant_tx
from workers.jobs import JobResult, JobRun

log = logging.getLogger("memgate.reembed")

KIND = REEMBED
BATCH_SIZE = 64
SLICE_SHARE = 0.6  # of the job timeout: room for the last batch and the bookkeeping


class ReembedError(Exception):
    """The job cannot run here (this worker embeds with another model): not retried."""

    retryable = False


async def reembed_tenant(
    ctx: AppContext,
    tenant_id: uuid.UUID,
    embedder: Embedder,
    *,
    job_id: uuid.UUID | None = None,
    batch_size: int = BATCH_SIZE,
    max_batches: int | None = None,
    deadline: float | None = None,
) -> dict[str, Any]:
    """Re-embed the tenant's facts with `embedder` until done, `max_batches` or the
    monotonic `deadline`; progress goes to the job row after every batch."""
    model = embedder.model
    async with tenant_tx(ctx.pool, tenant_id) as conn:
        total = await store.count_pending(conn, tenant_id, model)
    progress: dict[str, Any] = {"model": model, "total": total, "done": 0, "skipped": 0}
    after: uuid.UUID | None = None
    batches = 0
    complete = False
    while max_batches is None or batches < max_batches:
        if batches and deadline is not None and time.monotonic() >= deadline:
            break  # at least one batch per slice: a chain of jobs always progresses
        async with tenant_tx(ctx.pool, tenant_id) as conn:
            batch = await store.next_batch(conn, tenant_id, model, after, batch_size)
        if not batch:
            complete = True
            break
        after = batch[-1]["id"]
        ids = [r["id"] for r in batch]
        texts = [r["statement"] for r in batch]
        # Embedding happens outside any transaction: no row lock waits on the model.
        vectors = await embedder.embed_documents(texts)
        async with tenant_tx(ctx.pool, tenant_id) as conn:
            changed = await store.apply_batch(conn, tenant_id, model, ids, texts, vectors)
            # `done` counts every fact handled, so it reaches `total`; `skipped` are the
            # ones a concurrent write or deletion changed meanwhile (left as they are)
            progress["done"] += len(batch)
            progress["skipped"] += len(batch) - changed
            progress["total"] = max(progress["total"], progress["done"])  # written since
            if job_id is not None:
                await jobs_store.save_progress(conn, tenant_id, job_id, progress, clock.now())
        batches += 1
    progress["complete"] = complete
    return progress


def target_embedder(ctx: AppContext, payload: dict[str, Any]) -> Embedder:
    embedder = ctx.embedder
    if embedder is None:
        raise ReembedError("this worker has no embedder configured")
    wanted = payload.get("model")
    if wanted and wanted != embedder.model:
        # Recall embeds queries with the configured model: migrating to any other would
        # leave the dense channel with nothing to compare.
        raise ReembedError(f"job asks for {wanted!r}; this worker embeds with {embedder.model!r}")
    return embedder


async def handle_reembed(run: JobRun) -> JobResult:
    """Job handler for kind "reembed" (payload {"model": <embedding model name>})."""
    app = run.app
    embedder = target_embedder(app, run.payload)
    deadline = time.monotonic() + app.settings.job_timeout_s * SLICE_SHARE
    progress = await reembed_tenant(
        app, run.tenant_id, embedder, job_id=run.id, batch_size=BATCH_SIZE, deadline=deadline
    )
    outcome = JobResult(result=progress)
    next_id: uuid.UUID | None = None
    async with run.finishing(outcome) as conn:
        if not progress["complete"]:
            next_id = await jobs_store.insert(
                conn,
                run.tenant_id,
                KIND,
                {"model": embedder.model, "continues": str(run.id)},
                clock.now(),
            )
            progress["next_job_id"] = str(next_id)
    if next_id is not None:
        await enqueue(app, next_id, run.tenant_id)  # the relay retries if Redis is down
    log.info("reembed slice done: %s", progress)
    return outcome
