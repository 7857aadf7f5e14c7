"""Scheduled maintenance (arq cron): promotion, expiry, decay, eviction, purge, merge,
missing vectors.

Each sweep is a plain `sweep_x(app, now) -> int` (tests call it with a shifted `now`),
walks every tenant through `memgate_tenant_ids()` and works inside that tenant's own
transactions, in bounded batches. Each is idempotent and safe with several workers: rows
are claimed with SKIP LOCKED, per-user work takes a try-lock, the rest are single
statements whose result does not depend on who runs them. The SQL is in
`app.store.lifecycle`; the decisions (what to promote, the write gate) are the writer's.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, cast

from arq import cron
from arq.cron import CronJob
from arq.typing import WorkerCoroutine

from app import clock
from app.context import AppContext
from app.memory.model import Decision
from app.metrics import worker_incr
from app.store import audit, lifecycle, reembed
from app.store import jobs as jobs_store
from app.store import users as users_store
from app.store.db import tenant_ids, tenant_tx
from app.store.facts import lock_subject
from app.writer import SYSTEM_RIGHTS, promote

log = logging.getLogger("memgate.maintenance")

BATCH = 200

Sweep = Callable[[AppContext, datetime], Awaitable[int]]


async def sweep_promotions(app: AppContext, now: datetime) -> int:
    """Promote pending candidates that reached `promote.min_observations` (through the gate).

    The write path promotes at once when the threshold is crossed; this catches the rest
    (a lowered threshold, a write that failed halfway, candidates pooled while the policy
    required confirmation and no longer does).
    """
    promoted = 0
    for tid in await tenant_ids(app.pool):
        after: uuid.UUID | None = None
        while True:
            async with tenant_tx(app.pool, tid) as conn:
                policy = await app.policies.get(conn, tid)
                if policy.promote.require_confirmation:
                    break
                rows = await lifecycle.promotable_candidates(
                    conn, tid, policy.promote.min_observations, now, after, BATCH
                )
                for row in rows:
                    # These rows are locked already: never wait on a forget-me for their
                    # user (it waits on them); a user being forgotten is skipped.
                    if not await users_store.try_share_user(conn, tid, row["user_id"]):
                        continue
                    outcome = await promote(app, conn, tid, SYSTEM_RIGHTS, row, policy, now)
                    if outcome.decision in (Decision.WRITTEN, Decision.SUPERSEDED, Decision.MERGED):
                        promoted += 1
            if len(rows) < BATCH:
                break
            after = rows[-1]["id"]
    return promoted


async def sweep_candidate_expiry(app: AppContext, now: datetime) -> int:
    """Pending candidates past `promote.ttl_days` (set as expires_at when pooled) expire."""
    total = 0
    for tid in await tenant_ids(app.pool):
        while True:
            async with tenant_tx(app.pool, tid) as conn:
                n = await lifecycle.expire_candidates(conn, tid, now, BATCH)
            total += n
            if n:
                await worker_incr(app.redis, "memgate_expirations_total", n, what="candidate")
            if n < BATCH:
                break
    return total


async def sweep_fact_ttl(app: AppContext, now: datetime) -> int:
    """Active facts whose expires_at passed are archived ('expired'): no tombstone."""
    total = 0
    for tid in await tenant_ids(app.pool):
        while True:
            async with tenant_tx(app.pool, tid) as conn:
                policy = await app.policies.get(conn, tid)
                n = await lifecycle.archive_expired_facts(conn, tid, now, policy.version, BATCH)
            total += n
            if n:
                await worker_incr(app.redis, "memgate_expirations_total", n, what="fact")
            if n < BATCH:
                break
    return total


async def sweep_decay(app: AppContext, now: datetime) -> int:
    """Decay bookkeeping: recompute weights with the half-life; only weights change."""
    total = 0
    for tid in await tenant_ids(app.pool):
        after: uuid.UUID | None = None
        while True:
            async with tenant_tx(app.pool, tid) as conn:
                policy = await app.policies.get(conn, tid)
                if not policy.decay.enabled:
                    break
                ids = await lifecycle.active_fact_ids(conn, tid, after, BATCH)
                if ids:
                    total += await lifecycle.decay_weights(
                        conn, tid, ids, now, policy.decay.half_life_days, policy.decay.keep_floor
                    )
            if len(ids) < BATCH:
                break
            after = ids[-1]
    return total


VECTOR_BATCH = 64  # texts per embedding call, as the reembed job
VECTOR_BATCHES_PER_TENANT = 16  # per tick: a tenant with many more is finished next hour


async def sweep_missing_vectors(app: AppContext, now: datetime) -> int:
    """Embed the active facts stored without a vector. A write whose embedding failed
    (a provider outage, an encoder killed under load) keeps the fact and logs
    (app.writer `_embed`), but the dense channel never sees it, and recall is silently
    worse for that user until this sweep gives it one. Only facts with no vector at all:
    moving facts onto another model is the reembed job's. Embedding happens outside any
    transaction; a failing embedder ends the sweep (the next tick tries again)."""
    embedder = app.embedder
    if embedder is None:
        return 0
    total, failed_in_a_row = 0, 0
    for tid in await tenant_ids(app.pool):
        after: uuid.UUID | None = None
        for _ in range(VECTOR_BATCHES_PER_TENANT):
            async with tenant_tx(app.pool, tid) as conn:
                batch = await reembed.missing_vectors(conn, tid, after, VECTOR_BATCH)
            if not batch:
                break
            after = batch[-1]["id"]
            ids = [r["id"] for r in batch]
            texts = [r["statement"] for r in batch]
            try:
                vectors = await embedder.embed_documents(texts)
            except Exception:
                # One batch the embedder refuses is skipped (the next ones and the next
                # tenants still get theirs); two in a row is an outage: the next tick.
                log.exception("sweep missing_vectors: embedding failed")
                failed_in_a_row += 1
                if failed_in_a_row >= 2:
                    return total
                continue
            failed_in_a_row = 0
            async with tenant_tx(app.pool, tid) as conn:
                total += await reembed.apply_batch(conn, tid, embedder.model, ids, texts, vectors)
            if len(batch) < VECTOR_BATCH:
                break
    return total


async def sweep_eviction(app: AppContext, now: datetime) -> int:
    """Users over `retention.max_items_per_subject` lose their least useful active facts."""
    total = 0
    for tid in await tenant_ids(app.pool):
        async with tenant_tx(app.pool, tid) as conn:
            policy = await app.policies.get(conn, tid)
            limit = policy.retention.max_items_per_subject
            users = await lifecycle.users_over_capacity(conn, tid, limit, BATCH)
        for user_id, _ in users:
            async with tenant_tx(app.pool, tid) as conn:
                if not await lifecycle.try_lock_user(conn, tid, user_id, "evict"):
                    continue  # another worker is evicting this user right now
                excess = await lifecycle.count_active(conn, tid, user_id) - limit
                if excess <= 0:
                    continue
                n = await lifecycle.evict_least_useful(
                    conn, tid, user_id, excess, now, policy.version
                )
            total += n
            await worker_incr(app.redis, "memgate_evictions_total", n)
    return total


async def sweep_purge(app: AppContext, now: datetime) -> int:
    """Deleted facts: erase their words everywhere a copy may rest (docs/lifecycle.md#purge,
    docs/lifecycle.md#deletion).

    The facts row is erased at deletion already; this reaches the copies: candidates the
    fact came from, audit details, recall-log entries and stored idempotent answers.
    """
    total = 0
    for tid in await tenant_ids(app.pool):
        total += await purge_tenant(app, tid, now)
    return total


async def purge_tenant(
    app: AppContext, tid: uuid.UUID, now: datetime, *, job_id: uuid.UUID | None = None
) -> int:
    """The purge of one tenant, in batches: the sweep's, and the "purge" job's
    (workers/purge.py), whose `{total, done}` goes to its row after every batch."""
    done = 0
    total = 0
    if job_id is not None:
        async with tenant_tx(app.pool, tid) as conn:
            total = await lifecycle.count_unscrubbed(conn, tid)
            await jobs_store.save_progress(conn, tid, job_id, _purged(total, 0), clock.now())
    while True:
        async with tenant_tx(app.pool, tid) as conn:
            ids = await lifecycle.unscrubbed_deleted(conn, tid, BATCH)
            if ids:
                await _scrub_copies(conn, tid, ids, now)
                done += len(ids)
                if job_id is not None:
                    await jobs_store.save_progress(
                        conn, tid, job_id, _purged(total, done), clock.now()
                    )
        if ids:
            await worker_incr(app.redis, "memgate_purges_total", len(ids))
        if len(ids) < BATCH:
            break
    return done


def _purged(total: int, done: int) -> dict[str, int]:
    # facts deleted since the count are purged too: `total` never trails `done`
    return {"total": max(total, done), "done": done}


async def _scrub_copies(conn: Any, tid: uuid.UUID, ids: list[uuid.UUID], now: datetime) -> None:
    await lifecycle.erase_facts(conn, tid, ids, now)
    candidate_ids = await lifecycle.erase_candidates_of(conn, tid, ids, now)
    await lifecycle.erase_audit_text(conn, tid, ids, candidate_ids)
    gone = {str(i) for i in ids}
    for entry in await lifecycle.recall_logs_with(conn, tid, ids):
        kept = [f for f in entry["fact_ids"] if str(f) not in gone]
        detail = scrub(entry["detail"], gone)
        await lifecycle.update_recall_log(conn, tid, entry["id"], kept, detail)
    for record in await lifecycle.idempotency_records_with(conn, tid, ids):
        response = scrub(record["response"], gone)
        await lifecycle.update_idempotency_response(conn, tid, record, response)


_TEXT_FIELDS = ("statement", "value", "evidence", "text", "snippet")


def scrub(data: Any, gone: set[str]) -> Any:
    """A JSON document with every trace of the `gone` facts' words removed.

    An object whose `id`/`fact_id` is gone loses its text fields; a key that is a gone
    id is dropped; a list drops bare gone ids. Everything else is kept as is.
    """
    if isinstance(data, list):
        return [scrub(v, gone) for v in data if not (isinstance(v, str) and v in gone)]
    if not isinstance(data, dict):
        return data
    own = str(data.get("id", data.get("fact_id", "")))
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in gone:
            continue
        if own in gone and key in _TEXT_FIELDS:
            out[key] = None if key == "value" else ""
        elif own in gone and key == "source" and isinstance(value, dict):
            out[key] = {**value, "evidence": None}
        else:
            out[key] = scrub(value, gone)
    return out


async def sweep_consolidation(app: AppContext, now: datetime) -> int:
    """Merge active free statements that slipped through with the same normalized text."""
    merged = 0
    for tid in await tenant_ids(app.pool):
        async with tenant_tx(app.pool, tid) as conn:
            groups = await lifecycle.duplicate_statement_groups(conn, tid, BATCH)
        for group in groups:
            async with tenant_tx(app.pool, tid) as conn:
                # the writer's lock for this statement: no write races the merge
                await lock_subject(
                    conn, tid, group["user_id"], group["scope"], f"s:{group['statement_key']}"
                )
                rows = await lifecycle.lock_duplicates(conn, tid, group)
                if len(rows) < 2:
                    continue
                keep, others = rows[0], rows[1:]
                await lifecycle.merge_into(conn, tid, keep, others, now)
                policy = await app.policies.get(conn, tid)
                await audit.record(
                    conn,
                    tid,
                    "merge",
                    actor_role="system",
                    user_id=group["user_id"],
                    fact_id=keep["id"],
                    policy_version=policy.version,
                    detail={"merged": [str(r["id"]) for r in others], "scope": group["scope"]},
                    at=now,
                )
            merged += len(others)
    return merged


SWEEPS: dict[str, Sweep] = {
    "promotions": sweep_promotions,
    "candidate_expiry": sweep_candidate_expiry,
    "fact_ttl": sweep_fact_ttl,
    "decay": sweep_decay,
    "eviction": sweep_eviction,
    "purge": sweep_purge,
    "consolidation": sweep_consolidation,
    "missing_vectors": sweep_missing_vectors,
}


async def run_all(app: AppContext, now: datetime) -> dict[str, int]:
    """Every sweep once, in lifecycle order (tests and `make` targets)."""
    return {name: await sweep(app, now) for name, sweep in SWEEPS.items()}


def _cron_task(name: str, sweep: Sweep) -> Callable[[dict[str, Any]], Awaitable[int]]:
    async def task(ctx: dict[str, Any]) -> int:
        n = await sweep(ctx["app"], clock.now())
        if n:
            log.info("sweep %s: %d", name, n)
        return n

    task.__qualname__ = task.__name__ = f"sweep_{name}"
    return task


# (sweep, cron fields). Minute sweeps are staggered by second so they do not start
# together; hourly ones rewrite many rows and run at different minutes.
_SCHEDULE: list[tuple[str, dict[str, Any]]] = [
    ("promotions", {"second": 5}),
    ("candidate_expiry", {"second": 15}),
    ("fact_ttl", {"second": 25}),
    ("purge", {"second": 35}),
    ("decay", {"minute": 7, "second": 45}),
    ("eviction", {"minute": 17, "second": 45}),
    ("consolidation", {"minute": 27, "second": 45}),
    # hourly like decay (which walks every active fact too); a fact missing its vector
    # is still found by the other channels meanwhile
    ("missing_vectors", {"minute": 37, "second": 45}),
]


def cron_jobs(timeout_s: int = 600) -> list[CronJob]:
    """arq cron entries; `unique` keeps one run per tick across several workers."""
    return [
        cron(
            cast(WorkerCoroutine, _cron_task(name, SWEEPS[name])),
            name=f"memgate:sweep:{name}",
            unique=True,
            timeout=timeout_s,
            **fields,
        )
        for name, fields in _SCHEDULE
    ]
